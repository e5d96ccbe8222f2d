"""One Claude Code file's scanned rows as the hand-off's pieces.

Message columns, tool events, compaction rows, a title, and the calls that spawned subagents.
Everything here works on whole columns; Python runs per tool event, per compaction and per
subagent, never per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...core.handoff import EntryColumns, GrowthRow, ToolEvents
from ...core.model import Usage
from ..lines import LineRows
from .layout import SessionFile
from .usage import SYNTHETIC

__all__ = ["abandoned", "compactions", "entry_columns", "spawning_calls", "title"]

_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _true(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Where an integer flag column is 1 (null: not set)."""
    return pc.fill_null(pc.equal(column, 1), False)


def _origin(m: pa.Table) -> pa.Array:
    """Who wrote each message line: ``meta`` (harness), ``compact_summary``, ``api_error``, else null."""
    null = pa.nulls(m.num_rows, _STR)
    error = pc.or_(_true(m.column("is_api_error")), pc.fill_null(pc.equal(m.column("model"), SYNTHETIC), False))
    out = pc.if_else(error, pa.scalar("api_error"), null)
    out = pc.if_else(_true(m.column("is_compact_summary")), pa.scalar("compact_summary"), out)
    return pc.if_else(_true(m.column("is_meta")), pa.scalar("meta"), out)


def _events(rows: LineRows, position: np.ndarray, text: bool) -> ToolEvents:
    """The file's tool events of message lines, each on its message's row."""
    ev = rows.events
    at = position[ev.column("row").to_numpy()] if ev.num_rows else np.array([], np.int64)
    keep = at >= 0
    ev = ev.filter(pa.array(keep))
    return ToolEvents(
        row=at[keep].tolist(),
        call=ev.column("call").to_pylist(),
        kind=["server" if k == 1 else "client" for k in ev.column("kind").to_pylist()],
        call_id=ev.column("call_id").to_pylist(),
        name=ev.column("name").to_pylist(),
        is_error=ev.column("is_error").to_pylist(),
        chars=ev.column("chars").to_pylist(),
        input_bytes=ev.column("input_bytes").to_pylist(),
        texts=ev.column("text").to_pylist() if text else None,
    )


def entry_columns(m: pa.Table, rows: LineRows, index: np.ndarray, position: np.ndarray,
                  usages: list[Usage | None] | None, text: bool, lost: np.ndarray) -> EntryColumns:
    """The message lines ``m`` (the file's rows at ``index``) as the frame builder's columns.

    ``lost`` marks the lines on a rewind's abandoned branch: their ``status`` is ``abandoned``.
    """
    n = m.num_rows
    assistant = pc.fill_null(pc.equal(m.column("type"), "assistant"), False)
    own_id = pc.and_(assistant, pc.is_valid(m.column("msg_id")))
    model = m.column("model").combine_chunks()
    nulls = pa.nulls(n, _STR)
    return EntryColumns(
        position=pa.array(np.arange(n, dtype=np.int64), _I64),
        id=pc.if_else(own_id, m.column("msg_id"), m.column("uuid")).combine_chunks(),
        side=m.column("type").combine_chunks(),
        origin=_chunk(_origin(m)),
        model=pc.if_else(pc.fill_null(pc.equal(model, SYNTHETIC), False), pa.scalar(None, _STR), model),
        created_at=m.column("ts_us").combine_chunks().cast(_TIMESTAMP),
        n_blocks=pc.fill_null(m.column("n_blocks"), 0).combine_chunks().cast(pa.int32()),
        text_chars=pc.fill_null(m.column("text_chars"), 0).combine_chunks(),
        status=pc.if_else(pa.array(lost, pa.bool_()), pa.scalar("abandoned"), nulls),
        error=nulls,
        source_id=nulls,
        block_kinds=rows.kinds.take(pa.array(index, _I64)) if n else pa.array([], pa.list_(_STR)),
        text=m.column("text").combine_chunks(),
        reasoning_text=m.column("reasoning").combine_chunks(),
        usage=usages,
        events=_events(rows, position, text),
    )


def compactions(m: pa.Table, text: bool) -> tuple[GrowthRow, ...]:
    """A ``compaction`` growth row per ``compact_boundary`` line, with the summary the next summary line carries."""
    boundary = pc.and_(pc.fill_null(pc.equal(m.column("type"), "system"), False),
                       pc.fill_null(pc.equal(m.column("subtype"), "compact_boundary"), False))
    at = np.flatnonzero(boundary.to_numpy(zero_copy_only=False))
    if not len(at):
        return ()
    summaries = np.flatnonzero(_true(m.column("is_compact_summary")).to_numpy(zero_copy_only=False))
    out = []
    for pos in at.tolist():
        later = summaries[summaries > pos]
        summary = m.column("text")[int(later[0])].as_py() if text and len(later) else None
        us = m.column("ts_us")[pos].as_py()
        out.append(GrowthRow(
            position=pos, event="compaction", at=None if us is None else _EPOCH + timedelta(microseconds=us),
            tokens_before=m.column("pre_tokens")[pos].as_py(), tokens_after=m.column("post_tokens")[pos].as_py(),
            summary=summary))
    return tuple(out)


