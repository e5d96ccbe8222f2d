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
  with the rest of the conversation's rows), a result naming a call answered before is a
  ``duplicate_result``; ``orphans`` are the appended results left ``orphan_result``;
* ``conversations``: the one row rewritten from the earlier row and the appended rows.

The walk gives the same rows as a walk of the whole record, except in two cases, where the
record is read whole instead (:func:`continue_rows` returns ``None``): an appended call reuses
an id called before (which call a result answers then depends on both parts), or the appended
messages go on the last run of one side and both parts of that run have tool events (the walk
opens a run's calls before its results).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..schema import schema
from ..sources.murmur.append import Tail
from .layout import Generation
from .state import ExportState

__all__ = ["Appended", "continue_rows", "unit_rows"]


@dataclass
class Appended:
    """What to write for a conversation whose record grew.

    Attributes:
        tables: its rows to write, by table.
        replaced: the tables whose earlier rows of it are dropped (``tables`` holds them all).
        point: the resume point after this read.
    """

    tables: dict[str, pa.Table]
    replaced: set[str] = field(default_factory=set)
    point: dict[str, Any] | None = None


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


def _pair(old: list[dict[str, Any]], tail: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], list[int]] | None:
    """The earlier rows the appended results change, and each appended row's final status (or ``None``)."""
    called = {r["call_id"] for r in old if r["called_seq"] is not None}
    if any(r["kind"] != "client" for r in (*old, *tail)):
        return None
    if any(r["called_seq"] is not None and r["call_id"] in called for r in tail):
        return None
    waiting: dict[str, deque[int]] = {}
    for i, r in enumerate(old):
        if r["called_seq"] is not None and r["status"] == "unanswered":
            waiting.setdefault(r["call_id"], deque()).append(i)
    answered: dict[int, dict[str, Any]] = {}
    keep: list[int] = []
    for j, r in enumerate(tail):
        if r["status"] == "orphan_result":
            queue = waiting.get(r["call_id"])
            if queue:
                i = queue.popleft()
                if not queue:
                    del waiting[r["call_id"]]
                answered[i] = {"result_seq": r["result_seq"], "is_error": r["is_error"],
                               "result_chars": r["result_chars"], "result_text": r["result_text"],
                               "status": "error" if r["is_error"] is True else "ok"}
                continue
            if r["call_id"] in called:
                r["status"] = "duplicate_result"
        keep.append(j)
    return answered, keep


def continue_rows(
    tail: Tail, point: dict[str, Any], tables: dict[str, pa.Table], previous: ExportState, generation: Generation,
    unit: str,
) -> Appended | None:
    """The rows to write for a grown record, from its appended messages' ``tables``; ``None``: read it whole.

    Args:
        tail: the appended messages (:func:`~murmur_analysis.sources.murmur.append.read_tail`).
        point: the resume point they were read from.
        tables: their rows as the frame builder made them for them alone (priced).
        previous: the previous export's state.
        generation: the previous export.
        unit: the conversation's unit in the state.
    """
    if tables["usage"].num_rows or tables["steps"].num_rows:
        return None
    if tail.first_side == point["side"] and point["run_events"] and tail.first_run_events:
        return None
    base = point["messages"]
    out = dict(tables)
    out["messages"] = _shift(tables["messages"], {"seq": base})
    out["growth"] = _shift(tables["growth"], {"position": base, "messages": base, "chars": point["chars"]})
    calls = _shift(tables["tool_calls"], {"called_seq": base, "result_seq": base})
    # The walk's state is read from the earlier rows' ids and statuses; whole rows only of a call answered now.
    walked = unit_rows(previous, generation, unit, "tool_calls", ["call_id", "kind", "called_seq", "status"])
    tail_list = calls.to_pylist()
    paired = _pair(walked.to_pylist(), tail_list)
    if paired is None:
        return None
    answered, keep = paired
    replaced = {"conversations"}
    kept = [tail_list[j] for j in keep]
    declared = schema("tool_calls")
    if answered:
        replaced.add("tool_calls")
        old_list = unit_rows(previous, generation, unit, "tool_calls").to_pylist()
        for i, change in answered.items():
            old_list[i].update(change)
        out["tool_calls"] = pa.Table.from_pylist([*old_list, *kept], schema=declared)
    else:
        out["tool_calls"] = pa.Table.from_pylist(kept, schema=declared)
    orphans = [r["call_id"] for r in kept if r["status"] == "orphan_result"]
    key = tables["messages"].slice(0, 1).to_pylist()[0] if tables["messages"].num_rows else None
    old_conv = unit_rows(previous, generation, unit, "conversations").to_pylist()
    new_conv = tables["conversations"].to_pylist()
    if len(old_conv) != 1 or len(new_conv) != 1:
        return None
    before, now = old_conv[0], new_conv[0]
    source, conversation = before["source"], before["conversation_id"]
    if key is not None and (key["source"], key["conversation_id"]) != (source, conversation):
        return None
    out["orphans"] = pa.Table.from_pylist(
        [{"source": source, "conversation_id": conversation, "step": None, "commit": None, "tool_use_id": o,
          "found_by": "assembly"} for o in orphans], schema=schema("orphans"))
    times = [t for t in (before["first_at"], now["first_at"]) if t is not None]
    lasts = [t for t in (before["last_at"], now["last_at"]) if t is not None]
    row = dict(before)
    row.update(
        title=before["title"] if before["title"] is not None else now["title"],
        first_at=min(times) if times else None,
        last_at=max(lasts) if lasts else None,
        messages=before["messages"] + now["messages"],
        tool_calls=before["tool_calls"] + now["tool_calls"],
        tool_errors=before["tool_errors"] + now["tool_errors"] + sum(c["status"] == "error" for c in answered.values()),
        orphans=before["orphans"] + len(orphans),
        tokens=_sum(before["tokens"], now["tokens"]),
        unreported_responses=_sum(before["unreported_responses"], now["unreported_responses"]),
        cost_usd=_sum(before["cost_usd"], now["cost_usd"]),
        unpriced_responses=_sum(before["unpriced_responses"], now["unpriced_responses"]),
    )
    out["conversations"] = pa.Table.from_pylist([row], schema=schema("conversations"))
    return Appended(out, replaced, tail.point)
