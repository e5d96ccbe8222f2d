"""One rollout's engine rows turned into what the frame builder reads: columns, usage, growth, tools.

The engine (``native/src/formats/codex.rs``) has already decided, line by line, what each row
is. Here everything is columns (pyarrow compute and numpy), once per rollout:

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

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.diagnostics import Diagnostics
from ...core.handoff import EntryColumns, GrowthRow, ToolEvents, ToolMeta, UsageRow
from ...core.model import Usage
from ...core.providers import accounting
from ..lines import LineRows
from ..murmur.entries import title_of
from .usage import COUNTERS, deltas

__all__ = ["FALLBACK_MODEL", "Decoded", "Identity", "decode", "identity"]

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


def _mask(values: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def _is(table: pa.Table, column: str, *values: str) -> np.ndarray:
    return _mask(pc.is_in(table.column(column), value_set=pa.array(values, _STR)))


def _col(t: pa.Table, name: str) -> pa.Array:
    """A column of the rollout's rows as one array."""
    return t.column(name).combine_chunks()


def _file_id(path: Path) -> str:
    """The thread id in a rollout's name (``rollout-<time>-<uuid>.jsonl``), else its stem."""
    stem = path.name.split(".jsonl")[0]
    tail = stem[-36:]
    return tail if len(tail) == 36 and tail.count("-") == 4 else stem


def identity(rows: LineRows) -> Identity:
    """The rollout's identity: its first ``session_meta``, else its file name."""
    t = rows.table
    metas = np.flatnonzero(_is(t, "type", "session_meta") & _mask(pc.is_valid(t.column("id"))))
    if not len(metas):
        return Identity(_file_id(rows.path))
    meta = t.slice(int(metas[0]), 1).to_pylist()[0]
    created = meta["meta_ts_us"] if meta["meta_ts_us"] is not None else meta["ts_us"]
    return Identity(meta["id"], meta["forked_from_id"] or meta["parent_thread_id"], meta["spawn_call_id"],
                    meta["model_provider"], created, meta["id_us"])


def _events(rows: LineRows, keep: np.ndarray, text: bool) -> ToolEvents:
    """The kept rows' tool events, each row index turned into its message's position."""
    ev = rows.events
    at = np.asarray(ev.column("row").to_numpy(zero_copy_only=False), dtype=np.int64)
    kept = keep[at] if len(at) else np.zeros(0, bool)
    ev = ev.filter(pa.array(kept))
    position = (np.cumsum(keep) - 1)[at[kept]]
    return ToolEvents(
        row=position.tolist(),
        call=ev.column("call").to_pylist(),
        kind=["client"] * ev.num_rows,
        call_id=ev.column("call_id").to_pylist(),
        name=ev.column("name").to_pylist(),
        is_error=ev.column("is_error").to_pylist(),
        chars=ev.column("chars").to_pylist(),
        input_bytes=ev.column("input_bytes").to_pylist(),
        texts=ev.column("text").to_pylist() if text else None,
    )


def _tool_meta(t: pa.Table, keep: np.ndarray, start: int, events: ToolEvents) -> dict[str, ToolMeta]:
    """Exit codes by call id (the output's, else ``exec_command_end``'s); null flags filled from them."""
    ended = (_is(t, "payload_type", "exec_command_end") & _mask(pc.is_valid(t.column("exit_code")))
             & (np.arange(t.num_rows) >= start))
    said = keep & _mask(pc.is_valid(t.column("exit_code")))
    codes: dict[str, int] = {}
    for mask in (ended, said):  # the output's own word wins
        picked = t.filter(pa.array(mask)).select(["call_id", "exit_code"]).to_pydict()
        codes.update((c, e) for c, e in zip(picked["call_id"], picked["exit_code"], strict=True) if c is not None)
    for i, (call, cid) in enumerate(zip(events.call, events.call_id, strict=True)):
        if not call and events.is_error[i] is None and cid in codes:
            events.is_error[i] = codes[cid] != 0
    return {cid: ToolMeta(exit_code=code) for cid, code in codes.items()}


def _columns(rows: LineRows, keep: np.ndarray, text: bool) -> tuple[EntryColumns, pa.Array]:
    t = rows.table.combine_chunks()
    take = pa.array(np.flatnonzero(keep), _I64)
    n = len(take)
    side = _col(t, "side").take(take)
    models = pc.fill_null_forward(pc.if_else(pa.array(_is(t, "type", "turn_context")), _col(t, "model"),
                                             pa.nulls(t.num_rows, _STR)))
    assistant = pc.fill_null(pc.equal(side, "assistant"), False)
    nulls = pa.nulls(n, _STR)
    columns = EntryColumns(
        position=pa.array(np.arange(n, dtype=np.int64), _I64),
        id=nulls,
        side=side,
        origin=nulls,
        model=pc.if_else(assistant, models.take(take), nulls),
        created_at=_col(t, "ts_us").take(take).cast(_TIMESTAMP),
        n_blocks=pc.fill_null(_col(t, "n_blocks").take(take), 0).cast(pa.int32()),
        text_chars=pc.fill_null(_col(t, "text_chars").take(take), 0),
        status=_col(t, "status").take(take),
        error=nulls,
        source_id=nulls,
        block_kinds=rows.kinds.take(take),
        text=_col(t, "text").take(take) if text else nulls,
        reasoning_text=_col(t, "reasoning").take(take) if text else nulls,
        usage=None,
        events=_events(rows, keep, text),
    )
    return columns, models


