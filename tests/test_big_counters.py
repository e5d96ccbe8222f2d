"""Counters up to 2**63-1, as the docs promise: exact in the token columns, priced, and summed without wrapping.

Each source is given three conversations: one response of 2**53+1 prompt tokens (past the
integers a float holds), one whose tokens add up to exactly 2**63-1, and three responses of
2**62 whose sum passes int64. Loading, metrics, the reports, the summary and the export must
all go through; a sum that cannot be held is null with a ``sum_overflow`` row, never wrapped.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_home import T0, ev, inference, msg, record, text, trace
from test_flexigpt import CONV_ID, store_file
from test_tokens_flexigpt import conversation, usage

import murmur_analysis as ma
from murmur_analysis.core.handoff import Conversation, Summary, UsageRow
from murmur_analysis.core.model import Entry, Text, Usage
from murmur_analysis.core.pricing import price_tables
from murmur_analysis.tables.frames import FrameBuilder, to_pandas

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]
TOP = 2**63 - 1
# conversation -> its responses' (whole prompt, output) counters
CONVERSATIONS = {
    "near": [(2**53 + 1, 1)],
    "top": [(TOP - 1, 1)],
    "many": [(2**62, 1)] * 3,
}
PRICES = {"big-model": {"input_mtok": 2, "output_mtok": 10}, "claude-big": {"input_mtok": 2, "output_mtok": 10}}


def cost(prompt: int, output: int) -> float:
    return (prompt * 2 + output * 10) / 1e6


def flexigpt(root: Path) -> Path:
    for n, (name, responses) in enumerate(CONVERSATIONS.items()):
        doc = conversation("openairesponses", "big-model",
                           *({"usage": usage(prompt, 0, prompt, output, 0)} for prompt, output in responses))
        doc = copy.deepcopy(doc)
        doc["id"], doc["title"] = CONV_ID[:-1] + str(n), name
        store_file(root, doc)
    return root


def murmur(root: Path) -> Path:
    # An Anthropic-style model (by its name): the prompt is summed from the uncached rest and the slices.
    home = root / "home"
    for s, (name, responses) in enumerate(CONVERSATIONS.items()):
        session = f"ses_{s}"
        values = [msg("user", T0 + 10)]
        events = [ev("session_start", T0, session, capsule_name="bot", model="claude-big"),
                  ev("task_start", T0 + 1, session, task_id="A", context_id=name)]
        for n, (prompt, output) in enumerate(responses):
            at = T0 + 20 + 10 * n
            events.append(inference(at, "A", n, session=session, input_tokens=10, output_tokens=1,
                                    input_tokens_actual=prompt, output_tokens_actual=output, cached_tokens=0,
                                    cache_write_tokens=0))
            values.append(msg("assistant", at + 1, text(f"answer {n}"), n=n + 1))
        events += [ev("task_end", T0 + 500, session, task_id="A", exit_status="ok"),
                   ev("session_end", T0 + 900, session, exit_status="ok")]
        record(home, "bot", name, values)
        trace(home / "sessions" / session, events)
    return home


SOURCES = {"flexigpt": flexigpt, "murmur": murmur}


@pytest.fixture(params=sorted(SOURCES))
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path: Path = SOURCES[request.param](tmp_path / "in")
    return path


@pytest.fixture
def big(source: Path) -> tuple[Path, ma.Corpus]:
    return source, ma.load(source, prices=PRICES)


def by_name(corpus: ma.Corpus, frame: pd.DataFrame) -> pd.DataFrame:
    names = corpus.conversations.set_index("conversation_id")["title"].to_dict()
    names = {cid: title if title in CONVERSATIONS else cid.split("/")[-1] for cid, title in names.items()}
    return frame.assign(name=frame["conversation_id"].map(names)).set_index("name")


def test_big_counters_load_exactly_and_are_priced(big: tuple[Path, ma.Corpus]) -> None:
    _, corpus = big
    usage = by_name(corpus, corpus.usage)
    for name, responses in CONVERSATIONS.items():
        rows = usage.loc[[name]]
        assert rows["input_total_tokens"].tolist() == [p for p, _ in responses]  # exact int64, no float on the way
        assert rows["output_tokens"].tolist() == [o for _, o in responses]
        for got, (prompt, output) in zip(rows["cost_usd"], responses, strict=True):
            assert got == pytest.approx(cost(prompt, output), rel=1e-12)
    conv = by_name(corpus, corpus.conversations)
    assert conv.loc["near", "tokens"] == 2**53 + 2 and conv.loc["top", "tokens"] == TOP
    assert pd.isna(conv.loc["many", "tokens"])  # past int64: null, not wrapped, not 0
    assert conv.loc["many", "cost_usd"] == pytest.approx(3 * cost(2**62, 1), rel=1e-12)
    overflow = corpus.diagnostics[corpus.diagnostics["kind"] == "sum_overflow"]
    assert len(overflow) == 1 and "conversations.tokens" in overflow.iloc[0]["detail"]
    assert conv.index[conv["conversation_id"] == overflow.iloc[0]["detail"].split("'")[1]].tolist() == ["many"]
    growth = by_name(corpus, corpus.growth)
    assert growth.loc[["many"], "context_tokens"].dropna().tolist() == [2**62 + 1] * 3
    assert growth.loc[["top"], "context_tokens"].dropna().tolist() == [TOP]


def test_metrics_sum_big_counters_exactly_or_not_at_all(big: tuple[Path, ma.Corpus]) -> None:
    _, corpus = big
    tokens = by_name(corpus, ma.metrics.token_usage(corpus, by="conversation_id"))
    assert tokens.loc["near", "input_total_tokens"] == 2**53 + 1 and tokens.loc["near", "total_tokens"] == 2**53 + 2
    assert tokens.loc["top", "total_tokens"] == TOP
    assert tokens.loc["many", "output_tokens"] == 3
    assert pd.isna(tokens.loc["many", "input_total_tokens"]) and pd.isna(tokens.loc["many", "total_tokens"])
    everything = ma.metrics.token_usage(corpus, by="source").iloc[0]
    assert pd.isna(everything["input_total_tokens"]) and everything["output_tokens"] == 5
    costs = ma.metrics.cost(corpus, by="source").iloc[0]
    expected = sum(cost(p, o) for responses in CONVERSATIONS.values() for p, o in responses)
    assert costs["cost_usd"] == pytest.approx(expected, rel=1e-12) and costs["unpriced_responses"] == 0


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


def test_reports_and_summary_of_big_counters(source: Path, tmp_path: Path) -> None:
    path = source
    prices = tmp_path / "prices.csv"
    prices.write_text("model,input_mtok,output_mtok\n" + "".join(f"{m},2,10\n" for m in PRICES))
    expected = sum(cost(p, o) for responses in CONVERSATIONS.values() for p, o in responses)
    for kind in ("daily", "models"):
        done = run("report", kind, path, "--json", "-q", "--prices", prices)
        doc = json.loads(done.stdout)
        assert doc["totals"]["tokens"]["total"] is None and doc["totals"]["tokens"]["output"] == 5
        assert doc["totals"]["cost_usd"] == pytest.approx(expected, rel=1e-12)
        assert "sum_overflow" not in done.stdout and "total_tokens" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 2  # one note for each total past int64: input, total
    done = run("report", "session", path, "--json", "-q", "--prices", prices)
    sessions = {s["conversation_id"].split("/")[-1] if "/" in s["conversation_id"] else s["title"]: s
                for s in json.loads(done.stdout)["sessions"]}
    assert sessions["near"]["tokens"]["total"] == 2**53 + 2 and sessions["top"]["tokens"]["total"] == TOP
    assert sessions["many"]["tokens"]["total"] is None
    assert sessions["many"]["cost_usd"] == pytest.approx(3 * cost(2**62, 1), rel=1e-12)
    table = run("report", "session", path, "-q", "--prices", prices).stdout
    assert f"{TOP:,}" in table and f"{2**53 + 2:,}" in table
    summary = run("summary", path, "-q", "--prices", prices).stdout
    assert summary.splitlines()[0].split()[:2] == ["source", "conversations"] and "diagnostics: 1 row(s)" in summary


def test_export_of_big_counters(source: Path, tmp_path: Path) -> None:
    result = ma.export_parquet(source, out=tmp_path / "out", prices=PRICES)
    usage = pq.read_table(result.out / "usage").to_pandas()
    assert sorted(usage["input_total_tokens"]) == sorted(p for r in CONVERSATIONS.values() for p, _ in r)
    assert usage["cost_usd"].sum() == pytest.approx(sum(cost(p, o) for r in CONVERSATIONS.values() for p, o in r))
    conv = pq.read_table(result.out / "conversations").to_pandas()
    assert sorted(conv["tokens"].dropna()) == [2**53 + 2, TOP] and conv["tokens"].isna().sum() == 1


def test_a_prompt_summed_past_int64_is_not_reported() -> None:
    u = Usage.normalize(input_tokens=2**62, cache_read_tokens=2**62, cache_write_tokens=0, output_tokens=1,
                        cache_in_input=False, reasoning_in_output=False)
    assert u.input_total_tokens is None and u.input_tokens == 2**62 and u.output_tokens == 1
    assert any("int64" in p for p in u.problems)


def tables(counters: list[list[tuple[int, int]]]) -> pd.DataFrame:
    builder = FrameBuilder()
    for n, responses in enumerate(counters):
        rows = [UsageRow(Usage.normalize(input_tokens=p, output_tokens=o, cache_read_tokens=0, cache_in_input=True,
                                         reasoning_in_output=True), model="big-model") for p, o in responses]
        entries = [Entry(1, "user", (Text("hi"),))]
        builder.add(Conversation("test", f"c{n}", entries, summary=Summary(usage=tuple(rows))))
    return price_tables(builder.finish(), PRICES)


counter = st.integers(0, TOP)


@settings(max_examples=60, deadline=None)
@given(counters=st.lists(st.lists(st.tuples(counter, counter), min_size=1, max_size=4), min_size=1, max_size=4))
def test_every_sum_is_exact_or_null_with_a_row(counters: list[list[tuple[int, int]]]) -> None:
    out = tables(counters)
    conv = to_pandas(out["conversations"]).set_index("conversation_id")
    usage = to_pandas(out["usage"])
    overflowed = set()
    for n, responses in enumerate(counters):
        exact = sum(p + o for p, o in responses)
        got = conv.loc[f"c{n}", "tokens"]
        if exact <= TOP:
            assert got == exact
        else:
            assert pd.isna(got)
            overflowed.add(f"c{n}")
    diag = to_pandas(out["diagnostics"])
    named = {d.split("'")[1] for d in diag.loc[diag["kind"] == "sum_overflow", "detail"]}
    assert named == overflowed
    sums = ma.metrics.token_usage(usage, by="conversation_id").set_index("conversation_id")
    for n, responses in enumerate(counters):
        for column, exact in (("input_total_tokens", sum(p for p, _ in responses)),
                              ("output_tokens", sum(o for _, o in responses))):
            got = sums.loc[f"c{n}", column]
            assert got == exact if exact <= TOP else pd.isna(got)
    whole = ma.metrics.token_usage(usage, by=[])["total_tokens"].iloc[0]
    total = sum(p + o for responses in counters for p, o in responses)
    assert whole == total if total <= TOP else pd.isna(whole)
