"""Metrics: tables in, tables out. Nothing here parses a file.

Each function takes a :class:`~murmur_analysis.Corpus` (or the one frame it reads) and returns
a pandas frame whose every column is Arrow-backed (``pd.ArrowDtype``); a value nobody reported
stays null. ``by`` is a column name or a list of them; ``freq`` buckets time (``"D"`` day,
``"W"`` week starting Monday, or on ``week_start``, ``"MS"`` month) in the time zone ``tz``, into
a ``period`` column (a date: the bucket's first day).

**Tool error rate** (the one definition, used by the command line and the notebook too):
errors over *answered* calls, where a call is answered when its result was seen (status ``ok``
or ``error``). Unanswered calls have no outcome and are counted apart; results with no call
(``orphan_result``) and repeated results are not calls. The interval is Wilson's score interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa

from ..core.pricing import SLICES, sum_costs
from ..core.values import counter_sum, int64_held
from .kinds import WEEKDAYS, Weekday

if TYPE_CHECKING:
    from ..corpus import Corpus

__all__ = [
    "COUNTERS",
    "TOTAL_PARTS",
    "WEEKDAYS",
    "cost",
    "growth",
    "growth_curves",
    "local_days",
    "orphan_drops",
    "token_usage",
    "tool_error_rates",
    "utc_times",
    "wilson_interval",
]

Freq = Literal["D", "W", "MS"]
By = str | Sequence[str]

#: The token counters :func:`token_usage` sums, in the order reports show them.
COUNTERS = (
    "input_total_tokens",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
)
#: The counters :func:`token_usage`'s ``total_tokens`` adds up (reasoning included once).
TOTAL_PARTS = ("input_total_tokens", "output_tokens", "reasoning_tokens")


def _frame(data: Corpus | pd.DataFrame, table: str) -> pd.DataFrame:
    return data if isinstance(data, pd.DataFrame) else data.frame(table)


def _keys(by: By) -> list[str]:
    return [by] if isinstance(by, str) else list(by)


def arrow_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every column Arrow-backed; NaN and None become null."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    out: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return out


def utc_times(times: pd.Series) -> pd.Series:
    """Timezone-aware timestamps as ``datetime64[us, UTC]`` (null stays ``NaT``).

    An Arrow-backed column (every table's times) is converted by pyarrow in one pass: pandas'
    own ``astype`` of it goes value by value, about 2.5 microseconds each.
    """
    dtype = times.dtype
    arrow_type = dtype.pyarrow_dtype if isinstance(dtype, pd.ArrowDtype) else None
    if (arrow_type is not None and pa.types.is_timestamp(arrow_type) and arrow_type.tz
            and arrow_type.unit != "ns"):  # to microseconds, losing nothing
        arrow = pa.array(times.array).cast(pa.timestamp("us", tz="UTC"))
        converted: pd.Series = arrow.to_pandas().set_axis(times.index).rename(times.name)
        return converted
    return times.astype("datetime64[us, UTC]")


def local_days(times: pd.Series, tz: str) -> pd.Series:
    """The local midnight (naive) of each timezone-aware time's day in time zone ``tz``."""
    day: pd.Series = utc_times(times).dt.tz_convert(tz).dt.tz_localize(None).dt.normalize()
    return day


def periods(times: pd.Series, freq: Freq, tz: str = "UTC", week_start: Weekday = "monday") -> pd.Series:
    """The first day of the ``freq`` bucket of each time, in time zone ``tz`` (null stays null).

    Args:
        times: timezone-aware timestamps.
        freq: ``"D"`` (day), ``"W"`` (week) or ``"MS"`` (month).
        tz: an IANA time zone name, e.g. ``"Europe/Berlin"``.
        week_start: the day a ``"W"`` bucket starts on (one of :data:`WEEKDAYS`).

    Returns:
        A ``date32[pyarrow]`` series aligned with ``times``.
    """
    if freq not in ("D", "W", "MS"):
        raise ValueError(f"freq must be 'D', 'W' or 'MS', not {freq!r}")
    if week_start not in WEEKDAYS:
        raise ValueError(f"week_start must be one of {', '.join(WEEKDAYS)}, not {week_start!r}")
    local = local_days(times, tz)
    if freq == "W":
        local = local - pd.to_timedelta((local.dt.day_of_week - WEEKDAYS.index(week_start)) % 7, unit="D")
    elif freq == "MS":
        local = local - pd.to_timedelta(local.dt.day - 1, unit="D")
    days = pa.array(local.to_numpy(dtype="datetime64[us]"), from_pandas=True).cast(pa.date32())
    return pd.Series(pd.arrays.ArrowExtensionArray(days), index=times.index, name="period")


def _grouped(
    frame: pd.DataFrame, by: By, freq: Freq | None, tz: str, time: str, week_start: Weekday = "monday"
) -> tuple[pd.DataFrame, list[str]]:
    keys = _keys(by)
    if freq is not None:
        frame = frame.assign(period=periods(frame[time], freq, tz, week_start))
        keys = ["period", *keys]
    return frame, keys


_COUNTS = {"responses", "retried_responses", "unpriced_responses", "calls", "answered", "errors", "unanswered",
           "timed", "states", "messages", "chars", "compactions", "compacted_tokens", "total_tokens",
           "peak_context_tokens", "last_context_tokens", *COUNTERS}


def _empty(frame: pd.DataFrame, keys: list[str], columns: list[str]) -> pd.DataFrame:
    """No rows, with the key columns typed as in ``frame``, counts as int64, the rest float64."""
    out = {c: frame[c].iloc[:0] if c in frame else pd.Series([], dtype="int64" if c in _COUNTS else "float64")
           for c in columns}
    if "period" in keys:
        out["period"] = pd.Series([], dtype=pd.ArrowDtype(pa.date32()))
    return arrow_frame(pd.DataFrame(out))


def _groupby(frame: pd.DataFrame, keys: list[str]) -> Any:
    """``frame`` grouped by ``keys``, nulls kept as a group; no keys: one group of every row."""
    if not keys:
        return frame.groupby(np.zeros(len(frame), dtype=np.int64), sort=True)
    return frame.groupby(keys, dropna=False, observed=True, sort=True)


def _exact_sums(frame: pd.DataFrame, keys: list[str], columns: Sequence[str]) -> dict[str, list[int | None]]:
    """The exact sum of each integer column per group, in :func:`_groupby`'s group order.

    Each value is split into its high and low 32 bits, whose sums cannot pass ``int64``, so
    nothing wraps (pandas' and Arrow's own sums of ``int64`` do, silently). A group where no
    row has a value sums to ``None``.
    """
    parts = pd.DataFrame({key: frame[key] for key in keys}, index=frame.index)
    for column in columns:
        whole = frame[column].fillna(0).to_numpy(dtype=np.int64)
        parts[f"{column}/high"], parts[f"{column}/low"] = whole >> 32, whole & 0xFFFFFFFF
        parts[f"{column}/known"] = frame[column].notna().to_numpy(dtype=np.int64)
    sums = _groupby(parts, keys)[[c for c in parts.columns if c not in keys]].sum()
    return {column: [(int(high) << 32) + int(low) if known else None for high, low, known in zip(
        sums[f"{column}/high"], sums[f"{column}/low"], sums[f"{column}/known"], strict=True)] for column in columns}


def _held(exact: Iterable[int | None]) -> pd.arrays.ArrowExtensionArray:
    """Exact sums as an ``int64`` column holds them: null past it (:func:`~murmur_analysis.core.values.int64_held`)."""
    return pd.arrays.ArrowExtensionArray(pa.array([None if x is None else int64_held(x) for x in exact], pa.int64()))


def token_usage(
    data: Corpus | pd.DataFrame,
    by: By = ("source", "model"),
    freq: Freq | None = None,
    tz: str = "UTC",
    week_start: Weekday = "monday",
) -> pd.DataFrame:
    """Sum the normalized token counters per group, optionally per day, week or month.

    Args:
        data: a corpus, or its ``usage`` frame.
        by: grouping column(s) of ``usage``.
        freq: bucket ``created_at`` into ``period`` (a response with no time gets a null period).
        tz: the time zone the buckets are cut in.
        week_start: the day a ``"W"`` bucket starts on.

    Returns:
        One row per group: ``responses``, each counter's sum (null when no row reported it),
        ``total_tokens`` (input_total + output + reasoning), ``cache_hit_ratio`` (cache reads
        over the whole prompt) and ``retried_responses`` (attempts whose output was not kept).
    """
    frame, keys = _grouped(_frame(data, "usage"), by, freq, tz, "created_at", week_start)
    columns = [*keys, "responses", *COUNTERS, "total_tokens", "cache_hit_ratio", "retried_responses"]
    if frame.empty:
        return _empty(frame, keys, columns)
    grouped = _groupby(frame, keys)
    out = grouped.size().rename("responses").to_frame()
    # Summed exactly: a sum past int64 is null (the load's sum_overflow rows say where).
    exact = _exact_sums(frame, keys, COUNTERS)
    for counter in COUNTERS:
        out[counter] = _held(exact[counter])
    parts = zip(*(exact[counter] for counter in TOTAL_PARTS), strict=True)
    out["total_tokens"] = _held(counter_sum(p)[0] for p in parts)
    ratios = [read / whole if read is not None and whole else None
              for read, whole in zip(exact["cache_read_tokens"], exact["input_total_tokens"], strict=True)]
    out["cache_hit_ratio"] = pd.array(ratios, dtype="float64")
    out["retried_responses"] = grouped["sealed"].apply(lambda s: int((s == False).sum()))  # noqa: E712
    return arrow_frame(out.reset_index()[columns])


def cost(
    data: Corpus | pd.DataFrame,
    by: By = ("source", "model"),
    freq: Freq | None = None,
    tz: str = "UTC",
    week_start: Weekday = "monday",
) -> pd.DataFrame:
    """What the responses cost in USD per group, optionally per day, week or month.

    Sums follow :func:`murmur_analysis.core.pricing.sum_costs`: the sum of the known costs, null
    when none is known; ``unpriced_responses`` counts the unknown ones (non-zero: a lower bound).

    Args:
        data: a corpus, or its ``usage`` frame.
        by: grouping column(s) of ``usage``.
        freq: bucket ``created_at`` into ``period``.
        tz: the time zone the buckets are cut in.
        week_start: the day a ``"W"`` bucket starts on.

    Returns:
        One row per group: ``responses``, ``cost_usd``, ``unpriced_responses`` and the cost of
        each slice (``input_cost_usd``, ``cache_read_cost_usd``, ``cache_write_cost_usd``,
        ``output_cost_usd``).
    """
    frame, keys = _grouped(_frame(data, "usage"), by, freq, tz, "created_at", week_start)
    columns = [*keys, "responses", "cost_usd", "unpriced_responses", *SLICES]
    if frame.empty:
        return _empty(frame, keys, columns)
    grouped = frame.groupby(keys, dropna=False, observed=True, sort=True)
    out = grouped.size().rename("responses").to_frame()
    for column in ("cost_usd", *SLICES):
        sums = [sum_costs(None if pd.isna(v) else float(v) for v in values) for _, values in grouped[column]]
        out[column] = pd.Series([total for total, _ in sums], index=out.index, dtype="float64")
        if column == "cost_usd":
            out["unpriced_responses"] = pd.Series([n for _, n in sums], index=out.index, dtype="int64")
    return arrow_frame(out.reset_index()[columns])


def wilson_interval(errors: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval for a proportion ``errors / n`` (NaN where ``n`` is 0).

    Args:
        errors: successes (here: errors), per group.
        n: trials (here: answered calls), per group.
        confidence: two-sided confidence level.

    Returns:
        ``(low, high)`` arrays.
    """
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    k = np.asarray(errors, dtype="float64")
    m = np.asarray(n, dtype="float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / m
        denominator = 1 + z * z / m
        centre = (p + z * z / (2 * m)) / denominator
        half = z / denominator * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
    # At 0 and at n the bound is exactly 0 or 1 (the formula leaves rounding noise there).
    low = np.where(m > 0, np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
    high = np.where(m > 0, np.where(k == m, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    return low, high


def tool_error_rates(
    data: Corpus | pd.DataFrame,
    by: By = ("source", "tool_name"),
    min_calls: int = 1,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Tool outcomes per group: calls, errors, error rate with its interval, and latency.

    The rate is errors over answered calls (see the module's definition).

    Args:
        data: a corpus, or its ``tool_calls`` frame.
        by: grouping column(s) of ``tool_calls``.
        min_calls: leave out groups with fewer calls.
        confidence: the interval's confidence level (95% by default).

    Returns:
        One row per group: ``calls``, ``answered``, ``errors``, ``unanswered``,
        ``outcome_unknown`` (answered by a result that does not say whether the call failed:
        status ``unknown``, e.g. a Codex output with no exit code), ``error_rate`` (errors over
        the answered calls whose outcome is known; null when there are none: an unknown outcome is
        never taken for a success), ``ci_low`` and ``ci_high`` (Wilson), ``timed``
        (calls with a duration) and ``p50_ms``, ``p95_ms`` of ``duration_ms`` (null when
        the runtime timed none).
    """
    keys = _keys(by)
    columns = [*keys, "calls", "answered", "errors", "unanswered", "outcome_unknown", "error_rate", "ci_low",
               "ci_high", "timed", "p50_ms", "p95_ms"]
    tool_calls = _frame(data, "tool_calls")
    calls = tool_calls[tool_calls["called_seq"].notna()]
    if calls.empty:
        return _empty(calls, keys, columns)
    status = calls["status"].astype("string")
    flags = pd.DataFrame({
        "errors": (status == "error").astype("int64"),
        "answered": status.isin(["ok", "error", "unknown"]).astype("int64"),
        "unanswered": (status == "unanswered").astype("int64"),
        "outcome_unknown": (status == "unknown").astype("int64"),
        "timed": calls["duration_ms"].notna().astype("int64"),
        "duration_ms": calls["duration_ms"].astype("float64"),
    })
    for key in keys:
        flags[key] = calls[key]
    grouped = flags.groupby(keys, dropna=False, observed=True, sort=True)
    out = grouped.size().rename("calls").to_frame()
    for column in ("answered", "errors", "unanswered", "outcome_unknown", "timed"):
        out[column] = grouped[column].sum()
    out = out[out["calls"] >= min_calls]
    answered = (out["answered"] - out["outcome_unknown"]).to_numpy()  # the outcomes known
    out["error_rate"] = np.where(answered > 0, out["errors"] / np.maximum(answered, 1), np.nan)
    out["ci_low"], out["ci_high"] = wilson_interval(out["errors"].to_numpy(), answered, confidence)
    out["p50_ms"] = grouped["duration_ms"].quantile(0.5).reindex(out.index)
    out["p95_ms"] = grouped["duration_ms"].quantile(0.95).reindex(out.index)
    return arrow_frame(out.reset_index()[columns])


def orphan_drops(data: Corpus | pd.DataFrame) -> pd.DataFrame:
    """Orphan results per conversation, as assembly finds them and as the runtime recorded them.

    Args:
        data: a corpus, or its ``orphans`` frame.

    Returns:
        One row per ``(source, conversation_id)``: ``assembly`` and ``record`` counts of
        distinct orphan ids, and ``disagree``: ids one side names and the other does not.
    """
    orphans = _frame(data, "orphans")
    rows: list[tuple[Any, ...]] = []
    for (source, conv), group in orphans.groupby(["source", "conversation_id"], observed=True, sort=True):
        found = {kind: set(g["tool_use_id"]) for kind, g in group.groupby("found_by", observed=True)}
        assembly, record = found.get("assembly", set()), found.get("record", set())
        disagree = len(assembly ^ record) if "record" in found else 0
        rows.append((source, conv, len(assembly), len(record), disagree))
    table = pa.table(
        [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in range(5)],
        schema=pa.schema([("source", pa.string()), ("conversation_id", pa.string()), ("assembly", pa.int64()),
                          ("record", pa.int64()), ("disagree", pa.int64())]),
    )
    out: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return out


def _last_known(values: pd.Series) -> Any:
    known = values.dropna()
    return known.iloc[-1] if len(known) else None


def growth(data: Corpus | pd.DataFrame) -> pd.DataFrame:
    """How each conversation grew: its last size, its peak context and what compactions removed.

    Args:
        data: a corpus, or its ``growth`` frame.

    Returns:
        One row per ``(source, conversation_id)``: ``states`` (growth rows), ``messages`` and
        ``chars`` at the last state, ``peak_context_tokens`` and ``last_context_tokens``
        (null where no usage was reported), ``compactions`` and ``compacted_tokens`` (the sum
        of ``tokens_before - tokens_after`` over compactions that reported both).
    """
    frame = _frame(data, "growth").sort_values(["source", "conversation_id", "position"], kind="stable")
    columns = ["source", "conversation_id", "states", "messages", "chars", "peak_context_tokens",
               "last_context_tokens", "compactions", "compacted_tokens"]
    if frame.empty:
        return _empty(frame, ["source", "conversation_id"], columns)
    frame = frame.assign(
        is_compaction=(frame["event"] == "compaction").astype("int64"),
        removed=frame["tokens_before"] - frame["tokens_after"],
    )
    grouped = _groupby(frame, ["source", "conversation_id"])
    out = grouped.size().rename("states").to_frame()
    out["messages"] = grouped["messages"].last()
    out["chars"] = grouped["chars"].last()
    out["peak_context_tokens"] = grouped["context_tokens"].max()
    out["last_context_tokens"] = grouped["context_tokens"].agg(_last_known)
    out["compactions"] = grouped["is_compaction"].sum()
    out["compacted_tokens"] = _held(_exact_sums(frame, ["source", "conversation_id"], ["removed"])["removed"])
    return arrow_frame(out.reset_index()[columns])


def growth_curves(data: Corpus | pd.DataFrame, event: str | None = None) -> pd.DataFrame:
    """Each conversation's size along its history, with a 0..1 progress axis for overlaying.

    Args:
        data: a corpus, or its ``growth`` frame.
        event: keep only rows of this event (``commit``, ``message``, ``compaction``).

    Returns:
        The rows sorted by conversation and position, with ``step`` (0-based index within the
        conversation) and ``progress`` (``step`` over the conversation's last step).
    """
    frame = _frame(data, "growth")
    frame = frame if event is None else frame[frame["event"] == event]
    frame = frame.sort_values(["source", "conversation_id", "position"]).copy()
    step = frame.groupby(["source", "conversation_id"], observed=True).cumcount()
    last = step.groupby([frame["source"], frame["conversation_id"]], observed=True).transform("max")
    frame["step"] = pd.Series(step.to_numpy(), index=frame.index, dtype=pd.ArrowDtype(pa.int64()))
    progress = (step / last.where(last > 0, 1)).astype("float64")
    frame["progress"] = pd.Series(progress.to_numpy(), index=frame.index, dtype=pd.ArrowDtype(pa.float64()))
    return frame.reset_index(drop=True)
