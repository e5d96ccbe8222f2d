"""Conversations to Arrow tables: each table put together from finished columns, as declared.

:class:`FrameBuilder` receives a conversation as column chunks and a tool pairing
(:mod:`~murmur_analysis.tables.chunks`) and the rows its source handed over
(:mod:`~murmur_analysis.core.handoff`), and builds every table by its declared columns
(:mod:`~murmur_analysis.tables.schema`) through a :class:`~murmur_analysis.tables.columns.TableBuilder` each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..algorithms.history import History
from ..core.diagnostics import Diagnostic
from ..core.handoff import (
    Conversation,
    EntryColumns,
    GrowthColumns,
    OrphanRow,
    Pairing,
    Reading,
    Summary,
    TableRows,
    UsageRow,
    repeated,
)
from ..core.model import Usage
from ..core.values import counter_sum
from .chunks import PairedChunks, conversation_chunks, entry_chunks
from .columns import TableBuilder, to_pandas, usage_table
from .rows import CallColumns, ConversationRow, EntryTimes
from .schema import TABLES

__all__ = ["FrameBuilder", "TableBuilder", "entry_chunks", "to_pandas", "usage_table"]

_STR = pa.string()
_I64 = pa.int64()


@dataclass(frozen=True, slots=True)
class _Gathered:
    """What one pass over a conversation's entries gathered for its other tables."""

    calls: Pairing  # the pairing walk's rows and counts
    times: EntryTimes  # when the entries holding tool calls and results were written
    usage: list[_EntryUsage]  # the usage on the entries, turned into rows only when the source gives none
    count: int
    first_at: datetime | None
    last_at: datetime | None
    bare: list[int]  # positions of assistant entries that carry no usage
    sizes: list[tuple[pa.Array, pa.Array]]  # each chunk's positions and characters so far (growth rows)
    derived: list[GrowthColumns]  # one growth row per message, per chunk (kept unless the source gives its own)


@dataclass(frozen=True, slots=True)
class _EntryUsage:
    """The usage a chunk's entries carry, and the columns their usage rows name."""

    usages: Sequence[Usage | None]
    ids: pa.Array
    positions: pa.Array
    models: pa.Array
    created: pa.Array

    def rows(self) -> list[UsageRow]:
        """One usage row per entry that carries usage (``found_in="entry"``)."""
        ids, positions = self.ids.to_pylist(), self.positions.to_pylist()
        models, times = self.models.to_pylist(), self.created.to_pylist()
        return [UsageRow(u, ids[i], positions[i], models[i], None, times[i], found_in="entry")
                for i, u in enumerate(self.usages) if u is not None]


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
    given = summary.growth
    return given is None or (not isinstance(given, GrowthColumns) and all(g.event == "compaction" for g in given))


def _settled(conv: Conversation, summary: Summary | None) -> Summary:
    """The conversation's summary once its stream is read (tool timings: its own when the summary has none)."""
    s = summary or Summary()
    return s if s.tool_meta is not None else replace(s, tool_meta=conv.tool_meta)


