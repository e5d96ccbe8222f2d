"""Conversations to Arrow tables: each table put together from finished columns, as declared, a batch at a time.

:class:`FrameBuilder` receives a conversation as column chunks and a tool pairing
(:mod:`~murmur_analysis.tables.chunks`) and the rows its source handed over
(:mod:`~murmur_analysis.core.handoff`). What one conversation alone decides is settled as it is
added: its pairing walk, its usage and orphan rows, its counts. The tables built from its entries
(``messages``, ``tool_calls``, ``growth``, ``conversations``) wait until a batch of conversations
is held (:mod:`~murmur_analysis.tables.batch`) and are then built once for the whole batch. Every
table is built by its declared columns (:mod:`~murmur_analysis.tables.schema`) through a
:class:`~murmur_analysis.tables.columns.TableBuilder` each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from ..core.diagnostics import Diagnostic
from ..core.files import display
from ..core.handoff import (
    Conversation,
    EntryColumns,
    GrowthColumns,
    OrphanRow,
    Reading,
    Summary,
    TableRows,
    ToolEvents,
    UsageColumns,
    UsageRow,
)
from ..core.model import Usage
from ..core.values import counter_sum
from ..errors import SourceError
from .batch import BUILT, Held, Keys, build
from .chunks import PairedChunks, conversation_chunks, entry_chunks
from .columns import BATCH_ROWS, TableBuilder, to_pandas, usage_table
from .rows import ConversationRow, recorded_calls
from .schema import TABLES

__all__ = ["FrameBuilder", "TableBuilder", "entry_chunks", "to_pandas", "usage_table"]

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
    """Every table, fed one decoded conversation at a time and built a batch of conversations at a time.

    The rows of the tables built from entries are held until about
    :data:`~murmur_analysis.tables.columns.BATCH_ROWS` messages are, and built then (or when a
    table is asked for): :meth:`rows` counts them from the moment a conversation is added.

    Args:
        text: fill the text columns (``messages.text``, ``messages.reasoning_text``,
            ``tool_calls.input``, ``tool_calls.result_text``, ``growth.summary``); ``False``
            leaves them null (same schema) for a lean load.
    """

    def __init__(self, text: bool = True) -> None:
        self.text = text
        self.builders = {name: TableBuilder(name, text=text) for name in TABLES}
        self._held: list[Held] = []
        self._held_rows = dict.fromkeys(BUILT, 0)
        # usage given as columns, by conversation (with its source and id), written together
        self._usage_held: list[tuple[UsageColumns, str, str]] = []
        self._usage_held_rows = 0

    def rows(self) -> dict[str, int]:
        """Rows added so far to each table, those of the conversations held for the next batch included."""
        held = dict(self._held_rows, usage=self._usage_held_rows)
        return {name: b.num_rows + held.get(name, 0) for name, b in self.builders.items()}

    def add(self, conv: Conversation) -> None:
        """Add one conversation's rows to every table.

        The conversation is read as column chunks in position order (a source's own, or its
        entries turned into the same columns), so a record of any length streams through, and
        the pairing walk of the assembly core keeps only open calls. Its chunks are held (their
        tool events dropped) until its batch is built.
        """
        reading = Reading(conversation_chunks(conv, self.text), conv.summary)
        # The pairing walk is skipped when the source's engine already walked it (known up front).
        walking = PairedChunks(reading, conv.summary.paired if conv.summary is not None else None)
        chunks: list[EntryColumns] = []
        usage: list[_EntryUsage] = []  # from the entries, used when the source gives none
        try:
            for chunk in walking:
                if not len(chunk):
                    continue
                if chunk.usage:
                    usage.append(_EntryUsage(chunk.usage, chunk.id, chunk.position, chunk.model, chunk.created_at))
                chunks.append(replace(chunk, events=ToolEvents()) if len(chunk.events) else chunk)
        except UnicodeEncodeError as err:
            bad = err.object[err.start:err.end] if isinstance(err.object, str) else ""
            raise SourceError(
                f"the {conv.source} source handed conversation {display(conv.conversation_id)} a string that is "
                f"not valid Unicode ({bad!a}: {err.reason}); a source must decode its input as UTF-8 "
                "(orjson does, and reports what it cannot decode)") from err
        summary = _settled(conv, reading.summary)
        held = Held((conv.source, conv.conversation_id), chunks, walking.timed)
        if summary.readable:  # handed over unread, and then found unreadable: no rows beyond its messages
            self._settle(conv, held, walking, usage, summary)
        self._hold(held)
        own = [t for t in summary.rows if t in BUILT] if summary.readable else []
        if own:  # rows of a table built in batches go in after the conversation's own
            self._build()
        for table, table_rows in summary.rows.items() if summary.readable else ():
            self.add_rows(TableRows(table, table_rows), conv.source, conv.conversation_id)

    def _settle(self, conv: Conversation, held: Held, walking: PairedChunks, usage: list[_EntryUsage],
                summary: Summary) -> None:
        """What the conversation alone decides: its pairing, usage and orphan rows, its counts (into ``held``)."""
        given = {"source": conv.source, "conversation_id": conv.conversation_id}
        pairing = walking.pairing()
        held.calls = pairing.rows
        held.meta = recorded_calls(pairing.rows, summary.tool_meta or {})
        held.derive = _derive_growth(summary)
        if isinstance(summary.growth, GrowthColumns):  # a source's own timeline, as columns
            held.growth = summary.growth
        elif summary.growth is not None:
            held.growth_rows = summary.growth
        # Read after the walk: a streaming source hands over its summary when its stream ends.
        given_usage = summary.usage
        rows = [r for u in usage for r in u.rows()] if given_usage is None else given_usage
        tokens, unreported, held.linked = self._usage(given, conv.path, rows)
        orphan_rows = None if summary.assembly_orphans is None else list(summary.assembly_orphans)
        if orphan_rows is None:
            orphan_rows = [OrphanRow(call_id, "assembly") for call_id in pairing.dropped]
        # What assembly drops from the conversation as it stands: a source that also lists the
        # drops of earlier states (a litany step's read state) marks its last state's rows with
        # no step.
        n_orphans = sum(1 for o in orphan_rows if o.found_by == "assembly" and o.step is None)
        for orphan in orphan_rows:
            self.builders["orphans"].add(orphan, given)
        held.row = ConversationRow(
            title=summary.title,
            path=conv.path,
            first_at=None,  # the times, and the responses with no usage, are counted with the batch
            last_at=None,
            messages=sum(len(c) for c in held.chunks),
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

    def _hold(self, held: Held) -> None:
        self._held.append(held)
        for name, n in held.counts().items():
            self._held_rows[name] += n
        if self._held_rows["messages"] >= BATCH_ROWS:
            self._build()

    def _build(self) -> None:
        """Build the held conversations' rows of the tables built in batches."""
        held, self._held = self._held, []
        self._held_rows = dict.fromkeys(BUILT, 0)
        if held:
            build(held, self.builders, self.text)

    def add_rows(self, rows: TableRows, source: str, conversation_id: str | None = None) -> None:
        """Add rows of one declared table, each given by column name.

        Args:
            rows: the rows (``source`` and ``conversation_id`` are filled in here).
            source: the source that read them.
            conversation_id: the conversation they belong to, if any.

        Raises:
            KeyError: ``rows.table`` is not a declared table.
        """
        if rows.table in BUILT:
            self._build()  # after the rows of the conversations added before
        if rows.table == "usage":
            self._write_usage()
        builder = self.builders.get(rows.table)
        if builder is None:
            builder = self.builders[rows.table] = TableBuilder(rows.table, text=self.text)
        given = {"source": source, "conversation_id": conversation_id}
        for row in rows.rows:
            builder.add_mapping(row, given)

    def _usage(self, given: dict[str, str], path: str | None,
               rows: Sequence[UsageRow] | UsageColumns) -> tuple[int | None, int, list[int]]:
        """Write the usage rows (or the same as columns); their spend, how many report nothing, the seqs they name.

        The spend is null when it passes ``int64`` (:func:`~murmur_analysis.core.values.counter_sum`),
        with a ``sum_overflow`` diagnostics row naming the conversation.
        """
        builder = self.builders["usage"]
        if isinstance(rows, UsageColumns):
            self._usage_held.append((rows, given["source"], given["conversation_id"]))
            self._usage_held_rows += len(rows)
            if self._usage_held_rows >= BATCH_ROWS:
                self._write_usage()
            usages = rows.usages
            seqs = rows.seq.to_pylist()
            for i in (i for i, u in enumerate(usages) if u.problems):  # few: only these are made rows
                self._problems(given["source"], path, rows.slice(i, i + 1).rows()[0])
        else:
            self._write_usage()  # after the columns of the conversations added before
            for r in rows:
                builder.add(r, given)
                self._problems(given["source"], path, r)
            usages, seqs = [r.usage for r in rows], [r.seq for r in rows]
        counters: list[int | None] = []
        unreported = 0
        for u in usages:
            if not u.reported:
                unreported += 1
            counters += (u.input_total_tokens, u.output_tokens, u.reasoning_tokens)
        total, overflowed = counter_sum(counters)
        if overflowed:
            self.add_diagnostics([Diagnostic(
                given["source"], path or "", None, "sum_overflow",
                f"conversations.tokens of conversation {given['conversation_id']!r} (input_total + output + "
                f"reasoning tokens of its {len(usages)} usage rows) is {sum(n or 0 for n in counters)}, past the "
                "int64 limit 2**63-1: it is null, and so is growth.context_tokens where one response's own "
                "tokens pass it")])
        return total, unreported, [s for s in seqs if s is not None]

    def _write_usage(self) -> None:
        """Write the usage held as columns, every conversation's at once, in the order added."""
        held, self._usage_held, self._usage_held_rows = self._usage_held, [], 0
        if not held:
            return
        joined = UsageColumns.joined([u for u, _, _ in held])
        owner = np.repeat(np.arange(len(held), dtype=np.int64), [len(u) for u, _, _ in held])
        given = Keys([(source, cid) for _, source, cid in held]).of(owner)
        self.builders["usage"].add_row_columns(joined, len(joined), given)

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
        self._build()
        self._write_usage()
        return {name: b.finish() for name, b in self.builders.items()}

