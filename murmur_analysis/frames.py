"""Conversations to Arrow tables: built column-wise against the declared schemas.

:class:`TableBuilder` collects rows as tuples in schema order and turns them into record
batches every ``batch_rows`` rows, so memory stays bounded and no schema is inferred.
:class:`FrameBuilder` feeds it from decoded conversations through the assembly core.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa

from .assembly import Pairer, ToolCall
from .diagnostics import Diagnostic
from .model import Entry, Unknown, Usage, sorted_entries, text_chars
from .schema import TABLES, schema
from .sources.base import Conversation, OrphanRow, ToolMeta, UsageRow

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
        self.schema = schema(table)
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

    def finish(self) -> pa.Table:
        """The table so far."""
        self._flush()
        return pa.Table.from_batches(self._batches, schema=self.schema)


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


def _block_kind(block: Any) -> str:
    if isinstance(block, Unknown):
        return block.type or "unknown"
    return str(block.kind)


def _json_size(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return None


class FrameBuilder:
    """Every table, fed one decoded conversation at a time."""

    def __init__(self) -> None:
        self.builders = {name: TableBuilder(name) for name in TABLES}

    def add(self, conv: Conversation) -> None:
        """Add one conversation's rows to every table.

        The entries are walked once, in position order, and dropped as they go: messages rows,
        derived growth and entry usage are written per entry, and the pairing walk of the
        assembly core keeps only open calls, so a record of any length streams through.
        """
        key = (conv.source, conv.conversation_id)
        entries: Iterable[Entry] = conv.entries
        if isinstance(entries, list):
            entries = sorted_entries(entries)
        messages = self.builders["messages"]
        growth = self.builders["growth"]
        # Compaction rows are events on the message timeline, not a replacement of it: the
        # per-message rows are derived unless the source gave rows of its own timeline.
        derive_growth = conv.growth is None or all(g.event == "compaction" for g in conv.growth)
        usage_rows: list[UsageRow] = [] if conv.usage is None else conv.usage
        pairer = Pairer()
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
                    [_block_kind(b) for b in entry.blocks],
                )
            )
            if u is not None:
                if conv.usage is None:
                    usage_rows.append(UsageRow(u, entry.id, entry.position, entry.model, None, at, found_in="entry"))
                if u.input_total_tokens is not None:
                    context = u.input_total_tokens + (u.output_tokens or 0) + (u.reasoning_tokens or 0)
            if derive_growth:
                growth.append(
                    (*key, entry.position, at, "message", None, count, chars_total, context, None, None, None)
                )
        calls = pairer.finish()
        self._tool_calls(key, calls, conv.tool_meta)
        tokens = self._usage(key, usage_rows)
        orphan_rows = conv.assembly_orphans
        if orphan_rows is None:
            orphan_rows = [
                OrphanRow(c.call_id, "assembly") for c in calls if c.status == "orphan_result" and c.kind == "client"
            ]
        # Distinct ids: a git source names a lasting orphan again at every step that drops it.
        n_orphans = len({o.tool_use_id for o in orphan_rows if o.found_by == "assembly"})
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
        made = [c for c in calls if c.called_seq is not None]
        self.builders["conversations"].append(
            (
                *key,
                conv.title,
                conv.path,
                first_at,
                last_at,
                count,
                len(made),
                sum(1 for c in made if c.status == "error"),
                n_orphans,
                tokens,
                conv.truncated_dropped,
            )
        )

    def _tool_calls(self, key: tuple[str, str], calls: list[ToolCall], meta: Any) -> None:
        builder = self.builders["tool_calls"]
        for call in calls:
            m: ToolMeta | None = meta.get(call.call_id) if call.called_seq is not None else None
            builder.append(
                (
                    *key,
                    call.call_id,
                    call.tool_name,
                    call.kind,
                    call.called_seq,
                    call.result_seq,
                    call.status,
                    call.is_error,
                    m.duration_ms if m else None,
                    (m.input_bytes if m and m.input_bytes is not None else _json_size(call.input)),
                    m.output_bytes if m else None,
                    call.result_chars,
                    m.exit_code if m else None,
                )
            )

    def _usage(self, key: tuple[str, str], rows: list[UsageRow]) -> int | None:
        builder = self.builders["usage"]
        total: int | None = None
        for r in rows:
            u = r.usage
            builder.append(
                (*key, r.message_id, r.seq, r.model, r.provider, r.created_at, *_tokens(u), u.input_total_tokens,
                 u.context_window, u.estimated_input_tokens, u.estimated_output_tokens, r.attempt, r.sealed,
                 r.found_in)
            )
            for n in (u.input_total_tokens, u.output_tokens, u.reasoning_tokens):
                if n is not None:
                    total = (total or 0) + n
        return total

    def add_diagnostics(self, rows: Iterable[Diagnostic]) -> None:
        """Add diagnostics rows."""
        builder = self.builders["diagnostics"]
        for d in rows:
            builder.append((d.source, d.path, d.line, d.kind, d.detail))

    def finish(self) -> dict[str, pa.Table]:
        """Every table."""
        return {name: b.finish() for name, b in self.builders.items()}


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """A table as a pandas frame whose columns keep their Arrow types (``pd.ArrowDtype``)."""
    frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return frame

