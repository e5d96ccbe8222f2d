"""The rows of a file that grew: its appended messages' rows, continued from the rows exported before.

The previous export's rows of a conversation are kept where appending cannot change them
(``messages``, ``growth``, ``orphans``, ``diagnostics``, and ``tool_calls`` unless an appended
result answers an earlier call), and the appended messages' rows are written beside them,
continued from the resume point (:mod:`murmur_analysis.sources.resume`):

* ``messages``: ``seq`` goes on from the messages before;
* ``growth``: ``position``, ``messages`` and ``chars`` go on from the point's counts, and
  ``context_tokens`` from the point's context where it holds one (a source whose entries carry
  their usage, as Claude Code's do; else it is only derived from usage on the entries, and a
  tail with such usage is read whole);
* ``usage``: the rows a source hands over beside the entries (``Summary.usage``, Codex's
  ``token_count`` deltas): ``seq`` goes on from the messages before (a row may name a message
  before the point); usage carried on the entries themselves is not read on;
* ``tool_calls``: the pairing walk of the appended messages, going on from the state the
  earlier walk left (:class:`~murmur_analysis.algorithms.pairing.Pairer`), makes the rows a
  walk of the whole file makes after the earlier rows, and one row more per appended result
  that answers an earlier call: that call's row takes its result fields (and is rewritten,
  with the rest of the conversation's rows); ``orphans`` are the appended walk's;
* ``conversations``: the one row rewritten from the earlier row and the appended rows.

Where the walk cannot go on exactly, the source reads no tail
(:meth:`~murmur_analysis.sources.resume.Resumable.read_range` returns ``None``) and the file
is read whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..algorithms.history import running_context
from ..core.handoff import ResumePoint
from ..core.pricing import sum_costs
from ..sources.resume import Tail
from ..tables.schema import schema
from .layout import Generation
from .state import ExportState

__all__ = ["GrownRows", "answer", "appended_to_previous", "continue_rows", "unit_rows"]


@dataclass
class GrownRows:
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
#: What the runtime recorded of a call (``ToolMeta``) that the tail may know and the call's row did
#: not (Codex: an exit code written with the result): taken from the tail's ``tool_meta`` where it has it.
_RECORDED = ("duration_ms", "output_bytes", "exit_code")


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


def _context_from(growth: pa.Table, tail: Tail, point: ResumePoint) -> pa.Table:
    """The tail's growth with each message row's ``context_tokens`` going on from the point's context.

    The rows were derived from the tail's messages alone (told from no context); where the
    point knows the context before them, it stands until a message reports its own
    (:func:`~murmur_analysis.algorithms.history.running_context`).
    """
    usages = [u for c in tail.conversation.columns or () for u in (c.usage or [None] * len(c))]
    if point.context is None or not usages:
        return growth
    context = running_context(usages, point.context)
    message = pc.fill_null(pc.equal(growth.column("event"), "message"), False).to_numpy(zero_copy_only=False)
    at = np.flatnonzero(message)
    positions = growth.column("position").to_numpy(zero_copy_only=False)[at]
    column = growth.column("context_tokens").to_pylist()
    for row, position in zip(at.tolist(), positions.tolist(), strict=True):
        column[row] = context[position]
    i = growth.schema.get_field_index("context_tokens")
    return growth.set_column(i, "context_tokens", pa.array(column, growth.schema.field(i).type))


def continue_rows(
    tail: Tail, point: ResumePoint, tables: dict[str, pa.Table], before: dict[str, Any] | None,
) -> GrownRows | None:
    """The rows of a file's messages after ``point``, from their own ``tables``; ``None``: read it whole.

    Args:
        tail: the messages after the point (:func:`~murmur_analysis.sources.resume.read_on`).
        point: the resume point they were read from.
        tables: their rows as the frame builder made them for them alone (priced).
        before: the conversation's ``conversations`` row for the messages before the point
            (``None``: there were none).

    Returns:
        Their rows: ``tool_calls`` holds the appended rows only; the earlier rows they
        answer are in :attr:`GrownRows.answered`.
    """
    summary = tail.conversation.summary
    if tables["steps"].num_rows or (tables["usage"].num_rows and (summary is None or summary.usage is None)):
        return None
    new_conv = tables["conversations"].to_pylist()
    if len(new_conv) != 1:
        return None
    base = point.messages
    out = dict(tables)
    out["messages"] = _shift(tables["messages"], {"seq": base})
    out["growth"] = _shift(_context_from(tables["growth"], tail, point), {"position": base, "messages": base,
                                                                           "chars": point.chars})
    out["usage"] = _shift(tables["usage"], {"seq": base})
    calls = _shift(tables["tool_calls"], {"called_seq": base, "result_seq": base})
    # The walk's last rows answer earlier calls: their result fields go to those calls' rows.
    own = calls.num_rows - len(tail.answered)
    answers = calls.slice(own).select(["call_id", *_RESULT, "status"]).to_pylist()
    meta = summary.tool_meta if summary is not None and summary.tool_meta is not None else tail.conversation.tool_meta
    for change in answers:
        recorded = meta.get(change["call_id"])
        change.update((name, getattr(recorded, name) if recorded is not None else None) for name in _RECORDED)
    answered = dict(zip(tail.answered, answers, strict=True))
    out["tool_calls"] = calls.slice(0, own)
    now = new_conv[0]
    row = dict(now)
    if before is not None:
        times = [t for t in (before["first_at"], now["first_at"]) if t is not None]
        lasts = [t for t in (before["last_at"], now["last_at"]) if t is not None]
        row = dict(before)
        row.update(
            title=now["title"] if tail.retitled or before["title"] is None else before["title"],
            first_at=min(times) if times else None,
            last_at=max(lasts) if lasts else None,
            messages=before["messages"] + now["messages"],
            tool_calls=before["tool_calls"] + now["tool_calls"],
            tool_errors=before["tool_errors"] + now["tool_errors"],
            orphans=before["orphans"] + now["orphans"],
            tokens=_sum(before["tokens"], now["tokens"]),
            unreported_responses=_sum(before["unreported_responses"], now["unreported_responses"]) - tail.reported,
            # added on one row at a time, as a whole read adds them (a float sum depends on its order)
            cost_usd=sum_costs([before["cost_usd"], *tables["usage"].column("cost_usd").to_pylist()])[0],
            unpriced_responses=_sum(before["unpriced_responses"], now["unpriced_responses"]),
        )
    row["tool_errors"] += sum(c["status"] == "error" for c in answered.values())
    out["conversations"] = pa.Table.from_pylist([row], schema=schema("conversations"))
    return GrownRows(out, {"conversations"}, tail.point, answered)


def answer(calls: pa.Table, changes: dict[int, dict[str, Any]]) -> pa.Table | None:
    """``tool_calls`` rows with the result fields of the rows at the indexes of ``changes`` replaced.

    What the runtime recorded of a call (``duration_ms``, ``output_bytes``, ``exit_code``) is
    replaced only where the change has it.

    ``None`` when a row's ``call_id`` is not the change's (the rows are not the ones the walk's
    state was saved with), and the record is read whole.
    """
    if not changes:
        return calls
    at = sorted(changes)
    ids = calls.column("call_id").take(pa.array(at, pa.int64())).to_pylist()
    if ids != [changes[k]["call_id"] for k in at]:
        return None
    for name in (*_RESULT, "status", *_RECORDED):
        # a recorded field is taken only where the answering row has it
        chosen = [k for k in at if name not in _RECORDED or changes[k].get(name) is not None]
        if not chosen:
            continue
        mask = np.zeros(calls.num_rows, dtype=bool)
        mask[chosen] = True
        i = calls.schema.get_field_index(name)
        column = calls.column(i).combine_chunks()
        values = pa.array([changes[k][name] for k in chosen], column.type)
        calls = calls.set_column(i, name, pc.replace_with_mask(column, pa.array(mask), values))
    return calls


def appended_to_previous(
    tail: Tail, point: ResumePoint, tables: dict[str, pa.Table], previous: ExportState, generation: Generation,
    unit: str,
) -> GrownRows | None:
    """:func:`continue_rows` after the rows ``unit`` has in the previous export; ``None``: read it whole.

    An earlier call an appended result answers has its row rewritten: then all of the
    conversation's ``tool_calls`` rows are written again.
    """
    # The walk went on from the state the point holds: the earlier rows are read only when one is answered now.
    before = unit_rows(previous, generation, unit, "conversations").to_pylist()
    if len(before) != 1:
        return None
    grown = continue_rows(tail, point, tables, before[0])
    if grown is None or not grown.answered:
        return grown
    earlier = answer(unit_rows(previous, generation, unit, "tool_calls"), grown.answered)
    if earlier is None:
        return None
    grown.tables["tool_calls"] = pa.concat_tables([earlier, grown.tables["tool_calls"]])
    grown.replaced.add("tool_calls")
    return grown
