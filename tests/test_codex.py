"""Codex CLI rollouts: line shapes from codex-rs (protocol.rs, models.rs, the recorder) through the public API."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from handle_agreement import assert_handle_matches_tables
from hypothesis import given, settings
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis.core.blocks import block_kind, text_chars
from murmur_analysis.core.diagnostics import Diagnostics
from murmur_analysis.sources import detect
from murmur_analysis.sources.base import ReadContext
from murmur_analysis.sources.codex import CodexSource
from murmur_analysis.sources.codex.usage import deltas
from murmur_analysis.sources.lines import scan_lines

T0 = "2026-01-02T03:04:05.000Z"
PARENT = "11111111-1111-4111-8111-111111111111"
CHILD = "22222222-2222-4222-8222-222222222222"
GRANDCHILD = "33333333-3333-4333-8333-333333333333"
NOW = {"codex": {"settle_seconds": 0.0}}
Line = dict[str, Any]


def env(kind: str, payload: Line, ts: str = T0) -> Line:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta(cid: str, ts: str = T0, **extra: Any) -> Line:
    return env("session_meta", {"id": cid, "timestamp": ts, "cwd": "/w", "originator": "codex_cli_rs",
                                "cli_version": "0.144.1", "source": "cli", "model_provider": "openai", **extra}, ts)


def turn(model: str = "gpt-5.2-codex", ts: str = T0, **extra: Any) -> Line:
    return env("turn_context", {"cwd": "/w", "approval_policy": "on-request", "model": model, "summary": "auto",
                                **extra}, ts)


def said(role: str, text: str, ts: str = T0) -> Line:
    kind = "output_text" if role == "assistant" else "input_text"
    return env("response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}, ts)


def call(cid: str, args: str = '{"command":"ls"}', ts: str = T0) -> Line:
    return env("response_item", {"type": "function_call", "name": "shell_command", "arguments": args,
                                 "call_id": cid}, ts)


def output(cid: str, out: Any, ts: str = T0) -> Line:
    return env("response_item", {"type": "function_call_output", "call_id": cid, "output": out}, ts)


def counters(i: int, c: int, o: int, r: int) -> Line:
    return {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": r,
            "total_tokens": i + o}


def tokens(total: Line | None, last: Line | None = None, ts: str = T0, window: int = 272000) -> Line:
    info: Line = {"model_context_window": window}
    if total is not None:
        info["total_token_usage"] = total
    if last is not None:
        info["last_token_usage"] = last
    return env("event_msg", {"type": "token_count", "info": info, "rate_limits": None}, ts)


def plus(a: Line, b: Line) -> Line:
    return {k: a[k] + b[k] for k in a}


def write(path: Path, lines: list[Line], tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in lines) + tail)
    return path


def rollout(home: Path, cid: str, lines: list[Line], folder: str = "sessions/2026/01/02") -> Path:
    return write(home / folder / f"rollout-2026-01-02T03-04-05-{cid}.jsonl", lines)


# B.1.6: a complete small rollout, as Codex writes it
EXAMPLE = [
    meta(PARENT, git={"branch": "main"}),
    turn(ts="2026-01-02T03:04:05.100Z", sandbox_policy={"type": "workspace-write"}),
    said("user", "list files", "2026-01-02T03:04:05.200Z"),
    env("event_msg", {"type": "user_message", "message": "list files", "images": None, "local_images": [],
                      "text_elements": []}, "2026-01-02T03:04:05.200Z"),
    call("call_1", ts="2026-01-02T03:04:07.000Z"),
    tokens(counters(1200, 1000, 40, 16), counters(1200, 1000, 40, 16), "2026-01-02T03:04:07.500Z"),
    output("call_1", "Exit code: 0\nWall time: 0.1 seconds\nOutput:\na.txt\nb.txt", "2026-01-02T03:04:08.000Z"),
]


def test_the_small_rollout_of_the_formats_page(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, EXAMPLE)
    corpus = ma.load(tmp_path)  # a Codex home: detected
    m = corpus.messages
    assert m["role"].tolist() == ["user", "assistant", "tool"]  # the user_message mirror is not a message
    assert m["block_kinds"].tolist() == [["text"], ["tool_use"], ["tool_result"]]
    assert m["model"].tolist()[1] == "gpt-5.2-codex" and pd.isna(m["model"].iloc[0])
    assert m["text"].tolist()[0] == "list files"
    calls = corpus.tool_calls
    assert calls[["call_id", "tool_name", "status", "is_error", "exit_code", "input"]].values.tolist() == [
        ["call_1", "shell_command", "ok", False, 0, '{"command":"ls"}']]
    assert calls["result_chars"].tolist() == [55]
    u = corpus.usage
    assert u[["input_total_tokens", "cache_read_tokens", "input_tokens", "output_tokens", "reasoning_tokens",
              "context_window"]].values.tolist() == [[1200, 1000, 200, 24, 16, 272000]]
    assert u[["model", "provider", "accounting", "seq"]].values.tolist() == [["gpt-5.2-codex", "openai", "openai", 1]]
    assert u["created_at"].tolist() == [pd.Timestamp("2026-01-02T03:04:07.500Z")]
    conv = corpus.conversations
    assert conv[["conversation_id", "title", "messages", "tool_calls", "tokens"]].values.tolist() == [
        [PARENT, "list files", 3, 1, 1240]]
    assert corpus.diagnostics.empty


def _usage_sums(corpus: ma.Corpus) -> list[int]:
    u = corpus.usage
    return [len(u), *(int(u[c].sum()) for c in ("input_total_tokens", "cache_read_tokens", "output_tokens",
                                                  "reasoning_tokens"))]


def test_a_re_emitted_total_and_an_info_null_event_count_nothing(tmp_path: Path) -> None:
    a, b = counters(1000, 800, 50, 10), counters(300, 200, 20, 0)
    rollout(tmp_path, PARENT, [
        meta(PARENT), turn(), said("user", "go"),
        tokens(a, a),
        tokens(a, a),  # update_rate_limits: the same totals again (ccusage#1288)
        env("event_msg", {"type": "token_count", "info": None, "rate_limits": {"primary": {"used_percent": 3}}}),
        tokens(plus(a, b), b),
        tokens(plus(a, b), b),
    ])
    corpus = ma.load(tmp_path, source="codex")
    # two calls: input 1300 (1000 cached), output 70 of which 10 reasoning -> output 60 without it
    assert _usage_sums(corpus) == [2, 1300, 1000, 60, 10]


def test_ccusage_aliases_and_a_missing_last_usage(tmp_path: Path) -> None:
    def alias(i: int, c: int, o: int) -> Line:
        return {"prompt_tokens": i, "cached_tokens": c, "completion_tokens": o, "total_tokens": i + o}

    rollout(tmp_path, PARENT, [meta(PARENT), turn(), tokens(alias(100, 40, 10)), tokens(alias(250, 90, 30))])
    u = ma.load(tmp_path, source="codex").usage
    # no last_token_usage: total minus the previous total, per field
    assert u[["input_total_tokens", "cache_read_tokens", "output_tokens"]].values.tolist() == [[100, 40, 10],
                                                                                               [150, 50, 20]]
    assert u["reasoning_tokens"].isna().all()  # not reported: null, never 0


@pytest.mark.parametrize("with_last", [True, False])
def test_a_context_window_reset_is_counted_neither_negative_nor_twice(tmp_path: Path, with_last: bool) -> None:
    a, b = counters(100, 0, 10, 0), counters(50, 20, 5, 2)
    reset = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "reasoning_output_tokens": 0,
             "total_tokens": 272000}
    reset_last = dict(reset, total_tokens=272000 - 110)
    rollout(tmp_path, PARENT, [
        meta(PARENT), turn(),
        tokens(a, a if with_last else None),
        tokens(reset, reset_last if with_last else None),  # fill_to_context_window
        tokens(plus(reset, b), b if with_last else None),  # counted from the reset on
    ])
    assert _usage_sums(ma.load(tmp_path, source="codex")) == [2, 150, 20, 13, 2]


def _fork_files(tmp_path: Path, *, with_parent: bool, turn_ids: bool, last: bool = True) -> tuple[Line, Line]:
    """A parent with one call, and a fork that copies it (re-stamped) before doing one of its own."""
    one, two = counters(1000, 500, 100, 20), counters(400, 300, 40, 0)
    # UUIDv7 turn ids minted 2025-01-28 (the parent's turn) and 2026-02-02 (the fork's own)
    old, new = "0194aaaa-0000-7000-8000-000000000001", "019c2000-0000-7000-8000-000000000002"
    fork_at = "2026-02-01T00:00:00.000Z"
    parent = [meta(PARENT), turn(turn_id=old) if turn_ids else turn(), said("user", "parent asks"),
              said("assistant", "parent answers"), tokens(one, one), said("user", "later, after the fork",
                                                                           "2026-03-01T00:00:00.000Z")]
    copied = [meta(PARENT, ts=T0)]
    if turn_ids or with_parent:  # a whole copy of the history (a subagent's copies only the parent's meta)
        copied += [turn(turn_id=old, ts=fork_at) if turn_ids else turn(ts=fork_at),
                   said("user", "parent asks", fork_at), said("assistant", "parent answers", fork_at),
                   tokens(one, one, fork_at)]
    own_turn = turn(turn_id=new, ts="2026-02-01T00:00:01.000Z") if turn_ids else turn(ts="2026-02-01T00:00:01.000Z")
    child = [meta(CHILD, ts=fork_at, forked_from_id=PARENT), *copied, own_turn,
             said("user", "child asks", "2026-02-01T00:00:02.000Z"),
             said("assistant", "child answers", "2026-02-01T00:00:03.000Z"),
             tokens(plus(one, two), two if last else None, "2026-02-01T00:00:03.500Z")]
    if with_parent:
        rollout(tmp_path, PARENT, parent)
    rollout(tmp_path, CHILD, child)
    return one, two


@pytest.mark.parametrize("last", [True, False])
def test_a_forks_copied_prefix_is_its_parents_when_the_parent_is_loaded(tmp_path: Path, last: bool) -> None:
    one, two = _fork_files(tmp_path, with_parent=True, turn_ids=False, last=last)
    corpus = ma.load(tmp_path, source="codex")
    conv = corpus.conversations.set_index("conversation_id")
    assert conv.loc[CHILD, "parent_conversation_id"] == PARENT and pd.isna(conv.loc[PARENT, "parent_conversation_id"])
    assert conv.loc[CHILD, "messages"] == 2 and conv.loc[PARENT, "messages"] == 3
    assert conv.loc[CHILD, "title"] == "child asks"
    u = corpus.usage.set_index("conversation_id")
    assert u.loc[CHILD, "input_total_tokens"] == two["input_tokens"]  # from the stripped total when no last
    assert u.loc[PARENT, "input_total_tokens"] == one["input_tokens"]
    assert int(corpus.usage["input_total_tokens"].sum()) == 1400  # not 2400: the copy is counted once
    assert corpus.diagnostics.empty


@pytest.mark.parametrize(("turn_ids", "rule", "cut"), [(True, "turn_id", 6), (False, "turn", 2)])
def test_a_forks_copied_prefix_without_its_parent_ends_at_its_own_first_turn(
    tmp_path: Path, turn_ids: bool, rule: str, cut: int
) -> None:
    # with turn ids: a whole copied history, cut at the first turn minted after the child was;
    # without: only the parent's meta copied, cut at the first turn after it
    _one, two = _fork_files(tmp_path, with_parent=False, turn_ids=turn_ids)
    corpus = ma.load(tmp_path, source="codex", options=NOW)
    assert corpus.messages["text"].tolist() == ["child asks", "child answers"]
    assert corpus.usage["input_total_tokens"].tolist() == [two["input_tokens"]]
    d = corpus.diagnostics
    assert d["kind"].tolist() == ["fork_parent_missing"] and f"the {rule} rule ({cut} rows" in d["detail"].iloc[0]


def test_a_spawned_thread_names_its_parent_and_the_call(tmp_path: Path) -> None:
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1, "agent_role": "worker"}}}
    rollout(tmp_path, CHILD, [meta(CHILD, source=spawn, spawn_call_id="call_spawn"), turn(), said("user", "sub")])
    rollout(tmp_path, PARENT, [meta(PARENT), turn(), said("user", "main"), call("call_spawn")])
    conv = ma.load(tmp_path, source="codex").conversations.set_index("conversation_id")
    assert conv.loc[CHILD, ["parent_conversation_id", "parent_call_id"]].tolist() == [PARENT, "call_spawn"]


def test_an_archived_copy_of_an_active_rollout_is_read_once(tmp_path: Path) -> None:
    active = rollout(tmp_path, PARENT, EXAMPLE)
    rollout(tmp_path, PARENT, EXAMPLE, folder="archived_sessions")
    rollout(tmp_path, CHILD, [meta(CHILD), turn(), said("user", "archived only"),
                              tokens(counters(10, 0, 1, 0), counters(10, 0, 1, 0))], folder="archived_sessions")
    corpus = ma.load(tmp_path, source="codex")
    conv = corpus.conversations.set_index("conversation_id")
    assert sorted(conv.index) == [PARENT, CHILD] and conv.loc[PARENT, "path"] == str(active)
    assert _usage_sums(corpus) == [2, 1210, 1000, 25, 16]


def test_compressed_rollouts_are_read_unless_the_plain_one_is_there(tmp_path: Path) -> None:
    import zstandard

    plain = rollout(tmp_path, PARENT, EXAMPLE)
    plain.with_name(plain.name + ".zst").write_bytes(b"\x28\xb5\x2f\xfd")  # a twin: never opened
    alone = tmp_path / "sessions/2026/01/03" / f"rollout-2026-01-03T00-00-00-{CHILD}.jsonl.zst"
    alone.parent.mkdir(parents=True)
    child = [{**line, "payload": {**line["payload"], "id": CHILD}} if line["type"] == "session_meta" else line
             for line in EXAMPLE]
    alone.write_bytes(zstandard.ZstdCompressor().compress(b"".join(json.dumps(x).encode() + b"\n" for x in child)))
    broken = alone.with_name(f"rollout-2026-01-03T00-00-01-{GRANDCHILD}.jsonl.zst")
    broken.write_bytes(b"\x28\xb5\x2f\xfd not a frame")
    corpus = ma.load(tmp_path, source="codex")
    conv = corpus.conversations.set_index("conversation_id")["messages"].to_dict()
    assert conv == {PARENT: 3, CHILD: 3, GRANDCHILD: 0}  # the broken file: found, nothing read, reported
    by_id = corpus.usage.groupby("conversation_id")["input_total_tokens"].sum().to_dict()
    assert by_id[CHILD] == by_id[PARENT] == 1200
    assert corpus.diagnostics[["path", "kind"]].values.tolist() == [[str(broken), "unreadable"]]
    assert "zstd" in corpus.diagnostics["detail"].iloc[0]
    # a handle reads the compressed rollout's lines again, decompressed, as the load did
    assert [(e.side, e.blocks) for e in corpus.conversation(CHILD).entries] == \
        [(e.side, e.blocks) for e in corpus.conversation(PARENT).entries]
    assert_handle_matches_tables(ma.load(alone, source="codex"), CHILD, "codex")


def test_a_handle_reads_each_item_by_the_rules_the_tables_read_it_by(tmp_path: Path) -> None:
    from murmur_analysis.core.model import Image, RedactedThinking, Text, ToolResult, ToolUse, Unknown

    items = [
        {"type": "function_call", "call_id": "c1", "name": "sh", "arguments": '{"command": ["ls"]}'},
        {"type": "function_call", "call_id": "c2", "name": "sh", "arguments": {"command": "pwd"}},  # no JSON text
        {"type": "function_call", "call_id": "c3", "name": "sh", "arguments": "{not json"},
        {"type": "function_call_output", "call_id": "c1",
         "output": [{"type": "input_text", "text": "Exit code: 2"}, {"type": "input_text"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "data:x"},
                                                        {"type": "input_text", "text": 5}, 7]},
        {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
        {"type": "web_search_call", "n": 18446744073709551616},  # serde_json reads a u64 overflow as a double
    ]
    rollout(tmp_path, PARENT, [meta(PARENT), turn(), *(env("response_item", i) for i in items),
                               env("compacted", {"message": "summary so far"}), env("compacted", {"message": 3})])
    corpus = ma.load(tmp_path, source="codex", options=NOW)
    blocks = [e.blocks for e in corpus.conversation(PARENT).entries]
    assert blocks[:3] == [(ToolUse("c1", "sh", {"command": ["ls"]}),), (ToolUse("c2", "sh", {"command": "pwd"}),),
                          (ToolUse("c3", "sh", "{not json"),)]
    assert blocks[3] == (ToolResult("c1", (Text("Exit code: 2"), Text("")), True),)
    assert blocks[4] == (Image("data:x"), Unknown({"type": "input_text", "text": 5}), Unknown(7))
    assert blocks[5:] == [(RedactedThinking("gAAA"),), (Unknown({"type": "web_search_call", "n": 2.0 ** 64}),),
                          (Text("summary so far"),), ()]
    calls = corpus.tool_calls.set_index("call_id")
    assert calls.loc["c2", "input"] == '{"command":"pwd"}' and calls.loc["c1", "input"] == '{"command": ["ls"]}'
    assert calls.loc["c1", "result_text"] == "Exit code: 2\n" and bool(calls.loc["c1", "is_error"])
    assert_handle_matches_tables(corpus, PARENT, "codex")


def test_a_generation_one_legacy_rollout(tmp_path: Path) -> None:
    lines: list[Line] = [
        {"id": PARENT, "timestamp": "2025-05-01T10:00:00.000Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
        {"record_type": "state"},
        {"type": "function_call", "name": "shell", "arguments": '{"command":["false"]}', "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "Exit code: 1\nOutput:\n"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "it failed"}]},
        {"record_type": "state", "previous_response_id": "resp_1"},
    ]
    write(tmp_path / "sessions" / f"rollout-2025-05-01-{PARENT}.jsonl", lines)
    corpus = ma.load(tmp_path)
    m = corpus.messages
    assert m["role"].tolist() == ["user", "assistant", "tool", "assistant"] and m["created_at"].isna().all()
    assert corpus.tool_calls[["status", "is_error", "exit_code"]].values.tolist() == [["error", True, 1]]
    assert corpus.usage.empty and corpus.diagnostics.empty
    assert corpus.conversations[["conversation_id", "title"]].values.tolist() == [[PARENT, "fix it"]]


OUTCOMES: list[tuple[Any, bool | None, int | None]] = [
    ("Exit code: 0\nWall time: 1.2 seconds\nOutput:\nok", False, 0),
    ("Exit code: 127\nWall time: 0 seconds\nTotal output lines: 1\nOutput:\nnot found", True, 127),
    (json.dumps({"output": "done", "metadata": {"exit_code": 0, "duration_seconds": 0.5}}), False, 0),
    (json.dumps({"output": "boom", "metadata": {"exit_code": 3, "duration_seconds": 0.5}}), True, 3),
    ("exec command rejected by user", True, None),
    ("Success. Updated the following files:\nM a.py", None, None),  # says nothing: null, never assumed ok
    ([{"type": "input_text", "text": "Exit code: 4\nOutput:\n"}], True, 4),
    ({"content": "denied", "success": False}, True, None),
    ({"content": "fine", "success": True}, False, None),
]


def test_a_tool_error_is_inferred_only_from_the_output(tmp_path: Path) -> None:
    lines = [meta(PARENT), turn(), said("user", "run")]
    for i, (out, _, _) in enumerate(OUTCOMES):
        lines += [call(f"c{i}"), output(f"c{i}", out)]
    rollout(tmp_path, PARENT, lines)
    calls = ma.load(tmp_path, source="codex").tool_calls
    got = [(None if pd.isna(e) else bool(e), None if pd.isna(x) else int(x))
           for e, x in zip(calls["is_error"], calls["exit_code"], strict=True)]
    assert got == [(e, x) for _, e, x in OUTCOMES]
    assert calls["status"].tolist() == [{True: "error", False: "ok", None: "unknown"}[e] for _, e, _ in OUTCOMES]


def test_custom_tools_shell_calls_web_search_reasoning_and_developer_messages(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, [
        meta(PARENT), turn(),
        env("response_item", {"type": "message", "role": "developer",
                              "content": [{"type": "input_text", "text": "<permissions instructions>x"}]}),
        said("user", "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
        env("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look at this\nplease"}, {"type": "input_image", "image_url": "data:"}]}),
        env("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "thinking"}],
                              "encrypted_content": "gAAA"}),
        env("response_item", {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch",
                              "input": "*** Begin Patch"}),
        env("response_item", {"type": "custom_tool_call_output", "call_id": "p1", "output": "Exit code: 0\n"}),
        env("response_item", {"type": "web_search_call", "status": "completed",
                              "action": {"type": "search", "query": "codex"}}),
        env("response_item", {"type": "local_shell_call", "call_id": "s1", "status": "completed",
                              "action": {"type": "exec", "command": ["ls", "-a"]}}),
        call("orphan_call"),
        output("nobody", "Exit code: 0\n"),
    ])
    corpus = ma.load(tmp_path, source="codex")
    m = corpus.messages
    assert m["role"].tolist() == ["system", "user", "user", "assistant", "assistant", "tool", "assistant",
                                  "assistant", "assistant", "tool"]
    assert m["block_kinds"].tolist()[2:5] == [["text", "image"], ["thinking"], ["tool_use"]]
    assert m["block_kinds"].tolist()[6:8] == [["web_search_call"], ["tool_use"]]
    assert m["reasoning_text"].tolist()[3] == "thinking"
    assert corpus.conversations["title"].tolist() == ["look at this"]  # injected context skipped
    calls = corpus.tool_calls.set_index("call_id")
    assert calls.loc["p1", ["tool_name", "status", "input"]].tolist() == ["apply_patch", "ok", '"*** Begin Patch"']
    assert calls.loc["s1", ["tool_name", "status"]].tolist() == ["local_shell", "unanswered"]
    assert calls.loc["orphan_call", "status"] == "unanswered"
    assert calls.loc["nobody", "status"] == "orphan_result"
    assert corpus.orphans["tool_use_id"].tolist() == ["nobody"]


def test_compaction_marks_one_growth_row(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, [
        meta(PARENT), turn(), said("user", "a"), said("assistant", "b"),
        env("compacted", {"message": "summary of a and b"}, "2026-01-02T03:05:00.000Z"),
        env("event_msg", {"type": "context_compacted"}, "2026-01-02T03:05:00.001Z"),
        said("user", "c"),
    ])
    g = ma.load(tmp_path, source="codex").growth
    rows = g[g["event"] == "compaction"]
    assert rows[["position", "chars"]].values.tolist() == [[2, 20]]
    assert rows["at"].tolist() == [pd.Timestamp("2026-01-02T03:05:00Z")]


def test_a_call_with_no_turn_context_is_priced_as_gpt5_and_said_so(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, [meta(PARENT), said("user", "hi"), tokens(counters(10, 0, 2, 0), counters(10, 0, 2, 0))])
    corpus = ma.load(tmp_path, source="codex")
    assert corpus.usage["model"].tolist() == ["gpt-5"]
    assert corpus.diagnostics["kind"].tolist() == ["assumed_model"]


def test_unreadable_lines_are_named_and_a_torn_last_line_waits_until_settled(tmp_path: Path) -> None:
    path = rollout(tmp_path, PARENT, [meta(PARENT), turn(), said("user", "a")])
    with path.open("ab") as fh:
        fh.write(b"{not json\n" + json.dumps({"hello": 1}).encode() + b"\n" + b'{"timestamp":"2026-01-02T')
    waiting = ma.load(tmp_path, source="codex", options={"codex": {"settle_seconds": 3600.0}})
    assert waiting.diagnostics[["line", "kind"]].values.tolist() == [[4, "bad_json"], [5, "unknown_line"]]
    settled = ma.load(tmp_path, source="codex", options=NOW)
    assert sorted(settled.diagnostics[["line", "kind"]].values.tolist()) == [[4, "bad_json"], [5, "unknown_line"],
                                                                             [6, "partial_line"]]
    assert settled.conversations["messages"].tolist() == [1]


def test_unknown_lines_of_many_rollouts_are_each_named_in_their_own(tmp_path: Path) -> None:
    """A load looks at every rollout's lines at once; each odd line is still named with its own file and line."""
    ids = [f"{k}{k}{k}{k}{k}{k}{k}{k}-{k}{k}{k}{k}-4{k}{k}{k}-8{k}{k}{k}-{k * 12}" for k in "3456"]
    odd = json.dumps({"hello": 1}).encode() + b"\n"
    paths = []
    for n, cid in enumerate(ids):
        path = rollout(tmp_path, cid, [meta(cid), turn(), said("user", "a")])
        with path.open("ab") as fh:
            fh.write(odd * n)  # none in the first, one in the second, ...
        paths.append(str(path))
    found = ma.load(tmp_path, source="codex", options=NOW).diagnostics
    named = sorted(found[found["kind"] == "unknown_line"][["path", "line"]].values.tolist())
    assert named == sorted([p, 3 + k] for n, p in enumerate(paths) for k in range(1, n + 1))


