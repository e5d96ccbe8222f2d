"""Conversations to Arrow tables: built column-wise against the declared schemas.

:class:`TableBuilder` collects rows as tuples in schema order and turns them into record
batches every ``batch_rows`` rows, so memory stays bounded and no schema is inferred.
:class:`FrameBuilder` feeds it from decoded conversations through the assembly core.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .assembly import Pairer, tool_event_columns
from .diagnostics import Diagnostic
from .handoff import (
    PAIRED,
    Conversation,
    EntryColumns,
    OrphanRow,
    Pairing,
    Reading,
    Summary,
    TableRows,
    ToolMeta,
    UsageRow,
    repeated,
)
from .model import Entry, Usage, block_kind, context_tokens, message_text, reasoning_text, sorted_entries, text_chars
from .schema import TABLES, built_schema, schema
from .sources.files import display, raw_name

__all__ = ["FrameBuilder", "TableBuilder", "entry_chunks", "to_pandas"]

BATCH_ROWS = 65_536


def _array(values: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """Convert one column to Arrow.

    Timestamps go through integer microseconds: pyarrow converts aware datetimes one by one,
    several times slower. Every timestamp value here is a timezone-aware datetime.
    """
    if pa.types.is_timestamp(typ):
        micros = [None if v is None else round(v.timestamp() * 1_000_000) for v in values]
        return pa.array(micros, type=pa.int64()).cast(typ)
    return pa.array(values, type=typ)


class TableBuilder:
    """Rows of one declared table, turned into Arrow record batches as they accumulate."""

    def __init__(self, table: str, batch_rows: int = BATCH_ROWS) -> None:
        self.table = table
        self.schema = built_schema(table)
        self.declared = schema(table)
        self.width = len(self.schema)
        self.batch_rows = batch_rows
        self._rows: list[tuple[Any, ...]] = []
        self._batches: list[pa.RecordBatch] = []
        self._batched_rows = 0

    @property
    def num_rows(self) -> int:
        """Rows added so far."""
        return self._batched_rows + len(self._rows)

    def append(self, row: tuple[Any, ...]) -> None:
        """Add one row, its values in schema order."""
        self._rows.append(row)
        if len(self._rows) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        columns = list(zip(*self._rows, strict=True))
        arrays = [_array(col, f.type) for col, f in zip(columns, self.schema, strict=True)]
        self._batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self._batched_rows += len(self._rows)
        self._rows = []

    def append_batch(self, arrays: list[pa.Array]) -> None:
        """Add rows given as one Arrow array per column, in schema order."""
        self._flush()
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._batches.append(batch)
        self._batched_rows += batch.num_rows

    def finish(self) -> pa.Table:
        """The table so far, with the declared schema (columns filled later are null)."""
        self._flush()
        table = pa.Table.from_batches(self._batches, schema=self.schema)
        if self.declared == self.schema:
            return table
        columns = [table.column(f.name) if f.name in self.schema.names else pa.nulls(table.num_rows, f.type)
                   for f in self.declared]
        return pa.Table.from_arrays(columns, schema=self.declared)


def _tokens(usage: Usage | None) -> tuple[int | None, ...]:
    if usage is None:
        return (None, None, None, None, None)
    return (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.reasoning_tokens,
    )


_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True, slots=True)
class _Walk:
    """What one pass over a conversation's entries gathered for its other tables."""

    calls: Pairing  # the pairing walk's rows and counts
    usage_rows: list[UsageRow]
    count: int
    first_at: datetime | None
    last_at: datetime | None
    bare: list[int]  # positions of assistant entries that carry no usage
    sizes: list[tuple[pa.Array, pa.Array]]  # each chunk's positions and characters so far (growth rows)
    derived: list[list[pa.Array]]  # one growth row per message, per chunk (kept unless the source gives its own)


def _chars_at(sizes: list[tuple[pa.Array, pa.Array]], position: int) -> int | None:
    """The characters of the conversation up to the entry at ``position``, ``None`` when no row has it.

    A compaction row's size is the conversation's at the message it stands at.
    """
    for positions, chars in sizes:
        found = np.flatnonzero(positions.to_numpy(zero_copy_only=False) == position)
        if len(found):
            value: int = chars[int(found[-1])].as_py()
            return value
    return None


