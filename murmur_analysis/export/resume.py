"""The rows of a record that grew: its appended messages' rows, continued from the rows exported before.

The previous export's rows of a conversation are kept where appending cannot change them
(``messages``, ``growth``, ``orphans``, ``diagnostics``, and ``tool_calls`` unless an appended
result answers an earlier call), and the appended messages' rows are written beside them,
continued from the resume point (:mod:`murmur_analysis.sources.resume`):

* ``messages``: ``seq`` goes on from the messages before;
* ``growth``: ``position``, ``messages`` and ``chars`` go on from the point's counts (a record
  read this way has no usage, so ``context_tokens`` stays null);
* ``tool_calls``: the pairing walk of the appended messages alone, then told what the earlier
  walk left: a result naming a call still unanswered answers it (that call's row is rewritten,
  with the rest of the conversation's rows); ``orphans`` are the appended results left
  ``orphan_result``;
* ``conversations``: the one row rewritten from the earlier row and the appended rows.

The walk gives the same rows as a walk of the whole record, except in three cases, where the
record is read whole instead (:func:`continue_rows` returns ``None``): an appended call reuses
an id called before (which call a result answers then depends on both parts); an appended
result names a call answered before (a ``duplicate_result``); or the appended messages go on
the last run of one side with tool calls while that run's part before the point holds a result
the walk left with no call (the walk opens a run's calls before its results, so one of those
calls would answer it, and the run's calls come before its unanswered results; see
:attr:`~murmur_analysis.core.handoff.ResumePoint.run_loose`). A run of one side otherwise splits
anywhere: its calls before the point stay open for its results after it, and its unanswered
results stay so. The ids called before are kept as hashes (:class:`CalledIds`), so a
collision can only send a record to a whole read, never change a row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.handoff import ResumePoint
from ..sources.resume import Tail
from ..tables.schema import schema
from .layout import Generation
from .state import ExportState

__all__ = ["Appended", "Walk", "answer", "appended_to_previous", "continue_rows", "unit_rows"]


@dataclass
class Appended:
    """What to write for a conversation whose record grew.

    Attributes:
        tables: its rows to write, by table.
        replaced: the tables whose earlier rows of it are dropped (``tables`` holds them all).
        point: the resume point after this read (``None``: the next read is whole).
        answered: the conversation's earlier ``tool_calls`` rows (by index) that appended
            results answer, with their new result fields.
    """

    tables: dict[str, pa.Table]
    replaced: set[str] = field(default_factory=set)
    point: ResumePoint | None = None
    answered: dict[int, dict[str, Any]] = field(default_factory=dict)


#: The ``tool_calls`` columns a result gives its call's row (with ``status``).
_RESULT = ("result_seq", "result_at", "is_error", "result_chars", "result_text")


def unit_rows(previous: ExportState, generation: Generation, unit: str, table: str,
              columns: list[str] | None = None) -> pa.Table:
    """The rows of ``unit`` in ``table`` of the previous export: the declared columns, or ``columns`` of them."""
    declared = schema(table)
    if columns is not None:
        declared = pa.schema([declared.field(c) for c in columns])
    parts = []
    for relative, offset, n in previous.unit_files(unit, table):
        source = previous.files[relative]["source"]
        stored = [c for c in declared.names if c != "source" or source is None]
        data = pq.read_table(generation.path / relative, columns=stored).slice(offset, n)
        if source is not None and "source" in declared.names:
            data = data.add_column(0, "source", pa.array([source] * n, pa.string()))
        parts.append(data.select(declared.names).cast(declared))
    return pa.concat_tables(parts) if parts else declared.empty_table()


def _shift(table: pa.Table, columns: dict[str, int]) -> pa.Table:
    for name, by in columns.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, name, pc.add(table.column(name), pa.scalar(by, pa.int64())))
    return table


def _sum(a: Any, b: Any) -> Any:
    return a if b is None else b if a is None else a + b


class _ByHash:
    """Rows filed under the 64-bit hashes of ids: two sorted NumPy arrays, 16 bytes an entry.

    A record's ids number in the millions, so Python strings (or a dict of them) would make the
    memory of a range-by-range export grow with the record many times over. The latest entries
    wait in a dict until there are :attr:`_MERGE` of them; a row of -1 is one taken away.
    """

    _MERGE = 65_536  # recent entries kept in a dict before they join the sorted arrays
    _hash = staticmethod(hash)

    def __init__(self) -> None:
        self._hashes = np.empty(0, dtype=np.int64)
        self._rows = np.empty(0, dtype=np.int64)
        self._recent: dict[int, list[int]] = {}
        self._pending = 0  # entries added since the last merge
        self._live = 0  # entries not taken away

    def __len__(self) -> int:
        return self._live

    def _add(self, key: str, row: int) -> None:
        self._recent.setdefault(self._hash(key), []).append(row)
        self._pending += 1
        self._live += 1
        if self._pending >= self._MERGE:
            self._merge()

    def _merge(self) -> None:
        recent = [(h, r) for h, rows in self._recent.items() for r in rows]
        keep = self._rows >= 0
        hashes = np.concatenate([self._hashes[keep], np.array([h for h, _ in recent], dtype=np.int64)])
        rows = np.concatenate([self._rows[keep], np.array([r for _, r in recent], dtype=np.int64)])
        # By hash; a stable sort keeps a hash's entries in the order added (oldest row first).
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._rows = hashes[order], rows[order]
        self._recent, self._pending = {}, 0

    def _span(self, key_hash: int) -> tuple[int, int]:
        """Where ``key_hash``'s entries are in the sorted arrays."""
        left = int(np.searchsorted(self._hashes, key_hash, side="left"))
        return left, int(np.searchsorted(self._hashes, key_hash, side="right"))