def test_a_lean_load_leaves_texts_null_and_keeps_the_title(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, EXAMPLE)
    corpus = ma.load(tmp_path, source="codex", text=False)
    assert corpus.messages["text"].isna().all() and corpus.tool_calls["input"].isna().all()
    assert corpus.tool_calls["result_text"].isna().all() and corpus.tool_calls["result_chars"].tolist() == [55]
    assert corpus.conversations["title"].tolist() == ["list files"]


def test_where_codex_lives_and_what_it_claims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = CodexSource()
    path = rollout(tmp_path / "home", PARENT, EXAMPLE)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home"))
    assert CodexSource.default_homes() == [tmp_path / "home"]
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "nowhere"))
    assert CodexSource.default_homes() == []
    assert source.guess_can_open(tmp_path / "home") and source.guess_can_open(tmp_path / "home" / "sessions")
    assert source.guess_can_open(path.parent) and source.guess_can_open(path)
    (tmp_path / "other" / "sessions").mkdir(parents=True)  # a folder named sessions holding no rollout
    assert not source.guess_can_open(tmp_path / "other")
    not_codex = write(tmp_path / "rollout-x.jsonl", [{"type": "user", "uuid": "u1"}])
    assert not source.guess_can_open(not_codex)
    assert detect(path).name == "codex"
    diagnostics = Diagnostics("codex")
    (conv,) = source.open(path, diagnostics)
    assert source.reopen(conv.key, diagnostics).conversation_id == PARENT


