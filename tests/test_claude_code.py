"""Claude Code: session lines as formats-agents.md Part A gives them, read through the public API.

Each counting rule of ``docs/tokens.md`` (## Claude Code) is asserted with exact numbers on a
home built from inline lines.
"""

from __future__ import annotations

import json
import os
import random
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from handle_agreement import assert_handle_matches_tables
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis.sources.claude_code import ClaudeCodeSource, default_homes

OPUS = "claude-opus-4-5-20251101"

# The A.1.3 example line, as formats-agents.md writes it.
A13 = {"parentUuid": "u-1", "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": "s-1",
       "version": "2.1.170", "gitBranch": "main", "type": "assistant", "requestId": "req_1", "uuid": "a-1",
       "timestamp": "2026-07-01T10:00:01.000Z",
       "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": OPUS,
                   "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                                "input": {"file_path": "/p/README.md"}}],
                   "stop_reason": "tool_use",
                   "usage": {"input_tokens": 3, "cache_creation_input_tokens": 2285, "cache_read_input_tokens": 22137,
                             "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 2285},
                             "output_tokens": 61, "service_tier": "standard"}}}


def user(uuid: str, content: Any, ts: str = "2026-07-01T10:00:00.000Z", session: str = "s-1",
         **extra: Any) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "parentUuid": None, "sessionId": session, "timestamp": ts,
            "message": {"role": "user", "content": content}, **extra}


def assistant(uuid: str, msg: str | None, req: str | None, usage: dict[str, Any] | None,
              content: list[Any] | None = None, ts: str = "2026-07-01T10:00:01.000Z", session: str = "s-1",
              model: str = OPUS, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "model": model,
                               "content": content if content is not None else [{"type": "text", "text": "ok"}]}
    if msg is not None:
        message["id"] = msg
    if usage is not None:
        message["usage"] = usage
    line: dict[str, Any] = {"type": "assistant", "uuid": uuid, "sessionId": session, "timestamp": ts,
                            "message": message, **extra}
    if req is not None:
        line["requestId"] = req
    return line


def counters(i: int = 10, o: int = 5, r: int = 0, w: int = 0) -> dict[str, int]:
    return {"input_tokens": i, "output_tokens": o, "cache_read_input_tokens": r, "cache_creation_input_tokens": w}


def write(path: Path, lines: list[Any], tail: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + tail)
    return path


def home(tmp_path: Path, sessions: dict[str, list[Any]]) -> Path:
    """A config dir: ``sessions`` maps a path under ``projects/-p/`` to its lines."""
    root = tmp_path / "claude"
    for name, lines in sessions.items():
        write(root / "projects" / "-p" / name, lines)
    return root


def load(path: Path, **kw: Any) -> ma.Corpus:
    return ma.load(path, source="claude_code", options={"claude_code": {"settle_seconds": 0.0}}, **kw)


def test_the_a13_line_decodes_to_one_response_with_its_tool_call(tmp_path: Path) -> None:
    corpus = load(home(tmp_path, {"s-1.jsonl": [user("u-1", "Read the README"), A13]}))
    u = corpus.usage.iloc[0]
    assert len(corpus.usage) == 1
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (3, 61, 22137, 2285)
    assert (u.cache_write_5m_tokens, u.cache_write_1h_tokens, u.input_total_tokens) == (0, 2285, 3 + 22137 + 2285)
    assert (u.message_id, u.seq, u.model, u.provider, u.accounting, u.session_id) == (
        "msg_1", 1, OPUS, "anthropic", "anthropic", "s-1")
    assert str(u.created_at) == "2026-07-01 10:00:01+00:00"
    # opus 4.5: $5 input, $25 output, $0.50 cache read, $10 a 1-hour write per million tokens
    expected = Decimal(3 * 5 + 61 * 25 + 22137 * 0.5 + 2285 * 10) / 10**6
    assert u.cost_usd == pytest.approx(float(expected), rel=1e-12)
    assert u.cache_write_cost_usd == pytest.approx(2285 * 10 / 1e6, rel=1e-12)
    call = corpus.tool_calls.iloc[0]
    assert (call.call_id, call.tool_name, call.input, call.input_bytes, call.status) == (
        "toolu_1", "Read", '{"file_path":"/p/README.md"}', 28, "unanswered")
    m = corpus.messages
    assert list(m.role) == ["user", "assistant"] and list(m.block_kinds.iloc[1]) == ["tool_use"]
    assert corpus.conversations.iloc[0].title == "Read the README"


