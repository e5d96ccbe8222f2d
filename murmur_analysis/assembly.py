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
from dataclasses import dataclass, fields
from typing import Any, Literal

from . import _native
from .blocks import message_text, text_chars
from .handoff import ToolEvents
from .model import (
    Block,
    Entry,
    Message,
    ServerToolResult,
    ServerToolUse,
    ToolResult,
    ToolUse,
    sorted_entries,
)
from .serde import serde_text

__all__ = [
    "Assembled",
    "Pairer",
    "ToolCall",
    "ToolEvent",
    "assemble",
    "drop_orphans",
    "group",
    "input_size",
    "pair_events",
    "pair_tools",
    "tool_event_columns",
    "tool_events",
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
            ``duplicate_result`` (a further result for a call already answered). ``unanswered``
            is for client calls only: a provider-run (``server``) call is ``ok`` with no result
            item (the provider wrote none by design), ``error`` when its result carries the
            runtime's error flag.
        is_error: the result's own flag (``None`` when it has none or there is no result).
        input: the call's input as written (``None`` when the pairing was asked not to keep
            inputs).
        result_chars: characters of text in the result.
        input_bytes: size of the call's input as compact JSON, ``None`` without an input.
        input_text: the call's input as JSON text (:func:`input_text`), ``None`` without one.
        result_text: the result's text (``model.message_text`` of its content), ``None``
            when it has no text block or there is no result.
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
    input_bytes: int | None = None
    input_text: str | None = None
    result_text: str | None = None


def _status(is_error: bool | None) -> ToolStatus:
    return "error" if is_error else "ok"


_TOOL_BLOCKS = frozenset((ToolUse, ServerToolUse, ToolResult, ServerToolResult))

#: A tool event of one entry, what the pairing walk reads:
#: ``("call", kind, id, name, input, input_bytes, input_text)`` or
#: ``("result", kind, id, is_error, chars, text)``.
ToolEvent = tuple[Any, ...]


def input_text(value: Any) -> str | None:
    """A tool input as JSON text (``tool_calls.input``), serde_json's compact text as murmur writes it.

    ``None`` for no input (or one JSON cannot hold).
    """
    if value is None:
        return None
    try:
        return serde_text(value)
    except TypeError:
        return None


def input_size(value: Any) -> int | None:
    """Size of a tool input as compact JSON, ``None`` for no input (or one JSON cannot hold)."""
    text = input_text(value)
    return None if text is None else len(text.encode())


def tool_events(entry: Entry, keep_inputs: bool = True) -> list[ToolEvent]:
    """The tool calls and results of one entry, in block order, as pairing events.

    Args:
        entry: the entry.
        keep_inputs: keep each call's input (``False`` keeps only its size).

    Returns:
        One event per tool block (client or server, call or result).
    """
    events: list[ToolEvent] = []
    for block in entry.blocks:
        kind = type(block)
        if kind is ToolUse or kind is ServerToolUse:
            side = "client" if kind is ToolUse else "server"
            value = block.input  # type: ignore[union-attr]
            text = input_text(value)
            events.append(
                ("call", side, block.id, block.name, value if keep_inputs else None,  # type: ignore[union-attr]
                 None if text is None else len(text.encode()), text)
            )
        elif kind is ToolResult:
            is_error = block.is_error if block.is_error is not None else entry.is_error  # type: ignore[union-attr]
            content = block.content or ()  # type: ignore[union-attr]
            events.append(("result", "client", block.tool_use_id, is_error, text_chars(content),  # type: ignore[union-attr]
                           message_text(content)))
        elif kind is ServerToolResult:
            events.append(("result", "server", block.tool_use_id, block.is_error, None, None))  # type: ignore[union-attr]
    return events


def tool_event_columns(entries: Sequence[Entry], keep_inputs: bool = False, text: bool = True) -> ToolEvents:
    """The tool events of a chunk of entries as the columns the pairing walk reads.

    This is how an entry-decoded source feeds the pairing: the same arrays a columnar decoder
    builds, row ``i`` being ``entries[i]``. ``text`` keeps each event's input or result text.
    """
    out = ToolEvents(inputs=[] if keep_inputs else None, texts=[] if text else None)
    for i, entry in enumerate(entries):
        for block in entry.blocks:
            if type(block) in _TOOL_BLOCKS:
                break
        else:
            continue
        for event in tool_events(entry, keep_inputs):
            out.row.append(i)
            out.kind.append(event[1])
            out.call_id.append(event[2])
            if event[0] == "call":
                out.call.append(True)
                out.name.append(event[3])
                out.is_error.append(None)
                out.chars.append(None)
                out.input_bytes.append(event[5])
                if out.inputs is not None:
                    out.inputs.append(event[4])
                if out.texts is not None:
                    out.texts.append(event[6])
            else:
                out.call.append(False)
                out.name.append(None)
                out.is_error.append(event[3])
                out.chars.append(event[4])
                out.input_bytes.append(None)
                if out.inputs is not None:
                    out.inputs.append(None)
                if out.texts is not None:
                    out.texts.append(event[5])
    return out


