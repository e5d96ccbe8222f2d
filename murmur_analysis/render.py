"""Reports as text: aligned terminal tables with totals, and CSV.

Numbers are right-aligned with thousands separators, money in dollars, rates in percent and a
null as ``-`` (never 0).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import pandas as pd

from .reports import MONEY, Report

__all__ = ["csv_text", "table_text"]

_RATES = {"error_rate", "ci_low", "ci_high", "cache_hit_ratio"}
_HEADERS = {
    "input_tokens": "input",
    "cache_write_tokens": "cache write",
    "cache_read_tokens": "cache read",
    "output_tokens": "output",
    "reasoning_tokens": "reasoning",
    "total_tokens": "total tokens",
    "cost_usd": "cost",
    "unpriced_responses": "unpriced",
    "conversation_id": "conversation",
    "tool_name": "tool",
    "error_rate": "error rate",
    "ci_low": "95% CI low",
    "ci_high": "95% CI high",
    "peak_context_tokens": "peak context",
    "last_context_tokens": "last context",
    "compacted_tokens": "compacted",
    "last_at": "last activity",
    "tool_calls": "tool calls",
}


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def cell(column: str, value: Any, width: int | None = 48) -> str:
    """One value as the terminal shows it (text cut to ``width`` characters; None: never)."""
    if _missing(value):
        return "-"
    if column in MONEY:
        return f"${value:,.2f}" if value >= 100 else f"${value:.4f}"
    if column in _RATES:
        return f"{100 * value:.1f}%"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if column.endswith("_ms") else f"{value:,.3f}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.isoformat()
    text = str(value)
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def _numeric(frame: pd.DataFrame, column: str) -> bool:
    return column in MONEY or pd.api.types.is_numeric_dtype(frame[column])


def _lines(header: Sequence[str], rows: list[list[str]], right: Sequence[bool], rules: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in [list(header), *rows]) for i in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right, strict=True))

    rule = "  ".join("-" * w for w in widths)
    out = [line(header), rule]
    for i, row in enumerate(rows):
        if i in rules:
            out.append(rule)
        out.append(line(row))
    return [text.rstrip() for text in out]


def table_text(report: Report) -> str:
    """The report as an aligned table, with a totals row when it has totals."""
    frame = report.rows
    columns = list(frame.columns)
    detail = report.breakdown
    if detail is not None and "model" not in columns:
        columns.insert(len(report.keys), "model")
    header = [_HEADERS.get(c, c) for c in columns]
    right = [c in frame and _numeric(frame, c) and c not in report.keys for c in columns]
    rows: list[list[str]] = []
    parts: dict[tuple[Any, ...], list[dict[Any, Any]]] = {}
    if detail is not None:
        for rec in detail.to_dict("records"):
            parts.setdefault(tuple(rec[k] for k in report.keys), []).append(rec)
    last = columns[-1]
    for rec in frame.to_dict("records"):
        rows.append([cell(c, rec.get(c), None if c == last else 48) if c in frame else "" for c in columns])
        for sub in parts.get(tuple(rec[k] for k in report.keys), []):
            rows.append(["" if c in report.keys or c not in sub else
                         ("- " if c == "model" else "") + cell(c, sub[c]) for c in columns])
    rules: set[int] = set()
    if report.totals and rows:
        rules.add(len(rows))
        rows.append(["Total" if i == 0 else cell(c, report.totals.get(c)) if c in report.totals else ""
                     for i, c in enumerate(columns)])
    if not rows:
        return f"no {report.kind} rows"
    return "\n".join(_lines(header, rows, right, rules))


def csv_text(report: Report) -> str:
    """The report's rows (or, with a breakdown, its per-model rows) as CSV; nulls are empty."""
    frame = report.breakdown if report.breakdown is not None else report.rows
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(frame.columns)
    for rec in frame.itertuples(index=False):
        writer.writerow(["" if _missing(v) else v.isoformat() if isinstance(v, date) else v for v in rec])
    return out.getvalue()
