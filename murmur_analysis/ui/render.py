"""Reports as text: aligned terminal tables with totals, fitted to a width, and CSV.

Numbers are right-aligned with thousands separators and a null is ``-`` (never 0). Money is in
dollars with two decimals, more only under a cent (``$0.0042``); rates are in percent; a model
is named as ccusage names it (``claude-sonnet-4-5-20250929`` is ``sonnet-4-5``, see
:func:`short_model`); a month is ``2025-06``; times are in the report's time zone, which the
header names (``date (Europe/Berlin)``).

Fitted to a width (the terminal's, see :func:`terminal_width`), a table first cuts its long
text with ``…`` down to a least width (a title or a detail at its end, an id in its middle, a
path at its start); if it is still too wide, it leaves columns out in the order :data:`LEAVE_OUT`
gives for its report, never a key column nor the cost. ``compact`` leaves out the first part of
that order whatever the width (ccusage's compact table: keys, input, output, cost). With no
width, nothing is cut or left out. CSV and JSON always keep every value
(:func:`murmur_analysis.analysis.reports.written`).
"""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

import pandas as pd

from ..analysis.reports import MONEY, Report, written

__all__ = ["LEAVE_OUT", "Table", "cell", "csv_text", "money", "render", "short_model", "table_text",
           "terminal_width"]

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
    "ci_low": "95% low",
    "ci_high": "95% high",
    "p50_ms": "p50 ms",
    "p95_ms": "p95 ms",
    "peak_context_tokens": "peak context",
    "last_context_tokens": "last context",
    "compacted_tokens": "compacted",
    "last_at": "last active",
    "block_start": "block start",
    "block_end": "block end",
    "first_at": "first active",
    "tool_calls": "tool calls",
    "tool_errors": "tool errors",
}
#: The kind of a SQL query's result: its headers are the query's own column names.
QUERY = "query"
#: The columns holding a date or a time: their header names the time zone.
_TIMES = {"date", "week", "month", "last_at", "block_start", "block_end", "first_at"}

Cut = Literal["end", "middle", "start"]
#: The columns whose long values are cut to fit: where, and the least width they are cut to.
_CUT: dict[str, tuple[Cut, int]] = {
    "title": ("end", 12),
    "detail": ("end", 36),
    "conversation_id": ("middle", 16),
    "path": ("start", 16),
    "tool_name": ("end", 10),
    "model": ("end", 12),
    "models": ("end", 12),
}

_SPEND = (
    (("reasoning_tokens",), ("cache_write_tokens",), ("responses",), ("cache_read_tokens",), ("total_tokens",)),
    (("output_tokens",), ("input_tokens",), ("unpriced_responses",)),
)
#: For each table, the columns it leaves out when it is too wide, in the order they go: first
#: those ``compact`` leaves out, then those a narrower terminal still needs gone. Columns in one
#: tuple go together. Key columns and the cost are never left out.
LEAVE_OUT: dict[str, tuple[tuple[tuple[str, ...], ...], tuple[tuple[str, ...], ...]]] = {
    "daily": _SPEND,
    "weekly": _SPEND,
    "monthly": _SPEND,
    "models": _SPEND,
    "session": (
        (("reasoning_tokens",), ("cache_write_tokens",), ("responses",), ("tool_calls",), ("messages",),
         ("cache_read_tokens",), ("total_tokens",)),
        (("output_tokens",), ("input_tokens",), ("last_at",), ("unpriced_responses",), ("title",)),
    ),
    "blocks": (
        (("reasoning_tokens",), ("cache_write_tokens",), ("first_at",), ("gap",), ("responses",),
         ("cache_read_tokens",), ("total_tokens",)),
        (("output_tokens",), ("input_tokens",), ("models",), ("last_at",), ("active",), ("unpriced_responses",)),
    ),
    "tools": (
        (("timed",), ("answered",), ("unanswered",), ("p95_ms",), ("p50_ms",)),
        (("ci_low", "ci_high"), ("calls",)),
    ),
    "orphans": ((), (("disagree",), ("record",))),
    "growth": (
        (("states",), ("chars",), ("messages",), ("last_context_tokens",)),
        (("compacted_tokens",), ("compactions",)),
    ),
    "summary": (
        (("messages",), ("tool_calls",), ("orphans",)),
        (("tool_errors",), ("error_rate",), ("conversations",), ("total_tokens",)),
    ),
    "diagnostics": ((), (("line",), ("source",))),
}

