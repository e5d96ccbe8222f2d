"""A load's scanned rows as the hand-off's pieces, decided for every file at once.

Message columns, tool events, compaction rows, titles, the calls that spawned subagents and the
rewind's abandoned branches are computed over the whole load's columns (:class:`.whole.Whole`);
each conversation then takes its slice. Python runs per tool event list, per compaction and per
file, never per line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.handoff import EntryColumns, GrowthRow, ToolEvents, ToolKind
from ...core.model import ABANDONED_STATUS, API_ERROR_ORIGIN, Usage
from ...core.values import datetime_of_us
from ..lines import one_array
from .layout import SessionFile
from .usage import SYNTHETIC
from .whole import Whole, firsts, lasts, mask, true

__all__ = ["EntryParts", "Messages", "abandoned", "compactions", "spawning_calls", "titles"]

_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_MESSAGES = pa.array(["user", "assistant", "system"])
#: The columns a message line's row is read from.
_KEPT = ["line", "type", "subtype", "uuid", "msg_id", "model", "ts_us", "is_meta", "is_compact_summary",
         "is_api_error", "n_blocks", "text_chars", "text", "reasoning", "first_text", "message_kind", "pre_tokens",
         "post_tokens"]


def _origin(m: pa.Table) -> pa.Array:
    """Who wrote each message line: ``meta`` (harness), ``compact_summary``, ``api_error``, else null."""
    null = pa.nulls(m.num_rows, _STR)
    error = pa.array(true(m.column("is_api_error")) | mask(pc.equal(m.column("model"), SYNTHETIC)))
    out = pc.if_else(error, pa.scalar(API_ERROR_ORIGIN), null)
    out = pc.if_else(pa.array(true(m.column("is_compact_summary"))), pa.scalar("compact_summary"), out)
    return pc.if_else(pa.array(true(m.column("is_meta"))), pa.scalar("meta"), out)


@dataclass(frozen=True)
class _Events:
    """The message lines' tool events as lists, file ``i``'s at ``starts[i]:starts[i + 1]``."""

    starts: np.ndarray
    row: list[int]
    call: list[bool]
    kind: list[ToolKind]
    call_id: list[str]
    name: list[str | None]
    is_error: list[bool | None]
    chars: list[int | None]
    input_bytes: list[int | None]
    # the calls' and the results' texts, a chunk per file as scanned: a file's are taken with no copy
    texts: tuple[pa.ChunkedArray, pa.ChunkedArray] | None

    def of(self, i: int) -> ToolEvents:
        a, b = int(self.starts[i]), int(self.starts[i + 1])
        inputs, results = (one_array(t.slice(a, b - a)) for t in self.texts) if self.texts is not None else (None, None)
        return ToolEvents(
            row=self.row[a:b], call=self.call[a:b], kind=self.kind[a:b], call_id=self.call_id[a:b],
            name=self.name[a:b], is_error=self.is_error[a:b], chars=self.chars[a:b],
            input_bytes=self.input_bytes[a:b], texts=inputs, result_texts=results,
        )


def _events(w: Whole, position: np.ndarray, text: bool) -> _Events:
    """The tool events of message lines, each on its message's row (its position in its file's messages)."""
    ev = w.events
    rows = ev.column("row").to_numpy()
    at = position[rows]
    keep = at >= 0
    if not keep.all():
        ev = ev.filter(pa.array(keep))
    server = pc.equal(ev.column("kind"), 1)
    kinds: list[ToolKind] = pc.if_else(server, pa.scalar("server"), pa.scalar("client")).to_pylist()
    return _Events(
        starts=np.searchsorted(rows[keep], w.starts),
        row=at[keep].tolist(),
        call=ev.column("call").to_pylist(),
        kind=kinds,
        call_id=ev.column("call_id").to_pylist(),
        name=ev.column("name").to_pylist(),
        is_error=ev.column("is_error").to_pylist(),
        chars=ev.column("chars").to_pylist(),
        input_bytes=ev.column("input_bytes").to_pylist(),
        texts=(ev.column("input_text"), ev.column("result_text")) if text else None,
    )


@dataclass(frozen=True)
class Messages:
    """The message lines of a load (``user``, ``assistant``, ``system``), as columns, and each file's share.

    Attributes:
        index: each message's row in the load's table.
        starts: file ``i``'s messages are ``starts[i]:starts[i + 1]``.
        position: each row's position among its file's messages (-1: not a message line).
        m: the message rows' columns.
    """

    index: np.ndarray
    starts: np.ndarray
    position: np.ndarray
    m: pa.Table

    @classmethod
    def of(cls, w: Whole) -> Messages:
        """The load's message lines."""
        index = np.flatnonzero(mask(pc.is_in(w.table.column("type"), value_set=_MESSAGES)))
        starts = np.searchsorted(index, w.starts)
        position = np.full(w.table.num_rows, -1, np.int64)
        position[index] = np.arange(len(index)) - np.repeat(starts[:-1], np.diff(starts))
        rows = w.table.select(_KEPT)
        m = rows if len(index) == rows.num_rows else rows.take(pa.array(index, _I64))
        return cls(index, starts, position, m.combine_chunks())

    def span(self, i: int) -> tuple[int, int]:
        """Where file ``i``'s messages are."""
        return int(self.starts[i]), int(self.starts[i + 1])


