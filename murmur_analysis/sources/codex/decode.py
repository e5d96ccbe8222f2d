"""Rollouts' engine rows turned into what the frame builder reads: columns, usage, growth, tools.

The engine (``native/src/formats/codex.rs``) has already decided, line by line, what each row
is. Here everything is columns (pyarrow compute and numpy), once over the rows of every
rollout of a load one after the other (:class:`Rows`); each rollout's share is a slice:

* **Identity**: the first ``session_meta``'s ``id`` (later ones are copies); its
  ``forked_from_id`` or ``thread_spawn.parent_thread_id`` name the parent, its
  ``spawn_call_id`` (where written) the parent's call.
* **Messages**: the rows the engine marks as messages (``response_item`` items and
  ``compacted``, never the ``event_msg`` mirrors), after the copied prefix (:mod:`.fork`). An
  assistant message's model is the ``turn_context`` model in force (carried forward).
* **Tool events**: the engine's, for the rows kept, re-indexed to message positions; the
  assembly core pairs them. A result's error flag and exit code are the engine's inference
  from the output; a result the output says nothing of takes ``exec_command_end.exit_code``
  (written in Codex's extended mode), else stays null.
* **Usage**: :mod:`.usage`'s deltas after the prefix, each linked to the last assistant
  message at or before it; its model is the event's own, else the ``turn_context`` model in
  force, else ``gpt-5`` as ccusage assumes (an ``assumed_model`` diagnostics row says so).
* **Growth**: ``compacted``, a remote ``compaction`` item and ``event_msg/context_compacted``
  mark a compaction at the message they follow (one row per message they follow).
* **Title**: the first user message's first line that is not injected context.

Rows read on from a resume point go on from the state of the lines before it (a
:class:`~.carry.Carry` per rollout): the model in force, the last totals, the last assistant
message, its compaction row, the exit codes. Each rollout's :attr:`Decoded.carry` is that state
after its rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.diagnostics import Diagnostics
from ...core.handoff import EntryColumns, GrowthRow, ToolEvents, ToolMeta, UsageColumns
from ...core.model import Usage
from ...core.providers import accounting
from ...core.values import datetime_of_us
from ..lines import LineRows, joined, one_array
from ..murmur.entries import title_of
from .carry import Carry
from .usage import COUNTERS, Totals, deltas, last_totals

__all__ = ["FALLBACK_MODEL", "Decoded", "Identity", "Rows", "decode", "file_id", "identities"]

#: The model ccusage assumes for a call no ``turn_context`` names.
FALLBACK_MODEL = "gpt-5"
_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_OPENAI = accounting("openai")
_COMPACTIONS = ("compaction", "compaction_summary", "context_compacted")


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a rollout is, from its first ``session_meta`` (or its file name).

    Attributes:
        conversation_id: the thread id.
        parent: the thread it was forked or spawned from.
        parent_call: the parent's call that spawned it, where written.
        provider: ``model_provider``.
        created_us: when it was created (its ``session_meta.timestamp``, else the line's time).
        minted_us: the UUIDv7 time of its id, when it is one.
    """

    conversation_id: str
    parent: str | None = None
    parent_call: str | None = None
    provider: str | None = None
    created_us: int | None = None
    minted_us: int | None = None


@dataclass(frozen=True, slots=True)
class Decoded:
    """What one rollout hands over."""

    columns: EntryColumns
    usage: UsageColumns
    growth: tuple[GrowthRow, ...]
    title: str | None
    tool_meta: dict[str, ToolMeta]
    lines: pa.Array  # the line number of each message
    carry: Carry  # the state after its rows, for a read on from where they end
    reported: int = 0  # assistant messages before its first row no usage row reported on, and one of its rows does
    alone: bool = True  # whether every exit code it read is of a call or result among its own rows


