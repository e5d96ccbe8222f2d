"""Metrics on corpora built by hand: time buckets, intervals, one error-rate definition, dtypes."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from codex_home import shell_outcomes
from hypothesis import given, settings
from hypothesis import strategies as st
from litany_entries import result, tool, use, user

import murmur_analysis as ma
from murmur_analysis import metrics
from murmur_analysis.core.handoff import Conversation, GrowthRow, Summary, ToolMeta, UsageRow
from murmur_analysis.core.model import Entry, Text, Usage
from murmur_analysis.core.pricing import price_tables
from murmur_analysis.corpus import Corpus
from murmur_analysis.tables.frames import FrameBuilder


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def tokens(n: int) -> Usage:
    return Usage.normalize(input_tokens=n, output_tokens=1, cache_in_input=True, reasoning_in_output=True)


def corpus(*convs: Conversation) -> Corpus:
    builder = FrameBuilder()
    for conv in convs:
        builder.add(conv)
    prices = {"m": {"input_mtok": 1, "output_mtok": 1}}
    return Corpus(price_tables(builder.finish(), prices), {})


# Times chosen around midnight and a daylight-saving change in Berlin (UTC+1, UTC+2 from 29 March 2026).
TIMES = [
    "2026-02-28T23:30:00",  # Sat in UTC; Sun 1 March 00:30 in Berlin
    "2026-03-01T23:30:00",  # Sun in UTC; Mon 2 March 00:30 in Berlin
    "2026-03-02T10:00:00",  # Mon
    "2026-03-29T22:30:00",  # Sun 29 March in UTC; Mon 30 March 00:30 in Berlin (summer time)
]


def spend() -> Corpus:
    rows = [UsageRow(tokens(10 ** i), model="m", created_at=at(t)) for i, t in enumerate(TIMES)]
    rows.append(UsageRow(tokens(10_000), model="m"))  # no time
    return corpus(Conversation("test", "c", [Entry(1, "user", (Text("hi"),))], summary=Summary(usage=tuple(rows))))


def buckets(frame: pd.DataFrame) -> dict[date | None, int]:
    return {(None if pd.isna(p) else p): int(v) for p, v in zip(frame.period, frame.input_total_tokens, strict=True)}


def test_days_in_utc_and_in_berlin() -> None:
    c = spend()
    assert buckets(metrics.token_usage(c, by=[], freq="D")) == {
        date(2026, 2, 28): 1, date(2026, 3, 1): 10, date(2026, 3, 2): 100, date(2026, 3, 29): 1000, None: 10_000}
    assert buckets(metrics.token_usage(c, by=[], freq="D", tz="Europe/Berlin")) == {
        date(2026, 3, 1): 1, date(2026, 3, 2): 110, date(2026, 3, 30): 1000, None: 10_000}


def test_weeks_start_on_monday_and_months_on_the_first() -> None:
    c = spend()
    assert buckets(metrics.token_usage(c, by=[], freq="W")) == {
        date(2026, 2, 23): 11, date(2026, 3, 2): 100, date(2026, 3, 23): 1000, None: 10_000}
    assert buckets(metrics.token_usage(c, by=[], freq="W", tz="Europe/Berlin")) == {
        date(2026, 2, 23): 1, date(2026, 3, 2): 110, date(2026, 3, 30): 1000, None: 10_000}
    assert buckets(metrics.token_usage(c, by=[], freq="MS")) == {
        date(2026, 2, 1): 1, date(2026, 3, 1): 1110, None: 10_000}
    assert buckets(metrics.token_usage(c, by=[], freq="MS", tz="Europe/Berlin")) == {
        date(2026, 3, 1): 1111, None: 10_000}


def test_cost_uses_the_same_buckets() -> None:
    out = metrics.cost(spend(), by="model", freq="MS", tz="Europe/Berlin").set_index("period")
    # $1 per million tokens in and out: (1111 + 4) tokens in March; 10,001 with no time.
    assert out.loc[date(2026, 3, 1), "cost_usd"] == pytest.approx(1115 / 1e6)
    assert out.loc[date(2026, 3, 1), "responses"] == 4 and out.loc[date(2026, 3, 1), "unpriced_responses"] == 0


def test_a_bad_frequency_is_refused() -> None:
    with pytest.raises(ValueError, match="freq"):
        metrics.token_usage(spend(), freq="H")  # type: ignore[arg-type]


def test_wilson_interval_by_hand() -> None:
    low, high = metrics.wilson_interval(np.array([2, 0, 1, 0]), np.array([18, 1, 1, 0]))
    # 2 of 18, z = 1.959964: centre 0.1795086, half-width 0.1484891
    assert low[0] == pytest.approx(0.0310195, abs=1e-6) and high[0] == pytest.approx(0.3279977, abs=1e-6)
    assert (low[1], high[1]) == (0.0, pytest.approx(3.841459 / 4.841459))  # z²/(1+z²)
    assert (low[2], high[2]) == (pytest.approx(1 / 4.841459), 1.0)
    assert math.isnan(low[3]) and math.isnan(high[3])


@given(k=st.integers(0, 500), extra=st.integers(0, 500))
def test_the_interval_holds_the_rate(k: int, extra: int) -> None:
    n = k + extra
    low, high = metrics.wilson_interval(np.array([k]), np.array([n]))
    if n == 0:
        assert math.isnan(low[0])
    else:
        assert 0 <= low[0] <= k / n <= high[0] <= 1


def calls() -> Corpus:
    entries = [
        user(1, "go"),
        Entry(2, "assistant", tuple(use(c, name) for c, name in [("a", "grep"), ("b", "grep"), ("c", "grep"),
                                                                   ("d", "read"), ("e", "grep")])),
        tool(3, result("a")), tool(4, result("b", "boom", is_error=True)), tool(5, result("c")),
        tool(6, result("d", "no", is_error=True)), tool(7, result("ghost")),
    ]
    meta = {"a": ToolMeta(duration_ms=10.0), "b": ToolMeta(duration_ms=30.0)}
    return corpus(Conversation("test", "c", entries, tool_meta=meta))


def test_error_rate_is_errors_over_answered_calls() -> None:
    rates = metrics.tool_error_rates(calls()).set_index("tool_name")
    grep = rates.loc["grep"]
    # grep: 4 calls, 3 answered (e never was), 1 error: 1/3; the orphan result "ghost" is no call.
    assert (grep.calls, grep.answered, grep.errors, grep.unanswered) == (4, 3, 1, 1)
    assert grep.error_rate == pytest.approx(1 / 3)
    assert (grep.timed, grep.p50_ms, grep.p95_ms) == (2, 20.0, pytest.approx(29.0))
    assert pd.isna(rates.loc["read", "p50_ms"])
    assert list(metrics.tool_error_rates(calls(), min_calls=2).tool_name) == ["grep"]


def test_the_command_line_summary_uses_the_same_rate(samples: Path) -> None:
    def summary(*args: str) -> str:
        return subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "summary", str(samples / "litany"), "-q",
                               *args], capture_output=True, text=True, check=True).stdout

    rate = metrics.tool_error_rates(ma.load(samples / "litany"), by="source").error_rate.iloc[0]
    line = next(line for line in summary("--wide").splitlines() if line.startswith("litany"))
    assert f"{100 * rate:.1f}%" in line.split()
    assert json.loads(summary("--json"))["summary"][0]["error_rate"] == pytest.approx(rate, rel=1e-12)


def test_growth_per_conversation() -> None:
    entries = [Entry(i, "user" if i % 2 else "assistant", (Text("x" * i),),
                     usage=None if i % 2 else tokens(100 * i)) for i in range(1, 6)]
    compaction = [GrowthRow(position=3, event="compaction", tokens_before=900, tokens_after=200)]
    out = metrics.growth(corpus(Conversation("test", "c", entries, summary=Summary(growth=tuple(compaction))))).iloc[0]
    assert (out.states, out.messages, out.chars, out.compactions, out.compacted_tokens) == (6, 5, 15, 1, 700)
    assert (out.peak_context_tokens, out.last_context_tokens) == (401, 401)


def test_every_output_is_arrow_backed_and_keeps_nulls(samples: Path) -> None:
    c = ma.load(samples)
    outputs = [metrics.token_usage(c, by="model", freq="W"), metrics.cost(c), metrics.tool_error_rates(c),
               metrics.orphan_drops(c), metrics.growth(c), metrics.growth_curves(c)]
    empty = ma.load(samples / "dispatch")
    outputs += [metrics.token_usage(empty), metrics.cost(empty, freq="D"), metrics.orphan_drops(empty)]
    for frame in outputs:
        assert all(isinstance(t, pd.ArrowDtype) for t in frame.dtypes), frame.dtypes
    usage = metrics.token_usage(c, by="source").set_index("source")
    assert pd.isna(usage.loc["murmur", "reasoning_tokens"])  # nobody reported it: null, not 0


def test_metrics_and_widgets_are_attributes() -> None:
    code = "import murmur_analysis as ma; print(ma.metrics.__name__, ma.widgets.__name__, ma.reports.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    expected = ["murmur_analysis.analysis.metrics", "murmur_analysis.ui.widgets", "murmur_analysis.analysis.reports"]
    assert out.split() == expected
    with pytest.raises(AttributeError):
        ma.nothing_here  # noqa: B018


def test_an_answer_that_says_no_outcome_is_never_counted_as_a_success(tmp_path: Path) -> None:
    """Codex outputs without an exit code: answered, outcome unknown, left out of the error rate."""
    shell_outcomes(tmp_path / "sessions" / "2026" / "01" / "02",
                   ["Exit code: 1\nWall time: 0.1 seconds\nOutput:\nno", "Exit code: 0\nOutput:\nyes",
                    "plain text, no code", "more text"])
    corpus = ma.load(tmp_path, source="codex")
    assert corpus.tool_calls["status"].tolist() == ["error", "ok", "unknown", "unknown"]
    [row] = metrics.tool_error_rates(corpus, by="source").itertuples()
    assert (row.calls, row.answered, row.errors, row.outcome_unknown, row.error_rate) == (4, 4, 1, 2, 0.5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.none() | st.integers(-(2**52), 2**52), max_size=40),
       st.sampled_from(["UTC", "Europe/Berlin", "America/Los_Angeles"]), st.sampled_from(["us", "ms", "ns"]))
def test_utc_times_of_an_arrow_column_are_pandas_own(micros: list[int | None], zone: str, unit: str) -> None:
    """The one-pass conversion of an Arrow-backed column gives what pandas' astype gives, nulls included."""
    values = [None if v is None else {"us": v, "ms": v // 1000, "ns": v * 1000}[unit] for v in micros]
    arrow = pa.array(values, pa.int64()).cast(pa.timestamp(unit, tz=zone))
    times = pd.Series(pd.arrays.ArrowExtensionArray(arrow), index=pd.RangeIndex(5, 5 + len(values)), name="t")
    got = metrics.utc_times(times)
    want = times.astype("datetime64[us, UTC]")
    assert str(got.dtype) == "datetime64[us, UTC]"
    pd.testing.assert_series_equal(got, want)
