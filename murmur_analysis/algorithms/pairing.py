"""Tool pairing: every tool call with its result (or none), every result with no call.

The walk follows the assembly core's grouping (:mod:`murmur_analysis.algorithms.assembly`): within one
message (a run of same-side entries) the message's own calls count before its results, and a
client result no call at or before it names is an ``orphan_result``, exactly the results
``assemble`` drops, in the same order. The walk itself is the native engine's
(``native/src/pair.rs``); this module feeds it, from entries or from tool events as columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, NamedTuple

import numpy as np
import pyarrow as pa

from ..core.blocks import message_text, text_chars
from ..core.handoff import PAIRED, EntryColumns, Pairing, ToolEvents, ToolKind
from ..core.model import Entry, ServerToolResult, ServerToolUse, ToolResult, ToolUse, sorted_entries
from ..core.serde import serde_text
from ..engine import _native
from ..engine.groups import views

__all__ = [
    "CallEvent",
    "MessageRuns",
    "PairState",
    "PairSummary",
    "Pairer",
    "ResultEvent",
    "ToolCall",
    "ToolEvent",
    "ToolStatus",
    "input_size",
    "input_text",
    "pair_events",
    "pair_tools",
    "tool_event_columns",
    "tool_events",
]

#: What a finished pairing walk leaves for a walk of the entries after it (:meth:`Pairer.save`):
#: ``PairState()`` is the state before any entry; ``to_bytes``/``from_bytes`` persist it in a
#: versioned format (``from_bytes`` raises ``ValueError`` for another version). A walk given
#: one takes it over: it serves once.
PairState = _native.PairState

ToolStatus = Literal["ok", "error", "unanswered", "orphan_result", "duplicate_result", "unknown"]


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
        result_text: the result's text (``blocks.message_text`` of its content), ``None``
            when it has no text block or there is no result.
    """

    call_id: str
    tool_name: str | None
    kind: ToolKind
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


_TOOL_BLOCKS = frozenset((ToolUse, ServerToolUse, ToolResult, ServerToolResult))



class PairSummary(NamedTuple):
    """What a finished pairing walk counted."""

    made: int  #: calls made
    errors: int  #: calls in error
    dropped: list[str]  #: client orphan results assembly drops, in the order met


class CallEvent(NamedTuple):
    """A tool call of one entry, as the pairing walk reads it."""

    kind: ToolKind  #: ``"client"`` (tool_use) or ``"server"`` (provider-executed)
    id: str  #: the call's id
    name: str  #: the called tool
    input: object  #: the input as written (``None`` when not kept)
    input_bytes: int | None  #: the input's size as compact JSON
    input_text: str | None  #: the input as JSON text (:func:`input_text`)


class ResultEvent(NamedTuple):
    """A tool result of one entry, as the pairing walk reads it."""

    kind: ToolKind  #: ``"client"`` or ``"server"``
    id: str  #: the id of the call it answers
    is_error: bool | None  #: the result's error flag (a client result's falls back to its entry's)
    chars: int | None  #: characters of text in the result (client results)
    text: str | None  #: the result's text (client results with a text block)


#: A tool event of one entry: a call or a result.
ToolEvent = CallEvent | ResultEvent


def input_text(value: object) -> str | None:
    """A tool input as JSON text (``tool_calls.input``), serde_json's compact text as murmur writes it.

    ``None`` for no input (or one JSON cannot hold).
    """
    if value is None:
        return None
    try:
        return serde_text(value)
    except TypeError:
        return None


def input_size(value: object) -> int | None:
    """Size of a tool input as compact JSON, ``None`` for no input (or one JSON cannot hold)."""
    text = input_text(value)
    return None if text is None else len(text.encode())


def tool_events(entry: Entry, keep_inputs: bool = True, sizes: bool = True) -> list[ToolEvent]:
    """The tool calls and results of one entry, in block order, as pairing events.

    Args:
        entry: the entry.
        keep_inputs: keep each call's input (``False`` keeps only its size).
        sizes: work out each call's input size and text and each result's characters and text
            (``False``: they are ``None``, for a walk asked only which results it drops).

    Returns:
        One event per tool block (client or server, call or result).
    """
    events: list[ToolEvent] = []
    for block in entry.blocks:
        if isinstance(block, ToolUse | ServerToolUse):
            text = input_text(block.input) if sizes else None
            events.append(CallEvent("client" if type(block) is ToolUse else "server", block.id, block.name,
                                    block.input if keep_inputs else None,
                                    None if text is None else len(text.encode()), text))
        elif isinstance(block, ToolResult):
            is_error = block.is_error if block.is_error is not None else entry.is_error
            content = block.content or ()
            events.append(ResultEvent("client", block.tool_use_id, is_error, text_chars(content) if sizes else None,
                                      message_text(content) if sizes else None))
        elif isinstance(block, ServerToolResult):
            events.append(ResultEvent("server", block.tool_use_id, block.is_error, None, None))
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
            _append(out, i, event)
    return out