class CalledIds(_ByHash):
    """The call ids a walk has met, kept as 64-bit hashes (16 bytes an id with its unused row), not strings.

    A hash may collide, so :meth:`maybe` answers "maybe met": a caller that needs the exact
    answer reads the record whole instead, which is exact whatever the hashes say.
    """

    def add(self, call_id: str) -> None:
        """Remember ``call_id``."""
        self._add(call_id, 0)

    def maybe(self, call_ids: list[str]) -> bool:
        """Whether any of ``call_ids`` may have been met (``False``: none was, for certain)."""
        if not call_ids:
            return False
        hashes = [self._hash(i) for i in call_ids]
        if any(h in self._recent for h in hashes):
            return True
        wanted = np.array(hashes, dtype=np.int64)
        at = np.searchsorted(self._hashes, wanted)
        found = at < len(self._hashes)
        return bool((self._hashes[at[found]] == wanted[found]).any())


class OpenCalls(_ByHash):
    """The calls not yet answered, by the hash of their id: their rows, oldest first.

    :meth:`take` may hand back the row of another id with the same hash, so its caller checks
    the row's id where the row is (:func:`answer`) and reads the record whole when it differs.
    """

    def add(self, call_id: str, row: int) -> None:
        """``row`` is a call of ``call_id`` that waits for its result (rows are added in ascending order)."""
        self._add(call_id, row)

    def take(self, call_id: str) -> int | None:
        """The oldest waiting row filed under ``call_id``'s hash, taken away (``None``: none waits)."""
        if not self._live:
            return None
        key = self._hash(call_id)
        left, right = self._span(key)
        if left < right:
            waiting = np.flatnonzero(self._rows[left:right] >= 0)
            if len(waiting):
                i = left + int(waiting[0])
                row = int(self._rows[i])
                self._rows[i] = -1
                self._live -= 1
                return row
        recent = self._recent.get(key)
        if not recent:
            return None
        row = recent.pop(0)
        if not recent:
            del self._recent[key]
        self._live -= 1
        return row


