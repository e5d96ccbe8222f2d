"""A report as ccusage 18.0.11 writes its JSON: its field names, so scripts written for ccusage read ours.

``daily``/``weekly``/``monthly`` give ``{<kind>: [{date|week|month, inputTokens, outputTokens,
cacheCreationTokens, cacheReadTokens, totalTokens, totalCost, modelsUsed, modelBreakdowns}],
totals}``; ``session`` gives ``{sessions: [{sessionId, ..., lastActivity, modelsUsed,
modelBreakdowns, projectPath}], totals}``; ``blocks`` gives ``{blocks: [{id, startTime, endTime,
actualEndTime, isActive, isGap, entries, tokenCounts, totalTokens, costUSD, models, burnRate,
projection}]}``. The numbers are ours: ``inputTokens`` is the uncached prompt, ``outputTokens``
includes reasoning (as Anthropic's ``output_tokens`` does), ``totalTokens`` is the four added up,
a cost nobody knows is 0, as ccusage writes it, and a cost is rounded as
:func:`~murmur_analysis.analysis.reports.written` rounds it. ``projectPath`` is null: the conversation's
project is not a report column.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from .kinds import CCUSAGE_KINDS
from .reports import DECIMALS

if TYPE_CHECKING:
    from .reports import Report

__all__ = ["ccusage_document"]

_LABELS = {"daily": "date", "weekly": "week", "monthly": "month"}


def _int(value: Any) -> int:
    return 0 if value is None or pd.isna(value) else int(value)


def _float(value: Any) -> float:
    return 0.0 if value is None or pd.isna(value) else round(float(value), DECIMALS)


def _tokens(row: dict[str, Any]) -> dict[str, int]:
    return {"inputTokens": _int(row.get("input_tokens")),
            "outputTokens": _int(row.get("output_tokens")) + _int(row.get("reasoning_tokens")),
            "cacheCreationTokens": _int(row.get("cache_write_tokens")),
            "cacheReadTokens": _int(row.get("cache_read_tokens"))}


def _total(tokens: dict[str, int]) -> int:
    return sum(tokens.values())


def _time(value: Any) -> str | None:
    """A time as JavaScript's ``toISOString`` writes it: UTC, milliseconds, ``Z``."""
    if value is None or pd.isna(value):
        return None
    at = pd.Timestamp(value).tz_convert(UTC)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def _spend_row(row: dict[str, Any], models: list[dict[str, Any]]) -> dict[str, Any]:
    tokens = _tokens(row)
    breakdowns = [{"modelName": m["model"], **_tokens(m), "cost": _float(m.get("cost_usd"))}
                  for m in models if m.get("model") is not None]
    return {**tokens, "totalTokens": _total(tokens), "totalCost": _float(row.get("cost_usd")),
            "modelsUsed": [b["modelName"] for b in breakdowns], "modelBreakdowns": breakdowns}


def _label(report: Report, row: dict[str, Any]) -> dict[str, Any]:
    if report.kind == "session":
        last = row.get("last_at")
        day = None if last is None or pd.isna(last) else pd.Timestamp(last).tz_convert(report.tz).strftime("%Y-%m-%d")
        return {"sessionId": row["conversation_id"], "lastActivity": day}
    value = row[_LABELS[report.kind]]
    return {_LABELS[report.kind]: value.strftime("%Y-%m") if report.kind == "monthly" else value.isoformat()}


def _burn_rate(row: dict[str, Any], tokens: int) -> dict[str, float] | None:
    minutes = (pd.Timestamp(row["last_at"]) - pd.Timestamp(row["first_at"])).total_seconds() / 60
    if not row["active"] or minutes <= 0:
        return None
    short = _int(row.get("input_tokens")) + _int(row.get("output_tokens")) + _int(row.get("reasoning_tokens"))
    return {"tokensPerMinute": tokens / minutes, "tokensPerMinuteForIndicator": short / minutes,
            "costPerHour": _float(row.get("cost_usd")) / minutes * 60}


def _projection(row: dict[str, Any], tokens: int, rate: dict[str, float] | None,
                now: datetime) -> dict[str, float] | None:
    if rate is None:
        return None
    remaining = max(0.0, (pd.Timestamp(row["block_end"]) - pd.Timestamp(now)).total_seconds() / 60)
    cost = _float(row.get("cost_usd")) + rate["costPerHour"] / 60 * remaining
    return {"totalTokens": round(tokens + rate["tokensPerMinute"] * remaining),
            "totalCost": round(cost * 100) / 100, "remainingMinutes": round(remaining)}


def _block(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    spend = _tokens(row)
    tokens = _total(spend)
    start = _time(row["block_start"])
    rate = _burn_rate(row, tokens) if not row["gap"] else None
    return {"id": f"gap-{start}" if row["gap"] else start, "startTime": start, "endTime": _time(row["block_end"]),
            "actualEndTime": _time(row["last_at"]), "isActive": bool(row["active"]), "isGap": bool(row["gap"]),
            "entries": _int(row["responses"]),
            "tokenCounts": {"inputTokens": spend["inputTokens"], "outputTokens": spend["outputTokens"],
                            "cacheCreationInputTokens": spend["cacheCreationTokens"],
                            "cacheReadInputTokens": spend["cacheReadTokens"]},
            "totalTokens": tokens, "costUSD": _float(row.get("cost_usd")),
            "models": [] if row["models"] is None or pd.isna(row["models"]) else row["models"].split(", "),
            "burnRate": rate, "projection": _projection(row, tokens, rate, now)}


def ccusage_document(report: Report, now: datetime | None = None) -> dict[str, Any]:
    """``report`` as ccusage 18.0.11's ``--json`` writes the same report.

    Args:
        report: a report of :data:`~murmur_analysis.analysis.kinds.CCUSAGE_KINDS`; the period and
            session reports built with ``breakdown=True`` (ccusage lists the models of every row).
        now: the time a ``blocks`` report's active block is projected to (default: the clock).

    Returns:
        The JSON-ready document.

    Raises:
        ValueError: ccusage has no such report, or a period or session report has no breakdown.
    """
    if report.kind not in CCUSAGE_KINDS:
        raise ValueError(f"ccusage has no {report.kind} report; it has {', '.join(CCUSAGE_KINDS)}")
    rows: list[dict[str, Any]] = report.rows.to_dict("records")  # type: ignore[assignment]
    if report.kind == "blocks":
        clock = (now or datetime.now(UTC)).astimezone(UTC)
        return {"blocks": [_block(r, clock) for r in rows]}
    if report.breakdown is None:
        raise ValueError(f"the {report.kind} report needs breakdown=True to be written as ccusage writes it")
    models: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    detail: list[dict[str, Any]] = report.breakdown.to_dict("records")  # type: ignore[assignment]
    for r in detail:
        models.setdefault(tuple(r[k] for k in report.keys), []).append(r)
    entries = [{**_label(report, r), **_spend_row(r, models.get(tuple(r[k] for k in report.keys), []))}
               for r in rows]
    for entry in entries:
        if report.kind == "session":
            entry["projectPath"] = None
    tokens = _tokens(report.totals)
    totals = {**tokens, "totalCost": _float(report.totals.get("cost_usd")), "totalTokens": _total(tokens)}
    return {"sessions" if report.kind == "session" else report.kind: entries, "totals": totals}