# -- the usage rule as a property: re-emitted totals never count, and each call counts its last usage once

calls_st = st.lists(st.tuples(*(st.integers(0, 5000) for _ in range(4))), min_size=1, max_size=12)


def _events(lasts: list[tuple[int, int, int, int]], repeats: list[int]) -> list[Line]:
    total = counters(0, 0, 0, 0)
    out: list[Line] = []
    for i, (inp, cached, outp, reasoning) in enumerate(lasts):
        last = counters(inp, min(cached, inp), outp, min(reasoning, outp))
        total = plus(total, last)
        out.append(tokens(total, last))
        out += [tokens(total, last)] * repeats[i % len(repeats)]  # re-emitted, unchanged
        if i % 3 == 0:
            out.append(env("event_msg", {"type": "token_count", "info": None, "rate_limits": None}))
    return out


@settings(max_examples=40, deadline=None)
@given(lasts=calls_st, repeats=st.lists(st.integers(0, 3), min_size=1, max_size=5))
def test_re_emitted_token_counts_never_change_the_totals(
    tmp_path_factory: pytest.TempPathFactory, lasts: list[tuple[int, int, int, int]], repeats: list[int]
) -> None:
    tmp = tmp_path_factory.mktemp("cx")
    path = write(tmp / "rollout.jsonl", [meta(PARENT), turn(), *_events(lasts, repeats)])
    found = deltas(scan_lines("codex", [path])[0].table)
    want = [(i, min(c, i), o, min(r, o)) for i, c, o, r in lasts if (i, min(c, i), o, min(r, o)) != (0, 0, 0, 0)]
    # a call whose counters are all 0 is no call; one equal to the one before it is re-emitted only if
    # its totals did not move, which a non-zero call always moves
    assert [tuple(int(v) for v in col) for col in found.values.T] == want
    assert found.valid.all()


