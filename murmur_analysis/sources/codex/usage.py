"""Codex usage from ``token_count`` events: one usage row per model call, nothing counted twice.

The rule, over a rollout's ``event_msg/token_count`` rows in line order (numpy over the rows,
no loop per event):

1. Only events whose ``info`` is an object count; an ``info: null`` event says nothing.
2. An event counts only when its ``total_token_usage`` *changed* from the previous event's
   (an event with no total counts too: there is nothing to compare). Codex re-emits the
   unchanged totals when only the rate limits changed; counting those again is ccusage#1288.
3. Its delta is its ``last_token_usage``; with no ``last``, the total minus the previous total,
   field by field, never below 0.
4. A delta whose input, cached, output and reasoning are all 0 is no call (a context-window
   reset, ``fill_to_context_window``, writes ``total = {total_tokens: window}`` and a ``last``
   with only ``total_tokens``: the reset is skipped, and the next total, counted from 0 again,
   differs from it, so the call after it counts once with its own ``last``).

The previous total of the first event a conversation keeps is the last one before it: for a
fork, the last total of the copied prefix (stripped, :mod:`.fork`), so a delta worked out from
totals starts at the parent's spend, not at 0; for the lines after a resume point, the last
total before the point (:class:`Totals`, kept in the point's carry).

Counters follow Codex's ``TokenUsage``: ``input_tokens`` is the whole prompt with
``cached_input_tokens`` inside it, and ``output_tokens`` holds ``reasoning_output_tokens``: the
OpenAI rule of :mod:`murmur_analysis.core.providers`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["COUNTERS", "TOTALS", "Deltas", "Totals", "deltas", "last_totals"]

#: The counters of ``TokenUsage`` a delta keeps, in order (``total_tokens`` is only compared).
COUNTERS = ("input", "cached", "output", "reasoning")
#: The counters of ``total_token_usage`` compared from one event to the next.
TOTALS = (*COUNTERS, "tokens")
_TOTALS = TOTALS


@dataclass(frozen=True, slots=True)
class Totals:
    """Per rollout, the ``total_token_usage`` of its last event that carried one.

    Attributes:
        values: ``len(TOTALS) x rollouts`` counters (0 where ``valid`` is false).
        valid: which of ``values`` were written.
        has: per rollout, whether any event carried a total (else ``values`` mean nothing).
    """

    values: np.ndarray
    valid: np.ndarray
    has: np.ndarray

    @classmethod
    def of(cls, totals: list[list[int | None] | None]) -> Totals:
        """Per rollout, its totals as :data:`TOTALS` values (``None``: none), as the point's carry keeps them."""
        n = len(totals)
        values = np.zeros((len(TOTALS), n), dtype=np.int64)
        valid = np.zeros((len(TOTALS), n), dtype=bool)
        for r, total in enumerate(totals):
            for k, v in enumerate(total or ()):
                if v is not None:
                    values[k, r], valid[k, r] = v, True
        return cls(values, valid, np.array([t is not None for t in totals], dtype=bool))

    def at(self, r: int) -> list[int | None] | None:
        """Rollout ``r``'s totals as :data:`TOTALS` values, ``None`` where not written (``None``: no total)."""
        if not self.has[r]:
            return None
        return [int(v) if ok else None for v, ok in zip(self.values[:, r], self.valid[:, r], strict=True)]


@dataclass(frozen=True, slots=True)
class Deltas:
    """The token_count events that count, and each one's delta.

    Attributes:
        rows: the index (in the rollout's rows) of each counted event, ascending.
        values: ``len(COUNTERS) x len(rows)`` delta counters (0 where ``valid`` is false).
        valid: which of ``values`` were reported (a counter missing from ``last`` is null).
    """

    rows: np.ndarray
    values: np.ndarray
    valid: np.ndarray


