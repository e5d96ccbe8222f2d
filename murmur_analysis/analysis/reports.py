"""Reports: the answers ``murmur-analysis report KIND`` and ``summary`` print, as data.

Each report is a frame of rows built from :mod:`murmur_analysis.analysis.metrics` plus the totals of
its additive columns. ``since``/``until`` are inclusive dates in the report's time zone: the
time-series reports (``daily``, ``weekly``, ``monthly``, ``models``) keep the responses made
within them; the others keep the conversations active within them (first to last timed entry).
When either is given, what has no time is left out. ``weekly`` buckets start on
``start_of_week`` (Sunday by default, as ccusage's do).

:func:`json_document` and :func:`written` give the values as JSON and CSV write them: a month
as ``2025-06``, a date as ``2025-06-01``, a time in ISO 8601 (UTC), a float rounded to
:data:`DECIMALS` decimal places, a trillionth of a dollar (a sum of floats carries rounding noise
far below it: ``0.0021000000000000003`` is written ``0.0021``; ``27670116110564.33`` keeps its cents).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from ..core.diagnostics import Diagnostic
from ..core.pricing import SLICES
from ..core.values import counter_sum
from . import blocks as five_hour
from . import metrics
from .kinds import BREAKDOWN_KINDS, KINDS, Weekday

if TYPE_CHECKING:
    from ..corpus import Corpus

__all__ = ["BREAKDOWN_KINDS", "DECIMALS", "KINDS", "TOKEN_KINDS", "Report", "build", "json_document", "summary",
           "written"]

#: The period column of each time-series report, and its bucket.
_PERIODS: dict[str, tuple[str, metrics.Freq]] = {"daily": ("date", "D"), "weekly": ("week", "W"),
                                                 "monthly": ("month", "MS")}
#: Decimal places a float written to JSON or CSV is rounded to: a trillionth of a dollar, far
#: below any price of a token (about 1e-8 dollars) and far above a float sum's rounding noise.
DECIMALS = 12

#: The token columns reports show, and their names in JSON (``tokens: {input: ...}``).
TOKEN_KINDS = {
    "input_tokens": "input",
    "cache_write_tokens": "cache_write",
    "cache_read_tokens": "cache_read",
    "output_tokens": "output",
    "reasoning_tokens": "reasoning",
    "total_tokens": "total",
}
_COST = ["cost_usd", "unpriced_responses"]


@dataclass
class Report:
    """One report.

    Attributes:
        kind: one of :data:`KINDS`.
        rows: the rows, Arrow-backed, columns in display order.
        totals: each additive column's total (nulls skipped; null when every value is null).
        keys: the columns that name a row.
        breakdown: with ``breakdown=True``, the same spend per row and model (the row's
            ``keys`` plus ``model``).
        diagnostics: what a reader of the numbers must know: one ``sum_overflow`` row per
            total that passes ``int64`` (shown as null).
        tz: the time zone its dates are cut in and its times are shown in.
    """

    kind: str
    rows: pd.DataFrame
    totals: dict[str, Any] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)
    breakdown: pd.DataFrame | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    tz: str = "UTC"


def _in_range(local: pd.Series, since: date | None, until: date | None) -> pd.Series:
    keep = pd.Series(True, index=local.index)
    if since is not None:
        keep &= (local >= pd.Timestamp(since)).fillna(False)
    if until is not None:
        keep &= (local <= pd.Timestamp(until)).fillna(False)
    return keep.astype(bool)


def _usage(corpus: Corpus, since: date | None, until: date | None, tz: str) -> pd.DataFrame:
    usage = corpus.usage
    if since is None and until is None:
        return usage
    return usage[_in_range(metrics.local_days(usage["created_at"], tz), since, until).to_numpy()]


def _conversations(corpus: Corpus, since: date | None, until: date | None, tz: str) -> pd.DataFrame:
    conv = corpus.conversations
    if since is None and until is None:
        return conv
    first, last = metrics.local_days(conv["first_at"], tz), metrics.local_days(conv["last_at"], tz)
    keep = _in_range(last, since, None) & _in_range(first, None, until)
    return conv[keep.to_numpy()]


def _keep(frame: pd.DataFrame, conv: pd.DataFrame) -> pd.DataFrame:
    keys = pd.MultiIndex.from_frame(conv[["source", "conversation_id"]].astype(str))
    mine = pd.MultiIndex.from_frame(frame[["source", "conversation_id"]].astype(str))
    return frame[mine.isin(keys)]


def _spend(usage: pd.DataFrame, by: list[str], freq: metrics.Freq | None, tz: str,
           week_start: Weekday = "monday") -> pd.DataFrame:
    tokens = metrics.token_usage(usage, by=by, freq=freq, tz=tz, week_start=week_start)
    costs = metrics.cost(usage, by=by, freq=freq, tz=tz, week_start=week_start)
    keys = (["period"] if freq else []) + by
    merged = tokens.merge(costs[[*keys, *_COST]], on=keys, how="left")
    return merged[[*keys, "responses", *TOKEN_KINDS, *_COST]]


def _blocks(corpus: Corpus, since: date | None, until: date | None, tz: str, now: datetime | None) -> pd.DataFrame:
    """The five-hour blocks of every timed response; ``since``/``until`` keep the blocks starting within them."""
    rows = five_hour.blocks(corpus.usage, now=now)
    rows = rows[_in_range(metrics.local_days(rows["block_start"], tz), since, until).to_numpy()]
    return rows[[*five_hour.BLOCK_COLUMNS, "responses", *TOKEN_KINDS, *_COST]]


def _overflow(kind: str, column: str, over: str) -> Diagnostic:
    return Diagnostic("report", kind, None, "sum_overflow",
                      f"the {kind} report's total of {column} over {over} passes the int64 limit 2**63-1: "
                      "it is null, and so is each row's sum that passes it")


def _totals(kind: str, rows: pd.DataFrame, columns: list[str]) -> tuple[dict[str, Any], list[Diagnostic]]:
    """Each column's total over the rows (nulls skipped); an integer total past ``int64`` is null."""
    out: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    for column in columns:
        values = rows[column].dropna()
        if values.empty:
            out[column] = None
        elif pd.api.types.is_integer_dtype(values.dtype):
            out[column], overflowed = counter_sum(int(v) for v in values)
            if overflowed:
                problems.append(_overflow(kind, column, f"its {len(values)} rows"))
        else:
            out[column] = _plain(values.sum())
    return out, problems


