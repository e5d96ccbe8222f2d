"""Conversations to Arrow tables: built column-wise against the declared schemas.

:class:`TableBuilder` collects rows as tuples in schema order and turns them into record
batches every ``batch_rows`` rows, so memory stays bounded and no schema is inferred.
:class:`FrameBuilder` feeds it from decoded conversations through the assembly core.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .assembly import Pairer
from .diagnostics import Diagnostic
from .model import Entry, Usage, block_kind, context_tokens, sorted_entries, text_chars
from .schema import TABLES, built_schema, schema
from .sources.base import Conversation, OrphanRow, ToolMeta, UsageRow
from .sources.files import display, raw_name

__all__ = ["FrameBuilder", "TableBuilder", "to_pandas"]

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
        self._rows = []

    def append_batch(self, arrays: list[pa.Array]) -> None:
        """Add rows given as one Arrow array per column, in schema order."""
        self._flush()
        self._batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

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
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Positions of the ToolCall fields in a pairing row (Pairer.finish_rows).
_ID, _NAME, _KIND, _CALLED, _RESULT, _STATUS, _ERROR, _CHARS, _BYTES = 0, 1, 2, 3, 4, 7, 8, 10, 11


@dataclass(frozen=True, slots=True)
class _Walk:
    """What one pass over a conversation's entries gathered for its other tables."""

    calls: list[list[Any]]  # ToolCall fields, in order (Pairer.finish_rows)
    usage_rows: list[UsageRow]
    count: int
    first_at: datetime | None
    last_at: datetime | None
    bare: list[int]  # positions of assistant entries that carry no usage


def _derive_growth(conv: Conversation) -> bool:
    # Compaction rows are events on the message timeline, not a replacement of it: the
    # per-message rows are derived unless the source gave rows of its own timeline.
    return conv.growth is None or all(g.event == "compaction" for g in conv.growth)


def _token_column(usages: list[Usage | None], index: int, n: int) -> pa.Array:
    return pa.array([None if u is None else _tokens(u)[index] for u in usages], _I64)