@dataclass(frozen=True)
class EntryParts:
    """The load's messages as the frame builder's columns; :meth:`of` cuts one file's chunk."""

    messages: Messages
    columns: dict[str, pa.Array]
    events: _Events

    @classmethod
    def build(cls, w: Whole, messages: Messages, text: bool, lost: np.ndarray) -> EntryParts:
        """Every message's columns (``lost``: the rows on a rewind's abandoned branch, ``status`` ``abandoned``)."""
        m = messages.m
        n = m.num_rows
        own_id = pa.array(mask(pc.equal(m.column("type"), "assistant")) & mask(pc.is_valid(m.column("msg_id"))))
        model = one_array(m.column("model"))
        nulls = pa.nulls(n, _STR)
        columns = {
            "position": pa.array(messages.position[messages.index], _I64),
            "id": one_array(pc.if_else(own_id, m.column("msg_id"), m.column("uuid"))),
            "side": one_array(m.column("type")),
            "origin": _origin(m),
            "model": pc.if_else(pa.array(mask(pc.equal(model, SYNTHETIC))), pa.scalar(None, _STR), model),
            "created_at": one_array(m.column("ts_us")).cast(_TIMESTAMP),
            "n_blocks": one_array(pc.fill_null(m.column("n_blocks"), 0)).cast(pa.int32()),
            "text_chars": one_array(pc.fill_null(m.column("text_chars"), 0)),
            "status": pc.if_else(pa.array(lost[messages.index], pa.bool_()), pa.scalar(ABANDONED_STATUS), nulls),
            "error": nulls,
            "source_id": nulls,
            "block_kinds": (w.kinds.take(pa.array(messages.index, _I64)).combine_chunks() if n
                            else pa.array([], pa.list_(_STR))),
            "text": one_array(m.column("text")),
            "reasoning_text": one_array(m.column("reasoning")),
        }
        return cls(messages, columns, _events(w, messages.position, text))

    def of(self, i: int, usage: list[Usage | None] | None) -> EntryColumns:
        """File ``i``'s messages as one chunk (zero-copy slices), with their usage."""
        a, b = self.messages.span(i)
        c = {k: v.slice(a, b - a) for k, v in self.columns.items()}
        return EntryColumns(
            position=c["position"], id=c["id"], side=c["side"], origin=c["origin"], model=c["model"],
            created_at=c["created_at"], n_blocks=c["n_blocks"], text_chars=c["text_chars"], status=c["status"],
            error=c["error"], source_id=c["source_id"], block_kinds=c["block_kinds"], text=c["text"],
            reasoning_text=c["reasoning_text"], usage=usage, events=self.events.of(i),
        )


def compactions(messages: Messages, text: bool) -> list[tuple[GrowthRow, ...]]:
    """Per file, a ``compaction`` growth row per ``compact_boundary`` line (with the next summary line's text)."""
    m = messages.m
    out: list[tuple[GrowthRow, ...]] = [()] * (len(messages.starts) - 1)
    boundary = mask(pc.equal(m.column("type"), "system")) & mask(pc.equal(m.column("subtype"), "compact_boundary"))
    at = np.flatnonzero(boundary)
    if not len(at):
        return out
    summaries = np.flatnonzero(true(m.column("is_compact_summary")))
    files = np.searchsorted(messages.starts, at, side="right") - 1
    rows: dict[int, list[GrowthRow]] = {}
    for g, f in zip(at.tolist(), files.tolist(), strict=True):
        later = summaries[summaries > g]
        summary = (m.column("text")[int(later[0])].as_py()
                   if text and len(later) and later[0] < messages.starts[f + 1] else None)
        us = m.column("ts_us")[g].as_py()
        rows.setdefault(f, []).append(GrowthRow(
            position=g - int(messages.starts[f]), event="compaction",
            at=datetime_of_us(us),
            tokens_before=m.column("pre_tokens")[g].as_py(), tokens_after=m.column("post_tokens")[g].as_py(),
            summary=summary))
    for f, found in rows.items():
        out[f] = tuple(found)
    return out


def _lasts_of(w: Whole, column: str) -> list[str | None]:
    """Per file, the last value of a string column that is present."""
    values = w.table.column(column)
    at = lasts(np.flatnonzero(mask(pc.is_valid(values))), w.starts)
    if not (at >= 0).any():
        return [None] * len(at)
    found: list[str | None] = values.take(pa.array(np.maximum(at, 0))).to_pylist()
    return [v if i >= 0 else None for i, v in zip(at.tolist(), found, strict=True)]


