"""The murmur source: the bundled sample, and purpose-built records and traces for every rule."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pytest
from handle_agreement import assert_handle_matches_tables
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_home import (
    T0,
    call,
    ev,
    header,
    inference,
    mid,
    msg,
    record,
    text,
    tool,
    trace,
)
from murmur_lines import line

import murmur_analysis as ma
from murmur_analysis.core.model import Text, ToolResult, ToolUse, Unknown
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.murmur import MurmurSource
from murmur_analysis.sources.murmur.reader import RecordReader, walk
from murmur_analysis.tables.schema import TABLES, schema

BILLING = "support-bot/ctx-billing"
REFUND = "support-bot/ctx-refund"


def _load(path: Path, **options: Any) -> ma.Corpus:
    return ma.load(path, options={"murmur": options} if options else None)


def _entries(path: Path, **options: Any) -> list[ma.Entry]:
    source = MurmurSource(**options)
    convs = list(source.open(path, Diagnostics("murmur")))
    assert len(convs) == 1
    return list(convs[0].entries)


def _diags(corpus: ma.Corpus) -> list[tuple[str, int | None]]:
    """``(kind, line)`` of each row, less the home's ``no_session_traces`` (these homes have no trace)."""
    frame = corpus.diagnostics
    frame = frame[frame["kind"] != "no_session_traces"]
    return [(k, None if pd.isna(n) else int(n)) for k, n in zip(frame["kind"], frame["line"], strict=True)]


def _row(frame: pd.DataFrame, **where: Any) -> pd.Series:
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    rows = frame[mask]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# ------------------------------------------------------------------------------------ samples


@pytest.fixture(scope="module")
def sample(samples: Path) -> ma.Corpus:
    return ma.load(samples / "murmur")


def test_sample_tables_have_declared_schemas(sample: ma.Corpus) -> None:
    for name in TABLES:
        assert sample.tables[name].schema == schema(name), name
        frame = sample.frame(name)
        assert all(isinstance(t, pd.ArrowDtype) for t in frame.dtypes), name
    assert sample.messages["created_at"].dtype == pd.ArrowDtype(pa.timestamp("us", tz="UTC"))


def test_sample_exact_counts(sample: ma.Corpus) -> None:
    counts = {name: table.num_rows for name, table in sample.tables.items()}
    assert counts == {
        "messages": 27, "tool_calls": 5, "usage": 11, "orphans": 0, "growth": 28, "steps": 0,
        "conversations": 4, "diagnostics": 3,
    }
    by_conv = sample.messages.groupby("conversation_id").size().to_dict()
    assert by_conv[BILLING] == 13 and by_conv[REFUND] == 6 and by_conv["research-bot/ctx-scratch"] == 2
    assert sorted(_diags(sample)) == [("not_a_message", 4), ("retention", None), ("truncated_record", 1)]
    tools = sample.tool_calls
    assert tools["status"].value_counts().to_dict() == {"ok": 3, "error": 2}
    assert tools["duration_ms"].tolist() == [840.0, 35.0, 2310.0, 3.0, 512.0]


def test_sample_entries_equal_the_cursor_pages(sample: ma.Corpus, samples: Path) -> None:
    for cid in sample.conversations["conversation_id"]:
        path = Path(_row(sample.conversations, conversation_id=cid)["path"])
        reader = RecordReader()
        assert (sample.messages["conversation_id"] == cid).sum() == ma.read_messages(path, reader=reader).total
        handle = sample.conversation(cid)
        cursor: str | None = None
        while True:
            got = handle.read_messages(cursor, limit=3)
            want = ma.read_messages(path, cursor, limit=3, reader=reader)
            assert (got.messages, got.next_cursor, got.total) == (want.messages, want.next_cursor, want.total)
            if got.next_cursor is None:
                break
            cursor = got.next_cursor
        assert list(walk(path)) == [m for m in _walk_handle(handle)]


def _walk_handle(handle: ma.ConversationHandle) -> list[ma.PageMessage]:
    out: list[ma.PageMessage] = []
    cursor: str | None = None
    while True:
        page = handle.read_messages(cursor, 100)
        out.extend(page.messages)
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor


