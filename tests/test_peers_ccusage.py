"""The real peers (ccusage and @ccusage/codex 18.0.11) read the homes the sample builders write,
and on each home built to show one counting rule they still report what :mod:`peer_homes` records."""

from __future__ import annotations

from pathlib import Path

import pytest
from peer_homes import CASES, SAMPLES, Case
from peers import VERSION, ccusage, ccusage_codex


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_peer_reports_what_is_recorded_for_each_rule(case: Case, tmp_path: Path) -> None:
    case.build(tmp_path)
    assert case.peer_number(tmp_path) == case.peer
    if case.issue:  # a known issue: the peer is wrong on this home
        assert case.peer != case.right, case.issue


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_murmur_analysis_gives_the_right_number_for_each_rule(case: Case, tmp_path: Path) -> None:
    """Where the peer is right ours agrees with it; where a known issue makes it wrong, ours is right."""
    case.build(tmp_path)
    assert case.ours(tmp_path) == case.right, case.issue or "the peer agrees with the rule here"


def test_the_peers_are_the_pinned_versions() -> None:
    package = (Path(__file__).parent / "peers" / "package.json").read_text()
    assert package.count(f'"{VERSION}"') == 2


def test_ccusage_reads_the_sample_claude_code_home() -> None:
    home = SAMPLES / "claude_code"
    daily = ccusage("daily", home)
    assert [d["date"] for d in daily["daily"]] == ["2025-11-24", "2025-11-26"]
    assert daily["totals"] == daily["totals"] | {"inputTokens": 55, "outputTokens": 946,
                                                 "cacheCreationTokens": 22_450, "cacheReadTokens": 91_246,
                                                 "totalTokens": 114_697}
    sessions = ccusage("session", home)["sessions"]
    assert sorted(s["sessionId"] for s in sessions) == ["-home-dev-notes", "-home-dev-shop", "subagents"]
    monthly = ccusage("monthly", home)["monthly"]
    assert [m["month"] for m in monthly] == ["2025-11"]
    blocks = ccusage("blocks", home)["blocks"]
    assert [(b["startTime"], b["isGap"]) for b in blocks] == [
        ("2025-11-24T09:00:00.000Z", False), ("2025-11-24T14:13:11.120Z", True),
        ("2025-11-24T15:00:00.000Z", False), ("2025-11-24T20:40:03.000Z", True),
        ("2025-11-26T22:00:00.000Z", False)]


def test_ccusage_codex_reads_the_sample_codex_home() -> None:
    sessions = ccusage_codex("session", SAMPLES / "codex")["sessions"]
    # sessions/ alone, .jsonl alone: not the archived copy, not the .zst; the legacy file has no usage
    assert [s["sessionFile"].rsplit("-", 5)[-5][:8] for s in sessions] == ["0199b1a2", "0199b1c4", "0199b1d0"]
    assert [s["inputTokens"] for s in sessions] == [56_382, 60_582, 59_282]


@pytest.mark.parametrize("report", ["daily", "weekly", "monthly"])
def test_where_ccusage_is_right_our_ccusage_json_gives_its_totals(report: str, tmp_path: Path) -> None:
    """A home of the rules ccusage counts right (resumed copies, five-hour blocks, ordinary responses)."""
    import json
    import subprocess
    import sys

    from peer_homes import blocks_home, cc, resumed_copy

    for build in (resumed_copy, blocks_home):
        folder = tmp_path / build.__name__
        for session in build(folder):
            session.write()
    home = tmp_path / "home" / "projects"
    home.mkdir(parents=True)
    for build in (resumed_copy, blocks_home):
        for project in (tmp_path / build.__name__ / "projects").iterdir():
            project.rename(home / f"{project.name}-{build.__name__}")
    theirs = ccusage(report, home.parent)
    done = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "report", report, str(home.parent),
                           "--ccusage-json", "-q"], capture_output=True, text=True, check=True)
    ours = json.loads(done.stdout)
    keys = ("inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "totalTokens")
    assert {k: ours["totals"][k] for k in keys} == {k: theirs["totals"][k] for k in keys}
    rows = {"daily": "date", "weekly": "week", "monthly": "month"}[report]
    assert [(r[rows], r["totalTokens"]) for r in ours[report]] == [(r[rows], r["totalTokens"]) for r in theirs[report]]
    assert cc.SONNET in {m for r in ours[report] for m in r["modelsUsed"]}