@dataclass
class Walk:
    """What the pairing walk of the rows before a point left: the ids called, and the calls still open.

    Attributes:
        called: every call id called before (as hashes: a hit means "maybe", see :class:`CalledIds`).
        waiting: the indexes (among the conversation's ``tool_calls`` rows) of its calls not yet
            answered, by call id (as hashes: see :class:`OpenCalls`).
        rows: the conversation's ``tool_calls`` rows before the point.
    """

    called: CalledIds = field(default_factory=CalledIds)
    waiting: OpenCalls = field(default_factory=OpenCalls)
    rows: int = 0

    def go_on(self, tail: pa.Table) -> tuple[dict[int, dict[str, Any]], pa.Table] | None:
        """Continue over the ``tool_calls`` rows a walk of the appended messages alone made (``None``: not exactly).

        Returns:
            The earlier rows the appended results answer (by index, their new result fields and
            the ``call_id`` the row must have, see :func:`answer`) and the appended rows that
            stay, with their final status. The walk moves past them.
        """
        if any(k != "client" for k in tail.column("kind").to_pylist()):
            return None
        ids = tail.column("call_id").to_pylist()
        calls = np.flatnonzero(tail.column("called_seq").is_valid().to_numpy(zero_copy_only=False))
        if self.called.maybe([ids[j] for j in calls]):
            return None  # an appended call may reuse an id called before: read whole
        orphans = np.flatnonzero(pc.equal(tail.column("status"), "orphan_result").to_numpy(zero_copy_only=False))
        answered: dict[int, dict[str, Any]] = {}
        keep = np.ones(tail.num_rows, dtype=bool)
        left: list[str] = []  # the results that stay orphans
        for j in orphans.tolist():
            row = self.waiting.take(ids[j]) if self.waiting else None
            if row is None:
                left.append(ids[j])
                continue
            change = tail.slice(j, 1).select(["call_id", *_RESULT]).to_pylist()[0]
            change["status"] = "error" if change["is_error"] is True else "ok"
            answered[row] = change
            keep[j] = False
        if self.called.maybe(left):
            return None  # a result for a call answered before (or a hash collision): read whole
        kept = tail if keep.all() else tail.filter(pa.array(keep))
        self.feed(kept)
        return answered, kept

    def feed(self, rows: pa.Table) -> None:
        """Move past ``rows`` (the next ``tool_calls`` rows of the conversation, as the whole walk made them)."""
        ids = rows.column("call_id").to_pylist()
        calls = rows.column("called_seq").is_valid().to_numpy(zero_copy_only=False)
        waiting = pc.equal(rows.column("status"), "unanswered").to_numpy(zero_copy_only=False)
        for j in np.flatnonzero(calls).tolist():
            self.called.add(ids[j])
            if waiting[j]:
                self.waiting.add(ids[j], self.rows + j)
        self.rows += rows.num_rows


