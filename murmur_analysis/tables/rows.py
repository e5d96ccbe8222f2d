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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.handoff import ToolMeta

__all__ = ["CallColumns", "ConversationRow", "EntryIndex", "EntryTimes", "recorded_calls"]

_KEY = pa.binary(16)
_PACKED = 1 << 32


@dataclass(frozen=True, slots=True)
class CallColumns:
    """Tool calls of a batch of conversations: the pairing walks' rows and what the runtimes recorded per call.

    Attributes:
        rows: the pairings' rows, one conversation's after another's
            (:data:`~murmur_analysis.core.handoff.PAIRED` columns).
        conversation: per row, the conversation it belongs to (an index into the batch).
        meta: per row, the runtime's record of that call (:class:`~murmur_analysis.core.handoff.ToolMeta`);
            ``None`` for a result with no call or a call the runtime kept nothing about. Empty
            when no runtime of the batch keeps such a record.
        times: when the entries holding the calls and results were written (``called_at``,
            ``result_at``); ``None``: not known.
    """

    rows: pa.RecordBatch
    conversation: np.ndarray
    meta: tuple[ToolMeta | None, ...] = ()
    times: EntryTimes | None = None

    def pairing(self, name: str) -> pa.Array:
        """The pairing's column ``name``."""
        return self.rows.column(name)

    def at(self, seq: str) -> pa.Array | None:
        """The ``created_at`` of the entry at each row's pairing column ``seq`` (null where unknown)."""
        return None if self.times is None else self.times.at(self.conversation, self.rows.column(seq))

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


def recorded_calls(rows: pa.RecordBatch, meta: Mapping[str, ToolMeta]) -> tuple[ToolMeta | None, ...]:
    """Per row of one conversation's pairing, the runtime's record of its call in ``meta`` (by call id).

    ``None`` for a result with no call and for a call ``meta`` has no record of; empty when
    ``meta`` is (or the pairing has no row).
    """
    if not meta or not rows.num_rows:
        return ()
    called = rows.column("called_seq").to_pylist()
    ids = rows.column("call_id").to_pylist()
    return tuple(meta.get(i) if c is not None else None for i, c in zip(ids, called, strict=True))


class EntryIndex:
    """Entries of a batch of conversations, found by their conversation (an index into the batch) and position.

    Each entry is one key: its conversation and position packed into an ``int64`` where every
    position of the batch fits 32 bits, else 16 bytes.

    Args:
        conversation: each entry's conversation.
        position: each entry's position (no nulls).
    """

    def __init__(self, conversation: np.ndarray, position: pa.Array) -> None:
        span = pc.min_max(position)
        low, high = span["min"].as_py(), span["max"].as_py()
        self._packed = low is None or (low >= 0 and high < _PACKED)
        self.keys = self._keys(conversation, position)

    def _keys(self, conversation: np.ndarray, position: pa.Array) -> pa.Array:
        """The keys of entries at ``position`` of ``conversation`` (null for a null position)."""
        n = len(position)
        if self._packed:  # a position outside 32 bits names no entry held: a null key
            at = pc.fill_null(position, -1).to_numpy(zero_copy_only=False)
            fits = (at >= 0) & (at < _PACKED)
            packed = (conversation.astype(np.int64) << 32) | np.where(fits, at, 0)
            return pa.array(packed, pa.int64(), mask=~fits)
        pairs = np.empty((n, 2), dtype=np.int64)
        pairs[:, 0] = conversation
        pairs[:, 1] = pc.fill_null(position, 0).to_numpy(zero_copy_only=False)
        valid = None
        if position.null_count:
            valid = pa.py_buffer(np.packbits(position.is_valid().to_numpy(zero_copy_only=False), bitorder="little"))
        return pa.Array.from_buffers(_KEY, n, [valid, pa.py_buffer(pairs.tobytes())])

    def find(self, conversation: np.ndarray, position: pa.Array) -> pa.Array:
        """The index of the first entry held at each ``position`` of its ``conversation`` (null: none)."""
        return pc.index_in(self._keys(conversation, position), value_set=self.keys)

    def holds(self, conversation: np.ndarray, position: pa.Array) -> np.ndarray:
        """Whether an entry is held at each ``position`` of its ``conversation``."""
        found: np.ndarray = pc.is_in(self._keys(conversation, position),
                                     value_set=self.keys).to_numpy(zero_copy_only=False)
        return found


@dataclass(frozen=True, slots=True)
class EntryTimes:
    """When entries of a batch of conversations were written, by conversation and position.

    Attributes:
        entries: the entries (:class:`EntryIndex`).
        created_at: each one's ``created_at`` (null where the runtime recorded no time).
    """

    entries: EntryIndex
    created_at: pa.Array

    def at(self, conversation: np.ndarray, seqs: pa.Array) -> pa.Array:
        """The time of the entry at each of ``seqs`` of its ``conversation`` (null for a null seq or an entry not held).

        An entry held twice under one position answers with the first.
        """
        return pc.take(self.created_at, self.entries.find(conversation, seqs))


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
