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

    Each entry is one ``int64`` key, its conversation in the high 32 bits and its position in
    the low: the position itself where every position of the batch fits 32 bits, else its rank
    among the batch's positions. The keys are sorted once (stably, so the first of entries held
    twice under one key comes first; in the usual batch, conversation after conversation in
    position order, they are sorted already) and every lookup is a binary search.

    Args:
        conversation: each entry's conversation.
        position: each entry's position (a null position names no entry).
    """

    def __init__(self, conversation: np.ndarray, position: pa.Array) -> None:
        span = pc.min_max(position)
        low, high = span["min"].as_py(), span["max"].as_py()
        self._ranks: np.ndarray | None = None  # the positions held, sorted, where they do not fit 32 bits
        if low is not None and not (low >= 0 and high < _PACKED):
            self._ranks = np.unique(position.drop_null().to_numpy(zero_copy_only=False))
        keys, valid = self._keys(conversation, position)
        held = np.flatnonzero(valid)
        keys = keys[held]
        if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
            order = np.argsort(keys, kind="stable")
            keys, held = keys[order], held[order]
        self._sorted = keys
        self._rows = held  # the entry of each sorted key

    def _keys(self, conversation: np.ndarray, position: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """The key of the entry at each ``position`` of its ``conversation``, and whether it may name one."""
        at = pc.fill_null(position, -1).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        valid = position.is_valid().to_numpy(zero_copy_only=False)
        if self._ranks is None:
            valid &= (at >= 0) & (at < _PACKED)  # a position outside 32 bits names no entry held
        else:
            rank = np.searchsorted(self._ranks, at)
            valid &= (rank < len(self._ranks)) & (self._ranks[np.minimum(rank, len(self._ranks) - 1)] == at)
            at = rank
        return (np.asarray(conversation, dtype=np.int64) << 32) | np.where(valid, at, 0), valid

    def _lookup(self, conversation: np.ndarray, position: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """The index into the sorted keys of each query's first match, and whether it has one."""
        keys, valid = self._keys(conversation, position)
        i = np.searchsorted(self._sorted, keys)
        found = valid & (i < len(self._sorted))
        found[found] = self._sorted[i[found]] == keys[found]
        return i, found

    def find(self, conversation: np.ndarray, position: pa.Array) -> pa.Array:
        """The index of the first entry held at each ``position`` of its ``conversation`` (null: none)."""
        i, found = self._lookup(conversation, position)
        rows = np.zeros(len(i), dtype=np.int64)
        rows[found] = self._rows[i[found]]
        return pa.array(rows, pa.int64(), mask=~found)

    def holds(self, conversation: np.ndarray, position: pa.Array) -> np.ndarray:
        """Whether an entry is held at each ``position`` of its ``conversation``."""
        return self._lookup(conversation, position)[1]


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
