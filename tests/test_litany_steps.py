"""Litany step records: meta.json, request.json, response.json attempts, usage and orphans."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from litany_git import Branch, RepoBuilder, blocks, j, tree

import murmur_analysis as ma
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.litany.steps import parse_response

USE = {"type": "tool_use", "id": "call_1", "name": "bash", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "call_1", "content": [], "is_error": False}
ORPHAN = {"type": "tool_result", "tool_use_id": "call_gone", "content": [], "is_error": False}


def test_golden_stream_events_split_into_attempts_and_fold_usage(fixtures: Path) -> None:
    data = (fixtures / "litany" / "golden_v1_events.jsonl").read_bytes()
    diags = Diagnostics("litany")
    first, second = parse_response(data, Path("response.json"), diags)
    assert diags.rows == []
    assert first.ended and not second.ended
    # each counter as last reported; a null leaves the earlier value standing
    assert first.usage == {"input_tokens": 12, "output_tokens": 34, "cache_read_tokens": 5, "cache_write_tokens": 6,
                           "input_total_tokens": 23, "context_window": 200000}
    assert first.model == "claude-3-5-sonnet"
    assert first.finish_reason == "supernova" and first.error == "provider: overloaded"
    assert not first.succeeded and second.usage == {}


def test_old_usage_events_and_bad_lines(fixtures: Path) -> None:
    data = (fixtures / "litany" / "golden_v1_events.snapshot-v0.0.6.jsonl").read_bytes() + b"\n{oops\n[1]\n"
    diags = Diagnostics("litany")
    attempts = parse_response(data, Path("r.json"), diags)
    assert attempts[0].usage["input_tokens"] == 12 and "input_total_tokens" not in attempts[0].usage
    assert [(d.kind, d.line) for d in diags.rows] == [("bad_json", 32), ("bad_json", 33)]


def attempt(usage: dict[str, Any], *, error: bool = False) -> list[dict[str, Any]]:
    tail: list[dict[str, Any]] = (
        [{"type": "error", "kind": "transport", "message": "connection reset", "provider_detail": None}]
        if error else [{"type": "finish", "reason": "tool_use"}])
    return [{"type": "message_start", "v": 1, "id": None, "model": "claude-fable-5", "role": "assistant"},
            {"type": "usage", **usage}, *tail, {"type": "end"}]


def write_step(ws: Path, agent: str, n: int, meta: dict[str, Any] | None, attempts: list[list[dict[str, Any]]],
               model: str = "claude-fable-5") -> None:
    d = ws / "steps" / agent / f"{n:03d}"
    d.mkdir(parents=True)
    if meta is not None:
        (d / "meta.json").write_text(json.dumps(meta, indent=2))
    (d / "request.json").write_text(json.dumps({"model": model, "messages": []}, indent=2))
    if attempts:
        (d / "response.json").write_text("".join(json.dumps(e) + "\n" for a in attempts for e in a))


def workspace(tmp_path: Path) -> tuple[Path, dict[int, str]]:
    """agents/a: op, step 1 (retried) -> model entry, tool, op, step 2 (no response.json) -> model entry."""
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    a = Branch(repo, "a")
    a.put(tree(("001-op.md", "go")))  # mark 1: step 1 reads this
    a.put(tree(("002-claude-fable-5.json", j({"content": [USE], "usage": {
        "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 100, "cache_write_tokens": 0,
        "input_total_tokens": 110}}))))
    a.put(tree(("003-tool.json", blocks(RESULT)), ("004-tool.json", blocks(ORPHAN))))  # mark 3: step 2 reads this
    a.put(tree(("005-claude-fable-5.json", j({"content": [{"type": "text", "text": "done"}],
                                               "usage": {"input_tokens": 20, "output_tokens": 9}}))))
    shas = repo.finish()
    full = {"provider": "anthropic", "config_commit": "c", "workflow_commit": "c",
            "started_at": "2026-04-22T09:00:00Z", "ended_at": "2026-04-22T09:00:09Z"}
    write_step(ws, "a", 1, {"commit": shas[1], **full, "dropped_orphans": []}, [
        attempt({"input_tokens": 10, "output_tokens": None, "cache_read_tokens": 100, "input_total_tokens": 110},
                error=True),
        attempt({"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 100, "cache_write_tokens": 0,
                 "input_total_tokens": 110}),
    ])
    write_step(ws, "a", 2, {"commit": shas[3], **full, "dropped_orphans": ["call_other"]}, [])
    return ws, shas


def test_steps_table(tmp_path: Path) -> None:
    ws, shas = workspace(tmp_path)
    (ws / "steps" / "a" / "driver.log").write_text("not a step\n")
    steps = ma.load(ws).steps
    assert list(steps["step"]) == [1, 2]
    assert list(steps["commit"]) == [shas[1], shas[3]]
    assert list(steps["attempts"]) == [2, 0]
    assert list(steps["finish_reason"].fillna("-")) == ["tool_use", "-"]
    assert list(steps["error"].fillna("-")) == ["-", "-"]  # the last attempt of step 1 succeeded
    assert steps["started_at"][0] == datetime(2026, 4, 22, 9, tzinfo=UTC)
    assert list(steps["model"]) == ["claude-fable-5"] * 2 and list(steps["provider"]) == ["anthropic"] * 2
    assert [list(x) for x in steps["dropped_orphans"]] == [[], ["call_other"]]


def test_usage_counts_every_attempt_once_and_entries_only_where_no_response(tmp_path: Path) -> None:
    ws, _ = workspace(tmp_path)
    u = ma.load(ws).usage
    assert list(u["found_in"]) == ["response", "response", "entry"]
    assert list(u["attempt"].fillna(0)) == [1, 2, 0]
    assert list(u["sealed"].fillna(True)) == [False, True, True]
    assert list(u["seq"].fillna(0)) == [0, 2, 5]  # the sealed attempt is the entry 002; a discarded one is none
    assert list(u["input_total_tokens"]) == [110, 110, 20]
    assert list(u["output_tokens"].fillna(-1)) == [-1, 5, 9]
    conv = ma.load(ws).conversations.iloc[0]
    assert conv["tokens"] == 110 + 110 + 5 + 20 + 9


def test_record_and_assembly_orphans_disagree_visibly(tmp_path: Path) -> None:
    ws, shas = workspace(tmp_path)
    o = ma.load(ws).orphans
    rows = sorted(zip(o["found_by"], o["step"].fillna(0), o["commit"], o["tool_use_id"], strict=True))
    head = shas[4]
    assert rows == [("assembly", 0, head, "call_gone"), ("assembly", 2, shas[3], "call_gone"),
                    ("record", 2, shas[3], "call_other")]


def test_pre_provenance_records_and_missing_files(tmp_path: Path) -> None:
    ws, shas = workspace(tmp_path)
    write_step(ws, "a", 3, {"commit": shas[4], "started_at": "2026-04-22T06:54:32Z",
                            "ended_at": "2026-04-22T06:54:35+02:00"}, [])
    write_step(ws, "a", 4, None, [])
    write_step(ws, "ghost", 1, {"commit": shas[1]}, [])
    corpus = ma.load(ws)
    s = corpus.steps.set_index("step")
    assert pd.isna(s.loc[3, "provider"]) and corpus.tables["steps"]["dropped_orphans"][2].as_py() is None
    assert s.loc[3, "ended_at"] == datetime(2026, 4, 22, 4, 54, 35, tzinfo=UTC)
    assert pd.isna(s.loc[4, "commit"])
    kinds = sorted(corpus.diagnostics["kind"])
    assert kinds == ["missing_file", "no_branch"]
    assert set(corpus.orphans[corpus.orphans["found_by"] == "record"]["step"]) == {2}


def test_a_read_state_rewritten_away_is_replayed_from_its_tree(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    old = Branch(repo, "x")  # refs/heads/agents/x, about to be rewritten: its old tip stays under old/x
    before = old.put(tree(("001-op.md", "go"), ("002-tool.json", blocks(ORPHAN))))
    repo.commit("old/x", {}, 1_776_848_400, "keep", parent=before)
    root = repo.commit("base/x", tree(("001-op.md", "go")), 1_776_849_000, "rewritten root")
    repo.commit("agents/x", {"name": "x\n"}, 1_776_849_060, "rewritten", parent=root)
    shas = repo.finish()
    assert ma.assemble_commit(ws, "agents/x").dropped_orphans == []
    write_step(ws, "x", 1, {"commit": shas[before], "dropped_orphans": ["call_gone"]}, [])
    write_step(ws, "x", 2, {"commit": "f" * 40, "dropped_orphans": []}, [])
    corpus = ma.load(ws)
    o = corpus.orphans
    assert sorted(zip(o["found_by"], o["step"], strict=True)) == [("assembly", 1), ("record", 1)]
    assert list(corpus.diagnostics["kind"]) == ["unknown_commit"]


def test_step_records_read_in_batches_are_the_records_read_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    """However many steps' files are read at a time, each agent gets its records and its reports, in step order."""
    from murmur_analysis.sources.litany import steps

    for k, agent in enumerate(["a", "b", "b-c"]):
        for n in range(1, 4 + k):
            meta = {"commit": f"{n:040x}", "started_at": "2026-04-22T00:00:00Z", "ended_at": "not a time"}
            write_step(tmp_path, agent, n, None if (k, n) == (1, 2) else meta, [attempt({"input_tokens": n})])
    (tmp_path / "steps" / "b" / "003" / "response.json").write_text("{oops\n")
    (tmp_path / "steps" / "a" / "002" / "request.json").unlink()
    dirs = [tmp_path / "steps" / a for a in ("a", "b", "b-c", "none")]

    def read(at_once: int) -> tuple[list[list[steps.StepRecord]], list[list[tuple[str, str, int | None]]]]:
        monkeypatch.setattr(steps, "STEPS_AT_ONCE", at_once)
        reported = [Diagnostics("litany") for _ in dirs]
        records = steps.read_steps(dirs, reported)
        return records, [[(d.path, d.kind, d.line) for d in r.rows] for r in reported]

    whole, whole_reports = read(1_000)
    assert [[r.step for r in agent] for agent in whole] == [[1, 2, 3], [1, 2, 3, 4], [1, 2, 3, 4, 5], []]
    assert whole[0][1].model is None and whole[0][0].model == "claude-fable-5"
    assert [k for _p, k, _l in whole_reports[1]] == ["bad_time", "missing_file", "bad_time", "bad_json", "bad_time"]
    for at_once in (1, 2, 5):
        assert read(at_once) == (whole, whole_reports)
