"""The assembly core: litany's ``assemble`` and ``drop_orphans``, exactly, for every source.

Entries are taken in ``position`` order (a stable sort: litany sorts by the parsed ``NNN``
counter); each composes onto its side, and consecutive same-side entries join one message.
:func:`transcript` stops there: it is the record's own, unfiltered view. :func:`assemble` then
drops every orphan ``tool_result`` (a result whose ``tool_use`` no message at or before it
carries), names the dropped ids in the order met, removes messages left empty and merges
neighbours that now share a role.

:func:`pair_tools` walks the same grouping once more for analysis: every call with its result
(or none), every result with no call, with positions. Its ``orphan_result`` rows are exactly
the results :func:`assemble` drops, in the same order, so tool error rates and orphan counts
come from one place for every source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from .model import (
    Block,
    Entry,
    Message,
    ServerToolResult,
    ServerToolUse,
    ToolResult,
    ToolUse,
    sorted_entries,
    text_chars,
)

__all__ = [
    "Assembled",
    "Pairer",
    "ToolCall",
    "assemble",
    "drop_orphans",
    "group",
    "pair_tools",
    "transcript",
]

ToolStatus = Literal["ok", "error", "unanswered", "orphan_result", "duplicate_result"]


@dataclass(frozen=True, slots=True)
class Assembled:
    """An assembled wire history and what assembly refused to send with it.

    Attributes:
        messages: the wire messages, roles alternating, no orphan result in them.
        dropped_orphans: ``tool_use_id`` of every orphan ``tool_result`` dropped, in the order
            met. Empty for every history no cut has split.
    """

    messages: list[Message]
    dropped_orphans: list[str]


def group(entries: Iterable[Entry]) -> Iterator[list[Entry]]:
    """Entries in position order, cut into runs of the same side (one run per message)."""
    run: list[Entry] = []
    for entry in sorted_entries(entries):
        if run and run[-1].side != entry.side:
            yield run
            run = []
        run.append(entry)
    if run:
        yield run


def transcript(entries: Iterable[Entry]) -> list[Message]:
    """Group entries into the unfiltered transcript, orphans kept.

    This is litany's ``transcript()``: the record's own view.
    """
    messages: list[Message] = []
    for run in group(entries):
        blocks: list[Block] = []
        for entry in run:
            blocks.extend(entry.blocks)
        messages.append(Message(run[0].side, tuple(blocks)))
    return messages


def drop_orphans(messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """Litany's ``drop_orphans``: remove results with no earlier call, then regroup.

    Args:
        messages: a grouped wire history.

    Returns:
        ``(messages, dropped)``: the lawful history and the dropped ``tool_use_id`` values in
        the order met.
    """
    called: set[str] = set()
    dropped: list[str] = []
    kept: list[Message] = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, ToolUse):
                called.add(block.id)
        blocks: list[Block] = []
        for block in message.blocks:
            if isinstance(block, ToolResult) and block.tool_use_id not in called:
                dropped.append(block.tool_use_id)
            else:
                blocks.append(block)
        if blocks:
            kept.append(Message(message.role, tuple(blocks)))
    grouped: list[Message] = []
    for message in kept:
        if grouped and grouped[-1].role == message.role:
            grouped[-1] = Message(message.role, grouped[-1].blocks + message.blocks)
        else:
            grouped.append(message)
    return grouped, dropped


def assemble(entries: Iterable[Entry]) -> Assembled:
    """Assemble entries into the wire history litany would send.

    Args:
        entries: a conversation's entries, from any source.

    Returns:
        The messages (brazen block dicts through :attr:`Message.content`) and the dropped
        orphan ids.
    """
    messages, dropped = drop_orphans(transcript(entries))
    return Assembled(messages, dropped)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call with its result, or one result with no call.

    Attributes:
        call_id: the call's id (for a result with no call, the id the result names).
        tool_name: the called tool, when the call was seen.
        kind: ``"client"`` (tool_use / tool_result) or ``"server"`` (provider-executed).
        called_seq: position of the entry holding the call, ``None`` for an orphan result.
        result_seq: position of the entry holding the result, ``None`` when unanswered.
        called_message: index of the transcript message holding the call.
        result_message: index of the transcript message holding the result.
        status: ``ok``, ``error``, ``unanswered``, ``orphan_result`` (dropped by assembly), or
            ``duplicate_result`` (a further result for a call already answered).
        is_error: the result's own flag (``None`` when it has none or there is no result).
        input: the call's input as written.
        result_chars: characters of text in the result.
    """

    call_id: str
    tool_name: str | None
    kind: Literal["client", "server"]
    called_seq: int | None
    result_seq: int | None
    called_message: int | None
    result_message: int | None
    status: ToolStatus
    is_error: bool | None
    input: object = None
    result_chars: int | None = None


