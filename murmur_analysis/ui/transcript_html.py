"""A conversation's messages as HTML a reader can follow.

Text shows as text, tool calls with their input, tool results with errors highlighted, and each
message with its time, model and tokens. A detail that no message of a conversation reports
(:func:`unreported`) is said once for the conversation, not on every message.

Every string that comes from a transcript is HTML-escaped: transcripts are data, never markup.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..core import model as m

__all__ = ["DETAILS", "NOT_REPORTED", "counted_on", "entries_html", "entry_html", "entry_text", "matches",
           "snippet", "unreported"]

#: How a missing time, model or token count is shown.
NOT_REPORTED = "not reported"

#: The details each message shows when its source reports them: a message's time, and a response's
#: model and tokens.
DETAILS = ("time", "model", "tokens")

_ROLE_COLOURS = {"user": "#1f6feb", "assistant": "#8250df", "tool": "#9a6700", "system": "#57606a"}
_ERROR_STYLE = "background:#ffebe9;border:1px solid #cf222e;border-radius:4px"
_BOX = "margin:2px 0;padding:3px 6px;"
_PRE = "white-space:pre-wrap;word-break:break-word;margin:2px 0;font-family:monospace;font-size:12px"
_TEXT = "white-space:pre-wrap;word-break:break-word;margin:2px 0"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)


def _marked(text: str, query: str | None) -> str:
    """``text`` escaped, with every case-insensitive occurrence of ``query`` in ``<mark>``."""
    if not query:
        return html.escape(text)
    parts = re.split(f"({re.escape(query)})", text, flags=re.IGNORECASE)
    return "".join(
        f"<mark>{html.escape(part)}</mark>" if n % 2 else html.escape(part) for n, part in enumerate(parts)
    )


def _block_texts(block: m.Block) -> Iterable[str]:
    """The searchable text of one block: what it says, what a tool was passed, what it returned."""
    if isinstance(block, m.Text | m.Thinking | m.Refusal):
        yield block.text
    elif isinstance(block, m.ToolUse | m.ServerToolUse):
        yield block.name
        yield _json(block.input)
    elif isinstance(block, m.ToolResult):
        for inner in block.content or ():
            yield from _block_texts(inner)
    elif isinstance(block, m.ServerToolResult):
        yield _json(block.content)


def entry_text(entry: m.Entry) -> str:
    """Everything a reader would search in one entry, joined with newlines."""
    return "\n".join(text for block in entry.blocks for text in _block_texts(block))


def matches(entry: m.Entry, query: str) -> bool:
    """Whether ``query`` occurs in the entry's text, ignoring case."""
    return query.casefold() in entry_text(entry).casefold()


