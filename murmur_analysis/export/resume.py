"""The rows of a record that grew: its appended messages' rows, continued from the rows exported before.

The previous export's rows of a conversation are kept where appending cannot change them
(``messages``, ``growth``, ``orphans``, ``diagnostics``, and ``tool_calls`` unless an appended
result answers an earlier call), and the appended messages' rows are written beside them,
continued from the resume point (:mod:`murmur_analysis.sources.murmur.append`):

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
the last run of one side and both parts of that run have tool events (the walk opens a run's
calls before its results). The ids called before are kept as hashes (:class:`CalledIds`), so
a collision can only send a record to a whole read, never change a row.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..schema import schema
from ..sources.murmur.append import Tail
from .layout import Generation
from .state import ExportState

__all__ = ["Appended", "Walk", "answer", "appended_to_previous", "continue_rows", "unit_rows"]


@dataclass
class Appended:
    """What to write for a conversation whose record grew.

    Attributes:
        tables: its rows to write, by table.
        replaced: the tables whose earlier rows of it are dropped (``tables`` holds them all).
        point: the resume point after this read.
        answered: the conversation's earlier ``tool_calls`` rows (by index) that appended
            results answer, with their new result fields.
    """

    tables: dict[str, pa.Table]
    replaced: set[str] = field(default_factory=set)
    point: dict[str, Any] | None = None
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


class CalledIds:
    """The call ids a walk has met, kept as 64-bit hashes: 8 bytes an id, not a Python string.

    A record's ids number in the millions, so the strings themselves would make the memory of a
    range-by-range export grow with the record. A hash may collide, so :meth:`maybe` answers
    "maybe met": a caller that needs the exact answer reads the record whole instead, which is
    exact whatever the hashes say.
    """

    _MERGE = 65_536  # recent hashes kept in a set before they join the sorted array

    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=np.int64)
        self._recent: set[int] = set()

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def add(self, call_id: str) -> None:
        """Remember ``call_id``."""
        self._recent.add(hash(call_id))
        if len(self._recent) >= self._MERGE:
            recent = np.sort(np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)))
            # two sorted runs: a stable sort merges them in linear time (repeats do no harm)
            self._sorted = np.sort(np.concatenate([self._sorted, recent]), kind="stable")
            self._recent = set()

    def maybe(self, call_ids: list[str]) -> bool:
        """Whether any of ``call_ids`` may have been met (``False``: none was, for certain)."""
        if not call_ids:
            return False
        hashes = [hash(i) for i in call_ids]
        if any(h in self._recent for h in hashes):
            return True
        wanted = np.array(hashes, dtype=np.int64)
        at = np.searchsorted(self._sorted, wanted)
        found = at < len(self._sorted)
        return bool((self._sorted[at[found]] == wanted[found]).any())


@dataclass
class Walk:
    """What the pairing walk of the rows before a point left: the ids called, and the calls still open.

    Attributes:
        called: every call id called before (as hashes: a hit means "maybe", see :class:`CalledIds`).
        waiting: per call id, the indexes (among the conversation's ``tool_calls`` rows) of its
            calls not yet answered, oldest first.
        rows: the conversation's ``tool_calls`` rows before the point.
    """

    called: CalledIds = field(default_factory=CalledIds)
    waiting: dict[str, deque[int]] = field(default_factory=dict)
    rows: int = 0

    def go_on(self, tail: pa.Table) -> tuple[dict[int, dict[str, Any]], pa.Table] | None:
        """Continue over the ``tool_calls`` rows a walk of the appended messages alone made (``None``: not exactly).

        Returns:
            The earlier rows the appended results answer (by index, their new result fields)
            and the appended rows that stay, with their final status. The walk moves past them.
        """
        ids, called, statuses = (tail.column(c).to_pylist() for c in ("call_id", "called_seq", "status"))
        if any(k != "client" for k in tail.column("kind").to_pylist()):
            return None
        if self.called.maybe([i for i, c in zip(ids, called, strict=True) if c is not None]):
            return None  # an appended call may reuse an id called before: read whole
        answered: dict[int, dict[str, Any]] = {}
        keep: list[bool] = []
        for j, call_id in enumerate(ids):
            if statuses[j] == "orphan_result":
                queue = self.waiting.get(call_id)
                if queue:
                    result = tail.slice(j, 1).select(list(_RESULT))
                    change = result.to_pylist()[0]
                    change["status"] = "error" if change["is_error"] is True else "ok"
                    answered[queue.popleft()] = change
                    if not queue:
                        del self.waiting[call_id]
                    keep.append(False)
                    continue
                if self.called.maybe([call_id]):
                    return None  # a result for a call answered before (or a hash collision): read whole
            keep.append(True)
        kept = tail.filter(pa.array(keep, pa.bool_())) if not all(keep) else tail
        status = pa.array([s for s, k in zip(statuses, keep, strict=True) if k], pa.string())
        kept = kept.set_column(kept.schema.get_field_index("status"), "status", status)
        self.feed([{"call_id": i, "called_seq": c, "status": st}
                   for i, c, st, k in zip(ids, called, statuses, keep, strict=True) if k])
        return answered, kept

    def feed(self, rows: list[dict[str, Any]]) -> None:
        """Move past ``rows`` (the next rows of the conversation, as the whole walk made them)."""
        for i, r in enumerate(rows, start=self.rows):
            if r["called_seq"] is not None:
                self.called.add(r["call_id"])
                if r["status"] == "unanswered":
                    self.waiting.setdefault(r["call_id"], deque()).append(i)
        self.rows += len(rows)


def continue_rows(
    tail: Tail, point: dict[str, Any], tables: dict[str, pa.Table], walk: Walk, before: dict[str, Any] | None,
) -> Appended | None:
    """The rows of a record's messages after ``point``, from their own ``tables``; ``None``: read it whole.

    Args:
        tail: the messages after the point (:func:`~murmur_analysis.sources.murmur.append.read_tail`).
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
    if tail.first_side == point["side"] and point["run_events"] and tail.first_run_events:
        return None
    new_conv = tables["conversations"].to_pylist()
    if len(new_conv) != 1:
        return None
    base = point["messages"]
    out = dict(tables)
    out["messages"] = _shift(tables["messages"], {"seq": base})
    out["growth"] = _shift(tables["growth"], {"position": base, "messages": base, "chars": point["chars"]})
    calls = _shift(tables["tool_calls"], {"called_seq": base, "result_seq": base})
    paired = walk.go_on(calls)
    if paired is None:
        return None
    answered, kept = paired
    out["tool_calls"] = kept
    orphans = [i for i, st in zip(kept.column("call_id").to_pylist(), kept.column("status").to_pylist(), strict=True)
               if st == "orphan_result"]
    now = new_conv[0]
    source, conversation = now["source"], now["conversation_id"]
    out["orphans"] = pa.Table.from_pylist(
        [{"source": source, "conversation_id": conversation, "step": None, "commit": None, "tool_use_id": o,
          "found_by": "assembly"} for o in orphans], schema=schema("orphans"))
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
            orphans=before["orphans"] + len(orphans),
            tokens=_sum(before["tokens"], now["tokens"]),
            unreported_responses=_sum(before["unreported_responses"], now["unreported_responses"]),
            cost_usd=_sum(before["cost_usd"], now["cost_usd"]),
            unpriced_responses=_sum(before["unpriced_responses"], now["unpriced_responses"]),
        )
    else:
        row["orphans"] = len(orphans)
    row["tool_errors"] += sum(c["status"] == "error" for c in answered.values())
    out["conversations"] = pa.Table.from_pylist([row], schema=schema("conversations"))
    return Appended(out, {"conversations"}, tail.point, answered)


