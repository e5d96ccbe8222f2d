"""Litany spend counted once: step records matched to entries whatever happened to the history.

Built as litany writes them: one commit per entry; a step's ``meta.json`` names the read-state
commit it assembled; ``response.json`` holds every attempt; the committed model entry carries
the sealing attempt's usage (formats.md §2). litany's compaction rebase rewrites the branch, so
the commits step records name may no longer be on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from litany_git import RepoBuilder, blocks, j, tree
from test_litany_steps import USE, attempt, write_step

import murmur_analysis as ma
from murmur_analysis import pair_tools
from murmur_analysis.core.model import Entry
from murmur_analysis.core.wire import block_to_wire, blocks_from_wire

RESULT = {"type": "tool_result", "tool_use_id": "call_1", "content": [], "is_error": False}
U1 = {"input_tokens": 4000, "output_tokens": 300, "cache_read_tokens": 36000, "cache_write_tokens": 2453}
U2 = {"input_tokens": 900, "output_tokens": 100, "cache_read_tokens": 40453, "cache_write_tokens": 0}
T0 = 1_776_848_400
ANTHROPIC = {"provider": "anthropic", "started_at": "2026-04-22T09:00:00Z", "ended_at": "2026-04-22T09:00:09Z"}
STATES: list[dict[str, bytes | str | None]] = [
    tree(("001-op.md", "go")),
    tree(("002-claude-fable-5.json", j({"content": [USE], "usage": U1}))),
    tree(("003-tool.json", blocks(RESULT))),
    tree(("004-claude-fable-5.json", j({"content": [{"type": "text", "text": "done"}], "usage": U2}))),
]


def spent(u: dict[str, int]) -> int:
    return sum(u.values())  # Anthropic: input + both cache slices + output


def history(ws: Path, *, rewrite: bool) -> dict[int, str]:
    """``agents/a`` with the four states; with ``rewrite`` the branch is a rebased copy (new ids).

    The original commits stay reachable from ``old/a`` (as a reflog or backup ref keeps them).
    """
    repo = RepoBuilder(ws / "repo.git")
    first = "old/a" if rewrite else "agents/a"
    marks = [repo.commit(first, state, T0 + 60 * n, f"step {n}") for n, state in enumerate(STATES)]
    if rewrite:
        for n, state in enumerate(STATES):
            repo.commit("agents/a", state, T0 + 60 * n, f"[compacted] step {n}")
    shas = repo.finish()
    return {n: shas[m] for n, m in enumerate(marks)}


def steps(ws: Path, shas: dict[int, str], first_meta: Any = None) -> None:
    meta1 = first_meta if first_meta is not None else {"commit": shas[0], **ANTHROPIC}
    write_step(ws, "a", 1, meta1, [attempt(U1)])
    write_step(ws, "a", 2, {"commit": shas[2], **ANTHROPIC}, [attempt(U2)])


def test_a_rebased_branch_does_not_count_its_spend_twice(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shas = history(ws, rewrite=True)
    steps(ws, shas)
    corpus = ma.load(ws)
    u = corpus.usage
    assert list(u["found_in"]) == ["response", "response"]
    assert list(u["message_id"]) == ["002-claude-fable-5.json", "004-claude-fable-5.json"]
    assert corpus.conversations.iloc[0]["tokens"] == spent(U1) + spent(U2)


def test_a_broken_meta_json_does_not_count_its_response_twice(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shas = history(ws, rewrite=False)
    steps(ws, shas, first_meta={})
    (ws / "steps" / "a" / "001" / "meta.json").write_text('{"commit": "abc')
    corpus = ma.load(ws)
    u = corpus.usage
    assert list(u["found_in"]) == ["response", "response"]
    assert list(u["seq"]) == [2, 4]
    assert corpus.conversations.iloc[0]["tokens"] == spent(U1) + spent(U2)
    assert list(corpus.diagnostics["kind"]) == ["bad_json"]


def test_spend_reported_only_by_a_discarded_attempt_keeps_the_entrys_usage(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shas = history(ws, rewrite=False)
    discarded = {"input_tokens": 4000, "output_tokens": 12, "cache_read_tokens": 36000, "cache_write_tokens": 2453}
    sealing_without_usage = [e for e in attempt(U1) if e["type"] != "usage"]
    write_step(ws, "a", 1, {"commit": shas[0], **ANTHROPIC}, [attempt(discarded, error=True), sealing_without_usage])
    write_step(ws, "a", 2, {"commit": shas[2], **ANTHROPIC}, [attempt(U2)])
    u = ma.load(ws).usage
    assert list(zip(u["found_in"], u["sealed"].fillna(True), u["seq"].fillna(-1), strict=True)) == [
        ("response", False, -1), ("response", True, 4), ("entry", True, 2)]
    assert list(u["input_total_tokens"]) == [42453, 41353, 42453]


def test_wrongly_typed_litany_counters_are_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    bad = {"input_tokens": "1900", "output_tokens": 2**70, "cache_read_tokens": 0, "cache_write_tokens": 0}
    repo.commit("agents/a", tree(("001-op.md", "go")), T0)
    repo.commit("agents/a", tree(("002-claude-fable-5.json", j({"content": [USE], "usage": bad}))), T0 + 60)
    repo.finish()
    corpus = ma.load(ws)
    u = corpus.usage.iloc[0]
    assert pd.isna(u["input_total_tokens"]) and pd.isna(u["output_tokens"])
    assert list(corpus.diagnostics["kind"]) == ["bad_usage", "bad_usage"]


def test_a_brazen_server_result_holding_the_providers_error_is_an_error() -> None:
    # Anthropic's web_search_tool_result carries an error object in place of results.
    entry = Entry(2, "assistant", blocks_from_wire([
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "go"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": {"type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
        {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_search", "input": {"query": "go 1.25"}},
    ]))
    failed, unanswered = pair_tools([entry])
    assert (failed.kind, failed.status, failed.is_error) == ("server", "error", True)
    assert (unanswered.kind, unanswered.status, unanswered.result_seq) == ("server", "ok", None)
    assert block_to_wire(entry.blocks[1]) == {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
                                              "content": {"type": "web_search_tool_result_error",
                                                          "error_code": "max_uses_exceeded"}}