def test_the_property_reads_through_the_public_api_too(tmp_path: Path) -> None:
    lasts = [(100, 50, 10, 5), (0, 0, 0, 0), (7, 0, 3, 0)]
    rollout(tmp_path, PARENT, [meta(PARENT), turn(), *_events(lasts, [2, 0, 1])])
    assert _usage_sums(ma.load(tmp_path, source="codex")) == [2, 107, 50, 8, 5]


def test_no_codex_file_is_read_twice_through_a_linked_folder(tmp_path: Path) -> None:
    rollout(tmp_path / "home", PARENT, EXAMPLE)
    os.symlink(tmp_path / "home" / "sessions", tmp_path / "home" / "sessions" / "loop")
    corpus = ma.load(tmp_path / "home", source="codex")
    assert corpus.conversations["conversation_id"].tolist() == [PARENT]


def test_a_conversation_handle_pages_and_assembles_the_messages_the_tables_hold(tmp_path: Path) -> None:
    rollout(tmp_path, PARENT, [
        *EXAMPLE,
        env("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": "hmm"}]}),
        env("response_item", {"type": "web_search_call", "action": {"type": "search", "query": "q"}}),
        env("response_item", {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "x"}),
        env("response_item", {"type": "custom_tool_call_output", "call_id": "p1", "output": "Exit code: 1\n"}),
        call("unanswered"), output("nobody", "late"),
    ])
    corpus = ma.load(tmp_path, source="codex")
    handle = corpus.conversation(PARENT, source="codex")
    entries = handle.entries
    assert [e.side for e in entries] == corpus.messages["role"].tolist()
    assert [[block_kind(b) for b in e.blocks] for e in entries] == corpus.messages["block_kinds"].tolist()
    assert [text_chars(e.blocks) for e in entries] == corpus.messages["text_chars"].tolist()
    page = handle.read_messages(None, 3)
    assert page.total == len(entries) == 9 and len(page.messages) == 3
    assert [c.status for c in handle.tool_calls()] == corpus.tool_calls["status"].tolist()
    assert handle.assemble().dropped_orphans == corpus.orphans["tool_use_id"].tolist() == ["nobody"]


