"""A fork's or spawned thread's copied prefix: found, so that it is counted in its parent only.

When Codex forks a thread (``session_meta.forked_from_id``) or spawns one
(``source.subagent.thread_spawn.parent_thread_id``), the child's rollout starts with a copy of
the parent's items (its ``session_meta`` too), often re-stamped with the fork's time. Those
lines are the parent's messages and spend; read as the child's they count twice (ccusage#950,
#1371). The prefix is found two ways:

* **The parent is in the load.** The prefix is the longest leading run of the child's items
  (``session_meta`` and ``turn_context`` lines left out of the comparison) equal, item by
  item, to the run of the parent's items that ends at the fork: the parent's last item written
  at or before the child's creation time (its ``session_meta.timestamp``). Items are compared
  by kind and payload, never by envelope time (the engine's ``payload_hash``).
* **It is not.** Only a child that carries a second ``session_meta`` (the parent's, copied) is
  cut. Codex mints turn ids as UUIDv7s when a turn starts, so a copied turn's id is older than
  the child and the child's own first turn's is not: the prefix runs to the first
  ``turn_context`` or ``task_started`` after the second ``session_meta`` whose turn id is a
  UUIDv7 minted at or after the child's creation (the child id's UUIDv7 time, else its
  ``session_meta.timestamp``); where no turn after it carries a UUIDv7 id, to the first
  ``task_started``/``turn_context`` after it. A child with one ``session_meta`` is not cut.
  Either way a diagnostics row says the parent was missing and which rule cut it.

Everything before the end of the prefix is not the child's: no message, no usage, no growth
row. Its last ``total_token_usage`` is the baseline the child's first delta goes on from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Strip", "copied_prefix", "fallback_prefix"]

_FRAME = ("session_meta", "turn_context")


@dataclass(frozen=True, slots=True)
class Strip:
    """Where a rollout's copied prefix ends.

    Attributes:
        end: rows before this index are the parent's (0: nothing copied).
        rule: ``parent`` (matched against the parent's rows), ``turn_id`` or ``turn`` (the
            fallback rules above), or ``none``.
    """

    end: int
    rule: str


NONE = Strip(0, "none")


def _items(table: pa.Table, until_us: int | None = None) -> np.ndarray:
    """The indexes of the rows that are items (not ``session_meta``/``turn_context``), up to a time."""
    mask = pc.invert(pc.fill_null(pc.is_in(table.column("type"), value_set=pa.array(_FRAME)), False))
    if until_us is not None:
        ts = table.column("ts_us")
        mask = pc.and_(mask, pc.fill_null(pc.less_equal(ts, until_us), True))
    return np.flatnonzero(mask.to_numpy(zero_copy_only=False))


def _hashes(table: pa.Table, rows: np.ndarray) -> np.ndarray:
    return np.asarray(pc.fill_null(table.column("payload_hash").take(pa.array(rows, pa.int64())), 0)
                      .to_numpy(zero_copy_only=False), dtype=np.int64)


def copied_prefix(child: pa.Table, parent: pa.Table, fork_us: int | None) -> Strip:
    """The prefix ``child`` copied from ``parent``: its longest leading run equal to the parent's run up to the fork."""
    mine = _items(child)
    theirs = _hashes(parent, _items(parent, fork_us))
    if not len(mine) or not len(theirs):
        return NONE
    ours = _hashes(child, mine)
    n = len(theirs)
    for start in np.flatnonzero(theirs == ours[0]):  # ascending: the longest run first
        k = n - int(start)
        if k <= len(ours) and np.array_equal(ours[:k], theirs[start:]):
            return Strip(int(mine[k - 1]) + 1, "parent")
    return NONE


def fallback_prefix(child: pa.Table, created_us: int | None) -> Strip:
    """The copied prefix of a child whose parent is not in the load (the rule above)."""
    kinds = child.column("type")
    metas = np.flatnonzero(pc.fill_null(pc.equal(kinds, "session_meta"), False).to_numpy(zero_copy_only=False))
    if len(metas) < 2:
        return NONE
    second = int(metas[1])
    turn = pc.or_(pc.equal(kinds, "turn_context"), pc.and_(pc.equal(kinds, "event_msg"), pc.is_in(
        child.column("payload_type"), value_set=pa.array(["task_started", "turn_started"]))))
    turns = np.flatnonzero(pc.fill_null(turn, False).to_numpy(zero_copy_only=False))
    turns = turns[turns > second]
    minted = child.column("turn_us").take(pa.array(turns, pa.int64()))
    if pc.any(pc.is_valid(minted)).as_py():
        if created_us is None:
            return NONE
        own = np.flatnonzero(pc.fill_null(pc.greater_equal(minted, created_us), False).to_numpy(zero_copy_only=False))
        return Strip(int(turns[own[0]]) if len(own) else child.num_rows, "turn_id")
    return Strip(int(turns[0]) if len(turns) else child.num_rows, "turn")
