"""Reports fit the terminal and keep ccusage's habits; JSON and CSV keep every value."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from terminal import on_a_terminal, run

import murmur_analysis as ma
from murmur_analysis import metrics, reports
from murmur_analysis.ui.render import money, short_model

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]
SPEND = ("daily", "weekly", "monthly", "session", "models")
TABLES = [("report", kind) for kind in reports.KINDS] + [("summary",), ("diagnostics",)]
# A float as JSON or CSV writes it (its decimal places tell float noise such as 0.0021000000000000003).
NOISE = re.compile(r"(?<![\w.])(\d+\.\d+(?:e-?\d+)?)")






def _decimals(number: str) -> int:
    """Decimal places of a number as written (``1e-07``: 7)."""
    return max(0, -int(Decimal(number).as_tuple().exponent))


def _significant(number: str) -> int:
    mantissa = number.split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa.rstrip("0")) if mantissa else 0


# ------------------------------------------------------------------------------------- width


@pytest.mark.parametrize("command", TABLES, ids=" ".join)
@pytest.mark.parametrize("columns", [80, 60])
def test_every_table_fits_the_columns_and_keeps_the_cost(samples: Path, command: tuple[str, ...],
                                                         columns: int) -> None:
    done = run(*command, samples, columns=columns)
    lines = done.stdout.splitlines()
    assert lines and all(len(line) <= columns for line in lines), max(lines, key=len)
    header = lines[0]
    if command[-1] in (*SPEND, "summary"):
        assert "cost" in header.split()
        total = next(line for line in lines if line.startswith("Total"))
        assert "$0.39" in total  # the samples' whole cost, in dollars with two decimals
    wide = run(*command, samples, "--wide", columns=columns).stdout.splitlines()
    left = [h for h in wide[0].split("  ") if h.strip() and h.strip() not in header]
    if left:  # what does not fit is named on stderr, never dropped silently
        assert "left out to fit" in done.stderr and "--wide" in done.stderr
        assert all(h.strip() in done.stderr for h in left)


@pytest.mark.parametrize("command", TABLES, ids=" ".join)
def test_wide_shows_every_column_and_value_whole(samples: Path, corpus: ma.Corpus, command: tuple[str, ...]) -> None:
    wide = run(*command, samples, "--wide", columns=80)
    piped = run(*command, samples)  # no terminal and no COLUMNS: nothing to fit
    assert wide.stdout == piped.stdout and "…" not in wide.stdout and wide.stderr == ""
    if command[-1] == "session":
        assert max(map(len, wide.stdout.splitlines())) > 200
        for title in corpus.conversations["title"].dropna():
            assert title in wide.stdout
        assert all(h in wide.stdout.splitlines()[0] for h in ("reasoning", "cache write", "tool calls"))


def test_the_terminals_own_width_is_honoured_without_columns(samples: Path) -> None:
    def screen(columns: int, *args: str) -> list[str]:
        _, text = on_a_terminal([*args, str(samples), "-q"], columns)  # no COLUMNS in its environment
        lines = text.replace("\r\n", "\n").splitlines()
        return [line for line in lines if not line.startswith("murmur-analysis: note:")]  # stderr's notes

    narrow = screen(72, "report", "session")
    assert max(map(len, narrow)) <= 72 and "cost" in narrow[0] and "…" in "".join(narrow)
    roomy = screen(250, "report", "daily")
    assert all(h in roomy[0] for h in ("responses", "cache write", "reasoning", "total tokens"))
    assert max(map(len, screen(72, "report", "daily"))) <= 72


def test_compact_is_ccusages_compact_table(samples: Path) -> None:
    header = run("report", "daily", samples, "--compact", columns=200).stdout.splitlines()[0]
    assert re.split(r"\s{2,}", header) == ["date (UTC)", "input", "output", "cost", "unpriced"]
    run("report", "daily", samples, "--compact", "--wide", code=2)


# ------------------------------------------------------------------------------------- cells


def test_model_names_are_shortened_as_ccusage_shortens_them() -> None:
    assert short_model("claude-sonnet-4-5-20250929") == "sonnet-4-5"
    assert short_model("claude-sonnet-4-20250514") == "sonnet-4"
    assert short_model("anthropic/claude-opus-4-1-20250805") == "opus-4-1"
    assert short_model("claude-3-5-haiku-20241022") == "3-5-haiku"
    assert short_model("claude-haiku-4-5") == "haiku-4-5"
    for kept in ("gpt-4.1", "gemini-2.5-pro", "gpt-4o-2024-08-06", "o3", "claude-"):
        assert short_model(kept) == kept


def test_models_show_short_names_and_json_csv_keep_the_ids(samples: Path) -> None:
    table = run("report", "models", samples, "--wide").stdout
    names = [line.split("  ")[0] for line in table.splitlines()[2:-2]]
    assert "sonnet-4" in names and "sonnet-4-5" in names and "gpt-5-mini" in names
    assert "claude-sonnet-4-20250514" not in table
    doc = json.loads(run("report", "models", samples, "--json").stdout)["models"]
    assert "claude-sonnet-4-20250514" in {m["model"] for m in doc}
    rows = list(csv.DictReader(io.StringIO(run("report", "models", samples, "--csv").stdout)))
    assert {r["model"] for r in rows} == {m["model"] for m in doc}
    breakdown = run("report", "daily", samples, "-b", "--wide").stdout
    assert re.search(r"- sonnet-4\s", breakdown) and "claude-sonnet-4-20250514" not in breakdown


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_money_has_two_decimals_and_more_only_under_a_cent(value: float) -> None:
    shown = money(value)
    if value > 0 and float(f"{value:.2g}") < 1e-6:
        assert shown == "<$0.000001"  # a cost, however small, is never shown as $0
        return
    assert shown.startswith("$")
    digits = shown[1:].replace(",", "")
    decimals = len(digits.split(".")[1])
    if value == 0 or float(f"{value:.2g}") >= 0.01:
        assert decimals == 2 and abs(float(digits) - value) <= 0.005 + value * 1e-15
    else:  # two significant digits
        assert _significant(digits) <= 2 and math.isclose(float(digits), value, rel_tol=0.05)
        assert float(digits) > 0


def test_money_cells(samples: Path) -> None:
    assert [money(v) for v in (0.0042, 0.00097, 0.0318, 1234.5, 0.0, 0.009996, 1e-7)] == [
        "$0.0042", "$0.00097", "$0.03", "$1,234.50", "$0.00", "$0.01", "<$0.000001"]


def test_months_show_as_year_and_month(samples: Path, corpus: ma.Corpus) -> None:
    table = run("report", "monthly", samples, "--wide").stdout.splitlines()
    assert table[0].startswith("month (UTC)")
    months = [line.split()[0] for line in table[2:-2]]
    expected = [p.strftime("%Y-%m") for p in metrics.token_usage(corpus, by=[], freq="MS").period]
    assert months == expected and all(re.fullmatch(r"\d{4}-\d{2}", m) for m in months)
    assert [m["month"] for m in json.loads(run("report", "monthly", samples, "-j").stdout)["monthly"]] == expected
    assert [r["month"] for r in csv.DictReader(io.StringIO(run("report", "monthly", samples, "--csv").stdout))
            ] == expected


def test_timezone_names_itself_in_the_headers_and_moves_the_times(samples: Path) -> None:
    daily = run("report", "daily", samples, "-z", "Europe/Berlin", "--wide").stdout
    assert daily.startswith("date (Europe/Berlin)")
    session = run("report", "session", samples, "--timezone", "Asia/Tokyo", "--wide").stdout.splitlines()
    assert "last active (Asia/Tokyo)" in session[0]
    doc = json.loads(run("report", "session", samples, "--json").stdout)["sessions"]
    last = max(s["last_at"] for s in doc if s["last_at"])
    shown = datetime.fromisoformat(last).astimezone(ZoneInfo("Asia/Tokyo")).strftime("%Y-%m-%d %H:%M")
    assert shown in "\n".join(session) and datetime.fromisoformat(last).strftime("%Y-%m-%d %H:%M") not in session[-3]


# --------------------------------------------------------------------------- JSON and CSV


def test_json_and_csv_keep_every_value_without_float_noise(samples: Path, corpus: ma.Corpus) -> None:
    text = run("report", "models", samples, "--json").stdout
    numbers = NOISE.findall(text)
    assert numbers and all(_decimals(n) <= reports.DECIMALS for n in numbers), numbers
    doc = json.loads(text)["models"]
    exact = metrics.cost(corpus, by="model").set_index("model")["cost_usd"]
    for row in doc:
        if row["cost_usd"] is not None:
            assert math.isclose(row["cost_usd"], exact[row["model"]], rel_tol=1e-12)
    # One response: 200 input tokens at $3, 1,000 cache reads at $0.30, 80 output at $15 per million.
    sonnet = next(r for r in doc if r["model"] == "claude-sonnet-4-20250514")
    assert sonnet["cost_usd"] == float((200 * Decimal(3) + 1000 * Decimal("0.3") + 80 * Decimal(15)) / 10**6)
    assert '"cost_usd": 0.0021,' in text
    rows = list(csv.DictReader(io.StringIO(run("report", "models", samples, "--csv").stdout)))
    assert [float(r["cost_usd"]) if r["cost_usd"] else None for r in rows] == [r["cost_usd"] for r in doc]
    assert all(_decimals(v) <= reports.DECIMALS for r in rows for v in r.values() if NOISE.fullmatch(v))


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_written_floats_lose_only_what_lies_below_a_trillionth(value: float) -> None:
    out = reports.written("cost_usd", value)
    assert isinstance(out, float) and abs(out - value) <= 5e-13 + abs(value) * 2.3e-16
    assert _decimals(repr(out)) <= reports.DECIMALS or out == value  # past 1e4 a float has no 12th place


def test_summary_json(samples: Path, corpus: ma.Corpus) -> None:
    doc = json.loads(run("summary", samples, "-j").stdout)
    conv = corpus.conversations
    assert [r["source"] for r in doc["summary"]] == sorted(conv["source"].unique())
    for row in doc["summary"]:
        mine = conv[conv["source"] == row["source"]]
        assert row["conversations"] == len(mine) and row["messages"] == mine["messages"].sum()
        assert row["tool_errors"] == mine["tool_errors"].sum()
    dispatch = next(r for r in doc["summary"] if r["source"] == "dispatch")
    assert dispatch["tokens"]["total"] is None and dispatch["cost_usd"] is None  # nobody reported: null, not 0
    assert doc["totals"]["conversations"] == len(conv)
    assert doc["totals"]["tokens"]["total"] == metrics.token_usage(corpus, by=[])["total_tokens"].iloc[0]
    assert doc["diagnostics"] == len(corpus.diagnostics)
    text = run("summary", samples, "--wide").stdout
    assert "<NA>" not in text and "$0.39" in text


# --------------------------------------------------------------------------------- habits


def test_dates_take_ccusages_form_and_nothing_else(samples: Path) -> None:
    iso = run("report", "daily", samples, "-j", "--since", "2026-04-21", "--until", "2026-04-22").stdout
    compact = run("report", "daily", samples, "--json", "-s", "20260421", "-u", "20260422").stdout
    assert iso == compact and [d["date"] for d in json.loads(compact)["daily"]] == ["2026-04-21", "2026-04-22"]
    for bad in ("2026-W17-2", "2026042", "21.04.2026", "20261341"):
        assert "YYYYMMDD" in run("report", "daily", samples, "--since", bad, code=2).stderr


@pytest.mark.parametrize("kind", ["daily", "weekly", "monthly", "session", "models", "tools"])
def test_order_desc_reverses_asc(samples: Path, kind: str) -> None:
    name = "sessions" if kind == "session" else kind
    asc = json.loads(run("report", kind, samples, "--json").stdout)[name]
    desc = json.loads(run("report", kind, samples, "--json", "-o", "desc").stdout)[name]
    assert desc == asc[::-1] and len(asc) > 1
    if kind == "session":
        times = [s["last_at"] for s in asc if s["last_at"]]
        assert times == sorted(times)
    table = run("report", kind, samples, "--order", "desc", "--wide").stdout.splitlines()
    assert table[-1].startswith("Total")


@pytest.mark.parametrize("start", [None, "monday", "wednesday"])
def test_weekly_buckets_start_on_the_day_asked(samples: Path, corpus: ma.Corpus, start: str | None) -> None:
    args = ["report", "weekly", samples, "--json", *(["-w", start] if start else [])]
    weeks = json.loads(run(*args).stdout)["weekly"]
    day = metrics.WEEKDAYS.index(start or "sunday")  # ccusage's weeks start on Sunday
    assert all(date.fromisoformat(w["week"]).weekday() == day for w in weeks)
    days = metrics.token_usage(corpus, by=[], freq="D")
    first = days["period"].map(lambda d: d - pd.Timedelta(days=(d.weekday() - day) % 7))
    expected = days.groupby(first)["responses"].sum()
    assert {w["week"]: w["responses"] for w in weeks} == {k.isoformat(): int(v) for k, v in expected.items()}
    if start == "monday":  # the ISO week metrics' "W" cuts
        assert [w["week"] for w in weeks] == [p.isoformat() for p in metrics.token_usage(
            corpus, by=[], freq="W").period]
    assert "--start-of-week" in run("report", "daily", samples, "-w", "monday", code=2).stderr


@pytest.mark.parametrize("kind", reports.KINDS)
def test_breakdown_works_on_every_report_or_is_refused(samples: Path, kind: str) -> None:
    if kind not in reports.BREAKDOWN_KINDS:
        refused = run("report", kind, samples, "-b", code=2).stderr
        assert "usage:" in refused and "--breakdown" in refused and kind in refused
        with pytest.raises(ValueError, match="breakdown"):
            reports.build(ma.load(samples / "flexigpt"), kind, breakdown=True)
        return
    name = "sessions" if kind == "session" else kind
    rows = json.loads(run("report", kind, samples, "--json", "--breakdown").stdout)[name]
    assert any(r["models"] for r in rows)
    for row in rows:
        assert sum(m["responses"] for m in row["models"]) == (row["responses"] or 0)
    table = run("report", kind, samples, "-b", columns=80).stdout.splitlines()
    assert any(re.search(r"\s- [\w.-]+", line) for line in table) and max(map(len, table)) <= 80


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 20),
                    timezones=st.just(ZoneInfo("UTC"))),
       st.sampled_from(metrics.WEEKDAYS), st.sampled_from(["UTC", "Europe/Berlin", "Pacific/Kiritimati"]))
def test_a_week_starts_on_its_day_and_holds_the_time(when: datetime, start: str, tz: str) -> None:
    period = metrics.periods(pd.Series([when]), "W", tz, week_start=start).iloc[0]
    local = when.astimezone(ZoneInfo(tz)).date()
    assert period.weekday() == metrics.WEEKDAYS.index(start) and 0 <= (local - period).days < 7