def _decoded(home: Path, read_ahead: int | None) -> tuple[list[tuple[Any, ...]], list[Any]]:
    diagnostics = Diagnostics("codex")
    convs = list(CodexSource(settle_seconds=0.0).open(home, diagnostics, ReadContext(read_ahead=read_ahead)))
    out: list[tuple[Any, ...]] = []
    for c in convs:
        (cols,) = c.columns or ()
        arrays = [getattr(cols, f).to_pylist() for f in ("position", "side", "model", "created_at", "n_blocks",
                                                         "text_chars", "status", "block_kinds", "text")]
        out.append((c.conversation_id, c.parent_conversation_id, c.summary, dict(c.tool_meta), arrays,
                    vars(cols.events)))
    return out, diagnostics.rows


def test_rollouts_decoded_together_are_decoded_as_each_alone(tmp_path: Path) -> None:
    # a fork and its parent, a rollout with no turn_context, one whose exit code only exec_command_end
    # gives, a compaction, and a file with no session_meta whose usage has no last: one pass over all
    # of them, or one each
    _fork_files(tmp_path, with_parent=True, turn_ids=False, last=False)
    rollout(tmp_path, GRANDCHILD, [meta(GRANDCHILD), said("user", "hi"), call("c9"), output("c9", "done"),
                                   env("event_msg", {"type": "exec_command_end", "call_id": "c9", "exit_code": 3}),
                                   tokens(counters(10, 0, 2, 0), counters(10, 0, 2, 0)),
                                   env("compacted", {"message": "short"}), said("user", "again")])
    rollout(tmp_path, "nameless", [turn(), said("user", "no meta"), said("assistant", "ok"),  # a delta from totals
                                   tokens(counters(5, 1, 1, 0))], "sessions/2026/01/03")
    together, said_together = _decoded(tmp_path, None)
    alone, said_alone = _decoded(tmp_path, 1)
    assert len(together) == 4
    assert together == alone and said_together == said_alone
    assert [d.kind for d in said_together] == ["assumed_model"]