_GAP = "  "
_DATE = re.compile(r"-\d{8}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def terminal_width() -> int | None:
    """The width to fit tables to: ``COLUMNS``, else the terminal's (stdout's), else ``None``.

    ``None`` (stdout is a file or a pipe, and ``COLUMNS`` is not set): nothing to fit.
    """
    columns = shutil.get_terminal_size(fallback=(0, 0)).columns
    return columns if columns > 0 else None


def short_model(model: str) -> str:
    """A model id as ccusage shows it: no ``claude-`` (or ``anthropic/claude-``), no date suffix.

    ``claude-sonnet-4-5-20250929`` is ``sonnet-4-5``, ``claude-haiku-4-5`` is ``haiku-4-5``; an id of
    another vendor keeps its name (``gpt-4.1``, ``gemini-2.5-pro``), less a ``-YYYYMMDD`` suffix.
    """
    for prefix in ("anthropic/claude-", "claude-"):
        if model.startswith(prefix) and len(model) > len(prefix):
            model = model[len(prefix):]
            break
    return _DATE.sub("", model) if model.count("-") >= 2 else model


def money(value: float) -> str:
    """Dollars with two decimals; under a cent, two significant digits (``$0.0042``).

    Down to a millionth of a dollar; below it, ``<$0.000001`` (a cost is never shown as ``$0``).
    """
    near = float(f"{value:.2g}") if math.isfinite(value) else value
    if near == 0 or abs(near) >= 0.01 or not math.isfinite(near):
        return f"${value:,.2f}"
    if 0 < near < 1e-6:
        return "<$0.000001"
    return f"${value:.{1 - math.floor(math.log10(abs(near)))}f}"


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and math.isnan(value))


def cell(column: str, value: Any, tz: str = "UTC") -> str:
    """One value as the terminal shows it (never cut here: :func:`render` cuts to fit)."""
    if _missing(value):
        return "-"
    if column in MONEY:
        return money(float(value))
    if column in _RATES:
        return f"{100 * value:.1f}%"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if column.endswith("_ms") else f"{value:,.3f}"
    if isinstance(value, datetime):
        stamp = pd.Timestamp(value)
        return (stamp.tz_convert(tz) if stamp.tzinfo is not None else stamp).strftime("%Y-%m-%d %H:%M")
    if isinstance(value, date):
        return value.strftime("%Y-%m") if column == "month" else value.isoformat()
    text = _CONTROL.sub(" ", str(value))  # a newline or an escape sequence would break the table
    return short_model(text) if column == "model" else text