def _derive_growth(summary: Summary) -> bool:
    # Compaction rows are events on the message timeline, not a replacement of it: the
    # per-message rows are derived unless the source gave rows of its own timeline.
    return summary.growth is None or all(g.event == "compaction" for g in summary.growth)


def _settled(conv: Conversation, summary: Summary | None) -> Summary:
    """The conversation's summary once its stream is read (fields it leaves unset: the conversation's)."""
    s = summary or Summary()
    return Summary(
        usage=s.usage if s.usage is not None else (None if conv.usage is None else tuple(conv.usage)),
        growth=s.growth if s.growth is not None else (None if conv.growth is None else tuple(conv.growth)),
        title=s.title if s.title is not None else conv.title,
        paired=s.paired if s.paired is not None else conv.paired,
        assembly_orphans=s.assembly_orphans if s.assembly_orphans is not None else (
            None if conv.assembly_orphans is None else tuple(conv.assembly_orphans)),
        rows=s.rows,
    )


def _token_column(usages: list[Usage | None], index: int) -> pa.Array:
    return pa.array([None if u is None else _tokens(u)[index] for u in usages], _I64)


def entry_chunks(
    entries: Iterable[Entry], rows: int = BATCH_ROWS, text: bool = True
) -> Generator[EntryColumns, None, Summary | None]:
    """Entries (in position order) turned into the column chunks a columnar decoder builds.

    ``text`` computes the text columns (else they are null), by the rules the engine follows.
    Returns the :class:`Summary` the entries' stream returns, if any.
    """
    reading = Reading(entries, None)
    chunk: list[Entry] = []
    for entry in reading:
        chunk.append(entry)
        if len(chunk) >= rows:
            yield _entry_chunk(chunk, text)
            chunk = []
    if chunk:
        yield _entry_chunk(chunk, text)
    return reading.summary


def _entry_chunk(entries: list[Entry], text: bool) -> EntryColumns:
    usage = [e.usage for e in entries]
    n = len(entries)
    return EntryColumns(
        position=pa.array([e.position for e in entries], _I64),
        id=pa.array([e.id for e in entries], _STR),
        side=pa.array([e.side for e in entries], _STR),
        origin=pa.array([e.origin for e in entries], _STR),
        model=pa.array([e.model for e in entries], _STR),
        created_at=_array([e.created_at for e in entries], _TIMESTAMP),
        n_blocks=pa.array([len(e.blocks) for e in entries], pa.int32()),
        text_chars=pa.array([text_chars(e.blocks) for e in entries], _I64),
        status=pa.array([e.status for e in entries], _STR),
        error=pa.array([e.error for e in entries], _STR),
        source_id=pa.array([e.source_id for e in entries], _STR),
        block_kinds=pa.array([[block_kind(b) for b in e.blocks] for e in entries], pa.list_(_STR)),
        text=pa.array([message_text(e.blocks) for e in entries], _STR) if text else pa.nulls(n, _STR),
        reasoning_text=pa.array([reasoning_text(e.blocks) for e in entries], _STR) if text else pa.nulls(n, _STR),
        usage=usage if any(u is not None for u in usage) else None,
        events=tool_event_columns(entries, text=text),
    )


def _paired(pairer: Pairer) -> Pairing:
    """The pairing walk's rows (:meth:`Pairer.finish_columns`, as :data:`PAIRED`) and counts."""
    columns = pairer.finish_columns()
    rows = pa.RecordBatch.from_arrays([pa.array(columns[f.name], f.type) for f in PAIRED], schema=PAIRED)
    return Pairing(rows, *pairer.summary())