class FrameBuilder:
    """Every table, fed one decoded conversation at a time.

    Args:
        text: fill the text columns (``messages.text``, ``messages.reasoning_text``,
            ``tool_calls.input``, ``tool_calls.result_text``, ``growth.summary``); ``False``
            leaves them null (same schema) for a lean load.
    """

    def __init__(self, text: bool = True) -> None:
        self.text = text
        self.builders = {name: TableBuilder(name, text=text) for name in TABLES}

    def add(self, conv: Conversation) -> None:
        """Add one conversation's rows to every table.

        The conversation is read as column chunks in position order (a source's own, or its
        entries turned into the same columns), so a record of any length streams through: the
        messages and derived growth rows are written per chunk, and the pairing walk of the
        assembly core keeps only open calls.
        """
        reading = Reading(conversation_chunks(conv, self.text), conv.summary)
        # The pairing walk is skipped when the source's engine already walked it (known up front).
        gathered = self._gather(conv, reading, _settled(conv, conv.summary).paired)
        self._finish(conv, gathered, _settled(conv, reading.summary))

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
            builder = self.builders[rows.table] = TableBuilder(rows.table, text=self.text)
        given = {"source": source, "conversation_id": conversation_id}
        for row in rows.rows:
            builder.add_mapping(row, given)

    def _gather(self, conv: Conversation, chunks: Iterable[EntryColumns], paired: Pairing | None) -> _Gathered:
        key = (conv.source, conv.conversation_id)
        walking = PairedChunks(chunks, paired)
        usage: list[_EntryUsage] = []  # from the entries, used when the source gives none
        bare: list[int] = []
        first_at: datetime | None = None
        last_at: datetime | None = None
        count = 0
        history = History(orphans=False)
        sizes: list[tuple[pa.Array, pa.Array]] = []
        derived: list[GrowthColumns] = []
        for chunk in walking:
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
            assistant = pc.fill_null(pc.equal(chunk.side, "assistant"), False).to_numpy(zero_copy_only=False)
            positions_all = chunk.position.to_numpy(zero_copy_only=False)
            bare += [int(positions_all[i]) for i in np.flatnonzero(assistant) if not usages or usages[i] is None]
            self.builders["messages"].add_columns(chunk, n, {"source": key[0], "conversation_id": key[1]})
            if usages:
                usage.append(_EntryUsage(usages, chunk.id, chunk.position, chunk.model, created))
            grown = history.append_columns(chunk.text_chars, usages)  # one state per message
            sizes.append((chunk.position, grown.chars))
            derived.append(GrowthColumns(n, chunk.position, created, repeated("message", n), grown.messages,
                                         grown.chars, grown.context_tokens))
            count += n
        calls = walking.pairing()
        return _Gathered(calls, walking.times(), usage, count, first_at, last_at, bare, sizes, derived)

    def _finish(self, conv: Conversation, gathered: _Gathered, summary: Summary) -> None:
        if not summary.readable:  # handed over unread, and then found unreadable: no rows
            return
        given = {"source": conv.source, "conversation_id": conv.conversation_id}
        pairing = gathered.calls
        growth = self.builders["growth"]
        if _derive_growth(summary):
            for columns in gathered.derived:
                growth.add_columns(columns, columns.rows, given)
        calls = CallColumns.join(pairing.rows, summary.tool_meta or {}, gathered.times)
        if calls.rows.num_rows:
            self.builders["tool_calls"].add_columns(calls, calls.rows.num_rows, given)
        # Read after the walk: a streaming source hands over its summary when its stream ends.
        rows = [r for u in gathered.usage for r in u.rows()] if summary.usage is None else list(summary.usage)
        tokens, unreported = self._usage(given, conv.path, rows)
        linked = {r.seq for r in rows if r.seq is not None}
        unreported += sum(1 for p in gathered.bare if p not in linked)
        orphan_rows = None if summary.assembly_orphans is None else list(summary.assembly_orphans)
        if orphan_rows is None:
            orphan_rows = [OrphanRow(call_id, "assembly") for call_id in pairing.dropped]
        # What assembly drops from the conversation as it stands: a source that also lists the
        # drops of earlier states (a litany step's read state) marks its last state's rows with
        # no step.
        n_orphans = sum(1 for o in orphan_rows if o.found_by == "assembly" and o.step is None)
        for orphan in orphan_rows:
            self.builders["orphans"].add(orphan, given)
        if isinstance(summary.growth, GrowthColumns):  # a source's own timeline, as columns
            growth.add_columns(summary.growth, summary.growth.rows, given)
        for g in summary.growth if isinstance(summary.growth, tuple) else ():
            if g.chars is None and g.event == "compaction":  # the size of the conversation where it stands
                g = replace(g, chars=_chars_at(gathered.sizes, g.position))
            growth.add(g, given)
        for table, table_rows in summary.rows.items():
            self.add_rows(TableRows(table, table_rows), conv.source, conv.conversation_id)
        row = ConversationRow(
            title=summary.title,
            path=conv.path,
            first_at=gathered.first_at,
            last_at=gathered.last_at,
            messages=gathered.count,
            tool_calls=pairing.made,
            tool_errors=pairing.errors,
            orphans=n_orphans,
            tokens=tokens,
            unreported_responses=unreported,
            truncated_dropped=conv.truncated_dropped,
            parent_conversation_id=conv.parent_conversation_id,
            parent_call_id=conv.parent_call_id,
            conversation_id_bytes=conv.conversation_id_bytes,
            path_bytes=conv.path_bytes,
        )
        self.builders["conversations"].add(row, given)

    def _usage(self, given: dict[str, str], path: str | None, rows: list[UsageRow]) -> tuple[int | None, int]:
        """Write the usage rows; return the spend they report and how many report nothing.

        The spend is null when it passes ``int64`` (:func:`~murmur_analysis.core.values.counter_sum`),
        with a ``sum_overflow`` diagnostics row naming the conversation.
        """
        builder = self.builders["usage"]
        counters: list[int | None] = []
        unreported = 0
        for r in rows:
            u = r.usage
            builder.add(r, given)
            self._problems(given["source"], path, r)
            if not u.reported:
                unreported += 1
            counters += (u.input_total_tokens, u.output_tokens, u.reasoning_tokens)
        total, overflowed = counter_sum(counters)
        if overflowed:
            self.add_diagnostics([Diagnostic(
                given["source"], path or "", None, "sum_overflow",
                f"conversations.tokens of conversation {given['conversation_id']!r} (input_total + output + "
                f"reasoning tokens of its {len(rows)} usage rows) is {sum(n or 0 for n in counters)}, past the "
                "int64 limit 2**63-1: it is null, and so is growth.context_tokens where one response's own "
                "tokens pass it")])
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
            builder.add(d)

    def finish(self) -> dict[str, pa.Table]:
        """Every core table, and each source table that received rows."""
        return {name: b.finish() for name, b in self.builders.items()}