def _append(out: ToolEvents, row: int, event: ToolEvent) -> None:
    """Add one event to the columns, as row ``row`` of the chunk."""
    out.row.append(row)
    out.kind.append(event.kind)
    out.call_id.append(event.id)
    if isinstance(event, CallEvent):
        out.call.append(True)
        out.name.append(event.name)
        out.is_error.append(None)
        out.chars.append(None)
        out.input_bytes.append(event.input_bytes)
        if out.inputs is not None:
            out.inputs.append(event.input)
        if out.texts is not None:
            out.texts.append(event.input_text)
    else:
        out.call.append(False)
        out.name.append(None)
        out.is_error.append(event.is_error)
        out.chars.append(event.chars)
        out.input_bytes.append(None)
        if out.inputs is not None:
            out.inputs.append(None)
        if out.texts is not None:
            out.texts.append(event.text)


class MessageRuns:
    """Which message each entry belongs to, entry after entry: the message-run rule.

    Consecutive entries of one side are one message; a new message starts at every change of
    side. :meth:`next` is the rule's one home in Python (the native engine's is
    ``pair::MessageRuns``, and a test holds the two to the same answers): assembly groups
    entries by it, the pairing walk counts calls and results by it, and a cut of a record looks
    for a new run by it.

    Args:
        index: the message index of the last entry seen (-1 before any).
        side: the side of the last entry seen (``None`` before any).

    Attributes:
        index: the 0-based message index of the last entry seen (-1 before any).
        side: the side of the last entry seen.
    """

    def __init__(self, index: int = -1, side: str | None = None) -> None:
        self.index = index
        self.side = side

    def next(self, side: str) -> int:
        """The message index of the next entry, of ``side``."""
        if side != self.side:
            self.index += 1
            self.side = side
        return self.index

    def of_sides(self, sides: pa.Array) -> np.ndarray:
        """The message index of each of the next entries, given their sides (a string column, no nulls).

        The engine's walk of the rule (``message_runs``) over the column, going on from this state.
        """
        values = sides.to_pylist()
        index = np.array(_native.message_runs(values, self.index, self.side), np.int64)
        if values:
            self.index, self.side = int(index[-1]), values[-1]
        return index


#: The pairing columns of :meth:`Pairer.finish_columns` (the :class:`ToolCall` fields).
_Field = Literal["call_id", "tool_name", "kind", "called_seq", "result_seq", "called_message", "result_message",
                 "status", "is_error", "input", "result_chars", "input_bytes", "input_text", "result_text"]
_FIELDS: tuple[_Field, ...] = ("call_id", "tool_name", "kind", "called_seq", "result_seq", "called_message",
                               "result_message", "status", "is_error", "input", "result_chars", "input_bytes",
                               "input_text", "result_text")


class _Texts:
    """The texts a walk was fed (calls' inputs as JSON text, results' texts), kept beside it.

    The native walk holds only each event's index here, so a text reaches the pairing rows as
    it came: a list's texts are made an array once; an Arrow array's are viewed where they lie
    when the rows take them in order (:func:`viewed`), else taken from it (one copy, into the
    rows, and no Python object per text). Texts handed as two arrays (``result_texts``: each
    side's in a buffer of its own) are kept as two: a side's rows, one per call in call order,
    then take its texts in order.
    """

    def __init__(self) -> None:
        self._inputs: list[pa.Array] = []  # the calls' side of each piece
        self._results: list[pa.Array] = []  # the results' side (the same array when handed as one)
        self._loose: list[str | None] = []  # list texts not yet made an array
        self._count = 0

    def keep(self, texts: Sequence[str | None] | pa.Array, result_texts: pa.Array | None = None) -> list[int | None]:
        """Keep ``texts`` (and ``result_texts``, the results' side); each event's index (``None``: no text)."""
        n = len(texts)
        at = np.arange(self._count, self._count + n, dtype=np.int64)
        if isinstance(texts, pa.Array):
            self._settle()
            results = texts if result_texts is None else result_texts
            self._inputs.append(texts)
            self._results.append(results)
            missing = _nulls(texts)
            if result_texts is not None:
                missing = missing & _nulls(result_texts)
            picked = at.astype(object)
            picked[missing] = None
            found: list[int | None] = picked.tolist()
        else:
            self._loose.extend(texts)
            found = [None if t is None else i for i, t in zip(at.tolist(), texts, strict=True)]
        self._count += n
        return found

    def _settle(self) -> None:
        if self._loose:
            loose = pa.array(self._loose, pa.string())
            self._inputs.append(loose)
            self._results.append(loose)
            self._loose = []

    def side(self, results: bool) -> list[pa.Array]:
        """The pieces of texts kept of the results' side or the calls'."""
        self._settle()
        return self._results if results else self._inputs

    def at(self, index: pa.Array | np.ndarray, results: bool) -> pa.Array:
        """The texts at ``index`` (null where it is null, or -1 in NumPy), of the results' side or the calls'."""
        self._settle()
        pieces = self._results if results else self._inputs
        if len(pieces) == 1:
            return viewed(pieces[0], index)
        if not pieces:
            return pa.nulls(len(index), pa.string())
        return pa.chunked_array(pieces, pa.string()).take(_arrow_index(index)).combine_chunks()