def _token_totals(
    kind: str, usage: pd.DataFrame, columns: Sequence[str] = tuple(TOKEN_KINDS)
) -> tuple[dict[str, Any], list[Diagnostic]]:
    """The token totals of a spend report: summed over its responses, not over its rows.

    A row whose sum passes ``int64`` is null, so a total of the rows would leave it out.
    """
    if usage.empty:
        return dict.fromkeys(columns), []
    whole = metrics.token_usage(usage, by=[])
    out = {column: _plain(whole[column].iloc[0]) for column in columns}
    parts = {column: [column] for column in TOKEN_KINDS} | {"total_tokens": list(metrics.TOTAL_PARTS)}
    problems = [_overflow(kind, column, f"its {len(usage)} responses") for column in columns
                if out[column] is None and usage[parts[column]].notna().to_numpy().any()]
    return out, problems


def build(
    corpus: Corpus,
    kind: str,
    *,
    since: date | None = None,
    until: date | None = None,
    tz: str = "UTC",
    breakdown: bool = False,
    order: Literal["asc", "desc"] = "asc",
    start_of_week: Weekday = "sunday",
    now: datetime | None = None,
) -> Report:
    """Build one report from a corpus.

    Args:
        corpus: the loaded corpus.
        kind: one of :data:`KINDS`.
        since: first date kept (inclusive, in ``tz``).
        until: last date kept (inclusive, in ``tz``).
        tz: the time zone days, weeks and months are cut in.
        breakdown: also split the spend of each row per model (:attr:`Report.breakdown`);
            only the reports of :data:`BREAKDOWN_KINDS` have one.
        order: ``"asc"``: the rows oldest first (by period, or a session's last activity;
            the other reports by name), ``"desc"``: the other way round.
        start_of_week: the day ``weekly`` buckets start on (``"sunday"``, ``"monday"``, ...).
        now: the time that decides which of the ``blocks`` report's blocks is active (default:
            the clock).

    Returns:
        The report.

    Raises:
        ValueError: ``kind`` is not a report kind, ``breakdown`` is asked of a report that has
            none, or ``order`` is neither ``"asc"`` nor ``"desc"``.
    """
    if kind not in KINDS:
        raise ValueError(f"no report {kind!r}; reports: {', '.join(KINDS)}")
    if breakdown and kind not in BREAKDOWN_KINDS:
        raise ValueError(f"the {kind} report has no per-model breakdown; the {', '.join(BREAKDOWN_KINDS)} "
                         "reports have one")
    if order not in ("asc", "desc"):
        raise ValueError(f"order must be 'asc' or 'desc', not {order!r}")
    additive = ["responses", *TOKEN_KINDS, *_COST]
    detail: pd.DataFrame | None = None
    spend: pd.DataFrame | None = None  # the responses a spend report adds up
    if kind in _PERIODS:
        usage = spend = _usage(corpus, since, until, tz)
        label, freq = _PERIODS[kind]
        rows = _spend(usage, [], freq, tz, start_of_week).rename(columns={"period": label})
        keys = [label]
        if breakdown:
            detail = _spend(usage, ["model"], freq, tz, start_of_week).rename(columns={"period": label})
    elif kind == "blocks":
        rows, keys = _blocks(corpus, since, until, tz, now), ["block_start"]
    elif kind == "models":
        spend = _usage(corpus, since, until, tz)
        rows, keys = _spend(spend, ["model"], None, tz), ["model"]
    elif kind == "session":
        conv = _conversations(corpus, since, until, tz)
        usage = spend = _keep(corpus.usage, conv)
        keys = ["source", "conversation_id"]
        info = conv[[*keys, "title", "last_at", "messages", "tool_calls"]]
        rows = info.merge(_spend(usage, keys, None, tz), on=keys, how="left")
        rows = rows.sort_values("last_at", kind="stable", na_position="first")
        additive = ["messages", "tool_calls", *additive]
        if breakdown:
            detail = _spend(usage, [*keys, "model"], None, tz)
    else:
        conv = _conversations(corpus, since, until, tz)
        if kind == "tools":
            rows = metrics.tool_error_rates(_keep(corpus.tool_calls, conv))
            keys, additive = ["source", "tool_name"], ["calls", "answered", "errors", "unanswered", "outcome_unknown"]
        elif kind == "orphans":
            rows = metrics.orphan_drops(_keep(corpus.orphans, conv))
            keys, additive = ["source", "conversation_id"], ["assembly", "record", "disagree"]
        else:
            rows = metrics.growth(_keep(corpus.growth, conv))
            keys, additive = ["source", "conversation_id"], ["compactions", "compacted_tokens"]
    if order == "desc":
        rows = rows.iloc[::-1]
    rows = metrics.arrow_frame(rows.reset_index(drop=True))
    if detail is not None:
        detail = metrics.arrow_frame(detail.reset_index(drop=True))
    columns = [c for c in additive if c in rows]
    totals, problems = _totals(kind, rows, [c for c in columns if spend is None or c not in TOKEN_KINDS])
    if spend is not None:
        tokens, overflows = _token_totals(kind, spend)
        totals = {c: tokens[c] if c in TOKEN_KINDS else totals[c] for c in columns}
        problems += overflows
    if kind == "tools" and totals.get("answered", 0) - totals.get("outcome_unknown", 0):
        errors, answered = totals["errors"], totals["answered"] - totals["outcome_unknown"]  # outcomes known
        low, high = metrics.wilson_interval(np.array([errors]), np.array([answered]))
        totals.update(error_rate=errors / answered, ci_low=float(low[0]), ci_high=float(high[0]))
    return Report(kind, rows, totals, keys, detail, problems, tz)


