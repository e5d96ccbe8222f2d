"""``report blocks`` (five-hour windows as ccusage 18.0.11 cuts them) and ``--ccusage-json``
(ccusage's field names), checked on the samples' usage and against the real peer's output."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from peer_homes import BLOCK_TIMES, SAMPLES, blocks_home
from peers import ccusage

import murmur_analysis as ma
from murmur_analysis.analysis import reports
from murmur_analysis.analysis.blocks import blocks
from murmur_analysis.analysis.ccusage import ccusage_document
from murmur_analysis.analysis.kinds import CCUSAGE_KINDS


def _usage_at(corpus: Any, times: tuple[datetime, ...]) -> pd.DataFrame:
    """Real usage rows (of the samples) moved to ``times``, with the tokens of :func:`peer_homes.blocks_home`."""
    rows = corpus.usage.iloc[: len(times)].copy()
    k = pd.Series(range(1, len(times) + 1), index=rows.index)
    rows["created_at"] = pd.Series(times, index=rows.index).astype(rows["created_at"].dtype)
    rows["input_tokens"], rows["output_tokens"] = 10 * k, 100
    rows["cache_read_tokens"], rows["cache_write_tokens"], rows["reasoning_tokens"] = 1_000, 50, None
    rows["input_total_tokens"] = rows["input_tokens"] + 1_050
    moved: pd.DataFrame = rows.iloc[::-1]  # any order: blocks sort by time
    return moved


def test_blocks_are_cut_as_ccusage_cuts_them(corpus: Any, tmp_path: Path) -> None:
    for session in blocks_home(tmp_path):
        session.write()
    peer = ccusage("blocks", tmp_path)
    ours = ccusage_document(_blocks_report(_usage_at(corpus, BLOCK_TIMES)))
    fields = ("id", "startTime", "endTime", "actualEndTime", "isGap", "isActive", "entries", "totalTokens",
              "tokenCounts")
    assert [{f: b[f] for f in fields} for b in ours["blocks"]] == [{f: b[f] for f in fields} for b in peer["blocks"]]


def _blocks_report(usage: pd.DataFrame, now: datetime | None = None) -> reports.Report:
    return reports.Report("blocks", blocks(usage, now=now), {}, ["block_start"])


def test_the_active_block_is_the_one_within_five_hours_of_now(corpus: Any) -> None:
    usage = _usage_at(corpus, BLOCK_TIMES[:5])  # the last block: 02:00 to 07:00, responses at 02:00 and 06:59:59
    now = datetime(2025, 11, 25, 4, 0, tzinfo=UTC)
    assert blocks(usage, now=now)["active"].tolist() == [False, False, False, True]
    assert blocks(usage, now=BLOCK_TIMES[4] + timedelta(seconds=1))["active"].tolist()[-1] is False  # past its end
    current = ccusage_document(_blocks_report(usage, now), now=now)["blocks"][-1]
    minutes = (BLOCK_TIMES[4] - BLOCK_TIMES[3]).total_seconds() / 60
    assert current["isActive"] and current["burnRate"]["tokensPerMinute"] == pytest.approx(2_390 / minutes)
    assert current["projection"]["remainingMinutes"] == 180


def test_report_blocks_on_the_samples(corpus: Any) -> None:
    report = reports.build(corpus, "blocks", now=datetime(2030, 1, 1, tzinfo=UTC))
    rows = report.rows
    used = rows[~rows["gap"]]
    assert (used["block_end"] - used["block_start"] == pd.Timedelta(hours=5)).all()
    assert (used["block_start"].dt.minute == 0).all() and (used["last_at"] <= used["block_end"]).all()
    assert int(rows["responses"].sum()) == int(corpus.usage["created_at"].notna().sum())
    assert report.totals["total_tokens"] == reports.build(corpus, "daily").totals["total_tokens"]
    gaps = rows[rows["gap"]]
    assert (gaps["block_end"] - gaps["block_start"] > pd.Timedelta(0)).all() and not rows["active"].any()
    later = reports.build(corpus, "blocks", since=datetime(2026, 1, 1).date())
    assert later.rows["block_start"].min() >= pd.Timestamp("2026-01-01", tz="UTC")


def _shape(value: Any) -> Any:
    """A JSON value's shape: its keys and value types, lists by their first item."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__


def _first_timed(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    name = "sessions" if kind == "session" else kind
    entries = [e for e in doc[name] if e.get("modelsUsed", e.get("models"))]
    return {name: entries[:1], **({"totals": doc["totals"]} if "totals" in doc else {})}


@pytest.mark.parametrize("kind", CCUSAGE_KINDS)
def test_ccusage_json_has_the_peer_s_shape(kind: str, corpus: Any) -> None:
    peer = _first_timed(ccusage(kind, SAMPLES / "claude_code"), kind)  # type: ignore[arg-type]
    ours = _first_timed(ccusage_document(reports.build(corpus, kind, breakdown=kind != "blocks")), kind)
    if kind == "session":  # ours: no project column (null); ccusage 18.0.11: the folder, or "Unknown Project"
        assert ours["sessions"][0].pop("projectPath") is None
        peer["sessions"][0].pop("projectPath")
    assert _shape(ours) == _shape(peer)


def test_the_command_line_writes_ccusage_json(samples: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "report", *args, str(samples),
                               "-q"], capture_output=True, text=True, check=False)

    daily = run("daily", "--ccusage-json")
    doc = json.loads(daily.stdout)
    assert daily.returncode == 0 and doc["totals"]["totalTokens"] == sum(d["totalTokens"] for d in doc["daily"])
    assert all(d["modelsUsed"] == [m["modelName"] for m in d["modelBreakdowns"]] for d in doc["daily"])
    assert json.loads(run("blocks", "--ccusage-json").stdout)["blocks"][0]["id"].endswith(":00:00.000Z")
    refused = run("models", "--ccusage-json")
    assert refused.returncode == 2 and "--ccusage-json" in refused.stderr
    assert run("blocks", "--ccusage-json", "--json").returncode == 2


def test_no_timed_usage_gives_no_blocks() -> None:
    empty = ma.load(SAMPLES / "dispatch").usage
    assert blocks(empty).empty and list(blocks(empty).columns)[:3] == ["block_start", "block_end", "first_at"]