def test_sample_usage_joined_and_normalized(sample: ma.Corpus) -> None:
    usage = sample.usage
    assert (usage["found_in"] == "trace").all()
    first = _row(usage, conversation_id=BILLING, seq=1)
    # Anthropic: input_tokens_actual (412) excludes both cache slices (0 read, 2980 written).
    assert (first["input_tokens"], first["cache_read_tokens"], first["cache_write_tokens"]) == (412, 0, 2980)
    assert first["input_total_tokens"] == 3392 and first["output_tokens"] == 96
    assert (first["estimated_input_tokens"], first["estimated_output_tokens"]) == (3350, 88)
    assert (first["model"], first["provider"]) == ("claude-sonnet-4-5", "anthropic")
    refund = _row(usage, conversation_id=REFUND, seq=1)
    # OpenAI: input_tokens_actual (1900) already holds the 1536 cached tokens.
    assert (refund["input_total_tokens"], refund["input_tokens"], refund["cache_read_tokens"]) == (1900, 364, 1536)
    assert pd.isna(refund["cache_write_tokens"])
    estimate_only = usage[usage["input_total_tokens"].isna()]
    assert len(estimate_only) == 1 and estimate_only.iloc[0]["estimated_input_tokens"] == 960
    assistant = sample.messages[(sample.messages["conversation_id"] == BILLING) & (sample.messages["seq"] == 1)]
    assert assistant.iloc[0]["input_tokens"] == 412 and assistant.iloc[0]["model"] == "claude-sonnet-4-5"
    conv = _row(sample.conversations, conversation_id=BILLING)
    assert conv["tokens"] == usage[usage["conversation_id"] == BILLING][
        ["input_total_tokens", "output_tokens"]].sum().sum()


def test_sample_record_without_sessions_has_null_usage(sample: ma.Corpus) -> None:
    scratch = sample.messages[sample.messages["conversation_id"] == "research-bot/ctx-scratch"]
    assert len(scratch) == 2
    assert scratch[["input_tokens", "output_tokens", "cache_read_tokens"]].isna().all().all()
    assert (sample.usage["conversation_id"] == "research-bot/ctx-scratch").sum() == 0
    assert pd.isna(_row(sample.conversations, conversation_id="research-bot/ctx-scratch")["tokens"])


def test_sample_compaction_growth_and_truncation(sample: ma.Corpus) -> None:
    growth = sample.growth
    comp = _row(growth, event="compaction")
    assert (comp["conversation_id"], comp["position"], comp["tokens_before"], comp["tokens_after"]) == (
        BILLING, 6, 3712, 334)
    assert (growth["event"] == "message").sum() == 27
    truncated = sample.conversations[sample.conversations["truncated_dropped"].notna()]
    assert truncated["truncated_dropped"].tolist() == [40]
    assert _row(sample.messages, source_id="hook:compactor/summary-1")["seq"] == 7
    kinds = list(_row(sample.messages, conversation_id=BILLING, seq=8)["block_kinds"])
    assert kinds == ["text", "citation"]