class FrameBuilder:
    """Every table, fed one decoded conversation at a time."""

    def __init__(self) -> None:
        self.builders = {name: TableBuilder(name) for name in TABLES}

    def add(self, conv: Conversation) -> None:
        """Add one conversation's rows to every table.

        The entries are walked once, in position order, and dropped as they go: messages rows,
        derived growth and entry usage are written per entry, and the pairing walk of the
        assembly core keeps only open calls, so a record of any length streams through. A
        conversation decoded to :class:`EntryColumns` is read chunk by chunk the same way.
        """
        walk = self._walk_columns(conv) if conv.columns is not None else self._walk_entries(conv)
        self._finish(conv, walk)

    def _walk_entries(self, conv: Conversation) -> _Walk:
        key = (conv.source, conv.conversation_id)
        entries: Iterable[Entry] = conv.entries
        if isinstance(entries, list):
            entries = sorted_entries(entries)
        messages = self.builders["messages"]
        growth = self.builders["growth"]
        derive_growth = _derive_growth(conv)
        usage_rows: list[UsageRow] = []  # from the entries, used when the source gives none
        bare: list[int] = []
        pairer = Pairer(keep_inputs=False)
        first_at: datetime | None = None
        last_at: datetime | None = None
        count = chars_total = 0
        context: int | None = None
        for entry in entries:
            pairer.feed(entry)
            count += 1
            chars = text_chars(entry.blocks)
            chars_total += chars
            at = entry.created_at
            if at is not None:
                first_at = at if first_at is None or at < first_at else first_at
                last_at = at if last_at is None or at > last_at else last_at
            u = entry.usage
            messages.append(
                (
                    *key,
                    entry.position,
                    entry.id,
                    entry.side,
                    entry.origin,
                    entry.model,
                    at,
                    len(entry.blocks),
                    chars,
                    *_tokens(u),
                    entry.status,
                    entry.error,
                    entry.source_id,
                    [block_kind(b) for b in entry.blocks],
                )
            )
            if u is not None:
                if conv.usage is None:
                    usage_rows.append(UsageRow(u, entry.id, entry.position, entry.model, None, at, found_in="entry"))
                context = context_tokens(u, context)
            elif entry.side == "assistant":
                bare.append(entry.position)
            if derive_growth:
                growth.append(
                    (*key, entry.position, at, "message", None, count, chars_total, context, None, None, None)
                )
        return _Walk(pairer.finish_rows(), usage_rows, count, first_at, last_at, bare)

    def _walk_columns(self, conv: Conversation) -> _Walk:
        key = (conv.source, conv.conversation_id)
        assert conv.columns is not None
        derive_growth = _derive_growth(conv)
        usage_rows: list[UsageRow] = []  # from the entries, used when the source gives none
        bare: list[int] = []
        pairer = Pairer(keep_inputs=False)
        first_us: int | None = None
        last_us: int | None = None
        count = chars_total = 0
        context: int | None = None
        message = -1
        previous_side: str | None = None
        for chunk in conv.columns:
            n = len(chunk)
            if n == 0:
                continue
            created = pa.array(chunk.created_us, type=pa.int64()).cast(_TIMESTAMP)
            times = [v for v in chunk.created_us if v is not None]
            if times:
                low, high = min(times), max(times)
                first_us = low if first_us is None else min(first_us, low)
                last_us = high if last_us is None else max(last_us, high)
            usages = chunk.usage
            has_usage = any(u is not None for u in usages)
            bare += [chunk.position[i] for i, side in enumerate(chunk.side)
                     if side == "assistant" and usages[i] is None]
            side_array = pa.array(chunk.side, _STR)
            tokens = [_token_column(usages, i, n) for i in range(5)] if has_usage else [pa.nulls(n, _I64)] * 5
            self.builders["messages"].append_batch(
                [
                    pa.array([key[0]] * n, _STR),
                    pa.array([key[1]] * n, _STR),
                    pa.array(chunk.position, _I64),
                    pa.array(chunk.id, _STR),
                    side_array,
                    pa.array(chunk.origin, _STR),
                    pa.array(chunk.model, _STR),
                    created,
                    pa.array(chunk.n_blocks, pa.int32()),
                    pa.array(chunk.text_chars, _I64),
                    *tokens,
                    pa.array(chunk.status, _STR),
                    pa.array(chunk.error, _STR),
                    pa.array(chunk.source_id, _STR),
                    pa.array(chunk.block_kinds, pa.list_(_STR)),
                ]
            )
            # Message (run) index of each entry: a new run at every change of side.
            starts = np.zeros(n, dtype=np.int64)
            starts[0] = chunk.side[0] != previous_side
            if n > 1:
                starts[1:] = pc.not_equal(side_array[1:], side_array[:-1]).to_numpy(zero_copy_only=False)
            runs = np.cumsum(starts) + message
            message = int(runs[-1])
            previous_side = chunk.side[-1]
            for i, events in chunk.tool_events:
                pairer.feed_events(chunk.position[i], int(runs[i]), events)
            contexts: list[int | None] = []
            if has_usage:
                for i, u in enumerate(usages):
                    if u is not None:
                        if conv.usage is None:
                            us = chunk.created_us[i]
                            at = None if us is None else _EPOCH + timedelta(microseconds=us)
                            usage_rows.append(
                                UsageRow(u, chunk.id[i], chunk.position[i], chunk.model[i], None, at, found_in="entry")
                            )
                        context = context_tokens(u, context)
                    contexts.append(context)
            if derive_growth:
                chars = list(itertools.accumulate(chunk.text_chars, initial=chars_total))[1:]
                self.builders["growth"].append_batch(
                    [
                        pa.array([key[0]] * n, _STR),
                        pa.array([key[1]] * n, _STR),
                        pa.array(chunk.position, _I64),
                        created,
                        pa.array(["message"] * n, _STR),
                        pa.nulls(n, _STR),
                        pa.array(range(count + 1, count + n + 1), _I64),
                        pa.array(chars, _I64),
                        pa.array(contexts if has_usage else [context] * n, _I64),
                        pa.nulls(n, _I64),
                        pa.nulls(n, _I64),
                        pa.nulls(n, _I64),
                    ]
                )
            count += n
            chars_total += sum(chunk.text_chars)
        first_at = None if first_us is None else _EPOCH + timedelta(microseconds=first_us)
        last_at = None if last_us is None else _EPOCH + timedelta(microseconds=last_us)
        return _Walk(pairer.finish_rows(), usage_rows, count, first_at, last_at, bare)

    def _finish(self, conv: Conversation, walk: _Walk) -> None:
        key = (conv.source, conv.conversation_id)
        calls = walk.calls
        growth = self.builders["growth"]
        self._tool_calls(key, calls, conv.tool_meta)
        # Read after the walk: a streaming source hands over its usage rows when its stream ends.
        rows = walk.usage_rows if conv.usage is None else conv.usage
        tokens, unreported = self._usage(key, conv.path, rows)
        linked = {r.seq for r in rows if r.seq is not None}
        unreported += sum(1 for p in walk.bare if p not in linked)
        orphan_rows = conv.assembly_orphans
        if orphan_rows is None:
            orphan_rows = [
                OrphanRow(c[_ID], "assembly") for c in calls if c[_STATUS] == "orphan_result" and c[_KIND] == "client"
            ]
        # What assembly drops from the conversation as it stands: a source that also lists the
        # drops of earlier states (a litany step's read state) marks its last state's rows with
        # no step.
        n_orphans = sum(1 for o in orphan_rows if o.found_by == "assembly" and o.step is None)
        for orphan in [*orphan_rows, *conv.recorded_orphans]:
            self.builders["orphans"].append((*key, orphan.step, orphan.commit, orphan.tool_use_id, orphan.found_by))
        for g in conv.growth or ():
            growth.append(
                (*key, g.position, g.at, g.event, g.commit, g.messages, g.chars, g.context_tokens, g.orphans,
                 g.tokens_before, g.tokens_after)
            )
        for st in conv.steps:
            self.builders["steps"].append(
                (*key, st.agent_id, st.step, st.commit, st.started_at, st.ended_at, st.model, st.provider,
                 list(st.dropped_orphans) if st.dropped_orphans is not None else None, st.attempts,
                 st.finish_reason, st.error)
            )
        made = [c for c in calls if c[_CALLED] is not None]
        self.builders["conversations"].append(
            (
                *key,
                conv.title,
                conv.path,
                walk.first_at,
                walk.last_at,
                walk.count,
                len(made),
                sum(1 for c in made if c[_STATUS] == "error"),
                n_orphans,
                tokens,
                unreported,
                conv.truncated_dropped,
                conv.extra.get("conversation_id_bytes"),
                conv.extra.get("path_bytes"),
            )
        )

    def _tool_calls(self, key: tuple[str, str], calls: list[list[Any]], meta: Mapping[str, ToolMeta]) -> None:
        if not calls:
            return
        n = len(calls)
        cols = list(zip(*calls, strict=True))
        duration: list[Any] = [None] * n
        output: list[Any] = [None] * n
        exit_code: list[Any] = [None] * n
        input_bytes = list(cols[_BYTES])
        if meta:
            for i, call in enumerate(calls):
                m = meta.get(call[_ID]) if call[_CALLED] is not None else None
                if m is not None:
                    duration[i], output[i], exit_code[i] = m.duration_ms, m.output_bytes, m.exit_code
                    if m.input_bytes is not None:
                        input_bytes[i] = m.input_bytes
        self.builders["tool_calls"].append_batch(
            [
                pa.array([key[0]] * n, _STR),
                pa.array([key[1]] * n, _STR),
                pa.array(cols[_ID], _STR),
                pa.array(cols[_NAME], _STR),
                pa.array(cols[_KIND], _STR),
                pa.array(cols[_CALLED], _I64),
                pa.array(cols[_RESULT], _I64),
                pa.array(cols[_STATUS], _STR),
                pa.array(cols[_ERROR], pa.bool_()),
                pa.array(duration, pa.float64()),
                pa.array(input_bytes, _I64),
                pa.array(output, _I64),
                pa.array(cols[_CHARS], _I64),
                pa.array(exit_code, _I64),
            ]
        )

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
        """Every table."""
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

