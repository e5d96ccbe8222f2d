"""A murmur record read as entries: one :class:`~murmur_analysis.core.model.Entry` per message line.

The lines are decided by murmur's line rules (:func:`.record.message_values`, serde_json
itself). Each message becomes one entry (``raw`` keeps the parsed line, so the cursor core
lowers it exactly as murmur's host does), joined to its sessions' traces while it streams.
What the stream learns on the way (the joined usage and compaction rows, the title) is the
:class:`~murmur_analysis.core.handoff.Summary` its generator returns when it ends.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

from ...core.files import open_regular, settled
from ...core.handoff import Summary
from ...core.model import Entry, Text, ToolResult
from ...core.values import held, ms_of_datetime, uuid7_datetime
from ...core.wire import blocks_from_wire
from ..base import Diagnostics
from .join import Join, learned
from .record import message_values, unreadable

__all__ = ["TITLE_CHARS", "report_skipped", "stream", "title_of"]

TITLE_CHARS = 80


def title_of(text: str) -> str:
    """A conversation's title from its first user text that is not blank."""
    return text.strip().splitlines()[0][:TITLE_CHARS]


def report_skipped(path: Path, skipped: list[tuple[int, str, str]], is_settled: bool, diagnostics: Diagnostics) -> None:
    """Report skipped lines; an unterminated last line only once the file has settled."""
    for line_no, kind, detail in skipped:
        if kind.endswith("_partial") or kind == "partial_line":
            if not is_settled:
                continue
            kind = kind.removesuffix("_partial")
        diagnostics.report(path, kind, detail, line_no)


def _unread(join: Join | None) -> Summary:
    """What a stream that read no message learned: no usage and no compactions to place."""
    return Summary() if join is None else Summary(usage=(), growth=())


def stream(
    path: Path, join: Join | None, settle_seconds: float, diagnostics: Diagnostics
) -> Generator[Entry, None, Summary]:
    """The record's entries, decided by the native line rules (read when iterated).

    Returns:
        When the stream ends, the joined usage and compaction rows and the title found.
    """
    is_settled = settled(path, settle_seconds)
    try:
        with open_regular(path) as f:
            data = f.read()
    except OSError as err:
        diagnostics.report(path, "unreadable", f"could not read: {err.strerror or err}")
        return _unread(join)
    values, skipped = message_values(data)
    del data
    bad = unreadable(skipped, is_settled)
    if bad is not None:
        diagnostics.report(path, bad[1], bad[2], bad[0])
        return _unread(join)
    title: str | None = None
    done = 0  # skipped lines reported so far: reports come in line order
    for position, (line_no, value) in enumerate(values):
        ahead = done
        while ahead < len(skipped) and skipped[ahead][0] < line_no:
            ahead += 1
        report_skipped(path, skipped[done:ahead], is_settled, diagnostics)
        done = ahead
        entry = _entry(value, position, line_no, join, path, diagnostics)
        if title is None and entry.side == "user":
            title = next((title_of(b.text) for b in entry.blocks if isinstance(b, Text) and b.text.strip()), None)
        yield entry
    report_skipped(path, skipped[done:], is_settled, diagnostics)
    return learned(join, title)


def _entry(
    line: dict[str, Any], position: int, line_no: int, join: Join | None, path: Path, diagnostics: Diagnostics
) -> Entry:
    role: str = line["role"]
    msg_id = line.get("id")
    if type(msg_id) is not str:
        msg_id = None
    created = held(uuid7_datetime(msg_id), diagnostics, path, "message id", line_no) if msg_id is not None else None
    source_id = line.get("source_id")
    content = line.get("content")
    blocks = blocks_from_wire(content, "murmur") if content is not None else ()
    call_id: str | None = None
    is_error: bool | None = None
    if role == "tool":
        raw_call = line.get("tool_call_id")
        call_id = raw_call if type(raw_call) is str else None
        raw_error = line.get("is_error")
        is_error = raw_error if type(raw_error) is bool else None
        if call_id is not None:
            blocks = (ToolResult(call_id, blocks if content is not None else None, is_error),)
        else:
            diagnostics.report(path, "missing_tool_call_id",
                               f"line {line_no}: a tool message names no tool_call_id; kept as text", line_no)
    usage = model = None
    if join is not None:
        found = join.claim(position, msg_id, role, ms_of_datetime(created))
        if found is not None:
            usage, model = found.usage, found.model
    return Entry(
        position=position,
        side=role,
        blocks=blocks,
        id=msg_id,
        model=model,
        created_at=created,
        source_id=source_id if type(source_id) is str else None,
        usage=usage,
        tool_call_id=call_id,
        is_error=is_error,
        raw=line,
    )