def _texts_at(walks: Sequence[Pairer], starts: Sequence[int], index: np.ndarray,
              results: bool) -> pa.Array | list[pa.Array]:
    """The texts of every walk's rows (``starts``: where each walk's begin), ``index`` each walk's own (-1: none).

    One array when every walk's texts of this side are one piece of one array (or there is one
    walk), else each walk's own texts (a list, one array per walk).
    """
    if len(walks) == 1:
        return walks[0]._texts.at(index, results)
    pieces = [w._texts.side(results) for w in walks]
    held = [p[0] for p in pieces if p]
    if not (held and all(len(p) <= 1 for p in pieces) and len({views(p) for p in held}) == 1):
        return [w._texts.at(index[a:b], results) for w, a, b in zip(walks, starts[:-1], starts[1:], strict=True)]
    base = min(p.offset for p in held)
    shift = np.repeat([p[0].offset - base if p else 0 for p in pieces], np.diff(starts))
    whole = pa.Array.from_buffers(pa.string(), max(p.offset + len(p) for p in held) - base, held[0].buffers(),
                                  offset=base)
    return viewed(whole, np.where(index >= 0, index + shift, -1))


def _bits(bitmap: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """An Arrow validity bitmap's ``n`` flags from bit ``offset``, as booleans."""
    return np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")[offset:offset + n].astype(bool)


def _nulls(values: pa.Array) -> np.ndarray:
    """Where an Arrow array is null, as booleans (read from its validity bitmap)."""
    if not values.null_count:
        return np.zeros(len(values), bool)
    validity = values.buffers()[0]
    if validity is None:  # an array of the null type: every value null
        return np.ones(len(values), bool)
    return ~_bits(validity, values.offset, len(values))


def _numpy_index(index: pa.Array | np.ndarray) -> np.ndarray:
    """An index as int64 NumPy values, -1 where it is null (an int64 array read from its buffers)."""
    if isinstance(index, np.ndarray):
        return index.astype(np.int64, copy=False)
    if index.type != pa.int64():
        return np.asarray(index.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    n = len(index)
    validity, values = index.buffers()
    out = np.frombuffer(values, np.int64, n, index.offset * 8) if n else np.zeros(0, np.int64)
    return np.where(_bits(validity, index.offset, n), out, -1) if index.null_count else out


def _arrow_index(index: pa.Array | np.ndarray) -> pa.Array:
    """An index as an int64 Arrow array, null where a NumPy index holds -1."""
    if isinstance(index, pa.Array):
        return index
    return pa.array(index, pa.int64(), mask=index < 0)


def viewed(texts: pa.Array, index: pa.Array | np.ndarray) -> pa.Array:
    """``texts.take(index)``, as a view of ``texts``' own bytes when the picks allow one, else a copy.

    They do when each text picked begins where the one picked before it ends: the texts picked
    ascend with only empty texts between them (as the other side's are in a buffer of one
    side's texts). Then each row's text is where it already is, and only the offsets are new.
    A null row is an empty, null slot. ``index`` may be a NumPy array, -1 where a row is null.
    """
    n = len(index)
    buffers = texts.buffers()
    if n == 0 or not pa.types.is_string(texts.type) or buffers[2] is None:
        return texts.take(_arrow_index(index))
    idx = _numpy_index(index)
    picked = idx >= 0
    picks = idx[picked]
    if len(picks) == 0:
        return pa.nulls(n, pa.string())
    offsets = np.frombuffer(buffers[1], np.int32, len(texts) + 1, texts.offset * 4)
    if (offsets[picks[1:]] != offsets[picks[:-1] + 1]).any():
        return texts.take(_arrow_index(index))
    # each row ends where its text ends, or where the last text picked before it does
    last = np.maximum.accumulate(np.where(picked, np.arange(n), -1))
    ends = np.where(last >= 0, offsets[idx[np.maximum(last, 0)] + 1], offsets[picks[0]])
    bounds = np.concatenate([offsets[picks[:1]], ends]).astype(np.int32)
    valid = picked.copy()
    if texts.null_count:
        valid[picked] = _bits(buffers[0], texts.offset, len(texts))[picks]
    mask = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), n, [mask, pa.py_buffer(bounds), buffers[2]],
                                 null_count=int(n - valid.sum()))


