"""The frame builder and the metrics, on conversations built by hand."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
from litany_entries import model, result, tool, use, user

from murmur_analysis.analysis.metrics import growth_curves, orphan_drops, token_usage, tool_error_rates
from murmur_analysis.core.handoff import Conversation, Summary, ToolMeta, UsageRow
from murmur_analysis.core.model import Entry, Text, Unknown, Usage
from murmur_analysis.tables.frames import FrameBuilder, to_pandas
from murmur_analysis.tables.schema import TABLES, schema

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def conversation() -> Conversation:
    u = Usage.normalize(input_tokens=100, output_tokens=10, cache_read_tokens=900, cache_in_input=False,
                        reasoning_in_output=False)
    entries = [
        Entry(1, "user", (Text("go"),), created_at=T0),
        Entry(2, "assistant", (use("a"), use("b", "grep"), Unknown({"type": "future", "x": 1})), usage=u, model="m-1"),
        tool(3, result("a")),
        tool(4, result("b", "boom", is_error=True)),
        tool(5, result("gone")),
        user(6, "again"),
        model(7, use("c")),
    ]
    return Conversation("test", "c1", entries, tool_meta={"a": ToolMeta(duration_ms=12.5, exit_code=0)},
                        summary=Summary(rows={"orphans": ({"tool_use_id": "gone", "found_by": "record", "step": 2},)}))


def build(*convs: Conversation) -> dict[str, pa.Table]:
    fb = FrameBuilder()
    for c in convs:
        fb.add(c)
    return fb.finish()


def test_every_table_has_its_declared_schema() -> None:
    tables = build(conversation())
    assert set(tables) == set(TABLES)
    for name, table in tables.items():
        assert table.schema == schema(name)


def test_rows_of_one_conversation() -> None:
    t = {k: to_pandas(v) for k, v in build(conversation()).items()}
    m = t["messages"]
    assert list(m["seq"]) == [1, 2, 3, 4, 5, 6, 7]
    assert list(m.loc[m.seq == 2, "block_kinds"].iloc[0]) == ["tool_use", "tool_use", "future"]
    assert m.loc[m.seq == 2, "input_tokens"].iloc[0] == 100
    assert pd.isna(m.loc[m.seq == 1, "input_tokens"].iloc[0])
    calls = t["tool_calls"]
    assert list(zip(calls.call_id, calls.status, strict=True)) == [
        ("a", "ok"), ("b", "error"), ("gone", "orphan_result"), ("c", "unanswered")
    ]
    assert calls.loc[calls.call_id == "a", "duration_ms"].iloc[0] == 12.5
    assert calls.loc[calls.call_id == "a", "exit_code"].iloc[0] == 0
    assert calls.loc[calls.call_id == "c", "input_bytes"].iloc[0] == 2  # "{}"
    orphans = t["orphans"]
    assert sorted(zip(orphans.found_by, orphans.tool_use_id, strict=True)) == [("assembly", "gone"), ("record", "gone")]
    conv = t["conversations"].iloc[0]
    assert (conv.messages, conv.tool_calls, conv.tool_errors, conv.orphans, conv.tokens) == (7, 3, 1, 1, 1010)
    assert conv.first_at == pd.Timestamp(T0)
    growth = t["growth"]
    assert list(growth.messages) == [1, 2, 3, 4, 5, 6, 7]
    assert list(growth.context_tokens.fillna(-1)) == [-1, 1010, 1010, 1010, 1010, 1010, 1010]
    assert str(t["messages"]["created_at"].dtype) == "timestamp[us, tz=UTC][pyarrow]"


def test_given_usage_rows_replace_entry_usage_so_nothing_counts_twice() -> None:
    conv = conversation()
    attempt = Usage.normalize(input_tokens=5, output_tokens=1, cache_in_input=True, reasoning_in_output=True)
    given = (UsageRow(attempt, attempt=1, sealed=False, found_in="response"),)
    t = build(replace(conv, summary=replace(conv.summary or Summary(), usage=given)))
    assert t["usage"].num_rows == 1
    assert t["conversations"].column("tokens").to_pylist() == [6]


def test_streamed_entries_give_the_same_tables_as_a_list() -> None:
    listed = build(conversation())
    conv = conversation()
    streamed = build(replace(conv, entries=iter(list(conv.entries))))
    for name in TABLES:
        assert streamed[name].equals(listed[name]), name


def test_metrics_from_tables() -> None:
    other = replace(conversation(), conversation_id="c2")
    t = {k: to_pandas(v) for k, v in build(conversation(), other).items()}
    usage = token_usage(t["usage"])
    assert usage.loc[0, "responses"] == 2
    assert usage.loc[0, "input_total_tokens"] == 2000
    assert usage.loc[0, "cache_hit_ratio"] == 0.9
    rates = tool_error_rates(t["tool_calls"]).set_index("tool_name")
    assert rates.loc["grep", "error_rate"] == 1.0 and rates.loc["bash", "unanswered"] == 2
    assert rates.loc["bash", "error_rate"] == 0.0
    drops = orphan_drops(t["orphans"])
    assert list(drops.assembly) == [1, 1] and list(drops.disagree) == [0, 0]
    curves = growth_curves(t["growth"])
    assert curves.groupby("conversation_id").progress.max().tolist() == [1.0, 1.0]


def test_pairing_columns_are_the_toolcall_fields() -> None:
    import dataclasses

    from murmur_analysis.algorithms.pairing import Pairer, ToolCall
    from murmur_analysis.core.model import Entry, ToolResult, ToolUse

    pairer = Pairer()
    pairer.feed(Entry(0, "assistant", (ToolUse("c1", "ls", {"p": 1}),)))
    pairer.feed(Entry(1, "tool", (ToolResult("c1", (), True),)))
    columns = pairer.finish_columns()
    assert list(columns) == [f.name for f in dataclasses.fields(ToolCall)]
    assert [columns[k][0] for k in ("call_id", "tool_name", "status", "is_error", "input", "input_bytes")] == [
        "c1", "ls", "error", True, {"p": 1}, 7]


def test_load_reports_progress(samples: Path) -> None:
    import murmur_analysis as ma

    events: list[tuple[str, str]] = []
    ma.load(samples / "murmur", samples / "flexigpt", progress=lambda event, detail: events.append((event, detail)))
    kinds = {event for event, _ in events}
    assert kinds == {"source", "entries", "conversation", "read"}
    assert ("entries", "murmur: support-bot/ctx-billing: 13 entries") in events
    assert events.index(("entries", "murmur: support-bot/ctx-billing: 13 entries")) < events.index(
        ("conversation", "murmur: support-bot/ctx-billing")
    )


def test_conversations_count_every_result_assembly_drops() -> None:
    entries = [user(1, "hi"), tool(2, result("x")), model(3, Text("ok")), tool(4, result("x"))]
    t = build(Conversation("test", "c", entries))
    assert t["conversations"].column("orphans").to_pylist() == [2]
    assert t["orphans"].num_rows == 2


def test_an_id_whose_time_no_datetime_holds_gives_a_null_time(tmp_path: Path) -> None:
    from murmur_lines import write_record

    import murmur_analysis as ma

    path = tmp_path / "conversations" / "r" / "c" / "conversation.jsonl"
    write_record(path, [{"content": [], "id": "msg_ffffffffffff7000800000000000000a", "role": "user"}])
    corpus = ma.load(path)
    assert corpus.messages["created_at"].isna().all()
    assert corpus.conversation("r/c").entries[0].created_at is None