def _width(text: str) -> int:
    """Columns ``text`` takes on a terminal: East Asian wide characters take two, combining ones none."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in text)


def _head(text: str, width: int) -> str:
    """The longest start of ``text`` that takes at most ``width`` columns."""
    out, used = [], 0
    for c in text:
        used += _width(c)
        if used > width:
            break
        out.append(c)
    return "".join(out)


def _cut(text: str, width: int, where: Cut) -> str:
    """``text`` in at most ``width`` columns, cut with ``…`` at its end, middle or start."""
    if _width(text) <= width:
        return text
    room = max(width - 1, 0)
    if where == "end":
        return _head(text, room) + "…"
    if where == "start":
        return "…" + _head(text[::-1], room)[::-1]
    tail = _head(text[::-1], (room + 1) // 2)[::-1]
    return _head(text, room - _width(tail)) + "…" + tail


@dataclass
class _Column:
    name: str
    header: str
    cells: list[str]
    right: bool
    cut: tuple[Cut, int] | None
    width: int = 0

    def natural(self) -> int:
        return max([_width(self.header), *map(_width, self.cells)])

    def least(self) -> int:
        if self.cut is None:
            return self.natural()
        return max(_width(self.header), min(self.natural(), self.cut[1]))


@dataclass
class Table:
    """A report as terminal text.

    Attributes:
        text: the table, lines joined with newlines (no trailing newline).
        left_out: the headers of the columns left out to fit the width (not those ``compact``
            left out).
        width: the width it was fitted to (``None``: none).
    """

    text: str
    left_out: list[str] = field(default_factory=list)
    width: int | None = None


def _spread(columns: list[_Column], room: int) -> None:
    """Give the columns that may be cut the ``room`` there is, the narrowest first."""
    for c in columns:
        c.width = c.least()
    extra = room - sum(c.width for c in columns)
    while extra > 0:
        wanting = [c for c in columns if c.width < c.natural()]
        if not wanting:
            break
        min(wanting, key=lambda c: c.width).width += 1
        extra -= 1
    while extra < 0:  # narrower than the least widths: cut further, down to the headers
        cuttable = [c for c in columns if c.width > max(_width(c.header), 1)]
        if not cuttable:
            break
        max(cuttable, key=lambda c: c.width).width -= 1
        extra += 1


def _fit(columns: list[_Column], width: int | None, order: Sequence[tuple[str, ...]]) -> list[str]:
    """Leave columns out (in ``order``) and cut text until the table takes ``width``; the headers left out."""
    left_out: list[str] = []

    def least() -> int:
        return sum(c.least() for c in columns) + len(_GAP) * (len(columns) - 1)

    for group in order:
        if width is None or least() <= width:
            break
        gone = [c for c in columns if c.name in group]
        left_out += [c.header for c in gone]
        columns[:] = [c for c in columns if c.name not in group]
    if width is None:
        for c in columns:
            c.width = c.natural()
        return left_out
    fixed = [c for c in columns if c.cut is None]
    for c in fixed:
        c.width = c.natural()
    room = width - sum(c.width for c in fixed) - len(_GAP) * (len(columns) - 1)
    _spread([c for c in columns if c.cut is not None], room)
    return left_out


def _numeric(frame: pd.DataFrame, column: str) -> bool:
    return column in MONEY or pd.api.types.is_numeric_dtype(frame[column])


def render(report: Report, width: int | None = None, compact: bool = False) -> Table:
    """The report as an aligned table with a totals row, fitted to ``width`` columns.

    Args:
        report: the report.
        width: the width to fit (``None``: nothing is cut or left out).
        compact: leave out what ccusage's compact table leaves out (:data:`LEAVE_OUT`).

    Returns:
        The table, and what was left out to fit.
    """
    frame = report.rows
    names = list(frame.columns)
    detail = report.breakdown
    if detail is not None and "model" not in names:
        names.insert(len(report.keys), "model")
    parts: dict[tuple[Any, ...], list[dict[Any, Any]]] = {}
    if detail is not None:
        for rec in detail.to_dict("records"):
            parts.setdefault(tuple(rec[k] for k in report.keys), []).append(rec)
    rows: list[list[str]] = []
    for rec in frame.to_dict("records"):
        rows.append([cell(c, rec.get(c), report.tz) if c in frame else "" for c in names])
        for sub in parts.get(tuple(rec[k] for k in report.keys), []):
            rows.append(["" if c in report.keys or c not in sub else
                         ("- " if c == "model" else "") + cell(c, sub[c], report.tz) for c in names])
    if not rows:
        return Table(f"no {report.kind} rows", width=width)
    rules: set[int] = set()
    if report.totals:
        rules.add(len(rows))
        rows.append(["Total" if i == 0 else cell(c, report.totals.get(c)) if c in report.totals else ""
                     for i, c in enumerate(names)])
    columns = [
        _Column(c, (c if report.kind == QUERY else _HEADERS.get(c, c)) + (f" ({report.tz})" if c in _TIMES else ""),
                [r[i] for r in rows],
                c in frame and _numeric(frame, c) and c not in report.keys, _CUT.get(c))
        for i, c in enumerate(names)
    ]
    extra, core = LEAVE_OUT.get(report.kind, ((), ()))
    if compact:
        columns = [c for c in columns if not any(c.name in group for group in extra)]
    left_out = _fit(columns, width, core if compact else (*extra, *core))
    return Table("\n".join(_lines(columns, len(rows), rules)), left_out, width)


def _lines(columns: list[_Column], n: int, rules: set[int]) -> list[str]:
    def pad(text: str, c: _Column) -> str:
        text = _cut(text, c.width, c.cut[0]) if c.cut is not None else text
        space = " " * max(c.width - _width(text), 0)
        return space + text if c.right else text + space

    rule = _GAP.join("-" * c.width for c in columns)
    out = [_GAP.join(pad(c.header, c) for c in columns), rule]
    for i in range(n):
        if i in rules:
            out.append(rule)
        out.append(_GAP.join(pad(c.cells[i], c) for c in columns))
    return [text.rstrip() for text in out]


def table_text(report: Report, width: int | None = None, compact: bool = False) -> str:
    """The report as an aligned table (see :func:`render`)."""
    return render(report, width, compact).text


def csv_text(report: Report) -> str:
    """The report's rows (or, with a breakdown, its per-model rows) as CSV; nulls are empty.

    Every value is written whole (:func:`murmur_analysis.analysis.reports.written`).
    """
    frame = report.breakdown if report.breakdown is not None else report.rows
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(frame.columns)
    for rec in frame.itertuples(index=False):
        values = [written(c, v) for c, v in zip(frame.columns, rec, strict=True)]
        writer.writerow(["" if v is None else v for v in values])
    return out.getvalue()