def answer(calls: pa.Table, changes: dict[int, dict[str, Any]]) -> pa.Table:
    """``tool_calls`` rows with the result fields of the rows at the indexes of ``changes`` replaced."""
    if not changes:
        return calls
    at = sorted(changes)
    mask = np.zeros(calls.num_rows, dtype=bool)
    mask[at] = True
    for name in (*_RESULT, "status"):
        i = calls.schema.get_field_index(name)
        column = calls.column(i).combine_chunks()
        values = pa.array([changes[k][name] for k in at], column.type)
        calls = calls.set_column(i, name, pc.replace_with_mask(column, pa.array(mask), values))
    return calls


def appended_to_previous(
    tail: Tail, point: dict[str, Any], tables: dict[str, pa.Table], previous: ExportState, generation: Generation,
    unit: str,
) -> Appended | None:
    """:func:`continue_rows` after the rows ``unit`` has in the previous export; ``None``: read it whole.

    An earlier call an appended result answers has its row rewritten: then all of the
    conversation's ``tool_calls`` rows are written again.
    """
    # The walk's state is read from the earlier rows' ids and statuses; whole rows only of a call answered now.
    walk = Walk()
    walk.feed(unit_rows(previous, generation, unit, "tool_calls", ["call_id", "called_seq", "status"]).to_pylist())
    before = unit_rows(previous, generation, unit, "conversations").to_pylist()
    if len(before) != 1:
        return None
    grown = continue_rows(tail, point, tables, walk, before[0])
    if grown is None or not grown.answered:
        return grown
    earlier = answer(unit_rows(previous, generation, unit, "tool_calls"), grown.answered)
    grown.tables["tool_calls"] = pa.concat_tables([earlier, grown.tables["tool_calls"]])
    grown.replaced.add("tool_calls")
    return grown