class FrameBuilder:
    """Every table, fed one decoded conversation at a time.

    Args:
        text: fill the text columns (``messages.text``, ``messages.reasoning_text``,
            ``tool_calls.input``, ``tool_calls.result_text``, ``growth.summary``); ``False``
            leaves them null (same schema) for a lean load.
    """

    def __init__(self, text: bool = True) -> None:
        self.text = text
        self.builders = {name: TableBuilder(name) for name in TABLES}

    def add(self, conv: Conversation) -> None:
        """Add one conversation's rows to every table.

        The conversation is read as column chunks in position order (a source's own, or its
        entries turned into the same columns), so a record of any length streams through: the
        messages and derived growth rows are written per chunk, and the pairing walk of the
        assembly core keeps only open calls.
        """
        if conv.columns is not None:
            chunks: Iterable[EntryColumns] = conv.columns
        else:
            entries: Iterable[Entry] = conv.entries
            if isinstance(entries, list):
                entries = sorted_entries(entries)
            chunks = entry_chunks(entries, text=self.text)
        reading = Reading(chunks, conv.summary)
        walk = self._walk(conv, reading)
        self._finish(conv, walk, _settled(conv, reading.summary))

    def add_rows(self, rows: TableRows, source: str, conversation_id: str | None = None) -> None:
        """Add rows of one declared table, each given by column name.

        Args:
            rows: the rows (``source`` and ``conversation_id`` are filled in here).
            source: the source that read them.
            conversation_id: the conversation they belong to, if any.

        Raises:
            KeyError: ``rows.table`` is not a declared table.
        """
        builder = self.builders.get(rows.table)
        if builder is None:
            builder = self.builders[rows.table] = TableBuilder(rows.table)
        names = builder.schema.names
        fixed = {"source": source, "conversation_id": conversation_id}
        for row in rows.rows:
            builder.append(tuple(fixed[n] if n in fixed and n not in row else row.get(n) for n in names))

    def _walk(self, conv: Conversation, chunks: Iterable[EntryColumns]) -> _Walk:
        key = (conv.source, conv.conversation_id)
        # The pairing walk is skipped when the source's engine already walked it (known up front).
        paired = _settled(conv, conv.summary).paired
        usage_rows: list[UsageRow] = []  # from the entries, used when the source gives none
        bare: list[int] = []
        pairer = Pairer(keep_inputs=False)
        first_at: datetime | None = None
        last_at: datetime | None = None
        count = chars_total = 0
        context: int | None = None
        sizes: list[tuple[pa.Array, pa.Array]] = []
        derived: list[list[pa.Array]] = []
        message = -1
        previous_side: str | None = None
        for chunk in chunks:
            n = len(chunk)
            if n == 0:
                continue
            created = chunk.created_at
            span = pc.min_max(created)
            low, high = span["min"].as_py(), span["max"].as_py()
            if low is not None:
                first_at = low if first_at is None else min(first_at, low)
                last_at = high if last_at is None else max(last_at, high)
            usages = chunk.usage
            tokens = [_token_column(usages, i) for i in range(5)] if usages else [pa.nulls(n, _I64)] * 5
            source, conversation = repeated(key[0], n), repeated(key[1], n)
            assistant = pc.fill_null(pc.equal(chunk.side, "assistant"), False).to_numpy(zero_copy_only=False)
            positions_all = chunk.position.to_numpy(zero_copy_only=False)
            bare += [int(positions_all[i]) for i in np.flatnonzero(assistant) if not usages or usages[i] is None]
            self.builders["messages"].append_batch(
                [source, conversation, chunk.position, chunk.id, chunk.side, chunk.origin, chunk.model, created,
                 chunk.n_blocks, chunk.text_chars, *tokens, chunk.status, chunk.error, chunk.source_id,
                 chunk.block_kinds, *self._texts(chunk.text, chunk.reasoning_text)]
            )
            if paired is None:
                # Message (run) index of each entry: a new run at every change of side.
                side = chunk.side
                starts = np.zeros(n, dtype=np.int64)
                starts[0] = side[0].as_py() != previous_side
                if n > 1:
                    starts[1:] = pc.not_equal(side[1:], side[:-1]).to_numpy(zero_copy_only=False)
                runs = np.cumsum(starts) + message
                message = int(runs[-1])
                previous_side = side[-1].as_py()
            events = chunk.events
            if len(events) and paired is None:
                rows = np.asarray(events.row, dtype=np.int64)
                positions = chunk.position.to_numpy(zero_copy_only=False)
                pairer.feed_columns(positions[rows].tolist(), runs[rows].tolist(), events)
            contexts: list[int | None] = []
            if usages:
                ids, models, times = chunk.id.to_pylist(), chunk.model.to_pylist(), created.to_pylist()
                for i, u in enumerate(usages):
                    if u is not None:
                        usage_rows.append(UsageRow(u, ids[i], int(chunk.position[i].as_py()), models[i], None,
                                                   times[i], found_in="entry"))
                        context = context_tokens(u, context)
                    contexts.append(context)
            chars = np.cumsum(chunk.text_chars.to_numpy(zero_copy_only=False)) + chars_total
            sizes.append((chunk.position, pa.array(chars, _I64)))
            derived.append(
                    [
                        source,
                        conversation,
                        chunk.position,
                        created,
                        repeated("message", n),
                        pa.nulls(n, _STR),
                        pa.array(np.arange(count + 1, count + n + 1, dtype=np.int64), _I64),
                        sizes[-1][1],
                        pa.array(contexts if usages else np.full(n, context, dtype=np.int64), _I64)
                        if usages or context is not None else pa.nulls(n, _I64),
                        pa.nulls(n, _I64),
                        pa.nulls(n, _I64),
                        pa.nulls(n, _I64),
                        pa.nulls(n, _STR),
                    ]
                )
            count += n
            chars_total = int(chars[-1])
        calls = paired if paired is not None else _paired(pairer)
        return _Walk(calls, usage_rows, count, first_at, last_at, bare, sizes, derived)

    def _finish(self, conv: Conversation, walk: _Walk, summary: Summary) -> None:
        key = (conv.source, conv.conversation_id)
        pairing = walk.calls
        calls = pairing.rows
        growth = self.builders["growth"]
        if _derive_growth(summary):
            for arrays in walk.derived:
                growth.append_batch(arrays)
        self._tool_calls(key, calls, conv.tool_meta)
        # Read after the walk: a streaming source hands over its summary when its stream ends.
        rows = walk.usage_rows if summary.usage is None else list(summary.usage)
        tokens, unreported = self._usage(key, conv.path, rows)
        linked = {r.seq for r in rows if r.seq is not None}
        unreported += sum(1 for p in walk.bare if p not in linked)
        orphan_rows = None if summary.assembly_orphans is None else list(summary.assembly_orphans)
        if orphan_rows is None:
            orphan_rows = [OrphanRow(call_id, "assembly") for call_id in pairing.dropped]
        # What assembly drops from the conversation as it stands: a source that also lists the
        # drops of earlier states (a litany step's read state) marks its last state's rows with
        # no step.
        n_orphans = sum(1 for o in orphan_rows if o.found_by == "assembly" and o.step is None)
        for orphan in [*orphan_rows, *conv.recorded_orphans]:
            self.builders["orphans"].append((*key, orphan.step, orphan.commit, orphan.tool_use_id, orphan.found_by))
        for g in summary.growth or ():
            chars = g.chars if g.chars is not None or g.event != "compaction" else _chars_at(walk.sizes, g.position)
            growth.append(
                (*key, g.position, g.at, g.event, g.commit, g.messages, chars, g.context_tokens, g.orphans,
                 g.tokens_before, g.tokens_after, g.summary if self.text else None)
            )
        for table, table_rows in summary.rows.items():
            self.add_rows(TableRows(table, table_rows), conv.source, conv.conversation_id)
        for st in conv.steps:
            self.builders["steps"].append(
                (*key, st.agent_id, st.step, st.commit, st.started_at, st.ended_at, st.model, st.provider,
                 list(st.dropped_orphans) if st.dropped_orphans is not None else None, st.attempts,
                 st.finish_reason, st.error)
            )
        self.builders["conversations"].append(
            (
                *key,
                summary.title,
                conv.path,
                walk.first_at,
                walk.last_at,
                walk.count,
                pairing.made,
                pairing.errors,
                n_orphans,
                tokens,
                unreported,
                conv.truncated_dropped,
                conv.extra.get("conversation_id_bytes"),
                conv.extra.get("path_bytes"),
            )
        )

    def _tool_calls(self, key: tuple[str, str], calls: pa.RecordBatch, meta: Mapping[str, ToolMeta]) -> None:
        n = calls.num_rows
        if not n:
            return
        duration: pa.Array = pa.nulls(n, pa.float64())
        output: pa.Array = pa.nulls(n, _I64)
        exit_code: pa.Array = pa.nulls(n, _I64)
        input_bytes = calls.column("input_bytes")
        if meta:
            durations: list[Any] = [None] * n
            outputs: list[Any] = [None] * n
            exits: list[Any] = [None] * n
            sizes = input_bytes.to_pylist()
            called = calls.column("called_seq").to_pylist()
            for i, call_id in enumerate(calls.column("call_id").to_pylist()):
                m = meta.get(call_id) if called[i] is not None else None
                if m is not None:
                    durations[i], outputs[i], exits[i] = m.duration_ms, m.output_bytes, m.exit_code
                    if m.input_bytes is not None:
                        sizes[i] = m.input_bytes
            duration, output = pa.array(durations, pa.float64()), pa.array(outputs, _I64)
            exit_code = pa.array(exits, _I64)
            input_bytes = pa.array(sizes, _I64)
        self.builders["tool_calls"].append_batch(
            [
                repeated(key[0], n),
                repeated(key[1], n),
                *(calls.column(name) for name in ("call_id", "tool_name", "kind", "called_seq", "result_seq", "status",
                                                  "is_error")),
                duration,
                input_bytes,
                output,
                calls.column("result_chars"),
                exit_code,
                *self._texts(calls.column("input_text"), calls.column("result_text")),
            ]
        )

    def _texts(self, *columns: pa.Array) -> list[pa.Array]:
        """Text columns as given, or null ones when the load leaves text out."""
        return [c if self.text else pa.nulls(len(c), _STR) for c in columns]

    def _usage(self, key: tuple[str, str], path: str | None, rows: list[UsageRow]) -> tuple[int | None, int]:
        """Write the usage rows; return the spend they report and how many report nothing."""
        builder = self.builders["usage"]
        total: int | None = None
        unreported = 0
        for r in rows:
            u = r.usage
            builder.append(_usage_row(key, r))
            self._problems(key[0], path, r)
            if not u.reported:
                unreported += 1
            for n in (u.input_total_tokens, u.output_tokens, u.reasoning_tokens):
                if n is not None:
                    total = (total or 0) + n
        return total, unreported

    def _problems(self, source: str, path: str | None, r: UsageRow) -> None:
        """One diagnostics row per problem of a response's counters (nothing is clamped)."""
        if not r.usage.problems:
            return
        where = r.message_id or (f"seq {r.seq}" if r.seq is not None else None) or (
            f"attempt {r.attempt}" if r.attempt is not None else "a response")
        self.add_diagnostics(Diagnostic(source, path or "", None, "bad_usage",
                                        f"usage of {where} ({r.found_in}): {problem}")
                             for problem in r.usage.problems)

    def add_diagnostics(self, rows: Iterable[Diagnostic]) -> None:
        """Add diagnostics rows."""
        builder = self.builders["diagnostics"]
        for d in rows:
            builder.append((d.source, display(d.path), d.line, d.kind, display(d.detail), raw_name(d.path)))

    def finish(self) -> dict[str, pa.Table]:
        """Every core table, and each source table that received rows."""
        return {name: b.finish() for name, b in self.builders.items()}


def _usage_row(key: tuple[str | None, str | None], r: UsageRow) -> tuple[Any, ...]:
    u = r.usage
    return (*key, r.message_id, r.seq, r.model, r.provider, r.accounting, r.provider_source, r.session_id,
            r.created_at, *_tokens(u), u.input_total_tokens, u.context_window, u.estimated_input_tokens,
            u.estimated_output_tokens, r.attempt, r.sealed, r.found_in)


def usage_table(source: str, rows: Iterable[UsageRow]) -> pa.Table:
    """A ``usage`` table of rows that belong to no conversation (``conversation_id`` null).

    Args:
        source: the source that read them.
        rows: the usage rows (a runtime session's own spend, say).
    """
    builder = TableBuilder("usage")
    for r in rows:
        builder.append(_usage_row((source, None), r))
    return builder.finish()


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """A table as a pandas frame whose columns keep their Arrow types (``pd.ArrowDtype``)."""
    frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return frame

