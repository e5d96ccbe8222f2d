"""Mirrors of litany's assembler and pairing tests (src/prompt/dispatch/{assembler,pairing}/tests.rs)."""

from __future__ import annotations

from litany_entries import model, result, tool, use, user

from murmur_analysis import assemble, drop_orphans, pair_tools, transcript
from murmur_analysis.core.model import Message, Text, ToolResult, ToolUse


def test_absent_or_empty_transcript_assembles_no_messages() -> None:
    assert assemble([]).messages == []
    assert assemble([]).dropped_orphans == []


def test_user_message_composes_as_a_user_text_block_verbatim() -> None:
    [msg] = assemble([user(1, "list files")]).messages
    assert msg.role == "user"
    assert msg.blocks == (Text("list files"),)
    assert msg.content == [{"type": "text", "text": "list files"}]


def test_replay_from_a_recorded_tree_yields_the_alternating_wire_history() -> None:
    entries = [
        user(1, "go"),
        model(2, ToolUse("toolu_1", "bash", {"cmd": "ls"})),
        tool(3, ToolResult("toolu_1", (Text("out"),), False)),
    ]
    msgs = assemble(entries).messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert isinstance(msgs[1].blocks[0], ToolUse)
    assert isinstance(msgs[2].blocks[0], ToolResult)


def test_consecutive_same_side_entries_group_into_one_message() -> None:
    entries = [user(1, "do two"), model(2, use("a"), use("b", "read_file")), tool(3, result("a")), tool(4, result("b"))]
    msgs = assemble(entries).messages
    assert len(msgs) == 3
    assert msgs[2].role == "tool"
    assert [b.tool_use_id for b in msgs[2].blocks if isinstance(b, ToolResult)] == ["a", "b"]


def test_entries_sort_by_numeric_counter_not_by_the_order_given() -> None:
    # Past 999 the zero pad stops making lexical and numeric order agree.
    entries = [model(1000, Text("second")), user(999, "first")]
    msgs = assemble(entries).messages
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert msgs[0].blocks == (Text("first"),)


def test_an_orphan_tool_result_is_dropped_from_the_wire_and_named() -> None:
    assembled = assemble([user(1, "do two"), tool(2, result("call_gone")), user(3, "still here?")])
    assert assembled.dropped_orphans == ["call_gone"]
    assert len(assembled.messages) == 1
    assert assembled.messages[0].role == "user"
    assert assembled.messages[0].blocks == (Text("do two"), Text("still here?"))


def test_transcript_is_unfiltered() -> None:
    msgs = transcript([user(1, "do two"), tool(2, result("call_gone")), user(3, "still here?")])
    assert [m.role for m in msgs] == ["user", "tool", "user"]


def test_an_orphan_result_is_dropped_and_named_while_the_paired_one_stays() -> None:
    messages = [
        Message("user", (Text("go"),)),
        Message("assistant", (use("c1"),)),
        Message("tool", (result("c1"), result("gone"))),
    ]
    kept, dropped = drop_orphans(messages)
    assert dropped == ["gone"]
    assert len(kept) == 3
    assert kept[2].blocks == (result("c1"),)


def test_a_message_left_empty_by_the_drop_goes_with_its_last_block() -> None:
    kept, dropped = drop_orphans([Message("user", (Text("go"),)), Message("tool", (result("call_x"),))])
    assert dropped == ["call_x"]
    assert [m.role for m in kept] == ["user"]


def test_a_history_with_no_orphan_is_untouched() -> None:
    messages = [Message("assistant", (use("c1"),)), Message("tool", (result("c1"),))]
    kept, dropped = drop_orphans(messages)
    assert dropped == []
    assert kept == messages


def test_a_messages_own_calls_count_before_its_results() -> None:
    # A result in the same message as its call is not an orphan (drop_orphans adds calls first).
    kept, dropped = drop_orphans([Message("assistant", (result("x"), use("x")))])
    assert dropped == []
    assert kept[0].blocks == (result("x"), use("x"))


def test_pairing_names_every_call_result_and_orphan_with_positions() -> None:
    entries = [
        user(1, "go"),
        model(2, use("a"), use("b"), use("c")),
        tool(3, result("a")),
        tool(4, result("b", "boom", is_error=True)),
        tool(5, result("zz")),
        user(6, "next"),
        tool(7, result("a")),
    ]
    rows = pair_tools(entries)
    assert [(r.call_id, r.status, r.called_seq, r.result_seq) for r in rows] == [
        ("a", "ok", 2, 3),
        ("b", "error", 2, 4),
        ("c", "unanswered", 2, None),
        ("zz", "orphan_result", None, 5),
        ("a", "duplicate_result", None, 7),
    ]
    orphans = [r.call_id for r in rows if r.status == "orphan_result" and r.kind == "client"]
    assert orphans == assemble(entries).dropped_orphans == ["zz"]