def test_five_minute_writes_are_priced_at_the_cache_write_rate(tmp_path: Path) -> None:
    usage = {**counters(0, 0, 0, 1000), "cache_creation": {"ephemeral_5m_input_tokens": 600,
                                                          "ephemeral_1h_input_tokens": 400}}
    corpus = load(home(tmp_path, {"s-1.jsonl": [assistant("a", "m", "r", usage)]}))
    u = corpus.usage.iloc[0]
    assert (u.cache_write_tokens, u.cache_write_5m_tokens, u.cache_write_1h_tokens) == (1000, 600, 400)
    assert u.cache_write_cost_usd == pytest.approx((600 * 6.25 + 400 * 10) / 1e6, rel=1e-12)


def test_a_response_over_several_lines_is_one_row_of_each_counters_maximum(tmp_path: Path) -> None:
    lines = [user("u", "hi"),
             assistant("a1", "m1", "r1", counters(3, 2, 100, 50), [{"type": "thinking", "thinking": "hmm"}]),
             assistant("a2", "m1", "r1", counters(3, 61, 100, 50), ts="2026-07-01T10:00:02.000Z"),
             assistant("a3", "m1", "r1", counters(3, 40, 100, 50), [{"type": "tool_use", "id": "t", "name": "X",
                                                                     "input": {}}], ts="2026-07-01T10:00:03.000Z")]
    corpus = load(home(tmp_path, {"s-1.jsonl": lines}))
    assert len(corpus.usage) == 1
    u = corpus.usage.iloc[0]
    assert (u.output_tokens, u.input_total_tokens, u.seq) == (61, 153, 1)
    assert str(u.created_at) == "2026-07-01 10:00:01+00:00"  # the first line's time
    m = corpus.messages
    assert list(m.output_tokens.isna()) == [True, False, True, True]
    conv = corpus.conversations.iloc[0]
    assert (conv.tokens, conv.unreported_responses, conv.messages) == (153 + 61, 0, 4)
    assert m.reasoning_text.iloc[1] == "hmm" and m.text.iloc[2] == "ok"


def test_lines_without_request_id_are_one_response_by_message_id(tmp_path: Path) -> None:
    lines = [assistant("a1", "m1", None, counters(10, 5)), assistant("a2", "m1", None, counters(10, 9))]
    corpus = load(home(tmp_path, {"s-1.jsonl": lines}))
    assert list(corpus.usage.output_tokens) == [9]


def test_lines_without_message_id_are_each_a_response(tmp_path: Path) -> None:
    lines = [assistant("a1", None, "r", counters(10, 5)), assistant("a2", None, "r", counters(10, 5))]
    corpus = load(home(tmp_path, {"s-1.jsonl": lines}))
    assert list(corpus.usage.output_tokens) == [5, 5]


def test_a_resumed_sessions_copies_count_once_in_the_earliest_session(tmp_path: Path) -> None:
    first = [user("u1", "go", session="s-1"), assistant("a1", "m1", "r1", counters(10, 5), session="s-1"),
             assistant("b1", None, None, counters(7, 1), session="s-1")]  # no id: only the uuid tells a copy
    later = [{**line, "sessionId": "s-2"} for line in first] + [
        user("u2", "more", ts="2026-07-02T09:00:00.000Z", session="s-2"),
        assistant("a2", "m2", "r2", counters(20, 8), ts="2026-07-02T09:00:01.000Z", session="s-2")]
    corpus = load(home(tmp_path, {"s-2.jsonl": later, "s-1.jsonl": first}))
    by = corpus.usage.groupby("conversation_id").output_tokens.sum().to_dict()
    assert by == {"s-1": 6, "s-2": 8}
    conv = corpus.conversations.set_index("conversation_id")
    assert conv.loc["s-2", "messages"] == 5 and conv.loc["s-2", "unreported_responses"] == 0


def test_a_sidechain_replay_under_a_new_request_id_is_not_counted_again(tmp_path: Path) -> None:
    main = assistant("a1", "m1", "r1", counters(10, 5, 90000))
    replay = assistant("b1", "m1", "r9", counters(10, 5, 90000), isSidechain=True, ts="2026-07-01T11:00:00.000Z")
    other = assistant("b2", "m7", "r7", counters(1, 1), isSidechain=True, ts="2026-07-01T11:00:01.000Z")
    corpus = load(home(tmp_path, {"s-1.jsonl": [main, replay, other]}))
    assert list(corpus.usage.message_id) == ["m1", "m7"]
    assert corpus.usage.cache_read_tokens.sum() == 90000