def test_sample_is_rebuilt_byte_for_byte(samples: Path, tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_murmur", samples / "build_murmur.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path)
    committed = sorted(p.relative_to(samples) for p in (samples / "murmur").rglob("*") if p.is_file())
    built = sorted(p.relative_to(tmp_path) for p in (tmp_path / "murmur").rglob("*") if p.is_file())
    assert committed == built
    for rel in committed:
        assert (samples / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


# ------------------------------------------------------------------------------ record lines


def test_path_forms_all_find_the_same_records(tmp_path: Path) -> None:
    for rec, ctx in (("a", "c1"), ("a", "c2"), ("b", "c1")):
        record(tmp_path, rec, ctx, [msg("user", T0)])
    conv = tmp_path / "conversations"
    ids = lambda p: sorted(_load(p).conversations["conversation_id"])  # noqa: E731
    assert ids(tmp_path) == ids(conv) == ["a/c1", "a/c2", "b/c1"]
    assert ids(conv / "a") == ["a/c1", "a/c2"]
    assert ids(conv / "a" / "c2") == ["a/c2"]
    assert ids(conv / "b" / "c1" / "conversation.jsonl") == ["b/c1"]
    source = MurmurSource()
    assert source.guess_can_open(tmp_path) and source.guess_can_open(conv / "a")
    other = tmp_path / "other"
    (other / "x").mkdir(parents=True)
    (other / "x" / "notes.jsonl").write_text("{}\n")
    assert not source.guess_can_open(other) and not source.guess_can_open(other / "x" / "notes.jsonl")


def test_sorted_keys_and_doc_order_lines_decode_alike(tmp_path: Path, fixtures: Path) -> None:
    doc = (fixtures / "murmur" / "doc_examples" / "conversation.example.jsonl").read_text()
    path = record(tmp_path, "r", "c", [], tail=doc + line(orjson.loads(doc)) + "\n")
    entries = _entries(path)
    assert len(entries) == 2
    assert entries[0].blocks == entries[1].blocks == (Text("Summarize today's changes."),)
    assert entries[0].id == entries[1].id == "msg_01a04900754b7183b66c11e744612e2d"
    # The doc's id is a UUIDv7: its first 12 hex digits are the mint time.
    assert entries[0].created_at == datetime(2026, 8, 28, 15, 32, 41, 931000, tzinfo=UTC)


def test_line_rules_match_the_cursor(tmp_path: Path) -> None:
    values: list[Any] = [header(), msg("user", T0), msg("assistant", T0 + 1)]
    body = "".join(line(v) + "\n" for v in values)
    body += "\n   \n" + "not json\n" + '{"no":"role"}\n' + '["role"]\n' + line(msg("user", T0 + 2)) + "\r\n"
    body += '{"content":[],"id":"msg_x","n":123456789012345678901234567890,"role":"user"}\n'
    path = tmp_path / "conversations" / "r" / "c" / "conversation.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(body, encoding="utf-8")
    corpus = _load(tmp_path)
    assert corpus.messages["seq"].tolist() == [0, 1, 2, 3]
    assert ma.read_messages(path).total == 4
    assert _diags(corpus) == [("not_a_message", 6), ("not_a_message", 7), ("not_a_message", 8)]
    assert [m for m in walk(path)] == _walk_handle(corpus.conversation("r/c"))


def test_truncation_marker_reported_and_counted(tmp_path: Path) -> None:
    marker = {"at_ms": T0, "dropped": 5, "last_dropped_id": mid(T0 - 10), "oldest_surviving_id": mid(T0)}
    record(tmp_path, "r", "c", [header(marker), msg("user", T0), msg("assistant", T0 + 1)])
    corpus = _load(tmp_path)
    assert _diags(corpus) == [("truncated_record", 1)]
    assert "dropped 5" in _row(corpus.diagnostics, kind="truncated_record")["detail"]
    assert corpus.conversations["truncated_dropped"].tolist() == [5]
    assert len(corpus.messages) == 2


def test_half_written_last_line_waits_for_the_settle_window(tmp_path: Path) -> None:
    path = record(tmp_path, "r", "c", [msg("user", T0)], tail='{"content":[{"te')
    fresh = _load(tmp_path, settle_seconds=60)
    assert len(fresh.messages) == 1 and _diags(fresh) == []
    settled = _load(tmp_path, settle_seconds=0)
    assert len(settled.messages) == 1 and _diags(settled) == [("partial_line", 2)]
    old = time.time() - 3600
    os.utime(path, (old, old))
    assert _diags(_load(tmp_path)) == [("partial_line", 2)]  # the default window has passed
    # Once more data follows, the line is an ordinary malformed line.
    with path.open("a") as f:
        f.write("\n" + line(msg("assistant", T0 + 1)) + "\n")
    grown = _load(tmp_path, settle_seconds=60)
    assert len(grown.messages) == 2 and _diags(grown) == [("not_a_message", 2)]
    assert ma.read_messages(path).total == 2


def test_unterminated_complete_message_is_a_message(tmp_path: Path) -> None:
    path = record(tmp_path, "r", "c", [msg("user", T0)], tail=line(msg("assistant", T0 + 1)))
    assert len(_load(tmp_path, settle_seconds=60).messages) == 2 == ma.read_messages(path).total


def test_tool_envelope_is_error_and_source_id(tmp_path: Path) -> None:
    values = [
        msg("user", T0, text("list"), source_id="hook:seed/1"),
        msg("assistant", T0 + 1, text("Looking."), call("call_1", args={"path": "."}), call("call_2")),
        tool(T0 + 2, "call_1", "a.txt\nb.txt", is_error=False, n=1),
        tool(T0 + 3, "call_2", "boom", is_error=True, n=2),
        tool(T0 + 4, None, "stray", is_error=None, n=3),
    ]
    path = record(tmp_path, "r", "c", values)
    entries = _entries(path)
    assert entries[0].source_id == "hook:seed/1" and entries[1].source_id is None
    assert isinstance(entries[1].blocks[1], ToolUse) and entries[1].blocks[1].input == {"path": "."}
    ok, bad, stray = entries[2:]
    assert ok.blocks == (ToolResult("call_1", (Text("a.txt\nb.txt"),), False),)
    assert (ok.tool_call_id, ok.is_error, bad.is_error) == ("call_1", False, True)
    assert stray.blocks == (Text("stray"),) and stray.tool_call_id is None
    corpus = _load(tmp_path)
    assert _diags(corpus) == [("missing_tool_call_id", 5)]
    assert corpus.tool_calls[["call_id", "status", "is_error"]].values.tolist() == [
        ["call_1", "ok", False], ["call_2", "error", True]]
    envelope = orjson.loads(ma.read_messages(path, limit=100).messages[2].content)
    assert envelope == {"__murmur_tool_msg__": True, "body": [text("a.txt\nb.txt")], "is_error": False,
                        "tool_call_id": "call_1"}
    assert _walk_handle(corpus.conversation("r/c")) == list(walk(path))


def test_uuid7_time_and_unknown_blocks(tmp_path: Path) -> None:
    unknown = {"cited_text": "x", "type": "citation"}
    thinking = {"signature": "sig", "text": "hmm", "type": "thinking"}
    record(tmp_path, "r", "c", [msg("assistant", T0 + 1234, thinking, unknown), {"content": [], "id": "msg_1",
                                                                               "role": "user"}])
    entries = _entries(tmp_path)
    assert entries[0].created_at == datetime(2026, 1, 1, 0, 0, 1, 234000, tzinfo=UTC)
    assert entries[1].created_at is None
    assert entries[0].blocks[1] == Unknown(unknown)
    corpus = _load(tmp_path)
    assert list(corpus.messages["block_kinds"].iloc[0]) == ["thinking", "citation"]


def test_entries_equal_the_record_readers_messages(tmp_path: Path) -> None:
    values: list[Any] = [header()]
    for n in range(300):
        values.append(msg("user" if n % 2 == 0 else "assistant", T0 + n, text("x" * (n % 37))))
    path = record(tmp_path, "r", "c", values, tail="\n\nbroken\n")
    source = MurmurSource()
    conv = next(iter(source.open(tmp_path, Diagnostics("murmur"))))
    assert not isinstance(conv.entries, list)  # a stream, read once by the frame builder
    entries = list(conv.entries)
    assert [e.position for e in entries] == list(range(300))
    assert [e.raw for e in entries] == RecordReader().messages(path)


def test_a_record_with_invalid_utf8_anywhere_reads_as_murmur_reads_it_nothing(tmp_path: Path) -> None:
    """murmur reads a record as one UTF-8 string: one bad byte and it serves no message of it."""
    path = record(tmp_path, "r", "c", [msg("user", T0)])
    with path.open("ab") as f:
        f.write(b'{"role":"user","content":[{"type":"text","text":"\xff"}]}\n')
        f.write((line(msg("assistant", T0 + 1)) + "\n").encode())
        f.write(b"not json\n")
    corpus = _load(tmp_path)
    assert len(corpus.messages) == 0 and _diags(corpus) == [("bad_utf8", 2)]
    assert "murmur reads nothing from this record" in _row(corpus.diagnostics, kind="bad_utf8")["detail"]
    with pytest.raises(ma.ReadMessagesError, match="valid UTF-8"):
        ma.read_messages(path, reader=RecordReader())


# ------------------------------------------------------------------------------------ traces


def _two_task_home(tmp_path: Path, *, message_ids: bool = False) -> tuple[Path, Path]:
    """One context, two tasks in two sessions; a hook inference; tool timing; a compaction."""
    home = tmp_path / "home"
    t1, t2 = T0, T0 + 60_000
    values = [
        msg("user", t1 + 10), msg("assistant", t1 + 20, call("c1"), n=1), tool(t1 + 30, "c1", n=2),
        msg("assistant", t1 + 40, text("done"), n=3),
        msg("user", t2 + 10), msg("assistant", t2 + 20, n=1),
    ]
    record(home, "bot", "ctx", values)
    ids = [mid(t1 + 10), mid(t1 + 20, 1), mid(t1 + 30, 2)]
    events = [
        ev("session_start", t1, capsule_name="bot", model="claude-sonnet-4-5", context_id=None),
        ev("task_start", t1 + 1, task_id="A", context_id="ctx"),
        inference(t1 + 19, "A", 0, input_tokens=100, output_tokens=10, input_tokens_actual=20, cached_tokens=70,
                  cache_write_tokens=5, output_tokens_actual=12, **({"message_ids": ids[:1]} if message_ids else {})),
        ev("tool_call", t1 + 29, task_id="A", turn=0, tool_name="ls", tool_call_id="c1", input_bytes=2,
           output_bytes=2, duration_ms=250, status="ok"),
        inference(t1 + 33, "A", 1, input_tokens=7, output_tokens=3, origin="hook:judge", model="gpt-4.1-mini"),
        ev("compaction", t1 + 35, task_id="A", turn=1, tokens_before=900, tokens_after=90),
        inference(t1 + 39, "A", 1, input_tokens=130, output_tokens=8,
                  **({"message_ids": ids} if message_ids else {})),
        ev("task_end", t1 + 50, task_id="A", exit_status="ok"),
        ev("session_end", t1 + 51, exit_status="ok"),
    ]
    trace(home / "sessions" / "ses_1", events, [{"turn": 1, "tokens_before": 900, "tokens_after": 90,
                                                  "summary": "short"}])
    events2 = [
        ev("session_start", t2, "ses_2", capsule_name="bot", model="gpt-4.1", context_id=None),
        ev("task_start", t2 + 1, "ses_2", task_id="B", context_id="ctx"),
        inference(t2 + 19, "B", 0, session="ses_2", input_tokens=50, output_tokens=5, input_tokens_actual=60,
                  cached_tokens=40, output_tokens_actual=6),
        ev("task_end", t2 + 30, "ses_2", task_id="B", exit_status="ok"),
    ]
    workdir = tmp_path / "project" / "workdir"
    trace(workdir / "ses_2", events2)
    return home, workdir


def test_inference_joins_the_nth_assistant_message_of_its_task(tmp_path: Path) -> None:
    home, workdir = _two_task_home(tmp_path)
    corpus = _load(home, sessions=[workdir])
    usage = corpus.usage
    assert len(usage) == 4
    joined = usage.dropna(subset=["seq"])
    assert joined["seq"].tolist() == [1, 3, 5]
    assert joined["message_id"].tolist() == [mid(T0 + 20, 1), mid(T0 + 40, 3), mid(T0 + 60_020, 1)]
    hook = _row(usage, model="gpt-4.1-mini")
    assert pd.isna(hook["seq"]) and hook["estimated_input_tokens"] == 7 and pd.isna(hook["input_total_tokens"])
    first = _row(usage, seq=1)
    assert (first["input_total_tokens"], first["input_tokens"], first["cache_read_tokens"],
            first["cache_write_tokens"]) == (95, 20, 70, 5)  # Anthropic: slices beside the prompt counter
    openai = _row(usage, seq=5)
    assert (openai["input_total_tokens"], openai["input_tokens"], openai["provider"]) == (60, 20, "openai")
    messages = corpus.messages
    assert messages.loc[messages["seq"] == 5, "model"].tolist() == ["gpt-4.1"]
    assert messages.loc[messages["seq"] == 3, "input_tokens"].isna().all()  # an estimate-only response
    assert corpus.tool_calls[["call_id", "duration_ms"]].values.tolist() == [["c1", 250.0]]
    comp = _row(corpus.growth, event="compaction")
    assert (comp["position"], comp["tokens_before"], comp["tokens_after"]) == (2, 900, 90)
    assert len(corpus.growth) == 7


def test_message_ids_win_over_position(tmp_path: Path) -> None:
    # A compaction commits an assistant-role summary before the answer. Position alone joins the
    # response to the summary; message_ids (the request embedded the summary last) name the answer.
    summary = msg("assistant", T0 + 36, text("[summary]"), n=9)
    seqs = {}
    for with_ids in (False, True):
        home, _ = _two_task_home(tmp_path / str(with_ids), message_ids=with_ids)
        path = home / "conversations" / "bot" / "ctx" / "conversation.jsonl"
        lines = path.read_text().splitlines()
        lines.insert(3, line(summary))
        path.write_text("\n".join(lines) + "\n")
        trace_path = home / "sessions" / "ses_1" / "trace.jsonl"
        events = [orjson.loads(x) for x in trace_path.read_text().splitlines()]
        for event in events:
            if event.get("message_ids") and len(event["message_ids"]) == 3:
                event["message_ids"].append(summary["id"])
        trace_path.write_text("".join(line(e) + "\n" for e in events))
        usage = _load(home).usage
        seqs[with_ids] = usage.dropna(subset=["seq"])["seq"].tolist()  # session 2 was not given
    assert seqs == {False: [1, 3], True: [1, 4]}


def test_record_without_sessions_loads_with_null_usage(tmp_path: Path) -> None:
    home, _ = _two_task_home(tmp_path)
    corpus = _load(home, discover_sessions=False)
    assert len(corpus.usage) == 0 and len(corpus.messages) == 6
    assert corpus.messages["input_tokens"].isna().all() and corpus.tool_calls["duration_ms"].isna().all()
    assert (corpus.growth["event"] == "message").all()


def test_tasks_before_a_truncation_are_not_joined_by_position(tmp_path: Path) -> None:
    home = tmp_path / "home"
    marker = {"at_ms": T0 + 500, "dropped": 3, "last_dropped_id": mid(T0 + 300), "oldest_surviving_id": mid(T0 + 400)}
    record(home, "bot", "ctx", [header(marker), msg("assistant", T0 + 400), msg("user", T0 + 1000),
                                msg("assistant", T0 + 1020, n=1)])
    trace(home / "sessions" / "ses_1", [
        ev("session_start", T0, capsule_name="bot", model="claude-haiku-4-5"),
        ev("task_start", T0 + 1, task_id="old", context_id="ctx"),
        inference(T0 + 200, "old", 0, input_tokens=1, output_tokens=1),
        inference(T0 + 390, "old", 1, input_tokens=2, output_tokens=1),
        ev("task_end", T0 + 450, task_id="old"),
        ev("retention", T0 + 500, store="records", reason="max_messages", targets=["ctx"], messages_dropped=3),
        ev("task_start", T0 + 900, task_id="new", context_id="ctx"),
        inference(T0 + 1019, "new", 0, input_tokens=3, output_tokens=1),
    ])
    corpus = _load(home)
    assert corpus.usage["seq"].tolist()[2] == 2 and corpus.usage["seq"].isna().sum() == 2
    assert sorted(_diags(corpus)) == [("retention", None), ("truncated_record", 1)]


def test_compaction_summary_without_trace_event(tmp_path: Path) -> None:
    home = tmp_path / "home"
    record(home, "bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 20), msg("user", T0 + 40, n=1)])
    trace(home / "sessions" / "ses_1", [
        ev("session_start", T0, capsule_name="bot", model="gpt-4o"),
        ev("task_start", T0 + 1, task_id="A", context_id="ctx"),
        inference(T0 + 19, "A", 0, input_tokens=5, output_tokens=1),
    ], [{"turn": 0, "tokens_before": 500, "tokens_after": 50, "summary": "s"}])
    corpus = _load(home)
    comp = _row(corpus.growth, event="compaction")
    assert (comp["position"], comp["tokens_before"], comp["at"]) == (0, 500, pd.Timestamp(T0 + 19, unit="ms", tz="UTC"))


def test_trace_damage_is_reported(tmp_path: Path) -> None:
    home, _ = _two_task_home(tmp_path)
    trace_path = home / "sessions" / "ses_1" / "trace.jsonl"
    with trace_path.open("a") as f:
        f.write("nonsense\n[1]\n")
    corpus = _load(home, sessions=[tmp_path / "nowhere"])
    assert sorted(_diags(corpus)) == [("bad_json", 10), ("no_trace", None), ("not_an_event", 11)]
    assert len(corpus.usage) == 3


def test_provider_rules() -> None:
    from murmur_analysis.sources.murmur.trace_events import api_of

    def family(model: str | None, **event: str) -> str | None:
        return api_of(event, model).family

    assert family("claude-opus-4-1") == family("anthropic/claude-3-5-haiku") == "anthropic"
    assert family("gpt-4.1") == family("o3-mini") == family("openai/gpt-4o") == "openai"
    assert family("gemini-2.5-pro") == "google"
    assert family("llama-3.3-70b") is None and family(None) is None
    # the driver route decides, not the model it serves; an event's own provider decides first
    assert family("openrouter/anthropic/claude-sonnet-4") == "openai"
    assert family("claude-sonnet-4", provider="openrouter") == "openai"
    assert api_of({}, "anthropic/claude-3-5-haiku").source == "runtime"
    assert api_of({}, "claude-opus-4-1").source == "model_name"
    assert not api_of({}, "claude-x").accounting.cache_in_input and api_of({}, None).accounting.cache_in_input


def test_sessions_option_reaches_the_source_and_handles_reopen(tmp_path: Path) -> None:
    home, workdir = _two_task_home(tmp_path)
    corpus = ma.load(home, options={"murmur": {"sessions": [str(workdir)]}})
    handle = corpus.conversation("bot/ctx")
    assert [e.usage is not None for e in handle.entries] == [False, True, False, True, False, True]
    with pytest.raises(TypeError):
        MurmurSource(nonsense=1)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "content",
    [
        [text("a"), call("c1", args={"p": 1}), call("c2", args=[]), call("c3", args=0)],
        [{"id": "c", "input": None, "name": "n", "type": "tool_call"}, {"id": "c", "name": "n", "type": "tool_call"}],
        [{"text": 1, "type": "text"}, {"text": "t", "type": "text", "x": 1}, {"type": "text"}, "bare", 7, None],
        [{"id": 1, "input": {}, "name": "n", "type": "tool_call"}, {"id": "c", "input": {}, "name": "n", "x": 1}],
        [{"signature": "s", "text": "t", "type": "thinking"}, {"source": {}, "type": "image"}, {"type": "weird"}],
        "plain string",
        {"type": "text", "text": "object"},
    ],
)
def test_scanned_block_columns_equal_the_model(tmp_path: Path, content: Any) -> None:
    # The native scan derives kinds, text sizes and tool events from the model's own block rules.
    from murmur_analysis.algorithms.pairing import pair_tools
    from murmur_analysis.core.blocks import block_kind, text_chars
    from murmur_analysis.core.wire import blocks_from_wire

    record(tmp_path, "r", "c", [{"content": content, "id": "msg_1", "role": "assistant"}])
    corpus = _load(tmp_path)
    blocks = blocks_from_wire(content, "murmur")
    row = corpus.messages.iloc[0]
    assert list(row["block_kinds"]) == [block_kind(b) for b in blocks]
    assert (row["n_blocks"], row["text_chars"]) == (len(blocks), text_chars(blocks))
    calls = corpus.tool_calls[["call_id", "tool_name", "input_bytes"]].values.tolist()
    expected = [[c.call_id, c.tool_name, c.input_bytes] for c in pair_tools(_entries(tmp_path))]
    assert [[a, b, None if pd.isna(n) else int(n)] for a, b, n in calls] == expected


def test_trace_half_written_last_line_waits_for_the_settle_window(tmp_path: Path) -> None:
    home, _ = _two_task_home(tmp_path)
    with (home / "sessions" / "ses_1" / "trace.jsonl").open("a") as f:
        f.write('{"event_type":"inference","timest')
    assert _diags(_load(home, settle_seconds=60)) == []
    assert _diags(_load(home, settle_seconds=0)) == [("partial_line", 10)]


def _nested(depth: int) -> str:
    """A message line whose content nests ``depth`` arrays deep (the line's object is one more)."""
    return '{"content":' + "[" * depth + "]" * depth + ',"id":"msg_x","role":"user"}'


def test_serde_json_decides_every_line_for_pages_and_tables(tmp_path: Path) -> None:
    # serde_json refuses a 128th level of nesting (its recursion limit) where a lenient parser reads on;
    # the table, the entries and the cursor all skip the same lines, and write numbers its way.
    path = record(tmp_path, "r", "c", [msg("user", T0)],
                  tail="\n".join([_nested(126), _nested(127), _nested(300),
                                  '{"content":[1e21,-0,123456789012345678901234567890,{"b":1,"a":2,"b":3}],'
                                  '"id":"msg_n","role":"assistant"}']) + "\n")
    corpus = _load(tmp_path)
    assert _diags(corpus) == [("not_a_message", 3), ("not_a_message", 4)]
    assert len(corpus.messages) == 3 == len(_entries(path)) == ma.read_messages(path).total
    page = ma.read_messages(path, limit=1)
    assert page.messages[0].content == '[1e21,-0.0,1.2345678901234568e29,{"a":2,"b":3}]'
    handle = corpus.conversation("r/c")
    assert handle.read_messages(limit=1).messages[0].content == page.messages[0].content


def test_a_reopened_record_reads_its_header_as_murmur_does(tmp_path: Path) -> None:
    """Reopening decides line 1 as the load does: serde reads the escaped type as murmur.record."""
    marker = {"at_ms": T0, "dropped": 3, "last_dropped_id": mid(T0 - 5), "oldest_surviving_id": mid(T0)}
    path = record(tmp_path, "r", "c", [header(marker), msg("user", T0)])
    path.write_bytes(path.read_bytes().replace(b'"murmur.record"', b'"murmur\\u002erecord"', 1))
    source = MurmurSource()
    conv = next(iter(source.open(tmp_path, Diagnostics("murmur"))))
    again = source.reopen(conv.key, Diagnostics("murmur"))
    assert conv.truncated_dropped == again.truncated_dropped == 3


_ODD = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=4), st.just([]), st.just({}))
_KINDS = ("text", "thinking", "redacted_thinking", "tool_call", "tool_result", "image", "document", "future")