class Pairer:
    """The pairing walk, fed in position order: one entry at a time, or tool events as columns.

    The walk itself is the native engine's (``native/src/pair.rs``): it holds only the current
    run of same-side entries' tool events and the calls still open, so a frame builder can
    stream a conversation of any length through it. :func:`pair_tools` is this walk over a
    whole list of entries; a decoder that already has each entry's tool events and message
    (run) index feeds :meth:`feed_columns`. Every path reaches the same walk.

    A walk can go on from where an earlier one stopped (:meth:`save`, then ``state=``): fed
    the entries after the earlier walk's, it makes the rows a walk of all of them makes after
    the earlier walk's rows, with one more row at the end per result that answers one of the
    earlier walk's calls (:attr:`answered` names that call's row). Its rows are those of a
    whole walk exactly when :attr:`exact` says so (see ``Pairer::exact`` in ``pair.rs``).

    Args:
        keep_inputs: keep every call's input on its row (``False`` keeps only its size, so a
            long conversation does not hold every input until its end).
        state: what an earlier walk left (:meth:`save`), taken over by this walk.
        rows: ``False`` for a walk asked only which results it drops (:meth:`dropped_orphans`,
            as the history core asks at every state): the entries fed to it one at a time
            give it no sizes or texts, and it makes no rows.

    Attributes:
        runs: the message-run state of the entries fed one at a time (:meth:`feed`), going on
            from ``state``'s; a caller of :meth:`feed_columns` that indexes messages with it
            keeps it for :meth:`save`.
        answered: after :meth:`finish_columns`, the row (of the whole walk) each answer row
            answers, for the last ``len(answered)`` rows.
        exact: after :meth:`finish_columns`, whether the rows are exactly a whole walk's.
    """

    def __init__(self, keep_inputs: bool = True, state: _native.PairState | None = None, rows: bool = True) -> None:
        self.keep_inputs = keep_inputs
        self.rows = rows
        self.runs = MessageRuns(*state.runs) if state is not None else MessageRuns()
        self._walk = _native.Pairer(state)
        self._inputs: list[object] = []
        self._texts = _Texts()
        self._summary = PairSummary(0, 0, [])
        self._last: int | None = None
        self.answered: list[int] = []
        self.exact = True

    def feed(self, entry: Entry) -> None:
        """Take the next entry.

        Raises:
            ValueError: ``entry.position`` is lower than the previous entry's.
        """
        if self._last is not None and entry.position < self._last:
            raise ValueError("entries must be fed in ascending position order")
        self._last = entry.position
        message = self.runs.next(entry.side)
        for block in entry.blocks:
            if type(block) in _TOOL_BLOCKS:
                self.feed_events(entry.position, message, tool_events(entry, self.keep_inputs, self.rows))
                break

    def feed_events(self, position: int, message: int, events: list[ToolEvent]) -> None:
        """Take one entry's tool events (:func:`tool_events`), with its message (run) index."""
        columns = ToolEvents(inputs=[] if self.keep_inputs else None, texts=[] if self.rows else None)
        for event in events:
            _append(columns, 0, event)
        self.feed_columns([position] * len(events), [message] * len(events), columns)

    def feed_chunk(self, chunk: EntryColumns) -> np.ndarray:
        """Take a chunk of entries' tool events (its rows' sides indexed by :attr:`runs`); the rows holding them.

        How a frame builder, and a source that pairs its own rows, walks a chunk of columns.
        """
        runs = self.runs.of_sides(chunk.side)
        events = chunk.events
        if events is None or not len(events):
            return np.zeros(0, dtype=np.int64)
        rows = np.asarray(events.row, dtype=np.int64)
        positions = chunk.position.to_numpy(zero_copy_only=False)
        self.feed_columns(positions[rows].tolist(), runs[rows].tolist(), events)
        return np.unique(rows)

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
        texts = self._texts.keep(events.texts, events.result_texts) if events.texts is not None else None
        self._walk.feed(list(positions), list(messages), events.call, kinds, events.call_id, events.name,
                        events.is_error, events.chars, events.input_bytes, inputs, texts)
        if len(positions):
            self._last = positions[-1]

    def _rows_kept(self) -> None:
        if not self.rows:
            raise ValueError("this pairing walk was asked only for the results it drops: it makes no rows")

    def dropped_orphans(self) -> list[str]:
        """The ids ``assemble`` would drop from the entries fed so far, in the order met.

        The runs before the last are final; the last run is still open (a later entry of it
        may call a result met earlier in it), so its orphans are worked out without closing it.
        """
        return self._walk.dropped_orphans()

    def finish(self) -> list[ToolCall]:
        """Close the last run and return every row, in the order calls and orphans were met."""
        columns = self.finish_columns()
        names = [f.name for f in fields(ToolCall)]
        return [ToolCall(*row) for row in zip(*(columns[n] for n in names), strict=True)]

    def summary(self) -> PairSummary:
        """After :meth:`finish_columns`: calls made, calls in error, client orphans dropped."""
        return self._summary._replace(dropped=list(self._summary.dropped))

    def finish_columns(self) -> dict[str, list[Any]]:
        """Like :meth:`finish`, as one list per :class:`ToolCall` field.

        Raises:
            ValueError: the walk makes no rows (``rows=False``).
        """
        self._rows_kept()
        done = self._walk.finish()
        self._summary = PairSummary(*done["summary"])
        self.answered, self.exact = done["answered"], done["exact"]
        columns: dict[str, list[Any]] = {name: done[name] for name in _FIELDS}
        kept = self._inputs
        columns["input"] = [None if i is None else kept[i] for i in done["input"]]
        for name in ("input_text", "result_text"):
            columns[name] = self._texts.at(pa.array(done[name], pa.int64()), name == "result_text").to_pylist()
        return columns

    def pairing(self) -> Pairing:
        """Close the last run: the rows as :data:`~murmur_analysis.handoff.PAIRED` columns, and the counts.

        The columns come from the engine as Arrow buffers, with no Python object per row.
        """
        (one,) = Pairer.pairings([self])
        return one

    @staticmethod
    def pairings(walks: Sequence[Pairer]) -> list[Pairing]:
        """:meth:`pairing` of every walk, made at once: their rows one set of columns, each walk's a slice.

        Each walk's texts are taken as its own are; where every walk's of a side are one piece
        of one array (each conversation's slice of a load's column), they are taken once from
        that array, so that rows picking them in order view them where they lie.
        """
        if not walks:
            return []
        for w in walks:
            w._rows_kept()
        done = _native.Pairer.finish_arrow_many([w._walk for w in walks])
        starts: list[int] = done["row_starts"]
        for w, summary, answered, exact in zip(walks, done["summary"], done["answered"], done["exact"], strict=True):
            w._summary = PairSummary(*summary)
            w.answered, w.exact = answered, exact
        n = starts[-1]
        columns: list[pa.Array | list[pa.Array]] = []
        for f in PAIRED:
            if f.name in ("input_text", "result_text"):  # the texts' indexes, taken from the texts kept
                validity, values = (np.frombuffer(b, np.uint8) for b in done[f.name])
                index = np.frombuffer(values, np.int64, n) if n else np.zeros(0, np.int64)
                index = np.where(np.unpackbits(validity, bitorder="little")[:n].astype(bool), index, -1)
                columns.append(_texts_at(walks, starts, index, f.name == "result_text"))
            else:
                columns.append(pa.Array.from_buffers(f.type, n, [pa.py_buffer(b) for b in done[f.name]]))
        spans = list(zip(walks, starts[:-1], starts[1:], strict=True))
        if all(isinstance(c, pa.Array) for c in columns):
            rows = pa.RecordBatch.from_arrays(columns, schema=PAIRED)
            return [Pairing(rows.slice(a, b - a) if len(walks) > 1 else rows, *w.summary()) for w, a, b in spans]
        return [Pairing(pa.RecordBatch.from_arrays(
            [c[k] if isinstance(c, list) else c.slice(a, b - a) for c in columns], schema=PAIRED), *w.summary())
            for k, (w, a, b) in enumerate(spans)]

    def save(self) -> _native.PairState:
        """After :meth:`finish_columns`: what a walk of the entries after these needs (``state=``).

        The walk's open calls move into the state, so a walk is saved once and then done with.

        Raises:
            ValueError: the walk was saved already.
        """
        return self._walk.save(self.runs.index, self.runs.side)


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