_ODD = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.just([]), st.just({}))
_TYPES = ("input_text", "output_text", "text", "input_image", "summary_text", "reasoning_text", "refusal")


def _part() -> st.SearchStrategy[Any]:
    """A content or summary part: usually well formed, sometimes with a field of the wrong kind."""
    typed = st.fixed_dictionaries({"type": st.sampled_from(_TYPES)},
                                  optional={"text": st.one_of(st.text(max_size=6), _ODD), "image_url": _ODD})
    return st.one_of(typed, _ODD, st.fixed_dictionaries({}, optional={"text": _ODD}))


def _payload() -> st.SearchStrategy[Line]:
    parts = st.lists(_part(), max_size=3)
    call_id = st.one_of(st.sampled_from(["c1", "c2"]), _ODD)
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("message"), "role": st.sampled_from(["user", "assistant", "developer"])},
                              optional={"content": st.one_of(parts, _ODD)}),
        st.fixed_dictionaries({"type": st.just("reasoning")},
                              optional={"summary": st.one_of(parts, _ODD), "content": st.one_of(parts, _ODD),
                                        "encrypted_content": st.one_of(st.just("gAAA"), _ODD)}),
        st.fixed_dictionaries({"type": st.sampled_from(["function_call", "custom_tool_call", "local_shell_call"])},
                              optional={"call_id": call_id, "name": _ODD,
                                        "arguments": st.one_of(st.just('{"a":1}'), st.just("{oops"), _ODD),
                                        "input": _ODD, "action": st.just({"type": "exec", "command": ["ls"]})}),
        st.fixed_dictionaries({"type": st.sampled_from(["function_call_output", "custom_tool_call_output"])},
                              optional={"call_id": call_id, "output": st.one_of(
                                  st.just("Exit code: 1\n"), parts, _ODD,
                                  st.fixed_dictionaries({}, optional={"content": st.one_of(parts, _ODD),
                                                                      "success": _ODD}))}),
        st.fixed_dictionaries({"type": st.sampled_from(["web_search_call", "compaction", "other"])}),
    )


@settings(max_examples=60, deadline=None)
@given(payloads=st.lists(_payload(), min_size=1, max_size=6),
       compacted=st.lists(st.fixed_dictionaries({}, optional={"message": st.one_of(st.text(max_size=5), _ODD)}),
                          max_size=2))
def test_a_handle_and_the_tables_read_any_items_as_the_same_blocks(
        tmp_path_factory: pytest.TempPathFactory, payloads: list[Line], compacted: list[Line]) -> None:
    """What a conversation handle shows is what the tables count, for well-formed and odd items alike:
    a text part whose text is no string, ``"encrypted_content": null``, a call or output without a call id,
    a shell call (its command is its call's input, not the message's text), a compacted item."""
    home = tmp_path_factory.mktemp("home")
    rollout(home, PARENT, [meta(PARENT), turn(), said("user", "hi"), *(env("response_item", p) for p in payloads),
                           *(env("compacted", c) for c in compacted)])
    corpus = ma.load(home, source="codex", options=NOW)
    assert_handle_matches_tables(corpus, PARENT, "codex")