def test_synthetic_lines_are_messages_but_no_responses(tmp_path: Path) -> None:
    synthetic = assistant("a1", "0b0e7e4c-uuid", None, counters(0, 0), [{"type": "text", "text": "API Error: x"}],
                          model="<synthetic>", isApiErrorMessage=True)
    corpus = load(home(tmp_path, {"s-1.jsonl": [user("u", "hi"), synthetic]}))
    assert corpus.usage.empty
    m = corpus.messages.iloc[1]
    assert (m.role, m.origin, m.text) == ("assistant", "api_error", "API Error: x")
    assert corpus.messages.model.isna().all()
    assert corpus.conversations.iloc[0].unreported_responses == 0
    from murmur_analysis.ui.transcript_html import entry_html, unreported

    entries = corpus.conversation("s-1").entries  # the explorer says what it is, not what it lacks
    assert entries[1].origin == "api_error" and unreported(entries) == set()
    view = entry_html(entries[1], 2, said=unreported(entries))
    assert "the runtime's error notice, no model response" in view and "not reported" not in view


def test_a_subagent_is_its_own_conversation_linked_to_the_spawning_call(tmp_path: Path) -> None:
    task = {"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {"prompt": "look"}}
    main = [user("u1", "start"), assistant("a1", "m1", "r1", counters(10, 5), [task]),
            user("u2", [{"type": "tool_result", "tool_use_id": "toolu_T", "content": "found"}],
                 ts="2026-07-01T10:00:09.000Z", toolUseResult={"agentId": "abc", "status": "completed"})]
    sub = [user("s1", "look", ts="2026-07-01T10:00:02.000Z", isSidechain=True, agentId="abc"),
           assistant("s2", "m2", "r2", counters(4, 2), ts="2026-07-01T10:00:03.000Z", isSidechain=True,
                     agentId="abc", model="claude-sonnet-4-5")]
    root = home(tmp_path, {"s-1.jsonl": main, "s-1/subagents/agent-abc.jsonl": sub,
                           "s-1/subagents/agent-xyz.jsonl": [{**line, "uuid": line["uuid"] + "x", "message": {
                               **line["message"], **({"id": "m3"} if "id" in line["message"] else {})}}
                               for line in sub]})
    (root / "projects/-p/s-1/subagents/agent-xyz.meta.json").write_text('{"agentType":"x","toolUseId":"toolu_M"}')
    corpus = load(root)
    conv = corpus.conversations.set_index("conversation_id")
    assert set(conv.index) == {"s-1", "s-1/agent-abc", "s-1/agent-xyz"}
    assert conv.loc["s-1/agent-abc", "parent_conversation_id"] == "s-1"
    assert conv.loc["s-1/agent-abc", "parent_call_id"] == "toolu_T"  # by toolUseResult.agentId
    assert conv.loc["s-1/agent-xyz", "parent_call_id"] == "toolu_M"  # by the meta.json
    assert pd.isna(conv.loc["s-1", "parent_conversation_id"])
    assert corpus.usage.groupby("conversation_id").output_tokens.sum().to_dict() == {
        "s-1": 5, "s-1/agent-abc": 2, "s-1/agent-xyz": 2}
    call = corpus.tool_calls.iloc[0]
    # the result writes no is_error: the Messages API's default, no error
    assert (call.status, call.is_error, str(call.result_at)) == ("ok", False, "2026-07-01 10:00:09+00:00")


def test_a_subagent_line_mirrored_in_the_main_file_counts_once(tmp_path: Path) -> None:
    line = assistant("s2", "m2", "r2", counters(4, 2), isSidechain=True, agentId="abc")
    corpus = load(home(tmp_path, {"s-1.jsonl": [user("u", "x"), {**line, "uuid": "copy"}],
                                  "s-1/subagents/agent-abc.jsonl": [line]}))
    assert corpus.usage.output_tokens.sum() == 2 and len(corpus.usage) == 1


def test_a_compact_boundary_is_a_compaction_growth_row(tmp_path: Path) -> None:
    lines = [user("u1", "a" * 10), assistant("a1", "m1", "r1", counters(10, 5)),
             {"type": "system", "subtype": "compact_boundary", "uuid": "c", "parentUuid": None,
              "logicalParentUuid": "a1", "sessionId": "s-1", "timestamp": "2026-07-01T10:05:00.000Z",
              "content": "Conversation compacted", "compactMetadata": {"trigger": "auto", "preTokens": 155000,
                                                                       "postTokens": 9000}},
             user("u2", "This session is being continued", ts="2026-07-01T10:05:01.000Z", isCompactSummary=True)]
    corpus = load(home(tmp_path, {"s-1.jsonl": lines}))
    g = corpus.growth[corpus.growth.event == "compaction"].iloc[0]
    assert (g.position, g.tokens_before, g.tokens_after, g.summary) == (2, 155000, 9000,
                                                                        "This session is being continued")
    assert str(g["at"]) == "2026-07-01 10:05:00+00:00" and g.chars == 10 + 2 + len("Conversation compacted")
    assert (corpus.growth.event == "message").sum() == 4
    assert corpus.messages.origin.tolist()[3] == "compact_summary"


def test_titles_last_ai_title_then_summary_then_first_user_text(tmp_path: Path) -> None:
    corpus = load(home(tmp_path, {
        "a.jsonl": [user("u", "first\nsecond", session="a"), {"type": "ai-title", "aiTitle": "one", "sessionId": "a"},
                    {"type": "ai-title", "aiTitle": "two", "sessionId": "a"}],
        "b.jsonl": [{"type": "summary", "summary": "Sum", "leafUuid": "x"}, user("v", "hello", session="b")],
        "c.jsonl": [user("m", "<command-name>/x</command-name>", session="c", isMeta=True),
                    user("w", "\n  real prompt\nmore", session="c")]}))
    assert corpus.conversations.set_index("conversation_id").title.to_dict() == {"a": "two", "b": "Sum",
                                                                                 "c": "real prompt"}
    assert corpus.messages[corpus.messages.conversation_id == "c"].origin.fillna("-").tolist() == ["meta", "-"]


def test_every_unreadable_line_is_named_and_a_torn_tail_waits_to_settle(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    path = write(root / "projects/-p/s-1.jsonl", [user("u", "hi"), "not json", "[1]",
                                                  '{"type":"user","uuid":"t","sessionId":"s-1"'], tail="")
    waiting = ma.load(root, source="claude_code", options={"claude_code": {"settle_seconds": 3600.0}})
    assert waiting.diagnostics[["line", "kind"]].values.tolist() == [[2, "bad_json"], [3, "bad_json"]]
    old = time.time() - 60
    os.utime(path, (old, old))
    settled = load(root)
    assert settled.diagnostics[["line", "kind"]].values.tolist() == [[2, "bad_json"], [3, "bad_json"],
                                                                      [4, "partial_line"]]
    assert len(settled.messages) == 1


def test_a_counter_that_is_no_integer_is_null_and_reported(tmp_path: Path) -> None:
    bad = {"input_tokens": "12", "output_tokens": -1, "cache_read_input_tokens": 1.5, "cache_creation_input_tokens": 0}
    corpus = load(home(tmp_path, {"s-1.jsonl": [assistant("a", "m", "r", bad)]}))
    u = corpus.usage.iloc[0]
    assert pd.isna(u.input_tokens) and pd.isna(u.output_tokens) and pd.isna(u.cache_read_tokens)
    assert u.cache_write_tokens == 0
    kinds = corpus.diagnostics[corpus.diagnostics.kind == "bad_usage"].detail.tolist()
    assert len(kinds) == 3 and all("usage of m" in k for k in kinds)
    assert any("output_tokens is not an integer" in k for k in kinds)


def test_message_not_an_object_and_the_old_top_level_shape(tmp_path: Path) -> None:
    lines = [{"type": "user", "uuid": "n", "sessionId": "s-1", "message": None},
             {"type": "user", "uuid": "o", "sessionId": "s-1", "message": "text?"},
             {"type": "user", "uuid": "p", "sessionId": "s-1", "role": "user", "content": "old shape"}]
    corpus = load(home(tmp_path, {"s-1.jsonl": lines}))
    assert corpus.messages.text.tolist()[2] == "old shape" and len(corpus.messages) == 3
    assert corpus.diagnostics[["line", "kind"]].values.tolist() == [[2, "not_a_message"]]


def test_text_false_leaves_texts_null_and_counts_the_same(tmp_path: Path) -> None:
    root = home(tmp_path, {"s-1.jsonl": [user("u", "hi"), A13]})
    lean, full = load(root, text=False), load(root)
    assert lean.messages.text.isna().all() and lean.tool_calls.input.isna().all()
    assert lean.usage.drop(columns=[]).equals(full.usage)
    assert lean.tool_calls.input_bytes.tolist() == [28]


def test_detection_and_default_homes(tmp_path: Path) -> None:
    root = home(tmp_path, {"s-1.jsonl": [A13]})
    src = ClaudeCodeSource()
    project = root / "projects" / "-p"
    assert all(src.guess_can_open(p) for p in (root, root / "projects", project, project / "s-1.jsonl"))
    write(tmp_path / "codex.jsonl", [{"type": "session_meta", "payload": {"id": "x"}, "timestamp": "t"}])
    assert not src.guess_can_open(tmp_path / "codex.jsonl") and not src.guess_can_open(tmp_path / "nothing")
    assert ma.load(root).conversations.source.tolist() == ["claude_code"]
    one = ma.load(project / "s-1.jsonl")
    assert one.usage.output_tokens.tolist() == [61]
    other = tmp_path / "other"
    (other / "projects").mkdir(parents=True)
    env = {"CLAUDE_CONFIG_DIR": f" {root} , {other / 'projects'},{tmp_path / 'missing'}"}
    assert default_homes(env) == [root, other]
    xdg = {"XDG_CONFIG_HOME": str(tmp_path / "x"), "HOME": str(tmp_path)}
    (tmp_path / "x" / "claude" / "projects").mkdir(parents=True)
    assert default_homes(xdg)[0] == tmp_path / "x" / "claude"


def test_workflow_journals_are_not_read_and_flat_agents_name_their_session(tmp_path: Path) -> None:
    corpus = load(home(tmp_path, {
        "s-1.jsonl": [user("u", "x")],
        "s-1/subagents/workflows/w1/journal.jsonl": [{"type": "user", "sessionId": "s-1", "uuid": "j"}],
        "s-1/subagents/workflows/w1/agent-q.jsonl": [user("q", "y", isSidechain=True)],
        "agent-old.jsonl": [user("o", "z", session="s-0", isSidechain=True)]}))
    conv = corpus.conversations.set_index("conversation_id")
    assert sorted(conv.index) == ["s-0/agent-old", "s-1", "s-1/workflows/w1/agent-q"]
    assert conv.loc["s-0/agent-old", "parent_conversation_id"] == "s-0"


def _response_lines(outputs: list[int], msg: str, req: str, start: int) -> list[dict[str, Any]]:
    return [assistant(f"{msg}-{k}", msg, req, counters(10, o, 100, 20), ts=f"2026-07-01T10:{start:02d}:{k:02d}.000Z")
            for k, o in enumerate(outputs)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(responses=st.lists(st.lists(st.integers(1, 500), min_size=1, max_size=6), min_size=1, max_size=5),
       seed=st.integers(0, 2**16))
def test_splitting_and_file_order_never_change_the_totals(tmp_path_factory: pytest.TempPathFactory,
                                                          responses: list[list[int]], seed: int) -> None:
    """However many lines carry a response (output growing or not), and however files are named, totals stay."""
    rng = random.Random(seed)
    tmp = tmp_path_factory.mktemp("split")
    sessions: dict[str, list[Any]] = {}
    for i, outputs in enumerate(responses):
        lines = _response_lines(outputs, f"m{i}", f"r{i}", i)
        name = f"{rng.choice('abcdef')}{i}.jsonl"
        sessions[name] = lines
        if rng.random() < 0.5:  # a resumed session's copy of this response, in a file named anywhere
            sessions[f"{rng.choice('abcdef')}copy{i}.jsonl"] = [
                {**line, "timestamp": line["timestamp"].replace("2026-07-01", "2026-07-05")} for line in lines]
    corpus = load(home(tmp, sessions))
    assert len(corpus.usage) == len(responses)
    assert corpus.usage.output_tokens.sum() == sum(max(o) for o in responses)
    assert corpus.usage.input_total_tokens.sum() == 130 * len(responses)


def test_a_rewinds_abandoned_branch_is_kept_marked_and_counted_once(tmp_path: Path) -> None:
    def child(uuid: str, parent: str, ts: str, **kw: Any) -> dict[str, Any]:
        return {**user(uuid, f"prompt {uuid}", ts=ts, **kw), "parentUuid": parent}

    lines = [user("u0", "start"), {**assistant("a0", "m0", "r0", counters(10, 1)), "parentUuid": "u0"},
             child("old", "a0", "2026-07-01T10:01:00.000Z"),
             {**assistant("a1", "m1", "r1", counters(10, 2), ts="2026-07-01T10:01:01.000Z"), "parentUuid": "old"},
             child("new", "a0", "2026-07-01T10:02:00.000Z"),
             {**assistant("a2", "m2", "r2", counters(10, 3), ts="2026-07-01T10:02:01.000Z"), "parentUuid": "new"},
             # a compaction's replay: two children written at one time are no branch
             child("r1", "a2", "2026-07-01T10:03:00.000Z"), child("r2", "a2", "2026-07-01T10:03:00.000Z")]
    corpus = load(home(tmp_path, {"s-1.jsonl": lines}))
    assert corpus.messages.status.fillna("-").tolist() == ["-", "-", "abandoned", "abandoned", "-", "-", "-", "-"]
    assert corpus.usage.output_tokens.tolist() == [1, 2, 3]
    from murmur_analysis.ui.transcript_html import entry_html

    entries = corpus.conversation("s-1").entries  # the handle shows what the table marks
    assert [e.status for e in entries] == [None, None, "abandoned", "abandoned", None, None, None, None]
    assert "abandoned: on a branch the conversation was rewound from" in entry_html(entries[3], 4)
    assert "abandoned" not in entry_html(entries[5], 6)


def test_a_conversation_pages_its_lines_as_entries(tmp_path: Path) -> None:
    corpus = load(home(tmp_path, {"s-1.jsonl": [user("u", "hi"), A13, {"type": "ai-title", "aiTitle": "t"}]}))
    handle = corpus.conversation("s-1")
    entries = handle.entries
    assert [(e.position, e.side, e.id) for e in entries] == [(0, "user", "u"), (1, "assistant", "msg_1")]
    assert type(entries[1].blocks[0]).__name__ == "ToolUse" and entries[1].usage is not None
    page = handle.read_messages(None, 1)
    assert page.total == 2 and len(page.messages) == 1


def test_the_explorer_says_where_a_line_of_a_response_is_counted(tmp_path: Path) -> None:
    from murmur_analysis.ui.transcript_html import counted_on, entries_html, unreported

    first = [user("u1", "go"), assistant("a1", "m1", "r1", counters(10, 5)),
             assistant("a2", "m1", "r1", counters(10, 9), ts="2026-07-01T10:00:02.000Z")]
    later = [{**line, "sessionId": "s-2"} for line in first[1:]]  # a resumed session's copies alone
    synthetic = assistant("x", "0b0e7e4c-uuid", None, counters(0, 0), model="<synthetic>", isApiErrorMessage=True,
                          session="s-3")
    corpus = load(home(tmp_path, {"s-1.jsonl": first, "s-2.jsonl": later, "s-3.jsonl": [synthetic]}))
    own = corpus.conversation(("claude_code", "s-1")).entries
    assert counted_on(own) == {3: 2} and unreported(own) == set()
    view = entries_html(list(enumerate(own, 1)), said=unreported(own), on=counted_on(own))
    assert "in 10 · cache read 0 · out 9 tokens" in view and "tokens counted on #2, the same response" in view
    assert "tokens not reported" not in view
    copies = corpus.conversation("s-2").entries
    assert counted_on(copies) == {} and unreported(copies) == set()  # counted in s-1: nothing is unreported
    view = entries_html(list(enumerate(copies, 1)), said=unreported(copies), on=counted_on(copies))
    assert view.count("tokens counted where this response was first written (another conversation)") == 2
    notice = corpus.conversation("s-3").entries
    assert not notice[0].usage.counted_elsewhere  # a runtime's notice is no response counted anywhere


def _tables(conv: Any) -> dict[str, Any]:
    from murmur_analysis.tables.frames import FrameBuilder

    builder = FrameBuilder()
    builder.add(conv)
    return {name: table.to_pylist() for name, table in builder.finish().items()}


def test_a_handle_reads_its_file_alone_with_the_usage_its_load_gave(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from murmur_analysis.core.diagnostics import Diagnostics
    from murmur_analysis.core.model import sorted_entries
    from murmur_analysis.sources.claude_code import source as source_module

    first = [user("u1", "go"), assistant("a1", "m1", "r1", counters(10, 5)),
             assistant("a2", "m1", "r1", counters(10, 9), [{"type": "thinking", "thinking": "hm"}],
                       ts="2026-07-01T10:00:02.000Z")]
    later = [{**line, "sessionId": "s-2"} for line in first] + [
        user("u2", "more", ts="2026-07-02T09:00:00.000Z", session="s-2"),
        assistant("a3", "m2", "r2", counters(20, 8), ts="2026-07-02T09:00:01.000Z", session="s-2")]
    root = home(tmp_path, {"s-1.jsonl": first, "s-2.jsonl": later})
    corpus = load(root)
    read: list[int] = []
    scan = source_module.scan_lines
    monkeypatch.setattr(source_module, "scan_lines", lambda *a, **k: read.append(len(a[1])) or scan(*a, **k))
    for pair in corpus.conversation_ids():
        handle = corpus.conversation(pair)
        alone = handle.entries
        again = handle._source.reopen(handle._key, Diagnostics("claude_code"))  # its rows too, as Dask reads them
        whole = handle._source._one(handle._key, Diagnostics("claude_code"), True)  # the whole load read again
        assert alone == list(sorted_entries(whole.entries))
        assert _tables(again) == _tables(whole)
    assert read == [1, 1, 2, 1, 1, 2]  # a handle reads its own file alone; the whole load is two files
    read.clear()
    fresh = ClaudeCodeSource(settle_seconds=0.0)  # as a Dask task gets it: nothing read yet
    for pair in corpus.conversation_ids():
        fresh.reopen(corpus.conversation(pair)._key, Diagnostics("claude_code"))
    assert read == [2, 1]  # the first reads its whole load, which keeps what any file of it needs
    s2 = corpus.conversation("s-2").entries
    assert [e.usage.output_tokens if e.usage else None for e in s2] == [None, None, None, None, 8]
    assert s2[1].usage is not None and s2[1].usage.counted_elsewhere  # counted in s-1, the earlier session
    read.clear()
    with open(root / "projects" / "-p" / "s-1.jsonl", "a") as fh:  # the file changed since the load
        fh.write(json.dumps(user("u3", "and then", ts="2026-07-01T10:00:03.000Z")) + "\n")
    changed = load(root)
    changed_handle = changed.conversation("s-1")
    with open(root / "projects" / "-p" / "s-1.jsonl", "a") as fh:
        fh.write(json.dumps(user("u4", "again", ts="2026-07-01T10:00:04.000Z")) + "\n")
    assert len(changed_handle.entries) == 5 and read == [2, 2]  # read with its whole load again, as it is now


def test_a_home_whose_sessions_hold_no_line_loads_each_as_an_empty_conversation(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    for name in ("a.jsonl", "b.jsonl"):
        write(root / "projects" / "-p" / name, [], tail="")
    corpus = ma.load(root, source="claude_code")
    rows = corpus.conversations[["conversation_id", "title", "messages"]].to_dict("records")
    assert rows == [{"conversation_id": "a", "title": None, "messages": 0},
                    {"conversation_id": "b", "title": None, "messages": 0}]
    assert corpus.messages.empty and corpus.usage.empty and corpus.diagnostics.empty


def test_titles_are_the_same_with_texts_left_out(tmp_path: Path) -> None:
    root = home(tmp_path, {"c.jsonl": [user("m", "<command-name>/x</command-name>", session="c", isMeta=True),
                                       user("w", [{"type": "text", "text": "\n  real prompt\nmore"}], session="c")]})
    assert load(root, text=False).conversations.title.tolist() == load(root).conversations.title.tolist() == [
        "real prompt"]


def test_a_response_line_with_no_uuid_is_counted(tmp_path: Path) -> None:
    line = assistant("x", "msg_1", "req_1", counters(i=7, o=3))
    del line["uuid"]
    corpus = load(home(tmp_path, {"s-1.jsonl": [user("u", "hi"), line]}))
    assert corpus.usage[["input_tokens", "output_tokens"]].values.tolist() == [[7, 3]]


def test_first_prompts_with_no_parent_are_no_rewind_even_beside_a_line_with_no_uuid(tmp_path: Path) -> None:
    """Two prompts at different times with ``parentUuid: null`` (two roots) and a ``summary`` line
    (no uuid): nobody's children, so no branch is abandoned."""
    corpus = load(home(tmp_path, {"s-1.jsonl": [
        {"type": "summary", "summary": "S", "leafUuid": "z"},
        user("u1", "one", ts="2026-07-01T10:00:00.000Z"), user("u2", "two", ts="2026-07-01T11:00:00.000Z")]}))
    assert corpus.messages.status.isna().all()


_ODD = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.just([]), st.just({}))
_KINDS = ("text", "thinking", "redacted_thinking", "tool_use", "server_tool_use", "tool_result", "image",
          "document", "web_search_tool_result", "future")


def _block() -> st.SearchStrategy[Any]:
    """A content block: usually well formed, sometimes with a field of the wrong kind or none at all."""
    inner = st.lists(st.one_of(st.fixed_dictionaries({"type": st.sampled_from(["text", "image"])},
                                                     optional={"text": _ODD}), _ODD), max_size=2)
    return st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(_KINDS)}, optional={
            "text": st.one_of(st.text(max_size=6), _ODD), "thinking": st.one_of(st.text(max_size=6), _ODD),
            "data": _ODD, "id": st.one_of(st.sampled_from(["t1", "t2"]), _ODD), "name": _ODD,
            "input": st.one_of(st.just({"a": 1}), _ODD), "tool_use_id": st.one_of(st.sampled_from(["t1", "t2"]), _ODD),
            "content": st.one_of(st.text(max_size=6), inner, _ODD), "is_error": _ODD}),
        _ODD)


@settings(max_examples=60, deadline=None)
@given(contents=st.lists(st.tuples(st.booleans(), st.one_of(st.lists(_block(), max_size=3), _ODD)), min_size=1,
                         max_size=5))
def test_a_handle_and_the_tables_read_any_blocks_as_the_same(tmp_path_factory: pytest.TempPathFactory,
                                                              contents: list[tuple[bool, Any]]) -> None:
    """What a conversation handle shows is what the tables count, for well-formed and odd blocks alike:
    both read them by the Messages API's rules (a thinking block's text is ``thinking``, a tool result
    that writes no ``is_error`` is no error, a provider-run tool's result is a ``server_tool_result``)."""
    lines = [assistant(f"a{n}", f"m{n}", f"r{n}", counters(), content) if mine else user(f"u{n}", content)
             for n, (mine, content) in enumerate(contents)]
    corpus = load(home(tmp_path_factory.mktemp("home"), {"s-1.jsonl": lines}))
    assert_handle_matches_tables(corpus, "s-1", "claude_code")


_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def _expected_responses(lines: list[dict[str, Any]]) -> list[tuple[str | None, dict[str, int | None]]]:
    """Rules 2 to 4 of the Claude Code count (``sources.claude_code.usage``), one line at a time, in plain Python."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for k, line in enumerate(lines):
        msg, req = line["message"].get("id"), line.get("requestId")
        groups.setdefault(("alone", k) if msg is None else (msg, req is None, req), []).append(k)
    responses = []
    for key, members in groups.items():
        usages = [lines[k]["message"]["usage"] for k in members]
        top = {f: max((u[f] for u in usages if f in u), default=None) for f in _FIELDS}
        side = all(lines[k].get("isSidechain", False) for k in members)
        responses.append({"key": key, "msg": key[0] if key[0] != "alone" else None, "first": members[0],
                          "side": side, "top": top, "total": sum(v or 0 for v in top.values())})
    kept = []
    for r in responses:
        same = [o for o in responses if r["msg"] is not None and o["msg"] == r["msg"]]
        if not r["side"] or len(same) <= 1:
            kept.append(r)
        elif all(o["side"] for o in same):  # a sidechain-only message id: its largest response, the first on a tie
            best = min(same, key=lambda o: (-o["total"], o["first"]))
            if best is r:
                kept.append(r)
    return [(r["msg"], r["top"]) for r in sorted(kept, key=lambda r: r["first"])]


_LINE = st.fixed_dictionaries({
    "msg": st.sampled_from([None, "m0", "m1", "m2"]), "req": st.sampled_from([None, "r0", "r1"]),
    "side": st.booleans(), "usage": st.dictionaries(st.sampled_from(_FIELDS), st.integers(0, 10**6), max_size=4)})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=st.lists(_LINE, min_size=1, max_size=14))
def test_responses_are_counted_by_the_rules_of_the_count(tmp_path_factory: pytest.TempPathFactory,
                                                         drawn: list[dict[str, Any]]) -> None:
    """Lines of one session sharing message ids and request ids (or not), sidechain or not, counters given or
    not: one usage row per response, each counter its lines' largest, a sidechain replay counted as rule 3 says."""
    lines = [assistant(f"a{k}", d["msg"], d["req"], d["usage"], ts=f"2026-07-01T10:00:{k:02d}.000Z",
                       **({"isSidechain": True} if d["side"] else {})) for k, d in enumerate(drawn)]
    corpus = load(home(tmp_path_factory.mktemp("count"), {"s-1.jsonl": lines}))
    u = corpus.usage

    def value(x: Any) -> Any:
        return None if pd.isna(x) else x

    # Anthropic's input_tokens is the uncached rest: the usage table's input_tokens as reported
    got = [(value(m), {"output_tokens": value(o), "cache_read_input_tokens": value(r), "input_tokens": value(i)})
           for m, o, r, i in zip(u.message_id, u.output_tokens, u.cache_read_tokens, u.input_tokens, strict=True)]
    want = [(msg, {f: top[f] for f in ("output_tokens", "cache_read_input_tokens", "input_tokens")})
            for msg, top in _expected_responses(lines)]
    assert got == want


def test_what_a_project_folder_holds_besides_session_files_is_named(tmp_path: Path) -> None:
    """A FIFO, a link that leads nowhere and a link to a session file read once are rows; the session loads."""
    root = home(tmp_path, {"s-1.jsonl": [user("u-1", "hi"), assistant("a-1", "msg_1", "req_1", counters())]})
    project = root / "projects" / "-p"
    os.mkfifo(project / "fifo.jsonl")
    (project / "dangling.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    (project / "linked.jsonl").symlink_to(project / "s-1.jsonl")
    corpus = load(root)
    assert corpus.conversations["conversation_id"].tolist() == ["linked"]  # reached first, by name
    assert sorted(corpus.diagnostics[["path", "kind"]].values.tolist()) == [
        [str(project / "dangling.jsonl"), "broken_link"], [str(project / "fifo.jsonl"), "not_a_regular_file"],
        [str(project / "s-1.jsonl"), "reached_twice"]]
