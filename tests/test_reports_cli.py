"""The report and diagnostics commands, run for real; refusals; the progress bar."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from terminal import on_a_terminal, run

import murmur_analysis as ma
from murmur_analysis import metrics, reports
from murmur_analysis.analysis.kinds import TEXTLESS_KINDS

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]






def test_report_daily_json_has_one_object_per_day(samples: Path, corpus: ma.Corpus) -> None:
    doc = json.loads(run("report", "daily", samples, "--json").stdout)
    days = doc["daily"]
    expected = metrics.token_usage(corpus, by=[], freq="D")
    assert [d["date"] for d in days] == [p.isoformat() for p in expected.period]
    assert len({d["date"] for d in days}) == len(days)
    for day, (_, row) in zip(days, expected.iterrows(), strict=True):
        assert set(day) >= {"date", "tokens", "cost_usd", "unpriced_responses"}
        assert set(day["tokens"]) == {"input", "cache_read", "cache_write", "output", "reasoning", "total"}
        assert day["tokens"]["input"] == row.input_tokens and day["tokens"]["output"] == row.output_tokens
        assert day["tokens"]["cache_write"] == (None if pd.isna(row.cache_write_tokens) else row.cache_write_tokens)
    costs = metrics.cost(corpus, by=[], freq="D")
    assert [d["cost_usd"] for d in days] == [None if pd.isna(c) else pytest.approx(c) for c in costs.cost_usd]
    assert doc["totals"]["tokens"]["total"] == int(corpus.usage[["input_total_tokens", "output_tokens",
                                                                 "reasoning_tokens"]].sum().sum())


def test_report_daily_table_is_aligned_with_totals_and_dollars(samples: Path) -> None:
    lines = run("report", "daily", samples).stdout.splitlines()
    header, rule, *body = lines
    assert header.split()[:3] == ["date", "(UTC)", "responses"] and set(rule) == {"-", " "}
    assert body[-1].startswith("Total") and "$" in body[-1]
    widths = {len(line) for line in [header, *body] if line.strip("- ")}
    assert len(widths) == 1  # every row as wide as the header: aligned
    assert any(" - " in line or line.endswith(" -") for line in body)  # a null shows as -, not 0


def test_since_until_and_timezone_select_days(samples: Path) -> None:
    doc = json.loads(run("report", "daily", samples, "--json", "--since", "2026-04-21", "--until", "2026-04-22").stdout)
    assert [d["date"] for d in doc["daily"]] == ["2026-04-21", "2026-04-22"]
    # 2026-01-01 00:00 UTC murmur responses are on 31 December in New York.
    ny = json.loads(run("report", "daily", samples / "murmur", "--json", "--timezone", "America/New_York").stdout)
    assert [d["date"] for d in ny["daily"]] == ["2025-12-31"]


def test_breakdown_lists_models_per_day(samples: Path, corpus: ma.Corpus) -> None:
    doc = json.loads(run("report", "daily", samples, "--json", "--breakdown").stdout)
    for day in doc["daily"]:
        assert sum(m["responses"] for m in day["models"]) == day["responses"]
    text = run("report", "monthly", samples, "--breakdown").stdout
    assert "- gpt-5-mini" in text


def test_csv_parses_and_keeps_nulls_empty(samples: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run("report", "models", samples, "--csv").stdout)))
    haiku = next(r for r in rows if r["model"] == "claude-haiku-4")
    assert haiku["cost_usd"] == "" and haiku["unpriced_responses"] == "5"


@pytest.mark.parametrize("kind", reports.KINDS)
def test_every_report_runs(samples: Path, kind: str) -> None:
    out = run("report", kind, samples).stdout
    assert out.splitlines()[1].startswith("---")
    assert json.loads(run("report", kind, samples, "--json").stdout)


def test_report_tools_shows_rates_with_intervals(samples: Path) -> None:
    out = run("report", "tools", samples).stdout
    shell = next(line for line in out.splitlines() if line.startswith("litany") and " shell " in line)
    assert "11.1%" in shell and "3.1%" in shell and "32.8%" in shell  # 2 errors of 18 answered


def test_diagnostics_and_strict_exit_codes(samples: Path) -> None:
    out = run("diagnostics", samples).stdout
    assert "unpriced_model" in out and "claude-haiku-4" in out
    strict = run("report", "daily", samples, "--strict", code=1)
    assert strict.stderr.count("\n") == 1 and "diagnostics" in strict.stderr
    run("report", "daily", samples / "flexigpt" / "conversationsv1", "--strict")  # clean input: 0


def test_usage_errors_exit_2_with_one_line(samples: Path, tmp_path: Path) -> None:
    for args in (["report", "daily", tmp_path / "missing"],
                 ["report", "daily", samples / "flexigpt", "--source", "litany"],
                 ["report", "daily", samples, "--prices", tmp_path / "nope.csv"]):
        done = run(*args, code=2)
        assert done.stderr.startswith("murmur-analysis: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "is not a time zone" in run("report", "daily", samples, "--timezone", "Mars/Base", code=2).stderr


def test_no_progress_when_stderr_is_not_a_terminal(samples: Path) -> None:
    assert run("report", "daily", samples).stderr == ""


def test_one_progress_bar_on_a_terminal(samples: Path) -> None:
    _, screen = on_a_terminal(["summary", str(samples)])
    assert "B/s" in screen and "100%" in screen
    assert "reading " not in screen and "conversations" in screen  # no line per conversation or source
    quiet = subprocess.run([*CLI, "summary", str(samples), "-q"], capture_output=True, text=True)
    assert quiet.stderr == ""


def test_progress_true_shows_a_bar(samples: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ma.load(samples / "flexigpt", progress=True)
    err = capsys.readouterr().err
    assert "100%" in err and "B/s" in err


def test_a_forced_source_that_finds_nothing_says_what_the_path_looks_like(samples: Path) -> None:
    with pytest.raises(ma.SourceError, match=r"found no conversations .* looks like a flexigpt source"):
        ma.load(samples / "flexigpt", source="litany")


def test_options_naming_no_source_are_refused(samples: Path) -> None:
    with pytest.raises(ma.UnknownSourceError, match="'murmr'"):
        ma.load(samples / "murmur", options={"murmr": {"sessions": []}})


def test_an_unknown_table_lists_the_valid_names(corpus: ma.Corpus) -> None:
    with pytest.raises(ma.UnknownTableError, match="no table 'nope'; tables: messages, tool_calls, usage"):
        corpus.frame("nope")
    with pytest.raises(KeyError):
        corpus.frame("nope")


def test_sessions_dir_brings_a_lone_records_usage(samples: Path, tmp_path: Path) -> None:
    import shutil

    record = tmp_path / "conversations" / "support-bot" / "ctx-billing"
    shutil.copytree(samples / "murmur" / "conversations" / "support-bot" / "ctx-billing", record)
    alone = json.loads(run("report", "session", record / "conversation.jsonl", "--json").stdout)["sessions"]
    joined = json.loads(run("report", "session", record / "conversation.jsonl", "--json",
                            "--sessions", samples / "murmur" / "sessions").stdout)["sessions"]
    assert alone[0]["responses"] is None and alone[0]["cost_usd"] is None
    assert joined[0]["responses"] == 6 and joined[0]["cost_usd"] > 0


@pytest.mark.parametrize("kind", TEXTLESS_KINDS)
def test_spend_reports_load_without_text_and_show_the_same_rows(samples: Path, kind: str,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A report of spend shows no text, so its load leaves the text out: the rows are those of a full load."""
    from murmur_analysis import corpus as corpus_module
    from murmur_analysis.ui import cli

    asked: list[bool] = []
    real = corpus_module.load

    def load(*paths: object, **how: object) -> ma.Corpus:
        asked.append(bool(how["text"]))
        return real(*paths, **how)  # type: ignore[arg-type]

    monkeypatch.setattr(corpus_module, "load", load)
    assert cli.main(["report", kind, str(samples), "--json", "-q"]) == 0
    assert asked == [False]
    full = reports.json_document(reports.build(real(samples), kind))
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(full, default=str))
