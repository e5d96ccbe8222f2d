r"""Which lines of a load are the model responses, each counted once (``docs/tokens.md``, Claude Code).

Claude Code writes one assistant response as several lines (one content block each), every one
carrying a ``message.usage``: identical on some builds, growing on others, placeholders on
subagent files. It copies lines into a resumed session's file, and a ``/btw`` sidechain replays
a parent's message under a new ``requestId``. So the responses are decided over every file of a
load at once, as columns (no Python per line):

1. **Copies.** A line whose ``uuid`` an earlier session also holds is a copy: the session whose
   first line is earliest owns it, and the copies are not counted.
2. **One response.** Lines with the same ``message.id`` and ``requestId`` (a missing
   ``requestId`` a value of its own, so such lines are one response by ``message.id``) are one
   response; a line with no ``message.id`` is a response alone.
3. **Sidechain replays.** Responses of one ``message.id`` under different ``requestId``\\ s, where
   some are sidechain lines only: a sidechain one is counted only when no other is a main-chain
   one, and then only the largest.
4. **Counters.** Each counter is the largest any line of the response reports (a line that
   reports less is an earlier snapshot). The row's time, message and conversation are those of
   its first line (the earliest session first, then line order).

``<synthetic>`` lines (the runtime's own error notices) are no model responses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .whole import Whole, mask, true

__all__ = ["COUNTERS", "SYNTHETIC", "Counted", "count_responses", "responses_of"]

#: The model name Claude Code writes on its own notices (``API Error: ...``).
SYNTHETIC = "<synthetic>"
#: The engine's usage columns, in the order of the bits of ``u_bad``, and the field each is.
COUNTERS = {
    "u_input": "input_tokens",
    "u_output": "output_tokens",
    "u_cache_read": "cache_read_input_tokens",
    "u_cache_creation": "cache_creation_input_tokens",
    "u_cache_5m": "cache_creation.ephemeral_5m_input_tokens",
    "u_cache_1h": "cache_creation.ephemeral_1h_input_tokens",
}
_SHIFT = 32  # a line's order: its file's rank, then its row
_KEEP = ["ts_us", "uuid", "msg_id", "request_id", "is_sidechain", "model", "session_id", "service_tier", "speed",
         "has_cache_breakdown", "u_bad", *COUNTERS]


@dataclass(frozen=True)
class Counted:
    """The responses of a load, one row each, and where each stands.

    Attributes:
        responses: one row per response (pandas), in load order (file, then row): ``file`` and
            ``row`` (its first line, in the load's table), ``ts_us``, ``msg_id``, ``model``,
            ``session_id``, ``service_tier``, ``speed``, the counters by their engine names
            (nullable ``Int64``), ``has_cache_breakdown``, ``bad_<counter>`` (1 where a line
            wrote a value that is no counter), ``lines``.
        covered: a mask of the load's rows that are assistant lines but no response's first
            line (the other lines of a response, copies, replays, synthetic lines).
    """

    responses: pd.DataFrame
    covered: np.ndarray


def _assistant(t: pa.Table) -> np.ndarray:
    return mask(pc.equal(t.column("type"), "assistant"))


def responses_of(w: Whole, ranks: Sequence[int]) -> pa.Table:
    """Every assistant line with usage of a load, as one table (``file``, ``row``, ``ord``, the usage columns)."""
    t = w.table
    at = np.flatnonzero(_assistant(t) & true(t.column("has_usage")) & ~mask(pc.equal(t.column("model"), SYNTHETIC)))
    file = w.file[at]
    order = (np.asarray(ranks, np.int64)[file] << _SHIFT) + (at - w.starts[file]) if len(at) else at
    return (t.select(_KEEP).take(pa.array(at, pa.int64())).combine_chunks()
            .append_column("file", pa.array(file, pa.int64()))
            .append_column("row", pa.array(at, pa.int64()))
            .append_column("ord", pa.array(order, pa.int64())))


def _without_copies(lines: pa.Table) -> pa.Table:
    """The lines whose ``uuid`` no earlier session holds (rule 1)."""
    ranked = lines.append_column("rank", pc.shift_right(lines.column("ord"), _SHIFT))
    first = ranked.filter(pc.is_valid(ranked.column("uuid"))).group_by("uuid").aggregate([("rank", "min")])
    joined = ranked.join(first, keys="uuid", join_type="left outer")
    own = pc.or_(pc.is_null(joined.column("rank_min")), pc.equal(joined.column("rank"), joined.column("rank_min")))
    return joined.filter(own).drop_columns(["rank", "rank_min"])


def _grouped(lines: pa.Table) -> pd.DataFrame:
    """One row per response (rule 2): the first line's order, the counters' maxima, the flags."""
    n = lines.num_rows
    alone = pc.binary_join_element_wise("\x00", pc.cast(lines.column("ord"), pa.string()), "")
    key = pc.if_else(pc.is_valid(lines.column("msg_id")), lines.column("msg_id"), alone)
    lines = lines.append_column("key", key)
    lines = lines.append_column("req", pc.fill_null(lines.column("request_id"), "\x00none"))
    lines = lines.append_column("side", pc.fill_null(lines.column("is_sidechain"), 0))
    for bit, name in enumerate(COUNTERS):
        lines = lines.append_column(f"bad_{name}", pc.bit_wise_and(pc.shift_right(
            pc.fill_null(lines.column("u_bad"), 0), bit), 1))
    aggs = [("ord", "min"), ("side", "min"), ("has_cache_breakdown", "max"), ("ord", "count"),
            *((name, "max") for name in COUNTERS), *((f"bad_{name}", "max") for name in COUNTERS)]
    grouped = lines.group_by(["key", "req"], use_threads=False).aggregate(aggs) if n else None
    if grouped is None:
        return pd.DataFrame()
    frame: pd.DataFrame = grouped.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
    names = {f"{name}_max": name for name in (*COUNTERS, *(f"bad_{c}" for c in COUNTERS), "has_cache_breakdown")}
    names.update(ord_min="ord", side_min="sidechain", ord_count="lines")
    renamed: pd.DataFrame = frame.rename(columns=names)
    return renamed


def _replays_dropped(frame: pd.DataFrame) -> pd.DataFrame:
    """Sidechain responses that replay another response of their ``message.id`` left out (rule 3)."""
    if frame.empty:
        return frame
    total = frame[["u_input", "u_output", "u_cache_read", "u_cache_creation"]].fillna(0).sum(axis=1)
    frame = frame.assign(_total=total.astype("int64"), _side=frame["sidechain"].fillna(0).astype("int64"))
    by = frame.groupby("key", sort=False)
    main = by["_side"].transform("min") == 0  # the message.id has a main-chain response
    many = by["_side"].transform("size") > 1
    # among sidechain-only ids: the largest total, the first line on a tie
    order = frame.sort_values(["_total", "ord"], ascending=[False, True])
    best = ~order.duplicated("key")
    best = best.reindex(frame.index)
    keep = (frame["_side"] == 0) | ~many | (~main & best)
    kept: pd.DataFrame = frame[keep].drop(columns=["_total", "_side"])
    return kept


def count_responses(w: Whole, ranks: Sequence[int]) -> Counted:
    """The load's responses, each once, by the rules of the module doc.

    Args:
        w: every file of the load, as scanned.
        ranks: each file's rank: files ordered by their first line's time (then load order).
    """
    lines = responses_of(w, ranks)
    frame = _replays_dropped(_grouped(_without_copies(lines))) if lines.num_rows else pd.DataFrame()
    if frame.empty:
        responses = pd.DataFrame(columns=["file", "row"])
    else:
        first = lines.drop_columns([c for c in (*COUNTERS, "u_bad", "has_cache_breakdown") if c in lines.column_names])
        owners = first.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get).set_index("ord")
        frame = frame.set_index("ord")
        responses = frame.join(owners[["file", "row", "ts_us", "msg_id", "model", "session_id", "service_tier",
                                       "speed"]], how="left").reset_index()
        responses = responses.sort_values("row", kind="stable").reset_index(drop=True)
    covered = _assistant(w.table) & (true(w.table.column("has_usage")) | mask(pc.equal(w.table.column("model"),
                                                                                       SYNTHETIC)))
    if len(responses):
        covered[responses["row"].to_numpy(np.int64)] = False
    return Counted(responses, covered)