def _mask(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def _is(table: pa.Table, column: str, *values: str) -> np.ndarray:
    return _mask(pc.is_in(table.column(column), value_set=pa.array(values, _STR)))


def file_id(path: Path) -> str:
    """The thread id in a rollout's name (``rollout-<time>-<uuid>.jsonl``), else its stem."""
    stem = path.name.split(".jsonl")[0]
    tail = stem[-36:]
    return tail if len(tail) == 36 and tail.count("-") == 4 else stem


def _bounds(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Where each of consecutive runs of ``counts`` items starts, and the end: ``len(counts) + 1`` offsets."""
    return np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))]).astype(np.int64)


def _firsts(owner: np.ndarray, n: int) -> np.ndarray:
    """For each of ``n`` rollouts, the index of its first item in ``owner`` (ascending), else -1."""
    out = np.full(n, -1, dtype=np.int64)
    owners, first = np.unique(owner, return_index=True)
    out[owners] = first
    return out


def _split(owner: np.ndarray, n: int) -> list[int]:
    """Offsets of ``n`` rollouts' runs in items whose rollouts ``owner`` are ascending."""
    bounds: list[int] = _bounds(np.bincount(owner, minlength=n)).tolist()
    return bounds


@dataclass(frozen=True)
class Rows:
    """The rows of several rollouts one after the other, as one table (a chunk per rollout).

    Attributes:
        table: every rollout's rows in turn.
        kinds: their block kinds.
        events: their tool events, ``row`` an index into ``table``.
        offsets: rollout ``i``'s rows are ``offsets[i]:offsets[i + 1]``.
        rollout: the rollout of each row.
        local: each row's index within its rollout.
        paths: each rollout's file.
    """

    table: pa.Table
    kinds: pa.ChunkedArray
    events: pa.Table
    offsets: np.ndarray
    rollout: np.ndarray
    local: np.ndarray
    paths: tuple[Path, ...]

    @classmethod
    def of(cls, rows: Sequence[LineRows]) -> Rows:
        """The rollouts' scanned rows, joined without a copy (:func:`~..lines.joined`)."""
        j = joined(rows)
        offsets = j.starts
        rollout = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(offsets))
        local = np.arange(int(offsets[-1]), dtype=np.int64) - offsets[rollout]
        return cls(j.table, j.kinds, j.events, offsets, rollout, local, tuple(r.path for r in rows))


def identities(rows: Sequence[LineRows]) -> list[Identity]:
    """Each rollout's identity: its first ``session_meta``, else its file name."""
    if not rows:
        return []
    both = Rows.of(rows)
    t = both.table
    metas = np.flatnonzero(_is(t, "type", "session_meta") & _mask(pc.is_valid(t.column("id"))))
    first = _firsts(both.rollout[metas], len(rows))
    found = metas[first[first >= 0]]
    cols = ["id", "forked_from_id", "parent_thread_id", "spawn_call_id", "model_provider", "meta_ts_us", "ts_us",
            "id_us"]
    picked = iter(t.select(cols).take(pa.array(found, _I64)).to_pylist())
    out: list[Identity] = []
    for r, at in zip(rows, first, strict=True):
        if at < 0:
            out.append(Identity(file_id(r.path)))
            continue
        meta = next(picked)
        created = meta["meta_ts_us"] if meta["meta_ts_us"] is not None else meta["ts_us"]
        out.append(Identity(meta["id"], meta["forked_from_id"] or meta["parent_thread_id"], meta["spawn_call_id"],
                            meta["model_provider"], created, meta["id_us"]))
    return out


@dataclass(frozen=True)
class _Kept:
    """The message rows kept (after each rollout's copied prefix), and where each rollout's run of them starts."""

    rows: Rows
    starts: np.ndarray  # per rollout: rows before this local index are its copied prefix
    keep: np.ndarray  # per row: a kept message
    seen: np.ndarray  # per row: the global index of the last kept message at or before it (-1: none)
    bounds: np.ndarray  # rollout i's kept messages are bounds[i]:bounds[i + 1]
    take: pa.Array  # the kept rows' indexes

    @classmethod
    def of(cls, rows: Rows, starts: Sequence[int]) -> _Kept:
        start = np.asarray(starts, dtype=np.int64)
        after = rows.local >= start[rows.rollout]
        keep = _mask(pc.equal(rows.table.column("message"), 1)) & after
        bounds = _bounds(np.bincount(rows.rollout[keep], minlength=len(start)))
        return cls(rows, start, keep, np.cumsum(keep) - 1, bounds, pa.array(np.flatnonzero(keep), _I64))

    def after(self) -> np.ndarray:
        """Per row: whether it comes after its rollout's copied prefix."""
        after: np.ndarray = self.rows.local >= self.starts[self.rows.rollout]
        return after

    def position(self, seen: np.ndarray, at: np.ndarray) -> np.ndarray:
        """The position in its own rollout of the kept message ``seen`` (global), for rows ``at``."""
        position: np.ndarray = seen - self.bounds[self.rows.rollout[at]]
        return position

    def mine(self, at: np.ndarray) -> np.ndarray:
        """Whether the kept message counted at each row ``at`` is of the row's own rollout."""
        mine: np.ndarray = self.seen[at] >= self.bounds[self.rows.rollout[at]]
        return mine


def _models(rows: Rows, carries: Sequence[Carry | None]) -> pa.Array:
    """The ``turn_context`` model in force at each row (carried forward within its rollout, from its carry on)."""
    t = rows.table
    named = _is(t, "type", "turn_context") & _mask(pc.is_valid(t.column("model")))
    at = np.maximum.accumulate(np.where(named, np.arange(t.num_rows), -1))
    mine = at >= rows.offsets[rows.rollout]
    found = t.column("model").take(pa.array(np.where(mine, at, 0), _I64, mask=~mine)).combine_chunks()
    if not any(c is not None and c.model is not None for c in carries):
        return found
    seeds = pa.array([c.model if c is not None else None for c in carries], _STR)
    return pc.coalesce(found, seeds.take(pa.array(rows.rollout, _I64)))


def _events(kept: _Kept, text: bool) -> list[ToolEvents]:
    """Each rollout's kept rows' tool events, each row index turned into its message's position."""
    ev = kept.rows.events
    at = np.asarray(ev.column("row").to_numpy(), dtype=np.int64)
    chosen = kept.keep[at] if len(at) else np.zeros(0, bool)
    if not chosen.all():  # a filter copies every text: only where some rows are left out
        ev = ev.filter(pa.array(chosen))
    at = at[chosen]
    position = kept.position(kept.seen[at], at).tolist()
    bounds = _split(kept.rows.rollout[at], len(kept.starts))
    cols = {name: ev.column(name).to_pylist() for name in ("call", "call_id", "name", "is_error", "chars",
                                                           "input_bytes")}
    # the calls' and the results' texts, a chunk per rollout: each rollout's taken with no copy
    texts = (ev.column("input_text"), ev.column("result_text")) if text else None
    out: list[ToolEvents] = []
    for lo, hi in itertools.pairwise(bounds):
        inputs, results = (one_array(t.slice(lo, hi - lo)) for t in texts) if texts is not None else (None, None)
        out.append(ToolEvents(
            row=position[lo:hi], call=cols["call"][lo:hi], kind=["client"] * (hi - lo), call_id=cols["call_id"][lo:hi],
            name=cols["name"][lo:hi], is_error=cols["is_error"][lo:hi], chars=cols["chars"][lo:hi],
            input_bytes=cols["input_bytes"][lo:hi],
            texts=inputs, result_texts=results))
    return out


@dataclass(frozen=True, slots=True)
class _Codes:
    """A rollout's exit codes by call id, the ids whose code is the output's own, and the ids coded in its rows."""

    codes: dict[str, int]
    said: set[str]
    read: set[str]


def _tool_meta(kept: _Kept, events: list[ToolEvents], carries: Sequence[Carry | None]) -> list[_Codes]:
    """Exit codes by call id (the output's, else ``exec_command_end``'s); null flags filled from them."""
    t = kept.rows.table
    coded = _mask(pc.is_valid(t.column("exit_code")))
    ended = _is(t, "payload_type", "exec_command_end") & coded & kept.after()
    out = [_Codes(dict(c.codes), set(c.said), set()) if c is not None else _Codes({}, set(), set()) for c in carries]
    for own, mask in ((False, ended), (True, kept.keep & coded)):  # the output's own word wins
        at = np.flatnonzero(mask)
        picked = t.select(["call_id", "exit_code"]).take(pa.array(at, _I64)).to_pydict()
        for r, c, e in zip(kept.rows.rollout[at].tolist(), picked["call_id"], picked["exit_code"], strict=True):
            if c is None:
                continue
            mine = out[r]
            mine.read.add(c)
            if own:
                mine.said.add(c)
            elif c in mine.said:  # an output before the point said it
                continue
            mine.codes[c] = e
    for mine, evs in zip(out, events, strict=True):
        if not mine.codes:
            continue
        for i, (call, cid) in enumerate(zip(evs.call, evs.call_id, strict=True)):
            if not call and evs.is_error[i] is None and cid in mine.codes:
                evs.is_error[i] = mine.codes[cid] != 0
    return out


def _columns(kept: _Kept, models: pa.Array, events: list[ToolEvents], text: bool) -> list[EntryColumns]:
    """Each rollout's kept messages as entry columns: one take over every rollout, then a slice each."""
    t, take = kept.rows.table, kept.take
    n = len(take)
    side = t.column("side").take(take).combine_chunks()
    nulls = pa.nulls(n, _STR)
    assistant = pc.fill_null(pc.equal(side, "assistant"), False)
    got = {
        "side": side,
        "model": pc.if_else(assistant, models.take(take), nulls),
        "created_at": t.column("ts_us").take(take).combine_chunks().cast(_TIMESTAMP),
        "n_blocks": pc.fill_null(t.column("n_blocks").take(take), 0).combine_chunks().cast(pa.int32()),
        "text_chars": pc.fill_null(t.column("text_chars").take(take), 0).combine_chunks(),
        "status": t.column("status").take(take).combine_chunks(),
        "block_kinds": kept.rows.kinds.take(take).combine_chunks(),
        "text": t.column("text").take(take).combine_chunks() if text else nulls,
        "reasoning_text": t.column("reasoning").take(take).combine_chunks() if text else nulls,
    }
    positions = pa.array(np.arange(n, dtype=np.int64) - np.repeat(kept.bounds[:-1], np.diff(kept.bounds)), _I64)
    out: list[EntryColumns] = []
    for i, evs in enumerate(events):
        lo, k = int(kept.bounds[i]), int(kept.bounds[i + 1] - kept.bounds[i])
        cut = {name: col.slice(lo, k) for name, col in got.items()}
        out.append(EntryColumns(position=positions.slice(lo, k), id=nulls.slice(lo, k), origin=nulls.slice(lo, k),
                                error=nulls.slice(lo, k), source_id=nulls.slice(lo, k), usage=None, events=evs,
                                **cut))
    return out


def _usage(kept: _Kept, idents: Sequence[Identity], models: pa.Array, diagnostics: Sequence[Diagnostics],
           carries: Sequence[Carry | None], before: Totals | None) -> tuple[list[UsageColumns], list[int]]:
    """Each rollout's usage rows: one per counted ``token_count`` after its copied prefix (see :mod:`.usage`).

    Also how many of them were priced as the fallback model. A row before any assistant message
    of its rows reports on the last one before its carry's point (a negative ``seq``: counted
    back from it).
    """
    rows = kept.rows
    t = rows.table
    found = deltas(t, rows.rollout, before)
    chosen = kept.after()[found.rows]
    at = found.rows[chosen]
    owner = rows.rollout[at]
    values, valid = found.values[:, chosen], found.valid[:, chosen]
    take = pa.array(at, _I64)
    model = pc.coalesce(t.column("model").take(take).combine_chunks(), models.take(take)).to_pylist()
    windows = t.column("context_window").take(take).to_pylist()
    assistant = kept.keep & _is(t, "side", "assistant")
    last = np.maximum.accumulate(np.where(assistant, np.arange(t.num_rows), -1))[at]
    linked = last >= rows.offsets[owner]
    back = np.array([c.assistant if c is not None and c.assistant is not None else 0 for c in carries], np.int64)
    earlier = np.array([c is not None and c.assistant is not None for c in carries], dtype=bool)
    position = np.where(linked, kept.position(kept.seen[np.maximum(last, 0)], at), back[owner])
    seqs = pa.array(position, _I64, mask=~(linked | earlier[owner]))
    counters = [pa.array(values[i], _I64, mask=~valid[i]).to_pylist() for i in range(len(COUNTERS))]
    bounds = _split(owner, len(idents))
    counted: list[int] = []
    for r in range(len(idents)):
        assumed = sum(1 for m in model[bounds[r]:bounds[r + 1]] if m is None)
        counted.append(assumed)
        if assumed:
            diagnostics[r].report(rows.paths[r], "assumed_model",
                                  f"{assumed} usage row(s) name no model (no turn_context before them): priced as "
                                  f"{FALLBACK_MODEL}, as ccusage assumes")
    usages = [Usage.normalize(input_tokens=u_in, cache_read_tokens=u_read, output_tokens=u_out,
                              reasoning_tokens=u_reasoning, cache_in_input=_OPENAI.cache_in_input,
                              reasoning_in_output=_OPENAI.reasoning_in_output,
                              cache_write_slice=_OPENAI.cache_write_slice, context_window=window)
              for u_in, u_read, u_out, u_reasoning, window in zip(*counters, windows, strict=True)]
    by_rollout = pa.array(owner, _I64)
    every = UsageColumns.of(
        usages, seq=seqs, model=pa.array([m or FALLBACK_MODEL for m in model], pa.string()),
        created_us=t.column("ts_us").take(take).combine_chunks().cast(_I64),
        provider=pa.array([i.provider or "openai" for i in idents], pa.string()).take(by_rollout),
        found_in="entry", accounting="openai",
        provider_source=pa.array(["runtime" if i.provider else None for i in idents], pa.string()).take(by_rollout))
    return [every.slice(bounds[r], bounds[r + 1]) for r in range(len(idents))], counted


def _growth(kept: _Kept, carries: Sequence[Carry | None]) -> list[tuple[GrowthRow, ...]]:
    """Each rollout's compaction rows: one per message a compaction follows.

    A compaction before a rollout's first message read on from a point follows the last message
    before the point (position -1, its size the point's): its row, unless its carry has it.
    """
    t = kept.rows.table
    marks = (_is(t, "type", "compacted") | (_is(t, "type", "response_item", "event_msg")
                                            & _is(t, "payload_type", *_COMPACTIONS)))
    at = np.flatnonzero(marks & kept.after())
    pending = np.array([c is not None and not c.compacted for c in carries], dtype=bool)
    at = at[kept.mine(at) | pending[kept.rows.rollout[at]]]
    out: list[tuple[GrowthRow, ...]] = [() for _ in kept.starts]
    if not len(at):
        return out
    # one row per (rollout, message): the first compaction after each message
    message, owner = kept.seen[at], kept.rows.rollout[at]
    first = np.flatnonzero(np.concatenate([[True], (message[1:] != message[:-1]) | (owner[1:] != owner[:-1])]))
    at, message, owner = at[first], message[first], owner[first]
    times = t.column("ts_us").take(pa.array(at, _I64)).to_pylist()
    positions = kept.position(message, at).tolist()
    bounds = _split(owner, len(out))
    for r in np.unique(owner).tolist():
        lo, hi = bounds[r], bounds[r + 1]
        out[r] = tuple(GrowthRow(p, "compaction", at=datetime_of_us(us), chars=0 if p < 0 else None)
                       for p, us in zip(positions[lo:hi], times[lo:hi], strict=True))
    return out


def _titles(kept: _Kept) -> list[str | None]:
    """Each rollout's title: its first kept message's title (a user message's first line)."""
    t = kept.rows.table
    at = np.flatnonzero(kept.keep & _mask(pc.is_valid(t.column("title"))))
    first = _firsts(kept.rows.rollout[at], len(kept.starts))
    found = iter(t.column("title").take(pa.array(at[first[first >= 0]], _I64)).to_pylist())
    return [title_of(next(found)) if f >= 0 else None for f in first]


def _last_assistants(kept: _Kept) -> list[int | None]:
    """Per rollout, the position of its last kept assistant message (``None``: it has none)."""
    at = np.flatnonzero(kept.keep & _is(kept.rows.table, "side", "assistant"))
    owner = kept.rows.rollout[at]
    out: list[int | None] = [None] * len(kept.starts)
    if len(at):
        last = len(owner) - 1 - np.unique(owner[::-1], return_index=True)[1]
        for r, p in zip(owner[last].tolist(), kept.position(kept.seen[at[last]], at[last]).tolist(), strict=True):
            out[r] = p
    return out


def _carried(kept: _Kept, idents: Sequence[Identity], models: pa.Array, carries: Sequence[Carry | None],
             totals: Totals, state: tuple[list[UsageColumns], list[tuple[GrowthRow, ...]], list[_Codes],
                                          list[int]]) -> list[tuple[Carry, int]]:
    """Per rollout, the state after its rows (:class:`~.carry.Carry`), and how many earlier responses it reports on."""
    usage, growth, codes, assumed = state
    own = _last_assistants(kept)
    out: list[tuple[Carry, int]] = []
    for r, ident in enumerate(idents):
        c = carries[r] or Carry()
        n = int(kept.bounds[r + 1] - kept.bounds[r])
        seqs = {seq for seq in usage[r].seq.to_pylist() if seq is not None}
        hi = int(kept.rows.offsets[r + 1])
        model = models[hi - 1].as_py() if hi > int(kept.rows.offsets[r]) else c.model
        reported = int(c.assistant is not None and not c.linked and c.assistant in seqs)
        if own[r] is not None:
            assistant, linked = own[r], own[r] in seqs
        else:
            assistant, linked = c.assistant, c.assistant is not None and (c.linked or c.assistant in seqs)
        at_last = {g.position for g in growth[r]}
        compacted = (n - 1) in at_last if n else c.compacted or -1 in at_last
        out.append((Carry(ident.provider, model, totals.at(r), None if assistant is None else assistant - n, linked,
                          compacted, codes[r].codes, frozenset(codes[r].said), c.assumed + assumed[r]), reported))
    return out


def decode(rows: Sequence[LineRows], idents: Sequence[Identity], starts: Sequence[int], text: bool,
           diagnostics: Sequence[Diagnostics], carries: Sequence[Carry | None] | None = None) -> list[Decoded]:
    """Each rollout's hand-over, every row before its ``starts`` (its copied prefix) left out.

    Args:
        rows: the rollouts' scanned rows.
        idents: their identities (:func:`identities`).
        starts: per rollout, the end of its copied prefix (:mod:`.fork`; 0: none).
        text: whether the text columns are filled.
        diagnostics: per rollout, where what is found wrong in it is reported.
        carries: per rollout whose rows are read on from a resume point, the state of the lines
            before it (``None``: the rollout is read from its first line).
    """
    if not rows:
        return []
    carried = list(carries) if carries is not None else [None] * len(rows)
    seeded = any(c is not None for c in carried)
    before = Totals.of([c.total if c is not None else None for c in carried]) if seeded else None
    kept = _Kept.of(Rows.of(rows), starts)
    models = _models(kept.rows, carried)
    events = _events(kept, text)
    columns = _columns(kept, models, events, text)
    codes = _tool_meta(kept, events, carried)
    t = kept.rows.table
    lines = t.column("line").take(kept.take).combine_chunks()
    usage, assumed = _usage(kept, idents, models, diagnostics, carried, before)
    growth, titles = _growth(kept, carried), _titles(kept)
    after = _carried(kept, idents, models, carried, last_totals(t, kept.rows.rollout, len(rows), before),
                     (usage, growth, codes, assumed))
    out: list[Decoded] = []
    for i, cols in enumerate(columns):
        lo, k = int(kept.bounds[i]), len(cols)
        meta = {cid: ToolMeta(exit_code=code) for cid, code in codes[i].codes.items()}
        out.append(Decoded(cols, usage[i], growth[i], titles[i], meta, lines.slice(lo, k),
                           after[i][0], after[i][1], codes[i].read <= set(cols.events.call_id)))
    return out