def continue_rows(
    tail: Tail, point: ResumePoint, tables: dict[str, pa.Table], walk: Walk, before: dict[str, Any] | None,
) -> Appended | None:
    """The rows of a record's messages after ``point``, from their own ``tables``; ``None``: read it whole.

    Args:
        tail: the messages after the point (:func:`~murmur_analysis.sources.resume.read_on`).
        point: the resume point they were read from.
        tables: their rows as the frame builder made them for them alone (priced).
        walk: what the pairing walk of the rows before the point left (moved past these).
        before: the conversation's ``conversations`` row for the messages before the point
            (``None``: there were none).

    Returns:
        Their rows: ``tool_calls`` holds the appended rows only; the earlier rows they
        answer are in :attr:`Appended.answered`.
    """
    if tables["usage"].num_rows or tables["steps"].num_rows:
        return None
    if tail.first_side == point.side and tail.first_run_calls and point.run_loose:
        return None
    new_conv = tables["conversations"].to_pylist()
    if len(new_conv) != 1:
        return None
    base = point.messages
    out = dict(tables)
    out["messages"] = _shift(tables["messages"], {"seq": base})
    out["growth"] = _shift(tables["growth"], {"position": base, "messages": base, "chars": point.chars})
    calls = _shift(tables["tool_calls"], {"called_seq": base, "result_seq": base})
    paired = walk.go_on(calls)
    if paired is None:
        return None
    answered, kept = paired
    out["tool_calls"] = kept
    orphans = kept.column("call_id").filter(pc.equal(kept.column("status"), "orphan_result"))
    now = new_conv[0]
    n = len(orphans)
    out["orphans"] = pa.Table.from_pydict(
        {"source": [now["source"]] * n, "conversation_id": [now["conversation_id"]] * n, "step": [None] * n,
         "commit": [None] * n, "tool_use_id": orphans, "found_by": ["assembly"] * n}, schema=schema("orphans"))
    row = dict(now)
    if before is not None:
        times = [t for t in (before["first_at"], now["first_at"]) if t is not None]
        lasts = [t for t in (before["last_at"], now["last_at"]) if t is not None]
        row = dict(before)
        row.update(
            title=before["title"] if before["title"] is not None else now["title"],
            first_at=min(times) if times else None,
            last_at=max(lasts) if lasts else None,
            messages=before["messages"] + now["messages"],
            tool_calls=before["tool_calls"] + now["tool_calls"],
            tool_errors=before["tool_errors"] + now["tool_errors"],
            orphans=before["orphans"] + n,
            tokens=_sum(before["tokens"], now["tokens"]),
            unreported_responses=_sum(before["unreported_responses"], now["unreported_responses"]),
            cost_usd=_sum(before["cost_usd"], now["cost_usd"]),
            unpriced_responses=_sum(before["unpriced_responses"], now["unpriced_responses"]),
        )
    else:
        row["orphans"] = n
    row["tool_errors"] += sum(c["status"] == "error" for c in answered.values())
    out["conversations"] = pa.Table.from_pylist([row], schema=schema("conversations"))
    return Appended(out, {"conversations"}, tail.point, answered)


def answer(calls: pa.Table, changes: dict[int, dict[str, Any]]) -> pa.Table | None:
    """``tool_calls`` rows with the result fields of the rows at the indexes of ``changes`` replaced.

    ``None`` when a row's ``call_id`` is not the change's: the walk found it by a hash that
    collided (:class:`OpenCalls`), and the record is read whole.
    """
    if not changes:
        return calls
    at = sorted(changes)
    ids = calls.column("call_id").take(pa.array(at, pa.int64())).to_pylist()
    if ids != [changes[k]["call_id"] for k in at]:
        return None
    mask = np.zeros(calls.num_rows, dtype=bool)
    mask[at] = True
    for name in (*_RESULT, "status"):
        i = calls.schema.get_field_index(name)
        column = calls.column(i).combine_chunks()
        values = pa.array([changes[k][name] for k in at], column.type)
        calls = calls.set_column(i, name, pc.replace_with_mask(column, pa.array(mask), values))
    return calls


def appended_to_previous(
    tail: Tail, point: ResumePoint, tables: dict[str, pa.Table], previous: ExportState, generation: Generation,
    unit: str,
) -> Appended | None:
    """:func:`continue_rows` after the rows ``unit`` has in the previous export; ``None``: read it whole.

    An earlier call an appended result answers has its row rewritten: then all of the
    conversation's ``tool_calls`` rows are written again.
    """
    # The walk's state is read from the earlier rows' ids and statuses; whole rows only of a call answered now.
    walk = Walk()
    walk.feed(unit_rows(previous, generation, unit, "tool_calls", ["call_id", "called_seq", "status"]))
    before = unit_rows(previous, generation, unit, "conversations").to_pylist()
    if len(before) != 1:
        return None
    grown = continue_rows(tail, point, tables, walk, before[0])
    if grown is None or not grown.answered:
        return grown
    earlier = answer(unit_rows(previous, generation, unit, "tool_calls"), grown.answered)
    if earlier is None:
        return None
    grown.tables["tool_calls"] = pa.concat_tables([earlier, grown.tables["tool_calls"]])
    grown.replaced.add("tool_calls")
    return grown