def _last(column: pa.ChunkedArray) -> str | None:
    present = pc.drop_null(column)
    value = present[-1].as_py() if len(present) else None
    return value if isinstance(value, str) else None


def title(t: pa.Table, m: pa.Table) -> str | None:
    """The last ``ai-title``, else the last ``summary``, else the first line of the first human user text."""
    found = _last(t.column("ai_title")) or _last(t.column("summary"))
    if found:
        return found
    human = pc.and_(pc.fill_null(pc.equal(m.column("type"), "user"), False),
                    pc.invert(pc.or_(_true(m.column("is_meta")), _true(m.column("is_compact_summary")))))
    texts = pc.drop_null(m.column("text").filter(human))
    for value in texts.to_pylist()[:1]:
        line = next((s.strip() for s in value.split("\n") if s.strip()), None)
        return line
    return None


def spawning_calls(files: Sequence[SessionFile], rows: Sequence[LineRows],
                   sessions: Sequence[str | None]) -> dict[tuple[str | None, str], str]:
    """``(session, agent id) -> call id``: each ``tool_result`` line whose ``toolUseResult.agentId`` names an agent.

    The call is the line's first tool result (the ``Task``/``Agent`` call it answers).
    """
    out: dict[tuple[str | None, str], str] = {}
    for f, r, session in zip(files, rows, sessions, strict=True):
        if f.agent is not None:
            continue
        named = np.flatnonzero(pc.is_valid(r.table.column("result_agent_id")).to_numpy(zero_copy_only=False))
        if not len(named):
            continue
        ev = r.events
        results = ev.filter(pc.invert(ev.column("call")))
        first: dict[int, str] = {}
        for row, call in zip(results.column("row").to_pylist(), results.column("call_id").to_pylist(), strict=True):
            first.setdefault(row, call)
        agents = r.table.column("result_agent_id")
        for row in named.tolist():
            if row in first:
                out.setdefault((session, agents[row].as_py()), first[row])
    return out


def _chunk(values: pa.ChunkedArray | pa.Array) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def abandoned(rows: LineRows) -> np.ndarray:
    """Which of the file's rows are on a rewind's abandoned branch (``formats-agents.md`` A.3.4).

    A line with two or more typed user prompts as children (``user`` lines that are no harness
    line and hold no tool result) whose times differ was rewound: every child but the latest
    starts an abandoned branch, and so does everything below it. Children written at one time are
    a compaction's replay, not a branch. The parent chain is walked by pointer doubling, as arrays.
    """
    t = rows.table
    n = t.num_rows
    # each line's parent: the first line holding its parentUuid (-1: none in this file)
    found = pc.index_in(t.column("parent_uuid"), value_set=t.column("uuid").combine_chunks())
    parent = pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    answers = np.zeros(n, bool)
    ev = rows.events
    answers[ev.filter(pc.invert(ev.column("call"))).column("row").to_numpy()] = True
    prompt = (pc.fill_null(pc.equal(t.column("type"), "user"), False).to_numpy(zero_copy_only=False)
              & ~_true(t.column("is_meta")).to_numpy(zero_copy_only=False) & ~answers & (parent >= 0))
    if prompt.sum() < 2:
        return np.zeros(n, bool)
    at = np.flatnonzero(prompt)
    ts = pd.array(t.column("ts_us").take(pa.array(at)).to_numpy(zero_copy_only=False), "Int64")
    frame = pd.DataFrame({"parent": parent[at], "ts": ts, "row": at})
    by = frame.groupby("parent")["ts"]
    rewound = (by.transform("nunique") > 1) & (frame["ts"] < by.transform("max"))
    mark = np.zeros(n, bool)
    mark[frame["row"][rewound.fillna(False).to_numpy(bool)].to_numpy(np.int64)] = True
    up = parent.copy()
    for _ in range(n.bit_length() + 1):  # bounded: a malformed file may hold a cycle
        has = up >= 0
        if not has.any():
            break
        mark[has] |= mark[up[has]]
        up = np.where(has, up[np.maximum(up, 0)], -1)
    return mark
