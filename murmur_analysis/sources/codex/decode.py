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
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.diagnostics import Diagnostics
from ...core.handoff import EntryColumns, GrowthRow, ToolEvents, ToolMeta, UsageRow
from ...core.model import Usage
from ...core.providers import ProviderSource, accounting
from ..lines import LineRows
from ..murmur.entries import title_of
from .usage import COUNTERS, deltas

__all__ = ["FALLBACK_MODEL", "Decoded", "Identity", "Rows", "decode", "identities"]

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
    usage: tuple[UsageRow, ...]
    growth: tuple[GrowthRow, ...]
    title: str | None
    tool_meta: dict[str, ToolMeta]
    lines: pa.Array  # the line number of each message
    errors: pa.Array  # each message's inferred tool error flag (tool outputs)


def _mask(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def _is(table: pa.Table, column: str, *values: str) -> np.ndarray:
    return _mask(pc.is_in(table.column(column), value_set=pa.array(values, _STR)))


def _file_id(path: Path) -> str:
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
        """The rollouts' scanned rows, joined without a copy."""
        counts = [r.table.num_rows for r in rows]
        offsets = _bounds(counts)
        rollout = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        local = np.arange(int(offsets[-1]), dtype=np.int64) - offsets[rollout]
        events = pa.concat_tables([r.events for r in rows])
        shift = np.repeat(offsets[:-1], [r.events.num_rows for r in rows])
        moved = np.asarray(events.column("row").to_numpy(), dtype=np.int64) + shift
        events = events.set_column(0, "row", pa.array(moved, _I64))
        kinds = pa.chunked_array([r.kinds for r in rows], type=rows[0].kinds.type)
        return cls(pa.concat_tables([r.table for r in rows]), kinds, events, offsets, rollout, local,
                   tuple(r.path for r in rows))


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
            out.append(Identity(_file_id(r.path)))
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


def _models(rows: Rows) -> pa.Array:
    """The ``turn_context`` model in force at each row (carried forward within its rollout)."""
    t = rows.table
    named = _is(t, "type", "turn_context") & _mask(pc.is_valid(t.column("model")))
    at = np.maximum.accumulate(np.where(named, np.arange(t.num_rows), -1))
    mine = at >= rows.offsets[rows.rollout]
    return t.column("model").take(pa.array(np.where(mine, at, 0), _I64, mask=~mine)).combine_chunks()


def _events(kept: _Kept, text: bool) -> list[ToolEvents]:
    """Each rollout's kept rows' tool events, each row index turned into its message's position."""
    ev = kept.rows.events
    at = np.asarray(ev.column("row").to_numpy(), dtype=np.int64)
    chosen = kept.keep[at] if len(at) else np.zeros(0, bool)
    ev = ev.filter(pa.array(chosen))
    at = at[chosen]
    position = kept.position(kept.seen[at], at).tolist()
    bounds = _split(kept.rows.rollout[at], len(kept.starts))
    cols = {name: ev.column(name).to_pylist() for name in ("call", "call_id", "name", "is_error", "chars",
                                                           "input_bytes")}
    texts = ev.column("text").to_pylist() if text else None
    out: list[ToolEvents] = []
    for lo, hi in itertools.pairwise(bounds):
        out.append(ToolEvents(
            row=position[lo:hi], call=cols["call"][lo:hi], kind=["client"] * (hi - lo), call_id=cols["call_id"][lo:hi],
            name=cols["name"][lo:hi], is_error=cols["is_error"][lo:hi], chars=cols["chars"][lo:hi],
            input_bytes=cols["input_bytes"][lo:hi], texts=texts[lo:hi] if texts is not None else None))
    return out


def _tool_meta(kept: _Kept, events: list[ToolEvents]) -> list[dict[str, ToolMeta]]:
    """Exit codes by call id (the output's, else ``exec_command_end``'s); null flags filled from them."""
    t = kept.rows.table
    coded = _mask(pc.is_valid(t.column("exit_code")))
    ended = _is(t, "payload_type", "exec_command_end") & coded & kept.after()
    codes: list[dict[str, int]] = [{} for _ in events]
    for mask in (ended, kept.keep & coded):  # the output's own word wins
        at = np.flatnonzero(mask)
        picked = t.select(["call_id", "exit_code"]).take(pa.array(at, _I64)).to_pydict()
        for r, c, e in zip(kept.rows.rollout[at].tolist(), picked["call_id"], picked["exit_code"], strict=True):
            if c is not None:
                codes[r][c] = e
    for mine, evs in zip(codes, events, strict=True):
        if not mine:
            continue
        for i, (call, cid) in enumerate(zip(evs.call, evs.call_id, strict=True)):
            if not call and evs.is_error[i] is None and cid in mine:
                evs.is_error[i] = mine[cid] != 0
    return [{cid: ToolMeta(exit_code=code) for cid, code in mine.items()} for mine in codes]


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


def _usage(kept: _Kept, idents: Sequence[Identity], models: pa.Array,
           diagnostics: Sequence[Diagnostics]) -> list[tuple[UsageRow, ...]]:
    """Each rollout's usage rows: one per counted ``token_count`` after its copied prefix (see :mod:`.usage`)."""
    rows = kept.rows
    t = rows.table
    found = deltas(t, rows.rollout)
    chosen = kept.after()[found.rows]
    at = found.rows[chosen]
    owner = rows.rollout[at]
    values, valid = found.values[:, chosen], found.valid[:, chosen]
    take = pa.array(at, _I64)
    model = pc.coalesce(t.column("model").take(take).combine_chunks(), models.take(take)).to_pylist()
    times = t.column("ts_us").take(take).to_pylist()
    windows = t.column("context_window").take(take).to_pylist()
    assistant = kept.keep & _is(t, "side", "assistant")
    last = np.maximum.accumulate(np.where(assistant, np.arange(t.num_rows), -1))[at]
    linked = last >= rows.offsets[owner]
    seqs = pa.array(kept.position(kept.seen[np.maximum(last, 0)], at), _I64, mask=~linked).to_pylist()
    counters = [pa.array(values[i], _I64, mask=~valid[i]).to_pylist() for i in range(len(COUNTERS))]
    bounds = _split(owner, len(idents))
    out: list[tuple[UsageRow, ...]] = []
    for r, ident in enumerate(idents):
        lo, hi = bounds[r], bounds[r + 1]
        assumed = sum(1 for m in model[lo:hi] if m is None)
        if assumed:
            diagnostics[r].report(rows.paths[r], "assumed_model",
                                  f"{assumed} usage row(s) name no model (no turn_context before them): priced as "
                                  f"{FALLBACK_MODEL}, as ccusage assumes")
        provider = ident.provider or "openai"
        source: ProviderSource | None = "runtime" if ident.provider else None
        made: list[UsageRow] = []
        for i in range(lo, hi):
            usage = Usage.normalize(input_tokens=counters[0][i], cache_read_tokens=counters[1][i],
                                    output_tokens=counters[2][i], reasoning_tokens=counters[3][i],
                                    cache_in_input=_OPENAI.cache_in_input,
                                    reasoning_in_output=_OPENAI.reasoning_in_output,
                                    cache_write_slice=_OPENAI.cache_write_slice, context_window=windows[i])
            made.append(UsageRow(usage, seq=seqs[i], model=model[i] or FALLBACK_MODEL, provider=provider,
                                 created_at=_when(times[i]), found_in="entry", accounting="openai",
                                 provider_source=source))
        out.append(tuple(made))
    return out


def _when(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1_000_000, UTC)


def _growth(kept: _Kept) -> list[tuple[GrowthRow, ...]]:
    """Each rollout's compaction rows: one per message a compaction follows."""
    t = kept.rows.table
    marks = (_is(t, "type", "compacted") | (_is(t, "type", "response_item", "event_msg")
                                            & _is(t, "payload_type", *_COMPACTIONS)))
    at = np.flatnonzero(marks & kept.after())
    at = at[kept.mine(at)]
    out: list[tuple[GrowthRow, ...]] = [() for _ in kept.starts]
    if not len(at):
        return out
    # one row per (rollout, message): the first compaction after each message
    message = kept.seen[at]
    first = np.flatnonzero(np.concatenate([[True], message[1:] != message[:-1]]))
    at, message = at[first], message[first]
    times = t.column("ts_us").take(pa.array(at, _I64)).to_pylist()
    positions = kept.position(message, at).tolist()
    owner = kept.rows.rollout[at]
    bounds = _split(owner, len(out))
    for r in np.unique(owner).tolist():
        lo, hi = bounds[r], bounds[r + 1]
        out[r] = tuple(GrowthRow(p, "compaction", at=_when(us)) for p, us in zip(positions[lo:hi], times[lo:hi],
                                                                                 strict=True))
    return out


def _titles(kept: _Kept) -> list[str | None]:
    """Each rollout's title: its first kept message's title (a user message's first line)."""
    t = kept.rows.table
    at = np.flatnonzero(kept.keep & _mask(pc.is_valid(t.column("title"))))
    first = _firsts(kept.rows.rollout[at], len(kept.starts))
    found = iter(t.column("title").take(pa.array(at[first[first >= 0]], _I64)).to_pylist())
    return [title_of(next(found)) if f >= 0 else None for f in first]


def decode(rows: Sequence[LineRows], idents: Sequence[Identity], starts: Sequence[int], text: bool,
           diagnostics: Sequence[Diagnostics]) -> list[Decoded]:
    """Each rollout's hand-over, every row before its ``starts`` (its copied prefix) left out.

    Args:
        rows: the rollouts' scanned rows.
        idents: their identities (:func:`identities`).
        starts: per rollout, the end of its copied prefix (:mod:`.fork`; 0: none).
        text: whether the text columns are filled.
        diagnostics: per rollout, where what is found wrong in it is reported.
    """
    if not rows:
        return []
    kept = _Kept.of(Rows.of(rows), starts)
    models = _models(kept.rows)
    events = _events(kept, text)
    columns = _columns(kept, models, events, text)
    metas = _tool_meta(kept, events)
    t = kept.rows.table
    lines = t.column("line").take(kept.take).combine_chunks()
    errors = t.column("is_error").take(kept.take).combine_chunks()
    usage, growth, titles = _usage(kept, idents, models, diagnostics), _growth(kept), _titles(kept)
    out: list[Decoded] = []
    for i, cols in enumerate(columns):
        lo, k = int(kept.bounds[i]), len(cols)
        out.append(Decoded(cols, usage[i], growth[i], titles[i], metas[i], lines.slice(lo, k), errors.slice(lo, k)))
    return out