def _block() -> st.SearchStrategy[Any]:
    """A murmur content block: usually well formed, sometimes with a field of the wrong kind or none."""
    inner = st.lists(st.one_of(st.fixed_dictionaries({"type": st.just("text")}, optional={"text": _ODD}),
                               st.text(max_size=3), _ODD), max_size=2)
    return st.one_of(
        st.fixed_dictionaries({"type": st.sampled_from(_KINDS)}, optional={
            "text": st.one_of(st.text(max_size=6), _ODD), "data": _ODD, "source": _ODD, "signature": _ODD,
            "id": st.one_of(st.sampled_from(["c1", "c2"]), _ODD), "name": st.one_of(st.just("n"), _ODD),
            "input": st.one_of(st.just({"a": 1}), _ODD), "tool_use_id": st.one_of(st.sampled_from(["c1", "c2"]), _ODD),
            "content": st.one_of(st.text(max_size=6), inner, _ODD), "is_error": _ODD}),
        st.text(max_size=4), _ODD)


@settings(max_examples=60, deadline=None)
@given(messages=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]),
                                   st.one_of(st.lists(_block(), max_size=3), _ODD),
                                   st.one_of(st.none(), st.sampled_from(["c1", "c2"]))), min_size=1, max_size=5))
def test_a_handle_and_the_tables_read_any_blocks_as_the_same(tmp_path_factory: pytest.TempPathFactory,
                                                              messages: list[tuple[str, Any, str | None]]) -> None:
    """What a conversation handle shows is what the engine's tables count, for well-formed and odd blocks."""
    lines: list[dict[str, Any]] = []
    for n, (role, content, call_id) in enumerate(messages):
        value: dict[str, Any] = {"content": content, "id": f"msg_{n}", "role": role}
        if role == "tool" and call_id is not None:
            value["tool_call_id"] = call_id
        lines.append(value)
    home = tmp_path_factory.mktemp("home")
    record(home, "r", "c", lines)
    corpus = _load(home)
    assert_handle_matches_tables(corpus, str(corpus.conversations["conversation_id"].iloc[0]), "murmur")