def snippet(entry: m.Entry, query: str, width: int = 70) -> str:
    """About ``width`` characters of the entry's text around the first occurrence of ``query``, on one line.

    Returns plain text (not escaped): it is meant for a widget label, which shows text as text.
    """
    said = " ".join(entry_text(entry).split())
    at = said.casefold().find(query.casefold())
    if at < 0:
        return said[:width] + ("…" if len(said) > width else "")
    start = max(0, at - (width - len(query)) // 2)
    end = min(len(said), start + width)
    start = max(0, end - width)
    return ("…" if start else "") + said[start:end] + ("…" if end < len(said) else "")


def _counted(usage: m.Usage | None) -> list[tuple[str, int]]:
    """The counters a response reported, labelled for a reader."""
    if usage is None:
        return []
    return [(label, value) for label, value in (
        ("in", usage.input_total_tokens),
        ("cache read", usage.cache_read_tokens),
        ("out", usage.output_tokens),
        ("reasoning", usage.reasoning_tokens),
    ) if value is not None]


def unreported(entries: Sequence[m.Entry]) -> frozenset[str]:
    """The :data:`DETAILS` that no entry of a conversation reports.

    ``"time"`` when no entry has a time; ``"model"`` and ``"tokens"`` when the conversation has
    responses (assistant entries) and none of them names its model or reports a token count.
    A conversation without entries leaves nothing unreported.
    """
    if not entries:
        return frozenset()
    missing = set()
    if all(e.created_at is None for e in entries):
        missing.add("time")
    responses = [e for e in entries if e.side == "assistant" and e.origin != m.API_ERROR_ORIGIN]
    if responses and not any(e.model for e in responses):
        missing.add("model")
    own = [e for e in responses if not _elsewhere(e)]  # a response counted on another line is not unreported
    if own and not any(_counted(e.usage) for e in own):
        missing.add("tokens")
    return frozenset(missing)


def _elsewhere(entry: m.Entry) -> bool:
    return entry.usage is not None and entry.usage.counted_elsewhere


def counted_on(entries: Sequence[m.Entry]) -> dict[int, int]:
    """Where the tokens of entries counted on another line are: ``{number: number}``, both 1-based.

    An entry whose response is counted on another entry (:attr:`~murmur_analysis.core.model.Usage.counted_elsewhere`)
    maps to the first entry of the conversation with the same id that reports counters. One
    counted in another conversation (a line a resumed session copied) is not listed.
    """
    holders: dict[str, int] = {}
    for n, e in enumerate(entries, 1):
        if e.id is not None and e.side == "assistant" and _counted(e.usage):
            holders.setdefault(e.id, n)
    return {n: holders[e.id] for n, e in enumerate(entries, 1)
            if _elsewhere(e) and e.id is not None and e.id in holders}


def _block_html(block: m.Block, query: str | None) -> str:
    if isinstance(block, m.Text):
        return f'<div style="{_TEXT}">{_marked(block.text, query)}</div>'
    if isinstance(block, m.Thinking):
        return (f'<details style="{_BOX}color:#57606a"><summary>reasoning</summary>'
                f'<div style="{_TEXT}">{_marked(block.text, query)}</div></details>')
    if isinstance(block, m.RedactedThinking):
        return f'<div style="{_BOX}color:#57606a"><i>reasoning (redacted by the provider)</i></div>'
    if isinstance(block, m.Refusal):
        return f'<div style="{_BOX}{_ERROR_STYLE}"><b>refusal</b> {_marked(block.text, query)}</div>'
    if isinstance(block, m.ToolUse | m.ServerToolUse):
        where = "provider-run tool" if isinstance(block, m.ServerToolUse) else "tool call"
        return (f'<div style="{_BOX}background:#f6f8fa;border-radius:4px">&#8594; {where} '
                f'<b>{html.escape(block.name)}</b> <small>{html.escape(block.id)}</small>'
                f'<pre style="{_PRE}">{_marked(_json(block.input), query)}</pre></div>')
    if isinstance(block, m.ToolResult):
        error = block.is_error is True
        inner = "".join(_block_html(b, query) for b in block.content or ()) or "<i>empty result</i>"
        style = _ERROR_STYLE if error else "background:#f6f8fa;border-radius:4px"
        label = '<b style="color:#cf222e">error</b> ' if error else ""
        return (f'<div style="{_BOX}{style}">&#8592; {label}result of <small>{html.escape(block.tool_use_id)}</small>'
                f"{inner}</div>")
    if isinstance(block, m.ServerToolResult):
        error = block.is_error is True
        style = _ERROR_STYLE if error else "background:#f6f8fa;border-radius:4px"
        return (f'<div style="{_BOX}{style}">&#8592; {html.escape(block.type)} of '
                f'<small>{html.escape(block.tool_use_id)}</small>'
                f'<pre style="{_PRE}">{_marked(_json(block.content), query)}</pre></div>')
    if isinstance(block, m.Image | m.Document | m.File):
        return f'<div style="{_BOX}color:#57606a"><i>[{html.escape(block.kind)}]</i></div>'
    if isinstance(block, m.Unknown):
        return f'<pre style="{_PRE}color:#57606a">{_marked(_json(block.data), query)}</pre>'
    return f'<pre style="{_PRE}">{html.escape(repr(block))}</pre>'


def _when(value: datetime | None) -> str:
    if value is None:
        return f"time {NOT_REPORTED}"
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _tokens(usage: m.Usage | None, on: int | None = None) -> str:
    if usage is not None and usage.counted_elsewhere:
        return (f"tokens counted on #{on}, the same response" if on is not None
                else "tokens counted where this response was first written (another conversation)")
    parts = [f"{label} {value:,}" for label, value in _counted(usage)]
    return " · ".join(parts) + " tokens" if parts else f"tokens {NOT_REPORTED}"


def entry_html(entry: m.Entry, number: int, query: str | None = None, said: Collection[str] = (),
               on: int | None = None) -> str:
    """One entry as a transcript block.

    Args:
        entry: the entry.
        number: its 1-based place in the conversation, shown to the reader.
        query: text to highlight, if any.
        said: :data:`DETAILS` already said to be unreported for the whole conversation
            (:func:`unreported`): the entry does not repeat "not reported" for them.
        on: the number of the entry its response's tokens are counted on, when that is
            another entry of the conversation (:func:`counted_on`).

    Returns:
        An HTML fragment, every transcript string escaped.
    """
    colour = _ROLE_COLOURS.get(entry.side, "#57606a")
    error = entry.is_error is True or entry.error is not None
    details = [f"#{number}"]
    if "time" not in said:
        details.append(_when(entry.created_at))
    if entry.status == m.ABANDONED_STATUS:
        details.append("abandoned: on a branch the conversation was rewound from")
    if entry.side == "assistant" and entry.origin == m.API_ERROR_ORIGIN:  # no model answered: nothing is missing
        details.append("the runtime's error notice, no model response")
    elif entry.side == "assistant":
        if "model" not in said:
            details.append(html.escape(entry.model) if entry.model else f"model {NOT_REPORTED}")
        if "tokens" not in said or _elsewhere(entry):
            details.append(_tokens(entry.usage, on))
    elif _counted(entry.usage):
        details.append(_tokens(entry.usage))
    body = "".join(_block_html(b, query) for b in entry.blocks) or "<i>no content</i>"
    if entry.error is not None:
        body += f'<div style="{_BOX}{_ERROR_STYLE}"><b>error</b> {html.escape(entry.error)}</div>'
    frame = _ERROR_STYLE if error and entry.side == "tool" else ""
    return (
        f'<div class="murmur-message" style="margin:6px 0;padding:4px 8px;border-left:3px solid {colour};{frame}">'
        f'<b style="color:{colour}">{html.escape(entry.side)}</b>'
        f'{" <b style=color:#cf222e>error</b>" if error else ""} '
        f'<small style="color:#57606a">{" · ".join(details)}</small>{body}</div>'
    )


def entries_html(entries: Sequence[tuple[int, m.Entry]], query: str | None = None, said: Collection[str] = (),
                 on: Mapping[int, int] | None = None) -> str:
    """Several entries, each with its 1-based number, in the order given.

    ``query`` and ``said`` are as for :func:`entry_html`; ``on`` is the conversation's
    :func:`counted_on`.
    """
    on = on or {}
    return "".join(entry_html(entry, number, query, said, on.get(number)) for number, entry in entries)