class Pairer:
    """The pairing walk, fed in position order: one entry at a time, or tool events as columns.

    The walk itself is the native engine's (``native/src/pair.rs``): it holds only the current
    run of same-side entries' tool events and the calls still open, so a frame builder can
    stream a conversation of any length through it. :func:`pair_tools` is this walk over a
    whole list of entries; a decoder that already has each entry's tool events and message
    (run) index feeds :meth:`feed_columns`. Every path reaches the same walk.

    Args:
        keep_inputs: keep every call's input on its row (``False`` keeps only its size, so a
            long conversation does not hold every input until its end).
    """

    def __init__(self, keep_inputs: bool = True) -> None:
        self.keep_inputs = keep_inputs
        self._walk = _native.Pairer()
        self._inputs: list[Any] = []
        self._summary: tuple[int, int, list[str]] = (0, 0, [])
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
            self._message += 1
            self._side = entry.side
        for block in entry.blocks:
            if type(block) in _TOOL_BLOCKS:
                self.feed_events(entry.position, self._message, tool_events(entry, self.keep_inputs))
                break

    def feed_events(self, position: int, message: int, events: list[ToolEvent]) -> None:
        """Take one entry's tool events (:func:`tool_events`), with its message (run) index."""
        texts: list[str | None] = []
        columns = ToolEvents(inputs=[] if self.keep_inputs else None, texts=texts)
        for event in events:
            columns.row.append(0)
            columns.kind.append(event[1])
            columns.call_id.append(event[2])
            call = event[0] == "call"
            columns.call.append(call)
            columns.name.append(event[3] if call else None)
            columns.is_error.append(None if call else event[3])
            columns.chars.append(None if call else event[4])
            columns.input_bytes.append(event[5] if call else None)
            if columns.inputs is not None:
                columns.inputs.append(event[4] if call else None)
            texts.append(event[6] if call else event[5])
        self.feed_columns([position] * len(events), [message] * len(events), columns)

    def feed_columns(self, positions: Sequence[int], messages: Sequence[int], events: ToolEvents) -> None:
        """Take tool events as columns (:class:`~murmur_analysis.sources.base.ToolEvents`).

        Args:
            positions: the position of each event's entry (ascending across calls).
            messages: the 0-based message (run of same-side entries) index of each event's entry.
            events: the events, in entry and block order.
        """
        inputs: list[int | None] | None = None
        if self.keep_inputs and events.inputs is not None:
            inputs = []
            for value in events.inputs:
                inputs.append(len(self._inputs) if value is not None else None)
                if value is not None:
                    self._inputs.append(value)
        kinds = [0 if k == "client" else 1 for k in events.kind]
        self._walk.feed(list(positions), list(messages), events.call, kinds, events.call_id, events.name,
                        events.is_error, events.chars, events.input_bytes, inputs, events.texts)
        if len(positions):
            self._last = positions[-1]

    def dropped_orphans(self) -> list[str]:
        """The ids ``assemble`` would drop from the entries fed so far, in the order met.

        The runs before the last are final; the last run is still open (a later entry of it
        may call a result met earlier in it), so its orphans are worked out without closing it.
        """
        dropped: list[str] = self._walk.dropped_orphans()
        return dropped

    def finish(self) -> list[ToolCall]:
        """Close the last run and return every row, in the order calls and orphans were met."""
        columns = self.finish_columns()
        names = [f.name for f in fields(ToolCall)]
        return [ToolCall(*row) for row in zip(*(columns[n] for n in names), strict=True)]

    def summary(self) -> tuple[int, int, list[str]]:
        """After :meth:`finish_columns`: calls made, calls in error, client orphans dropped."""
        made, errors, dropped = self._summary
        return made, errors, list(dropped)

    def finish_columns(self) -> dict[str, list[Any]]:
        """Like :meth:`finish`, as one list per :class:`ToolCall` field."""
        columns: dict[str, list[Any]] = self._walk.finish()
        made, errors, dropped = columns.pop("summary")
        self._summary = (made, errors, dropped)
        kept = self._inputs
        columns["input"] = [None if i is None else kept[i] for i in columns["input"]]
        return columns


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


def pair_events(
    positions: Sequence[int], messages: Sequence[int], events: ToolEvents
) -> tuple[list[ToolCall], list[str]]:
    """Pair tool events given as columns: the pairing rows and the orphans assembly drops.

    Args:
        positions: the position of each event's entry, ascending.
        messages: the message (run) index of each event's entry, ascending.
        events: the events, in entry and block order.

    Returns:
        ``(rows, dropped)``: one :class:`ToolCall` per call and per result with no call, and the
        ids of the client orphan results in the order met (``assemble``'s ``dropped_orphans``).
    """
    pairer = Pairer(keep_inputs=events.inputs is not None)
    pairer.feed_columns(positions, messages, events)
    dropped = pairer.dropped_orphans()
    return pairer.finish(), dropped
