"""The values the frame builder computes two of its tables from, beside the hand-off's own.

Every table's columns are declared in :mod:`murmur_analysis.tables.schema` with how each is computed
from one typed value: a chunk of entries (:class:`~murmur_analysis.core.handoff.EntryColumns`) for
``messages``, a row of the hand-off (:class:`~murmur_analysis.core.handoff.UsageRow`, ...) for the
side tables, and the two values below, which only the frame builder puts together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from ..core.handoff import ToolMeta

__all__ = ["CallColumns", "ConversationRow", "EntryTimes"]


@dataclass(frozen=True, slots=True)
class CallColumns:
    """A conversation's tool calls: the pairing walk's rows and what the runtime recorded per call.

    Attributes:
        rows: the pairing's rows (:data:`~murmur_analysis.core.handoff.PAIRED` columns).
        meta: per row, the runtime's record of that call (:class:`~murmur_analysis.core.handoff.ToolMeta`);
            ``None`` for a result with no call or a call the runtime kept nothing about. Empty
            when the runtime keeps no such record.
        times: when the entries holding the calls and results were written (``called_at``,
            ``result_at``); ``None``: not known.
    """

    rows: pa.RecordBatch
    meta: tuple[ToolMeta | None, ...] = ()
    times: EntryTimes | None = None

    @classmethod
    def join(cls, rows: pa.RecordBatch, meta: Mapping[str, ToolMeta], times: EntryTimes | None = None) -> CallColumns:
        """The pairing's rows with each call's record in ``meta`` (by call id) and its entries' ``times`` beside it."""
        if not meta or not rows.num_rows:
            return cls(rows, (), times)
        called = rows.column("called_seq").to_pylist()
        ids = rows.column("call_id").to_pylist()
        return cls(rows, tuple(meta.get(i) if c is not None else None for i, c in zip(ids, called, strict=True)),
                   times)

    def pairing(self, name: str) -> pa.Array:
        """The pairing's column ``name``."""
        return self.rows.column(name)

    def at(self, seq: str) -> pa.Array | None:
        """The ``created_at`` of the entry at each row's pairing column ``seq`` (null where unknown)."""
        return None if self.times is None else self.times.at(self.rows.column(seq))

    def recorded(self, name: str) -> list[object] | None:
        """The runtime's ``ToolMeta`` field ``name`` per row (null where it kept none; ``None``: none kept)."""
        if not self.meta:
            return None
        return [None if m is None else getattr(m, name) for m in self.meta]

    def recorded_or_paired(self, name: str) -> list[object] | pa.Array:
        """The runtime's ``ToolMeta`` field ``name`` where it recorded one, else the pairing's column."""
        paired = self.rows.column(name)
        if not self.meta:
            return paired
        values = paired.to_pylist()
        return [v if m is None or getattr(m, name) is None else getattr(m, name)
                for v, m in zip(values, self.meta, strict=True)]


@dataclass(frozen=True, slots=True)
class EntryTimes:
    """When entries of a conversation were written, by position: those a tool call or result is in.

    Attributes:
        position: each entry's position (``seq``).
        created_at: its ``created_at`` (null where the runtime recorded no time).
    """

    position: pa.Array
    created_at: pa.Array

    def at(self, seqs: pa.Array) -> pa.Array:
        """The time of the entry at each of ``seqs`` (null for a null seq or an entry not held here)."""
        found = pc.index_in(seqs, value_set=self.position)
        return pc.take(self.created_at, found)


@dataclass(frozen=True, slots=True)
class ConversationRow:
    """One conversation's row of the ``conversations`` table, as the frame builder counted it."""

    title: str | None
    path: str | None
    first_at: datetime | None
    last_at: datetime | None
    messages: int
    tool_calls: int
    tool_errors: int
    orphans: int
    tokens: int | None
    unreported_responses: int
    truncated_dropped: int | None
    parent_conversation_id: str | None
    parent_call_id: str | None
    conversation_id_bytes: bytes | None
    path_bytes: bytes | None
