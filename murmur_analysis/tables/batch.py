"""The tables built from entries, for a batch of conversations at once.

The frame builder (:mod:`~murmur_analysis.tables.frames`) settles what each conversation alone
decides as it is added, and holds the rest as a :class:`Held`: its column chunks, which of their
rows hold tool events, its pairing rows and the runtime's record of each call, its own growth
rows, its ``conversations`` row but for the counts taken over its entries. :func:`build` then
builds ``messages``, ``tool_calls``, ``growth`` and ``conversations`` once for the whole batch:

- each column put together once: concatenated where that copies little, else kept as a chunked
  array of its pieces (the text columns, most of a batch's bytes, are never copied), and the key
  columns repeated by run length (``take``);
- the per-message growth over every entry at once (the history core's
  :func:`~murmur_analysis.algorithms.history.message_states`);
- the times of the calls and results looked up by (conversation, ``seq``) keys over the batch;
- each conversation's first and last time, and its assistant messages that carry no usage,
  reduced over its entries.

Every row, its order and its type are what building each conversation alone gives: one
conversation's rows of a table follow the previous conversation's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..algorithms.history import Grown, message_states
from ..core.handoff import EntryColumns, GrowthColumns, GrowthRow, ToolEvents, ToolMeta, repeated
from ..core.model import Usage
from ..core.values import datetime_of_us
from ..engine.groups import views
from .columns import TableBuilder
from .rows import CallColumns, ConversationRow, EntryIndex, EntryTimes
from .schema import built_schema

__all__ = ["BUILT", "Held", "adjacent", "build"]

#: The tables built in batches (the rest take each conversation's rows as it is added).
BUILT = ("messages", "tool_calls", "growth", "conversations")

_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")
#: A column's pieces are concatenated when they hold at most this many bytes, else chunked as they are.
_COPY_BYTES = 1 << 23
_ARRAYS = tuple(f.name for f in fields(EntryColumns) if f.name not in ("usage", "events"))
_GROWTH = tuple(f.name for f in fields(GrowthColumns) if f.name != "rows")
_INT64_MAX = np.iinfo(np.int64).max
_INT64_MIN = np.iinfo(np.int64).min


@dataclass(slots=True)
class Held:
    """One conversation added to the frame builder, waiting for its batch to be built.

    Attributes:
        key: its ``source`` and ``conversation_id``.
        chunks: its chunks of entries (none empty), their tool events dropped.
        timed: per chunk, the rows the times of its tool calls are looked up in (``None``: every row).
        row: its ``conversations`` row, ``first_at`` and ``last_at`` still unset and
            ``unreported_responses`` counting its usage rows alone; ``None`` when it was found
            unreadable (then its messages alone are built).
        calls: its pairing's rows (:data:`~murmur_analysis.core.handoff.PAIRED`).
        meta: per pairing row, the runtime's record of that call (empty: none kept).
        derive: whether its growth rows are derived, one per message.
        growth: the source's own growth timeline, as columns.
        growth_rows: the source's own growth rows (a compaction's ``chars`` filled in here).
        linked: the ``seq`` of each of its usage rows that names one.
    """

    key: tuple[str, str]
    chunks: list[EntryColumns]
    timed: list[np.ndarray | None]
    row: ConversationRow | None = None
    calls: pa.RecordBatch | None = None
    meta: tuple[ToolMeta | None, ...] = ()
    derive: bool = False
    growth: GrowthColumns | None = None
    growth_rows: tuple[GrowthRow, ...] = ()
    linked: list[int] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """The rows it adds to each table built in batches."""
        messages = sum(len(c) for c in self.chunks)
        if self.row is None:
            return {"messages": messages}
        growth = (messages if self.derive else 0) + (self.growth.rows if self.growth else 0) + len(self.growth_rows)
        calls = self.calls.num_rows if self.calls is not None else 0
        return {"messages": messages, "tool_calls": calls, "growth": growth, "conversations": 1}


@dataclass(frozen=True, slots=True)
class _Entries:
    """Every entry of a batch, the chunks laid end to end: the columns counted over the whole batch."""

    chunks: list[EntryColumns]
    bounds: np.ndarray  # each chunk's first row, and the end
    chunked: np.ndarray  # each conversation's first chunk, and the end
    owner: np.ndarray  # each row's conversation (index into the batch)
    starts: np.ndarray  # each conversation's first row
    position: pa.Array
    created_at: pa.Array
    usages: list[Usage | None] | None  # each row's usage; None: no row has any

    @classmethod
    def of(cls, held: list[Held]) -> _Entries:
        chunks = [c for h in held for c in h.chunks]
        sizes = np.array([len(c) for c in chunks], dtype=np.int64)
        per = np.array([sum(len(c) for c in h.chunks) for h in held], dtype=np.int64)
        owner = np.repeat(np.arange(len(held), dtype=np.int64), per)
        created = _concat([c.created_at for c in chunks], _TIMESTAMP)
        if created.type != _TIMESTAMP:
            created = created.cast(_TIMESTAMP)
        usages = None
        if any(c.usage for c in chunks):
            usages = list(chain.from_iterable(c.usage or [None] * len(c) for c in chunks))
        chunked = np.concatenate([[0], np.cumsum([len(h.chunks) for h in held])]).astype(np.int64)
        return cls(chunks, np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64), chunked, owner,
                   np.concatenate([[0], np.cumsum(per)[:-1]]).astype(np.int64),
                   _concat([c.position for c in chunks], _I64), created, usages)

    def rows(self) -> int:
        return len(self.owner)

    def numbers(self, name: str) -> np.ndarray:
        """An int64 column of every chunk, as one NumPy array (no nulls)."""
        values: np.ndarray = _concat([getattr(c, name) for c in self.chunks], _I64).to_numpy(zero_copy_only=False)
        return values


def _concat(arrays: list[pa.Array], typ: pa.DataType) -> pa.Array:
    return _one(arrays) if arrays else pa.array([], typ)


def _one(pieces: list[pa.Array]) -> pa.Array:
    """The pieces as one array: a view when they are slices of one array laid end to end, else a copy.

    Pieces of fixed width are copied without looking: a copy costs less than telling whether
    they view one array (reading every piece's buffers).
    """
    if len(pieces) == 1:
        return pieces[0]
    whole = None if pa.types.is_primitive(pieces[0].type) else adjacent(pieces)
    return pa.concat_arrays(pieces) if whole is None else whole


def adjacent(pieces: list[pa.Array]) -> pa.Array | None:
    """The pieces as one array, with no copy, when they are slices of one array laid end to end; else ``None``.

    A source that scans many conversations at once hands each its slice of the scan's columns
    (:class:`~murmur_analysis.sources.murmur.engine.ScanGroup`): joined again in order, they
    are a slice of the scan's own array. Told by the buffers they view and their offsets.
    """
    first = pieces[0]
    nested = pa.types.is_list(first.type)
    if not (nested or pa.types.is_primitive(first.type) or pa.types.is_string(first.type)
            or pa.types.is_timestamp(first.type)):
        return None
    kept = first.buffers()
    addresses = views(first)
    end = first.offset + len(first)
    for piece in pieces[1:]:
        if piece.offset != end or piece.type != first.type or views(piece) != addresses:
            return None
        end += len(piece)
    length = end - first.offset
    if nested:
        return pa.Array.from_buffers(first.type, length, kept[:2], offset=first.offset, children=[first.values])
    return pa.Array.from_buffers(first.type, length, kept, offset=first.offset)


def _column(pieces: list[pa.Array]) -> pa.Array | pa.ChunkedArray:
    """The pieces of a column as one: concatenated when that copies little, else a chunked array of them.

    Fixed-width columns are always concatenated; how much a column of strings or lists holds is
    judged from a sample of its pieces (a wrong guess costs a copy, never a row).
    """
    if len(pieces) == 1 or pa.types.is_primitive(pieces[0].type):
        return _one(pieces)
    whole = adjacent(pieces)
    if whole is not None:
        return whole
    sample = pieces[:: max(1, len(pieces) // 8)]
    rows = sum(len(p) for p in sample)
    per_row = sum(p.nbytes for p in sample) / max(rows, 1)
    if per_row * sum(len(p) for p in pieces) > _COPY_BYTES:
        return pa.chunked_array(pieces)
    try:
        return pa.concat_arrays(pieces)
    except pa.ArrowInvalid:  # more than 32-bit offsets hold
        return pa.chunked_array(pieces)


class Keys:
    """The key columns of a batch's rows: each conversation's ``source`` and ``conversation_id``, repeated.

    Args:
        keys: each conversation's ``(source, conversation_id)``, in the batch's order.
    """

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        self.columns = {name: [key[k] for key in keys] for k, name in enumerate(("source", "conversation_id"))}

    def of(self, owner: np.ndarray) -> dict[str, str | pa.Array]:
        """The key columns of rows owned by the conversations ``owner`` names.

        A column whose value is the same for every conversation is that one value (repeated
        by the table builder), else each row's taken from its conversation.
        """
        index = pa.array(owner, _I64)
        return {name: values[0] if len(owner) and len(set(values)) == 1 else pa.array(values, _STR).take(index)
                for name, values in self.columns.items()}


def build(held: list[Held], builders: dict[str, TableBuilder], text: bool) -> None:
    """Build the rows of ``held``'s conversations of every table in :data:`BUILT`, in their order.

    Args:
        held: the conversations, in the order added.
        builders: the frame builder's table builders.
        text: whether the text columns are filled (the growth rows given as rows are built with it).
    """
    entries = _Entries.of(held)
    keys = Keys([h.key for h in held])
    _messages(entries, keys, builders["messages"])
    live = [k for k, h in enumerate(held) if h.row is not None]
    if not live:
        return
    states = message_states(entries.numbers("text_chars"), entries.usages, entries.starts)
    _tool_calls(held, entries, keys, builders["tool_calls"])
    _growth(held, entries, states, keys, builders["growth"], text)
    _conversations(held, entries, builders["conversations"])


def _messages(entries: _Entries, keys: Keys, builder: TableBuilder) -> None:
    chunks = entries.chunks
    if chunks:
        part = chunks[0] if len(chunks) == 1 else _joined(chunks, entries.usages)
        builder.add_columns(part, entries.rows(), keys.of(entries.owner))


def _joined(chunks: list[EntryColumns], usage: list[Usage | None] | None) -> EntryColumns:
    """Chunks as one chunk, with their entries' ``usage`` (its columns may be chunked arrays: :func:`_column`)."""
    arrays = {name: _column([getattr(c, name) for c in chunks]) for name in _ARRAYS}
    return EntryColumns(**arrays, usage=usage, events=ToolEvents())


def _tool_calls(held: list[Held], entries: _Entries, keys: Keys, builder: TableBuilder) -> None:
    pieces = [(k, h.calls, h.meta) for k, h in enumerate(held) if h.calls is not None and h.calls.num_rows]
    if not pieces:
        return
    batches = [b for _, b, _ in pieces]
    names = batches[0].schema.names
    rows = batches[0] if len(batches) == 1 else pa.Table.from_arrays(
        [_column([b.column(i) for b in batches]) for i in range(len(names))], schema=batches[0].schema)
    owner = np.repeat(np.array([k for k, _, _ in pieces], dtype=np.int64), [b.num_rows for b in batches])
    meta: tuple[ToolMeta | None, ...] = ()
    if any(m for _, _, m in pieces):
        meta = tuple(chain.from_iterable(m or (None,) * b.num_rows for _, b, m in pieces))
    builder.add_columns(CallColumns(rows, owner, meta, _times(held, entries)), rows.num_rows, keys.of(owner))


def _times(held: list[Held], entries: _Entries) -> EntryTimes:
    """When the entries the batch's calls and results may be in were written, by (conversation, ``seq``)."""
    timed = [rows for h in held for rows in h.timed]
    if all(rows is None for rows in timed):
        return EntryTimes(EntryIndex(entries.owner, entries.position), entries.created_at)
    bounds = entries.bounds
    index = np.concatenate([np.arange(bounds[j], bounds[j + 1], dtype=np.int64) if rows is None else rows + bounds[j]
                            for j, rows in enumerate(timed)])
    take = pa.array(index, _I64)
    return EntryTimes(EntryIndex(entries.owner[index], entries.position.take(take)), entries.created_at.take(take))


def _growth(held: list[Held], entries: _Entries, states: Grown, keys: Keys, builder: TableBuilder,
            text: bool) -> None:
    """Each conversation's growth rows: derived per message, then its source's columns, then its source's rows.

    The three kinds are built for the whole batch, then put in conversation order (a stable sort).
    """
    part = TableBuilder("growth", text=text)
    order: list[np.ndarray] = []  # per row built: its conversation times three, plus its kind
    derive = np.array([h.derive and h.row is not None for h in held], dtype=bool)
    rows = np.flatnonzero(derive[entries.owner]) if entries.rows() else np.zeros(0, dtype=np.int64)
    if len(rows):
        take = None if len(rows) == entries.rows() else pa.array(rows, _I64)

        def pick(column: pa.Array) -> pa.Array:
            return column if take is None else column.take(take)

        derived = GrowthColumns(len(rows), pick(entries.position), pick(entries.created_at),
                                repeated("message", len(rows)), pick(states.messages), pick(states.chars),
                                pick(states.context_tokens))
        part.add_columns(derived, len(rows), keys.of(entries.owner[rows]))
        order.append(entries.owner[rows] * 3)
    given = [(k, h.growth) for k, h in enumerate(held) if h.growth is not None and h.row is not None]
    if given:
        owner = np.repeat(np.array([k for k, _ in given], dtype=np.int64), [g.rows for _, g in given])
        part.add_columns(_joined_growth([g for _, g in given]), len(owner), keys.of(owner))
        order.append(owner * 3 + 1)
    sizes: tuple[np.ndarray, np.ndarray] | None = None  # each entry's position and characters so far
    for k, h in enumerate(held):
        for g in h.growth_rows if h.row is not None else ():
            if g.chars is None and g.event == "compaction":  # the size of the conversation where it stands
                if sizes is None:
                    sizes = (entries.position.to_numpy(zero_copy_only=False),
                             states.chars.to_numpy(zero_copy_only=False))
                g = replace(g, chars=_chars_at(entries, *sizes, k, g.position))
            part.add(g, {"source": h.key[0], "conversation_id": h.key[1]})
            order.append(np.array([k * 3 + 2], dtype=np.int64))
    if not order:
        return
    table = part.finish()
    key = np.concatenate(order)
    if len(key) > 1 and bool(np.any(np.diff(key) < 0)):
        table = table.take(pa.array(np.argsort(key, kind="stable"), _I64))
    builder.append_table(table)


def _joined_growth(given: list[GrowthColumns]) -> GrowthColumns:
    """Several sources' growth columns as one (a column one of them leaves out: null on its rows)."""
    if len(given) == 1:
        return given[0]
    schema = built_schema("growth")
    columns: dict[str, pa.Array | None] = {}
    for name in _GROWTH:
        arrays = [getattr(g, name) for g in given]
        if all(a is None for a in arrays):
            columns[name] = None
            continue
        typ = schema.field(name).type
        columns[name] = pa.concat_arrays([pa.nulls(g.rows, typ) if a is None else a
                                          for g, a in zip(given, arrays, strict=True)])
    return GrowthColumns(sum(g.rows for g in given), **columns)


def _chars_at(entries: _Entries, positions: np.ndarray, chars: np.ndarray, k: int, position: int) -> int | None:
    """The characters of conversation ``k`` up to its entry at ``position``, ``None`` when no entry is there.

    A compaction row's size is the conversation's at the message it stands at: the last entry at
    that position in the first chunk holding one.
    """
    for j in range(int(entries.chunked[k]), int(entries.chunked[k + 1])):
        a, b = int(entries.bounds[j]), int(entries.bounds[j + 1])
        found = np.flatnonzero(positions[a:b] == position)
        if len(found):
            return int(chars[a + int(found[-1])])
    return None


def _conversations(held: list[Held], entries: _Entries, builder: TableBuilder) -> None:
    """Each conversation's row, with its first and last time and its assistant messages that carry no usage."""
    n = len(held)
    first, last = _spans(entries, n)
    unlinked = _bare(held, entries, n)
    for k, h in enumerate(held):
        if h.row is None:
            continue
        row = replace(h.row, first_at=first[k], last_at=last[k],
                      unreported_responses=h.row.unreported_responses + int(unlinked[k]))
        builder.add(row, {"source": h.key[0], "conversation_id": h.key[1]})


def _spans(entries: _Entries, n: int) -> tuple[list[datetime | None], list[datetime | None]]:
    """Each conversation's earliest and latest ``created_at`` (``None``: no entry has a time)."""
    if not entries.rows():
        return [None] * n, [None] * n
    micros = entries.created_at.cast(_I64)
    valid = micros.is_valid().to_numpy(zero_copy_only=False)
    values = pc.fill_null(micros, 0).to_numpy(zero_copy_only=False)
    per = np.bincount(entries.owner, minlength=n)
    some = np.flatnonzero(per)
    at = entries.starts[some]
    timed = np.zeros(n, dtype=np.int64)
    timed[some] = np.add.reduceat(valid.astype(np.int64), at)
    low = np.zeros(n, dtype=np.int64)
    high = np.zeros(n, dtype=np.int64)
    low[some] = np.minimum.reduceat(np.where(valid, values, _INT64_MAX), at)
    high[some] = np.maximum.reduceat(np.where(valid, values, _INT64_MIN), at)
    none = (timed == 0).tolist()

    def times(micros: np.ndarray) -> list[datetime | None]:  # without pyarrow's zone lookup per value
        return [None if gap else datetime_of_us(v)
                for v, gap in zip(micros.tolist(), none, strict=True)]

    return times(low), times(high)


def _bare(held: list[Held], entries: _Entries, n: int) -> np.ndarray:
    """Per conversation, its assistant messages that carry no usage and no usage row of it names."""
    if not entries.rows():
        return np.zeros(n, dtype=np.int64)
    sides = _concat([c.side for c in entries.chunks], _STR)
    assistant = pc.fill_null(pc.equal(sides, "assistant"), False).to_numpy(zero_copy_only=False)
    if entries.usages is not None:
        assistant &= np.fromiter((u is None for u in entries.usages), dtype=bool, count=entries.rows())
    bare = np.flatnonzero(assistant)
    counts = np.bincount(entries.owner[bare], minlength=n)
    named = [k for k, h in enumerate(held) if h.linked]
    if named and len(bare):
        linked = EntryIndex(np.repeat(np.array(named, dtype=np.int64), [len(held[k].linked) for k in named]),
                            pa.array([s for k in named for s in held[k].linked], _I64))
        hit = linked.holds(entries.owner[bare], entries.position.take(pa.array(bare, _I64)))
        counts -= np.bincount(entries.owner[bare][hit], minlength=n)
    return counts