def _matrix(table: pa.Table, prefix: str, names: tuple[str, ...], take: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The columns ``prefix_<name>`` at rows ``take``: values (0 for null) and validity."""
    cols = [table.column(f"{prefix}_{n}").take(take) for n in names]
    values = np.stack([pc.fill_null(c, 0).to_numpy(zero_copy_only=False) for c in cols]).astype(np.int64)
    valid = np.stack([pc.is_valid(c).to_numpy(zero_copy_only=False) for c in cols])
    return values.reshape(len(names), len(take)), valid.reshape(len(names), len(take))


def token_rows(table: pa.Table) -> np.ndarray:
    """The rows of ``token_count`` events whose ``info`` is an object, in line order."""
    mask = pc.and_(pc.and_(pc.equal(table.column("type"), "event_msg"),
                           pc.equal(table.column("payload_type"), "token_count")),
                   pc.equal(table.column("info"), 1))
    return np.flatnonzero(pc.fill_null(mask, False).to_numpy(zero_copy_only=False))


def deltas(table: pa.Table, rollout: np.ndarray | None = None, before: Totals | None = None) -> Deltas:
    """Every counted ``token_count`` event of a rollout's rows and its delta (the rule above).

    Args:
        table: the rows.
        rollout: for rows of several rollouts one after the other, the rollout of each row (a
            delta never goes on from an event of another rollout); ``None``: one rollout.
        before: per rollout, the last totals before its first row (its rows go on from a
            resume point); ``None``: none.
    """
    rows = token_rows(table)
    n = len(rows)
    take = pa.array(rows, pa.int64())
    total, total_valid = _matrix(table, "total", _TOTALS, take)
    last, last_valid = _matrix(table, "last", COUNTERS, take)
    if n == 0:
        return Deltas(rows, last, last_valid)
    has_total = total_valid.any(axis=0)
    # the last event at or before each one that carried a total; the previous one's, strictly before
    at = np.maximum.accumulate(np.where(has_total, np.arange(n), -1))
    prev_at = np.concatenate([[-1], at[:-1]]).astype(np.int64)
    known = prev_at >= 0
    mine = rollout[rows] if rollout is not None else np.zeros(n, dtype=np.int64)
    known &= mine[np.maximum(prev_at, 0)] == mine
    safe = np.where(known, prev_at, 0)
    prev = np.where(known, total[:, safe], 0)
    prev_valid = np.where(known, total_valid[:, safe], False)
    if before is not None:  # the first events of a rollout read on from a point go on from its totals
        seeded = ~known & before.has[mine]
        prev = np.where(seeded, before.values[:, mine], prev)
        prev_valid = np.where(seeded, before.valid[:, mine], prev_valid)
        known |= seeded
    changed = ((total != prev) | (total_valid != prev_valid)).any(axis=0)
    advanced = ~has_total | ~known | changed
    has_last = last_valid.any(axis=0)
    grown = np.maximum(total[:4] - prev[:4], 0)
    values = np.where(has_last, last, grown)
    valid = np.where(has_last, last_valid, total_valid[:4])
    counted = advanced & (values != 0).any(axis=0)
    return Deltas(rows[counted], values[:, counted], valid[:, counted])


def last_totals(table: pa.Table, rollout: np.ndarray, n: int, before: Totals | None = None) -> Totals:
    """Per rollout of ``n``, the totals of its last event that carried one, else ``before``'s.

    What a read after its rows goes on from.
    """
    rows = token_rows(table)
    total, total_valid = _matrix(table, "total", _TOTALS, pa.array(rows, pa.int64()))
    carried = np.flatnonzero(total_valid.any(axis=0))
    owner = rollout[rows[carried]]
    values = before.values.copy() if before is not None else np.zeros((len(_TOTALS), n), dtype=np.int64)
    valid = before.valid.copy() if before is not None else np.zeros((len(_TOTALS), n), dtype=bool)
    has = before.has.copy() if before is not None else np.zeros(n, dtype=bool)
    if len(carried):
        # the last carrying event of each rollout: owners ascend, so the last index of each
        last = len(owner) - 1 - np.unique(owner[::-1], return_index=True)[1]
        who = owner[last]
        values[:, who], valid[:, who], has[who] = total[:, carried[last]], total_valid[:, carried[last]], True
    return Totals(values, valid, has)
