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
import pyarrow as pa
import pyarrow.compute as pc

from ...core.codes import value_codes
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
        responses: one row per response, in load order (file, then row): ``file`` and ``row``
            (its first line, in the load's table), ``ts_us``, ``msg_id``, ``model``,
            ``session_id``, ``service_tier``, ``speed``, the counters by their engine names,
            ``has_cache_breakdown``, ``bad_<counter>`` (1 where a line wrote a value that is no
            counter).
        covered: a mask of the load's rows that are assistant lines but no response's first
            line (the other lines of a response, copies, replays, synthetic lines).
    """

    responses: pa.Table
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
    """The lines whose ``uuid`` no earlier session holds (rule 1); a line with no ``uuid`` is no copy: kept."""
    rank = lines.column("ord").to_numpy() >> _SHIFT
    encoded = pc.dictionary_encode(lines.column("uuid")).combine_chunks()
    code = pc.fill_null(encoded.indices, -1).to_numpy().astype(np.int64)
    named = code >= 0
    first = np.full(len(encoded.dictionary), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, code[named], rank[named])
    own = ~named  # a line with no uuid copies nothing
    own[named] = rank[named] == first[code[named]]
    return lines.filter(pa.array(own))


def _grouped(lines: pa.Table) -> pa.Table:
    """One row per response (rule 2): the first line's order, the counters' maxima, the flags.

    ``key`` says which responses share a ``message.id`` (a line with none is a key of its own).
    """
    n = lines.num_rows
    msg, _ = value_codes(lines.column("msg_id"))
    named = pc.is_valid(lines.column("msg_id")).to_numpy(zero_copy_only=False)
    key = np.where(named, msg, -1 - np.arange(n, dtype=np.int64))  # no message.id: a response alone
    req, _ = value_codes(lines.column("request_id"))  # no requestId: a value of its own
    _, response = np.unique(key * (int(req.max()) + 1 if n else 1) + req, return_inverse=True)
    order = np.argsort(response, kind="stable")
    starts = np.flatnonzero(np.r_[True, response[order][1:] != response[order][:-1]]) if n else order

    def each(values: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
        """``ufunc`` over each response's lines."""
        return np.asarray(ufunc.reduceat(values[order], starts)) if n else values

    def largest(column: pa.ChunkedArray) -> pa.Array:
        """The largest value the response's lines give (null when none gives one)."""
        values = pc.fill_null(column, np.iinfo(np.int64).min).to_numpy(zero_copy_only=False)
        given = each(pc.is_valid(column).to_numpy(zero_copy_only=False), np.logical_or)
        return pa.array(each(values, np.maximum), column.type, mask=~given)

    def plain(column: pa.ChunkedArray) -> np.ndarray:
        return np.asarray(pc.fill_null(column, 0).to_numpy(zero_copy_only=False))

    bad, side = plain(lines.column("u_bad")), plain(lines.column("is_sidechain"))
    columns = {"key": pa.array(each(key, np.minimum)), "ord": pa.array(each(plain(lines.column("ord")), np.minimum)),
               "sidechain": pa.array(each(side, np.minimum), lines.column("is_sidechain").type),
               "has_cache_breakdown": largest(lines.column("has_cache_breakdown")),
               **{name: largest(lines.column(name)) for name in COUNTERS}}
    for bit, name in enumerate(COUNTERS):
        columns[f"bad_{name}"] = pa.array(each((bad >> bit) & 1, np.maximum), lines.column("u_bad").type)
    return pa.table(columns)


def _replays_dropped(grouped: pa.Table) -> pa.Table:
    """Sidechain responses that replay another response of their ``message.id`` left out (rule 3)."""
    n = grouped.num_rows
    total = np.zeros(n, np.int64)
    for name in ("u_input", "u_output", "u_cache_read", "u_cache_creation"):
        total += pc.fill_null(grouped.column(name), 0).to_numpy()
    side = grouped.column("sidechain").to_numpy()
    _, key = np.unique(grouped.column("key").to_numpy(), return_inverse=True)
    groups = int(key.max()) + 1 if n else 0
    lowest = np.full(groups, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(lowest, key, side)
    main = lowest[key] == 0  # the message.id has a main-chain response
    many = np.bincount(key, minlength=groups)[key] > 1
    # among sidechain-only ids: the largest total, the first line on a tie
    order = np.lexsort((grouped.column("ord").to_numpy(), ~total))  # ~total: descending, never overflowing
    best = np.zeros(n, bool)
    best[order[np.unique(key[order], return_index=True)[1]]] = True
    keep = (side == 0) | ~many | (~main & best)
    return grouped.filter(pa.array(keep))


def count_responses(w: Whole, ranks: Sequence[int]) -> Counted:
    """The load's responses, each once, by the rules of the module doc.

    Args:
        w: every file of the load, as scanned.
        ranks: each file's rank: files ordered by their first line's time (then load order).
    """
    lines = responses_of(w, ranks)
    responses = pa.table({"row": pa.array([], pa.int64())})
    if lines.num_rows:
        kept = _replays_dropped(_grouped(_without_copies(lines)))
        # a response's first line: the line of its order (an order names one line)
        ords = lines.column("ord").to_numpy()
        by_ord = np.argsort(ords, kind="stable")
        first = by_ord[np.searchsorted(ords, kept.column("ord").to_numpy(), sorter=by_ord)]
        owners = lines.select(["file", "row", "ts_us", "msg_id", "model", "session_id", "service_tier", "speed"])
        owners = owners.take(pa.array(first, pa.int64()))
        counts = kept.select(["has_cache_breakdown", *COUNTERS, *(f"bad_{c}" for c in COUNTERS)])
        for name in counts.column_names:
            owners = owners.append_column(name, counts.column(name))
        responses = owners.take(pa.array(np.argsort(owners.column("row").to_numpy(), kind="stable"), pa.int64()))
    covered = _assistant(w.table) & (true(w.table.column("has_usage")) | mask(pc.equal(w.table.column("model"),
                                                                                       SYNTHETIC)))
    covered[responses.column("row").to_numpy()] = False
    return Counted(responses, covered)
