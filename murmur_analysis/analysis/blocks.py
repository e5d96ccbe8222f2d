"""Five-hour usage blocks: Claude's billing windows, cut as ccusage 18.0.11 cuts them.

The responses with a time, oldest first, fall into blocks. A block starts at its first
response's time floored to the hour (UTC) and ends :data:`BLOCK_HOURS` hours later. A response
more than five hours after its block's start, or more than five hours after the previous
response, starts the next block (a response exactly five hours after the start still belongs to
the block). A silence of more than five hours between two responses is a *gap*: a block of no
responses from five hours after the last response to the next response. A block is *active*
when ``now`` is within five hours of its last response and before its end.

The rule works on any ``usage`` frame (any source with timed responses), in
:func:`block_of`; :func:`blocks` adds each block's spend.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from ..core.values import datetime_of_us
from . import metrics

__all__ = ["BLOCK_COLUMNS", "BLOCK_HOURS", "block_of", "blocks"]

#: A block's length in hours (ccusage's ``--session-length`` default).
BLOCK_HOURS = 5
#: The columns that describe a block (before its spend columns).
BLOCK_COLUMNS = ["block_start", "block_end", "first_at", "last_at", "active", "gap", "models"]

_HOUR_US = 3_600_000_000


def block_of(times: np.ndarray, hours: int = BLOCK_HOURS) -> tuple[np.ndarray, list[int]]:
    """Which block each time falls in.

    Args:
        times: the responses' times in microseconds since the epoch (UTC), sorted ascending.
        hours: the block length.

    Returns:
        Each time's block number (0, 1, ...), and each block's start in microseconds.
    """
    span = hours * _HOUR_US
    numbers = np.empty(len(times), dtype=np.int64)
    starts: list[int] = []
    previous = 0
    for k, at in enumerate(times.tolist()):
        if not starts or at - starts[-1] > span or at - previous > span:
            starts.append(at - at % _HOUR_US)
        numbers[k] = len(starts) - 1
        previous = at
    return numbers, starts


def _models(frame: pd.DataFrame) -> pd.Series:
    """Each block's models, in the order they first answered, joined with ``", "``."""
    named = frame.dropna(subset=["model"])
    joined = named.groupby("block", sort=True)["model"].agg(lambda s: ", ".join(dict.fromkeys(s)))
    return joined


def blocks(usage: pd.DataFrame, *, now: datetime | None = None, hours: int = BLOCK_HOURS) -> pd.DataFrame:
    """The five-hour blocks of ``usage``'s timed responses, with each block's spend.

    Args:
        usage: a ``usage`` frame (rows without ``created_at`` are left out).
        now: the time that decides which block is active (default: the clock).
        hours: the block length.

    Returns:
        One row per block, oldest first: ``block_start``, ``block_end``, ``first_at`` and
        ``last_at`` (the block's first and last response; null for a gap), ``active``, ``gap``, ``models``, then
        ``responses``, the token counters and totals of :func:`metrics.token_usage` and the cost
        of :func:`metrics.cost` (a gap has 0 responses and null counters and cost).
    """
    timed = usage[usage["created_at"].notna().to_numpy()]
    if timed.empty:
        columns = [*BLOCK_COLUMNS, *metrics.token_usage(timed.assign(block=0), by="block").columns[1:],
                   "cost_usd", "unpriced_responses"]
        return metrics.arrow_frame(pd.DataFrame(columns=columns))
    micros = _micros(timed["created_at"])
    order = np.argsort(micros, kind="stable")
    timed, micros = timed.iloc[order], micros[order]
    numbers, starts = block_of(micros, hours)
    frame = timed.assign(block=numbers)
    spend = metrics.token_usage(frame, by="block").merge(
        metrics.cost(frame, by="block")[["block", "cost_usd", "unpriced_responses"]], on="block")
    span = timedelta(hours=hours)
    first, last = pd.Series(micros).groupby(numbers).min(), pd.Series(micros).groupby(numbers).max()
    clock = (now or datetime.now(UTC)).astimezone(UTC)
    rows = []
    for number, start_us in enumerate(starts):
        start = datetime_of_us(start_us)
        end, last_at = start + span, datetime_of_us(int(last[number]))
        rows.append({"block": number, "block_start": start, "block_end": end,
                     "first_at": datetime_of_us(int(first[number])), "last_at": last_at,
                     "active": clock - last_at < span and clock < end, "gap": False})
        if number + 1 < len(starts):
            following = datetime_of_us(int(micros[np.searchsorted(numbers, number + 1)]))
            if following - last_at > span:
                rows.append({"block": None, "block_start": last_at + span, "block_end": following,
                             "first_at": None, "last_at": None, "active": False, "gap": True})
    described = pd.DataFrame(rows, columns=["block", *BLOCK_COLUMNS[:-1]])
    described["models"] = described["block"].map(_models(frame))
    out = described.merge(spend, on="block", how="left").drop(columns="block")
    out["responses"] = out["responses"].fillna(0)
    for column in ("block_start", "block_end", "first_at", "last_at"):
        out[column] = pd.to_datetime(out[column], utc=True).astype("datetime64[us, UTC]")
    return metrics.arrow_frame(out.reset_index(drop=True))


def _micros(times: pd.Series) -> np.ndarray:
    """Times as microseconds since the epoch (UTC)."""
    utc = metrics.utc_times(times).dt.tz_localize(None)
    return np.asarray(utc.to_numpy(dtype="datetime64[us]").astype(np.int64))