def titles(w: Whole, messages: Messages) -> list[str | None]:
    """Per file: the last ``ai-title``, else the last ``summary``, else the first line of the first human user text."""
    out: list[str | None] = [a or s for a, s in zip(_lasts_of(w, "ai_title"), _lasts_of(w, "summary"), strict=True)]
    m = messages.m
    # the engine's first text line of each line, read whether texts are kept or not
    human = (mask(pc.equal(m.column("type"), "user")) & ~true(m.column("is_meta"))
             & ~true(m.column("is_compact_summary")) & mask(pc.is_valid(m.column("first_text"))))
    first = firsts(np.flatnonzero(human), messages.starts)
    for f, at in enumerate(first.tolist()):
        if out[f] or at < 0:
            out[f] = out[f] or None
            continue
        out[f] = m.column("first_text")[at].as_py()
    return out


def spawning_calls(files: Sequence[SessionFile], w: Whole,
                   sessions: Sequence[str | None]) -> dict[tuple[str | None, str], str]:
    """``(session, agent id) -> call id``: each ``tool_result`` line whose ``toolUseResult.agentId`` names an agent.

    The call is the line's first tool result (the ``Task``/``Agent`` call it answers).
    """
    agents = w.table.column("result_agent_id")
    named = np.flatnonzero(mask(pc.is_valid(agents)))
    out: dict[tuple[str | None, str], str] = {}
    if not len(named):
        return out
    file = np.searchsorted(w.starts, named, side="right") - 1
    main = np.array([f.agent is None for f in files], bool)
    named, file = named[main[file]], file[main[file]]
    ev = w.events.select(["row", "call", "call_id"])
    results = ev.filter(pc.invert(ev.column("call")))
    rows = results.column("row").to_numpy()
    firsts_at, first = np.unique(rows, return_index=True)
    found = np.searchsorted(firsts_at, named)
    hit = found < len(firsts_at)
    hit[hit] = firsts_at[found[hit]] == named[hit]
    calls = results.column("call_id").take(pa.array(first[found[hit]], _I64)).to_pylist()
    names = agents.take(pa.array(named[hit], _I64)).to_pylist()
    for f, agent, call in zip(file[hit].tolist(), names, calls, strict=True):
        out.setdefault((sessions[f], agent), call)
    return out


def _parents(w: Whole) -> np.ndarray:
    """Each row's parent: the first row of its own file holding its ``parentUuid`` (-1: none in that file).

    A line with no ``parentUuid`` (a session's first line, a compaction boundary) has no parent.
    """
    t = w.table
    encoded = pc.dictionary_encode(t.column("uuid").combine_chunks())
    none = len(encoded.dictionary)  # the code of a missing uuid
    own = pc.fill_null(encoded.indices, none).to_numpy(zero_copy_only=False).astype(np.int64)
    wanted = pc.index_in(t.column("parent_uuid"), value_set=encoded.dictionary)
    missing = mask(pc.is_null(t.column("parent_uuid")))
    asked = pc.fill_null(wanted, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    asked[missing] = -1
    width = np.int64(none + 1)
    file = w.file
    unique, first = np.unique(file * width + own, return_index=True)
    parent = np.full(t.num_rows, -1, np.int64)
    asks = np.flatnonzero(asked >= 0)
    key = file[asks] * width + asked[asks]
    found = np.searchsorted(unique, key)
    hit = found < len(unique)
    hit[hit] = unique[found[hit]] == key[hit]
    parent[asks[hit]] = first[found[hit]]
    return parent


def abandoned(w: Whole) -> np.ndarray:
    """Which rows of the load are on a rewind's abandoned branch (``formats-agents.md`` A.3.4).

    A line with two or more typed user prompts as children (``user`` lines of its own file that
    are no harness line and hold no tool result) whose times differ was rewound: every child but
    the latest starts an abandoned branch, and so does everything below it. Children written at
    one time are a compaction's replay, not a branch. The parent chain is walked by pointer
    doubling, as arrays.
    """
    t = w.table
    n = t.num_rows
    parent = _parents(w)
    answers = np.zeros(n, bool)
    ev = w.events.select(["row", "call"])
    answers[ev.filter(pc.invert(ev.column("call"))).column("row").to_numpy()] = True
    ts_valid = mask(pc.is_valid(t.column("ts_us")))
    prompt = (mask(pc.equal(t.column("type"), "user")) & ~true(t.column("is_meta")) & ~answers & (parent >= 0)
              & ts_valid)  # a prompt with no time is never the rewound one, nor the latest
    at = np.flatnonzero(prompt)
    mark = np.zeros(n, bool)
    if len(at) < 2:
        return mark
    ts = pc.fill_null(t.column("ts_us"), 0).to_numpy(zero_copy_only=False)[at]
    latest = np.full(n, np.iinfo(np.int64).min, np.int64)
    np.maximum.at(latest, parent[at], ts)
    mark[at[ts < latest[parent[at]]]] = True
    if not mark.any():
        return mark
    up = parent.copy()
    for _ in range(n.bit_length() + 1):  # bounded: a malformed file may hold a cycle
        has = up >= 0
        if not has.any():
            break
        mark[has] |= mark[up[has]]
        up = np.where(has, up[np.maximum(up, 0)], -1)
    return mark