def _status(is_error: bool | None) -> ToolStatus:
    return "error" if is_error else "ok"


class Pairer:
    """The pairing walk, fed one entry at a time (entries must come in position order).

    It holds only the current run of same-side entries and the calls still open, so a frame
    builder can stream a conversation of any length through it. :func:`pair_tools` is this
    walk over a whole list.
    """

    def __init__(self) -> None:
        self.rows: list[ToolCall] = []
        self._open: dict[tuple[str, str], list[int]] = {}  # (kind, id) -> unanswered row indexes
        self._called: set[tuple[str, str]] = set()
        self._run: list[tuple[Entry, list[Block]]] = []  # the run's entries that hold tool blocks
        self._side: str | None = None
        self._message = -1
        self._last: int | None = None

    def feed(self, entry: Entry) -> None:
        """Take the next entry.

        Raises:
            ValueError: ``entry.position`` is lower than the previous entry's.
        """
        if self._last is not None and entry.position < self._last:
            raise ValueError("entries must be fed in ascending position order")
        self._last = entry.position
        if entry.side != self._side:
            if self._side is not None:
                self._close_run()
            self._side = entry.side
        tools = [b for b in entry.blocks if type(b) in _TOOL_BLOCKS]
        if tools:
            self._run.append((entry, tools))

    def finish(self) -> list[ToolCall]:
        """Close the last run and return every row, in the order calls and orphans were met."""
        if self._side is not None:
            self._close_run()
            self._side = None
        return self.rows

    def _close_run(self) -> None:
        self._message += 1
        if not self._run:
            return
        message_index = self._message
        rows = self.rows
        for entry, tools in self._run:
            for block in tools:
                if isinstance(block, ToolUse | ServerToolUse):
                    kind: Literal["client", "server"] = "client" if isinstance(block, ToolUse) else "server"
                    key = (kind, block.id)
                    self._called.add(key)
                    self._open.setdefault(key, []).append(len(rows))
                    rows.append(
                        ToolCall(
                            block.id, block.name, kind, entry.position, None, message_index, None,
                            "unanswered", None, block.input,
                        )
                    )
        for entry, tools in self._run:
            for block in tools:
                if isinstance(block, ToolResult):
                    kind = "client"
                    key = (kind, block.tool_use_id)
                    is_error = block.is_error if block.is_error is not None else entry.is_error
                    chars: int | None = text_chars(block.content or ())
                elif isinstance(block, ServerToolResult):
                    kind = "server"
                    key = (kind, block.tool_use_id)
                    is_error, chars = None, None
                else:
                    continue
                waiting = self._open.get(key)
                if waiting:
                    index = waiting.pop(0)
                    if not waiting:
                        del self._open[key]
                    call = rows[index]
                    rows[index] = ToolCall(
                        call.call_id, call.tool_name, call.kind, call.called_seq, entry.position,
                        call.called_message, message_index, _status(is_error), is_error, call.input, chars,
                    )
                    continue
                status: ToolStatus = "duplicate_result" if key in self._called else "orphan_result"
                rows.append(
                    ToolCall(
                        key[1], None, kind, None, entry.position, None, message_index, status, is_error, None, chars,
                    )
                )
        self._run = []


_TOOL_BLOCKS = frozenset((ToolUse, ServerToolUse, ToolResult, ServerToolResult))


def pair_tools(entries: Iterable[Entry]) -> list[ToolCall]:
    """Pair every tool call with its result, with litany's orphan rule.

    Within one message (a run of same-side entries) the message's own calls count before its
    results, as in ``drop_orphans``. Rows come in the order calls and orphan results are met.
    Client ``orphan_result`` rows are exactly :func:`assemble`'s ``dropped_orphans``.

    Args:
        entries: a conversation's entries, from any source (sorted by position here).

    Returns:
        One :class:`ToolCall` per call and per result with no call.
    """
    pairer = Pairer()
    for entry in sorted_entries(entries):
        pairer.feed(entry)
    return pairer.finish()