def _when(us: int | None) -> datetime | None:
    return None if us is None else datetime.fromtimestamp(us / 1_000_000, UTC)


def _usage(rows: LineRows, ident: Identity, start: int, models: pa.Array, keep: np.ndarray,
           diagnostics: Diagnostics) -> tuple[UsageRow, ...]:
    """One usage row per counted ``token_count`` after the copied prefix (see :mod:`.usage`)."""
    t = rows.table
    found = deltas(t)
    after = found.rows >= start
    at = found.rows[after]
    values, valid = found.values[:, after], found.valid[:, after]
    take = pa.array(at, _I64)
    model = pc.coalesce(t.column("model").take(take), models.take(take)).to_pylist()
    assumed = sum(1 for m in model if m is None)
    if assumed:
        diagnostics.report(rows.path, "assumed_model",
                           f"{assumed} usage row(s) name no model (no turn_context before them): priced as "
                           f"{FALLBACK_MODEL}, as ccusage assumes")
    times = _col(t, "ts_us").take(take).to_pylist()
    windows = t.column("context_window").take(take).to_pylist()
    assistant = keep & _is(t, "side", "assistant")
    seen = np.cumsum(keep) - 1  # the position of the last kept message at or before each row
    last = np.maximum.accumulate(np.where(assistant, np.arange(t.num_rows), -1))
    seqs = [int(seen[last[r]]) if last[r] >= 0 else None for r in at]
    counters = [[int(v) if ok else None for v, ok in zip(values[i], valid[i], strict=True)]
                for i in range(len(COUNTERS))]
    out: list[UsageRow] = []
    for i, (inp, cached, output, reasoning) in enumerate(zip(*counters, strict=True)):
        usage = Usage.normalize(input_tokens=inp, cache_read_tokens=cached, output_tokens=output,
                                reasoning_tokens=reasoning, cache_in_input=_OPENAI.cache_in_input,
                                reasoning_in_output=_OPENAI.reasoning_in_output,
                                cache_write_slice=_OPENAI.cache_write_slice, context_window=windows[i])
        out.append(UsageRow(usage, seq=seqs[i], model=model[i] or FALLBACK_MODEL, provider=ident.provider or "openai",
                            created_at=_when(times[i]), found_in="entry", accounting="openai",
                            provider_source="runtime" if ident.provider else None))
    return tuple(out)


def _growth(t: pa.Table, keep: np.ndarray, start: int) -> tuple[GrowthRow, ...]:
    """One compaction row per message a compaction follows."""
    marks = (_is(t, "type", "compacted") | (_is(t, "type", "response_item", "event_msg")
                                            & _is(t, "payload_type", *_COMPACTIONS)))
    marks &= np.arange(t.num_rows) >= start
    seen = np.cumsum(keep) - 1
    rows = np.flatnonzero(marks & (seen >= 0))
    if not len(rows):
        return ()
    positions, first = np.unique(seen[rows], return_index=True)
    times = t.column("ts_us").take(pa.array(rows[first], _I64)).to_pylist()
    return tuple(GrowthRow(int(p), "compaction", at=_when(us)) for p, us in zip(positions, times, strict=True))


def _title(t: pa.Table, keep: np.ndarray) -> str | None:
    titles = t.column("title").filter(pa.array(keep))
    present = titles.filter(pc.is_valid(titles))
    return title_of(present[0].as_py()) if len(present) else None


def decode(rows: LineRows, ident: Identity, start: int, text: bool, diagnostics: Diagnostics) -> Decoded:
    """The rollout's hand-over, every row before ``start`` (its copied prefix) left out."""
    t = rows.table
    keep = _mask(pc.equal(t.column("message"), 1)) & (np.arange(t.num_rows) >= start)
    columns, models = _columns(rows, keep, text)
    meta = _tool_meta(t, keep, start, columns.events)
    take = pa.array(np.flatnonzero(keep), _I64)
    return Decoded(columns, _usage(rows, ident, start, models, keep, diagnostics), _growth(t, keep, start),
                   _title(t, keep), meta, _col(t, "line").take(take), _col(t, "is_error").take(take))