def summary(corpus: Corpus) -> Report:
    """What a corpus holds, one row per source (``murmur-analysis summary``).

    Args:
        corpus: the loaded corpus.

    Returns:
        The ``summary`` report: per source ``conversations``, ``messages``, ``tool_calls``,
        ``tool_errors``, ``error_rate`` (errors over the answered calls whose outcome is known), ``orphans``,
        ``total_tokens`` (null where nobody reported tokens, or where the sum passes ``int64``)
        and ``cost_usd``; with totals.
    """
    conv = corpus.conversations
    grouped = conv.groupby("source", observed=True, sort=True)
    rows = grouped.agg(
        conversations=("conversation_id", "count"),
        messages=("messages", "sum"),
        tool_calls=("tool_calls", "sum"),
        tool_errors=("tool_errors", "sum"),
        orphans=("orphans", "sum"),
    )
    rates = metrics.tool_error_rates(corpus, by="source").set_index("source")
    rows["error_rate"] = rates["error_rate"].reindex(rows.index)
    rows["total_tokens"] = metrics.token_usage(corpus, by="source").set_index("source")["total_tokens"]
    rows["cost_usd"] = metrics.cost(corpus, by="source").set_index("source")["cost_usd"]
    rows = rows.reset_index()[["source", "conversations", "messages", "tool_calls", "tool_errors", "error_rate",
                               "orphans", "total_tokens", "cost_usd"]]
    rows = metrics.arrow_frame(rows)
    totals, problems = _totals("summary", rows, ["conversations", "messages", "tool_calls", "tool_errors",
                                                 "orphans", "cost_usd"])
    tokens, overflows = _token_totals("summary", corpus.usage, ["total_tokens"])
    totals["total_tokens"] = tokens["total_tokens"]
    problems += overflows
    answered = (rates["answered"] - rates["outcome_unknown"]).sum() if len(rates) else 0  # outcomes known
    if answered:
        totals["error_rate"] = float(rates["errors"].sum() / answered)
    return Report("summary", rows, totals, ["source"], None, problems)


def written(column: str, value: Any) -> Any:
    """``value`` of ``column`` as JSON and CSV write it: a plain Python value, or ``None`` for a null.

    A month is ``2025-06``, a date ``2025-06-01``, a time ISO 8601; a float is rounded to
    :data:`DECIMALS` places, which drops the rounding noise of a float sum and keeps the value.
    """
    plain = _plain(value)
    if plain is None:
        return None
    if isinstance(value, pd.Timestamp | datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.strftime("%Y-%m") if column == "month" else value.isoformat()
    return round(plain, DECIMALS) if isinstance(plain, float) else plain


def _plain(value: Any) -> Any:
    """A total as a plain Python value (``None`` for a null)."""
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value):
        return None
    return value.item() if hasattr(value, "item") else value


def _record(row: dict[Any, Any]) -> dict[str, Any]:
    """A spend row as JSON: token counters nested under ``tokens``."""
    out = {k: written(k, v) for k, v in row.items() if k not in TOKEN_KINDS}
    if any(k in row for k in TOKEN_KINDS):
        out["tokens"] = {name: written(k, row[k]) for k, name in TOKEN_KINDS.items() if k in row}
    return out


def json_document(report: Report) -> dict[str, Any]:
    """The report as one JSON-ready document: ``{<kind>: [objects], "totals": {...}}``.

    ``daily``, ``weekly`` and ``monthly`` give one object per period (``date``, ``week``: its
    first day, ``month``: ``2025-06``); with a breakdown, each object lists its models under
    ``models``. Every spend row nests its token counters under ``tokens`` (``input``,
    ``cache_write``, ``cache_read``, ``output``, ``reasoning``, ``total``). Values are as
    :func:`written` gives them.
    """
    records = [_record(r) for r in report.rows.to_dict("records")]
    if report.breakdown is not None:
        models: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for r in report.breakdown.to_dict("records"):
            rec = _record(r)
            models.setdefault(tuple(rec.pop(k) for k in report.keys), []).append(rec)
        for rec in records:
            rec["models"] = models.get(tuple(rec[k] for k in report.keys), [])
    name = "sessions" if report.kind == "session" else report.kind
    return {name: records, "totals": _record(report.totals)} if report.totals else {name: records}


#: Columns holding money, for renderers.
MONEY = {"cost_usd", *SLICES}
