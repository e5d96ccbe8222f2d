"""dispatch: session files, run records, SQLite mounts, eval traces (shapes from serenorg/dispatch); the sample."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis.core.handoff import Conversation
from murmur_analysis.core.model import Text, ToolResult, ToolUse, Unknown
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.dispatch import DispatchSource
from murmur_analysis.tables.schema import SOURCE_TABLES, schema

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "samples" / "dispatch"
DIGEST = "3f9a1c2b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff"

SESSION: dict[str, Any] = {
    "id": "sess-1",
    "parcel_digest": DIGEST,
    "entrypoint": "chat",
    "label": "demo",
    "turn_count": 2,
    "elapsed_ms": 1500,
    "history": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
        {"role": "assistant", "content": "see you"},
    ],
    "resolved_mounts": [],
}

RUN: dict[str, Any] = {
    "run_id": f"1754000000000-{DIGEST[:12]}", "parcel_digest": DIGEST, "parcel_name": "demo-parcel",
    "parcel_version": None, "parcel_path": "p", "courier": "native", "registry": None,
    "operation": {"kind": "job", "payload": "go"}, "status": "exited", "pid": None, "process_group_id": None,
    "started_at_ms": 1754000000100, "stopped_at_ms": 1754000001600, "exit_code": 0,
    "session_file": "s", "log_path": "l", "tool_approval": "never",
    "a2a_policy": {"allowed_origins": [], "trust_policy": None}, "last_error": None, "detached": False,
}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_a_session_file_alone_has_positions_and_no_invented_times(tmp_path: Path) -> None:
    path = write(tmp_path / "chat.session.json", SESSION)
    corpus = ma.load(path)
    msgs = corpus.messages
    assert msgs["seq"].tolist() == [0, 1, 2, 3]
    assert msgs["role"].tolist() == ["user", "assistant", "user", "assistant"]
    assert msgs["created_at"].isna().all() and msgs["message_id"].isna().all()
    assert msgs["input_tokens"].isna().all() and len(corpus.usage) == 0
    conv = corpus.conversations.iloc[0]
    assert conv["conversation_id"] == "chat" and conv["title"] == "demo"  # keyed on the file
    assert corpus.conversations["first_at"].isna().all()
    row = corpus.frame("dispatch_sessions").iloc[0]
    assert (row["kind"], row["turn_count"], row["elapsed_ms"], row["history_messages"]) == ("session_file", 2, 1500, 4)
    assert row["session_id"] == "sess-1"
    assert corpus.conversation("chat").entries[1].blocks == (Text("hello"),)


def test_a_runs_folder_pairs_each_session_with_its_run_record(tmp_path: Path) -> None:
    runs = tmp_path / ".dispatch" / "runs"
    write(runs / f"{RUN['run_id']}.json", RUN)
    write(runs / f"{RUN['run_id']}.session.json", SESSION)
    write(runs / f"1754000009999-{DIGEST[:12]}.json", {**RUN, "status": "starting"})
    for target in (tmp_path, tmp_path / ".dispatch", runs, runs / f"{RUN['run_id']}.json"):
        corpus = ma.load(target)
        row = corpus.frame("dispatch_sessions").iloc[0]
        assert row["kind"] == "run" and row["run_id"] == RUN["run_id"] and row["status"] == "exited"
        assert row["parcel_name"] == "demo-parcel" and row["courier"] == "native" and row["exit_code"] == 0
        assert row["started_at"].isoformat() == "2025-07-31T22:13:20.100000+00:00"
        assert row["stopped_at"].isoformat() == "2025-07-31T22:13:21.600000+00:00"
        assert corpus.conversations["conversation_id"].tolist() == [RUN["run_id"]]
        assert row["session_id"] == "sess-1"
    corpus = ma.load(runs)
    assert corpus.diagnostics["kind"].tolist() == ["missing_session"]


def test_a_channel_bot_folder(tmp_path: Path) -> None:
    folder = tmp_path / "slack"
    write(folder / "0123456789abcdef01234567.session.json", {**SESSION, "id": "slack:1"})
    write(folder / "fedcba9876543210fedcba98.session.json", {**SESSION, "id": "slack:2", "history": []})
    corpus = ma.load(folder)
    assert corpus.conversations["conversation_id"].tolist() == ["slack/0123456789abcdef01234567",
                                                                "slack/fedcba9876543210fedcba98"]
    assert corpus.frame("dispatch_sessions")["session_id"].tolist() == ["slack:1", "slack:2"]
    assert corpus.conversations["messages"].tolist() == [4, 0]
    assert set(corpus.frame("dispatch_sessions")["channel"]) == {"slack"}


def make_sqlite(path: Path, rows: list[tuple[str, str]], memory: list[tuple[str, str, str, int]]) -> Path:
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE dispatch_sessions (session_id TEXT PRIMARY KEY, parcel_digest TEXT NOT NULL, entrypoint TEXT,"
        " turn_count INTEGER NOT NULL, payload_json TEXT NOT NULL);"
        "CREATE TABLE dispatch_memory (parcel_digest TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,"
        " value TEXT NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY(parcel_digest, namespace, key));"
    )
    for sid, payload in rows:
        con.execute("INSERT INTO dispatch_sessions VALUES (?, ?, 'chat', 1, ?)", (sid, DIGEST, payload))
    for ns, key, value, at in memory:
        con.execute("INSERT INTO dispatch_memory VALUES (?, ?, ?, ?, ?)", (DIGEST, ns, key, value, at))
    con.commit()
    con.close()
    return path


def test_session_sqlite_is_read_read_only_with_memory_as_its_own_table(tmp_path: Path) -> None:
    db = make_sqlite(tmp_path / "session.sqlite",
                     [("sess-db", json.dumps({**SESSION, "id": "ignored-payload-id"})), ("sess-bad", "{oops")],
                     [("prefs", "units", "metric", 1_754_001_000), ("prefs", "tz", "UTC", 1_754_001_000_123)])
    before = db.read_bytes()
    corpus = ma.load(db)
    assert db.read_bytes() == before
    assert not (tmp_path / "session.sqlite-journal").exists()
    assert corpus.conversations["conversation_id"].tolist() == ["sess-db"]
    assert corpus.diagnostics[["kind", "line"]].values.tolist() == [["bad_json", 2]]
    memory = corpus.frame("memory")
    assert list(memory.columns) == schema("memory").names
    assert memory["key"].tolist() == ["tz", "units"]
    assert [t.isoformat() for t in memory["updated_at"]] == ["2025-07-31T22:30:00.123000+00:00",
                                                             "2025-07-31T22:30:00+00:00"]
    assert corpus.tables["memory"].schema == schema("memory")
    handle = corpus.conversation("sess-db")
    assert len(handle.entries) == 4


def test_a_sqlite_file_that_is_not_a_database_is_a_diagnostic(tmp_path: Path) -> None:
    (tmp_path / "session.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    corpus = ma.load(tmp_path / "session.sqlite", source="dispatch")
    assert corpus.diagnostics["kind"].tolist() == ["unreadable"]
    assert len(corpus.conversations) == 0


def trace(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"version": 1, "kind": "parcel_eval_case", "parcel_digest": DIGEST, "courier": "native", "dataset": None,
            "case_name": "smoke", "packaged_path": "evals/smoke.eval", "entrypoint": "chat",
            "started_at_ms": 1754000000000, "finished_at_ms": 1754000000500, "passed": False,
            "failures": ["expected tool `b` exit code `0`"], "error": None, "steps": steps}


def started(name: str, raw: str | None) -> dict[str, Any]:
    return {"kind": "event", "event": {"kind": "tool_call_started", "invocation": {"name": name, "input": raw},
                                       "command": f"{name}.sh", "args": []}}


def finished(name: str, code: int, out: str = "", err: str = "") -> dict[str, Any]:
    return {"kind": "event", "event": {"kind": "tool_call_finished", "result": {
        "tool": name, "command": f"{name}.sh", "args": [], "exit_code": code, "stdout": out, "stderr": err}}}


def test_eval_traces_give_tool_calls_and_exit_codes(tmp_path: Path) -> None:
    path = write(tmp_path / "evals" / DIGEST / "1754000000000-smoke.dispatch-trace.json", trace([
        {"kind": "operation", "operation": "chat", "input": "go"},
        {"kind": "session_open", "session_id": "s-1", "status": "ok", "error": None},
        started("a", '{"x": 1}'), started("b", "plain words"),
        finished("b", 3, err="boom"), finished("a", 0, out="fine"),
        finished("c", 0),
        {"kind": "event", "event": {"kind": "text_delta", "content": "do"}},
        {"kind": "event", "event": {"kind": "text_delta", "content": "ne"}},
        {"kind": "event", "event": {"kind": "channel_reply", "message": {}}},
        {"kind": "event", "event": {"kind": "done"}},
    ]))
    corpus = ma.load(tmp_path / "evals")
    cid = f"eval:{DIGEST[:12]}/1754000000000-smoke"
    assert corpus.conversations["conversation_id"].tolist() == [cid]
    calls = corpus.tool_calls.set_index("call_id")
    assert (calls.loc["call_1", "tool_name"], calls.loc["call_2", "tool_name"]) == ("a", "b")
    assert calls.loc["call_1", "status"] == "ok" and calls.loc["call_1", "exit_code"] == 0
    assert calls.loc["call_2", "status"] == "error" and calls.loc["call_2", "exit_code"] == 3
    assert calls.loc["result_3", "status"] == "orphan_result"
    assert calls.loc["call_1", "input_bytes"] == len('{"x": 1}')
    entries = corpus.conversation(cid).entries
    # a channel reply is the assistant's reply, even one whose envelope holds no text
    assert [e.side for e in entries] == ["user", "assistant", "assistant", "tool", "tool", "tool", "assistant",
                                         "assistant"]
    use = entries[2].blocks[0]
    assert isinstance(use, ToolUse) and use.input == "plain words"
    result = entries[3].blocks[0]
    assert isinstance(result, ToolResult) and result.is_error and result.content == (Text(""), Text("boom"))
    assert entries[6].blocks == (Text("done"),)
    assert isinstance(entries[7].blocks[0], Unknown)
    row = corpus.frame("dispatch_sessions").iloc[0]
    assert (row["kind"], row["status"], row["session_id"]) == ("eval_trace", "failed", "s-1")
    assert row["error"] == "expected tool `b` exit code `0`"
    assert corpus.orphans["tool_use_id"].tolist() == ["result_3"]
    assert path.exists()


def test_unreadable_files_are_diagnostics(tmp_path: Path) -> None:
    (tmp_path / "a.session.json").write_text("{")
    write(tmp_path / "b.session.json", {"id": "x"})
    write(tmp_path / "c.dispatch-trace.json", {"steps": "no"})
    write(tmp_path / "d.session.json", {**SESSION, "id": "dup"})
    write(tmp_path / "e.session.json", {**SESSION, "id": "dup"})
    write(tmp_path / "f.session.json", {**SESSION, "id": "odd", "history": [{"role": "user"}, "text", None]})
    corpus = ma.load(tmp_path)
    assert corpus.diagnostics["kind"].tolist() == ["bad_json", "not_a_session", "not_a_trace"]
    # two files holding one session id are two histories: both load, keyed on their files
    # a file is handed over before it is read; one that holds no session adds no row to any table
    assert corpus.conversations["conversation_id"].tolist() == ["d", "e", "f"]
    assert corpus.conversations["messages"].tolist() == [4, 4, 3]
    assert corpus.frame("dispatch_sessions")["session_id"].tolist() == ["dup", "dup", "odd"]
    odd = corpus.conversation("f").entries
    assert [e.side for e in odd] == ["user", "unknown", "unknown"]
    assert all(isinstance(e.blocks[0], Unknown) for e in odd)


def test_detection(tmp_path: Path) -> None:
    source = DispatchSource()
    runs = tmp_path / ".dispatch" / "runs"
    record = write(runs / f"{RUN['run_id']}.json", RUN)
    assert not source.guess_can_open(record)  # a run record with no session beside it
    write(runs / f"{RUN['run_id']}.session.json", SESSION)
    assert source.guess_can_open(record)
    assert source.guess_can_open(tmp_path) and source.guess_can_open(tmp_path / ".dispatch")
    assert source.guess_can_open(runs)
    db = make_sqlite(tmp_path / "state.db", [], [])
    assert source.guess_can_open(db)
    assert not source.guess_can_open(write(tmp_path / "other" / "x.json", {"id": 1}))
    assert not source.guess_can_open(tmp_path / "other")


def test_reopen(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "session.sqlite", [("sess-db", json.dumps(SESSION))], [])
    write(tmp_path / "x.session.json", {**SESSION, "id": "file-1"})
    write(tmp_path / "t.dispatch-trace.json", trace([started("a", None), finished("a", 1)]))
    source = DispatchSource()
    convs = [c for c in source.open(tmp_path, Diagnostics("dispatch")) if isinstance(c, Conversation)]
    assert len(convs) == 3
    for conv in convs:
        again = source.reopen(conv.key, Diagnostics("dispatch"))
        assert again.conversation_id == conv.conversation_id
        assert list(again.entries) == list(conv.entries)
    assert source.reopen(("sqlite", str(tmp_path / "session.sqlite"), "nope"), Diagnostics("dispatch")).entries == []


# -- the bundled sample -----------------------------------------------------------------------


def test_sample_exact_counts() -> None:
    corpus = ma.load(SAMPLE)
    sizes = {name: table.num_rows for name, table in corpus.tables.items()}
    assert sizes == {"messages": 18, "tool_calls": 2, "usage": 0, "orphans": 0, "growth": 18, "steps": 0,
                     "conversations": 5, "diagnostics": 2, "dispatch_sessions": 5, "memory": 3}
    for name, table in corpus.tables.items():
        assert table.schema == schema(name)
    conv = corpus.conversations.set_index("conversation_id")
    assert conv["messages"].to_dict() == {
        f"1754000000000-{DIGEST[:12]}": 4, f"1754003600000-{DIGEST[:12]}": 2,
        f"eval:{DIGEST[:12]}/1754007200000-weather-smoke": 7, "telegram/5e1d7c0a9b8f6e4d3c2b1a09": 3,
        "sess-sqlite-0001": 2}
    assert conv["tool_errors"].sum() == 1 and conv["first_at"].isna().all() and conv["tokens"].isna().all()
    assert corpus.messages["created_at"].isna().all()
    calls = corpus.tool_calls
    assert calls[["tool_name", "status", "exit_code"]].values.tolist() == [["weather", "ok", 0],
                                                                           ["forecast", "error", 2]]
    sessions = corpus.frame("dispatch_sessions").set_index("conversation_id")
    assert sessions["kind"].tolist() == ["run", "run", "eval_trace", "channel", "sqlite"]
    assert sessions.loc[f"1754003600000-{DIGEST[:12]}", "status"] == "failed"
    assert sessions.loc[f"1754003600000-{DIGEST[:12]}", "error"] == "model backend returned 503"
    assert sessions["session_id"].tolist() == ["sess-run-0001", "sess-run-0002", "sess-eval-0001",
                                               "telegram:chat:4242", "sess-sqlite-0001"]
    assert sorted(corpus.diagnostics["kind"]) == ["bad_json", "missing_session"]
    assert corpus.frame("memory")["namespace"].tolist() == ["cache", "prefs", "prefs"]


def test_sample_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("build_dispatch", REPO / "data" / "samples" / "build_dispatch.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path)
    built = sorted(p.relative_to(tmp_path / "dispatch") for p in (tmp_path / "dispatch").rglob("*") if p.is_file())
    shipped = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if p.is_file())
    assert built == shipped
    for rel in built:
        if rel.suffix == ".sqlite":  # compare contents, not pages: the page bytes depend on the SQLite build
            continue
        assert (tmp_path / "dispatch" / rel).read_bytes() == (SAMPLE / rel).read_bytes(), rel


@pytest.mark.parametrize("name", ["messages", "conversations", "tool_calls"])
def test_sample_frames_are_arrow_backed(name: str) -> None:
    frame = ma.load(SAMPLE).frame(name)
    assert all(str(dtype).endswith("[pyarrow]") for dtype in frame.dtypes)


# -- histories keyed on files, run records brought to their final state -------------------------


def test_two_runs_that_minted_the_same_session_id_both_load(tmp_path: Path) -> None:
    runs = tmp_path / ".dispatch" / "runs"
    minted = f"native-{DIGEST}-1"  # the counter starts at 1 in every process
    for n, run_id in enumerate((f"1754000000000-{DIGEST[:12]}", f"1754000500000-{DIGEST[:12]}")):
        write(runs / f"{run_id}.json", {**RUN, "run_id": run_id})
        history = [{"role": "user", "content": f"run {n}"}, {"role": "assistant", "content": "ok"}] * (n + 1)
        write(runs / f"{run_id}.session.json", {**SESSION, "id": minted, "history": history})
    corpus = ma.load(tmp_path)
    assert corpus.conversations["messages"].tolist() == [2, 4]
    assert corpus.frame("dispatch_sessions")["session_id"].tolist() == [minted, minted]
    assert len(corpus.diagnostics) == 0


def test_a_final_snapshot_beside_a_running_record_is_the_runs_final_state(tmp_path: Path) -> None:
    runs = tmp_path / ".dispatch" / "runs"
    run_id = RUN["run_id"]
    write(runs / f"{run_id}.json", {**RUN, "status": "running", "stopped_at_ms": None, "exit_code": None})
    write(runs / f"{run_id}.session.json", SESSION)
    write(runs / f"{run_id}.final.json", {**RUN, "status": "failed", "exit_code": 1, "last_error": "boom"})
    row = ma.load(runs).frame("dispatch_sessions").iloc[0]
    assert (row["status"], row["exit_code"], row["error"]) == ("failed", 1, "boom")
    assert row["stopped_at"].isoformat() == "2025-07-31T22:13:21.600000+00:00"
    assert len(ma.load(runs).conversations) == 1  # the snapshot is no run record of its own


def test_a_run_record_is_paired_with_the_session_its_session_file_names(tmp_path: Path) -> None:
    elsewhere = write(tmp_path / "keep" / "chat.session.json", SESSION)
    runs = tmp_path / "proj" / ".dispatch" / "runs"
    write(runs / f"{RUN['run_id']}.json", {**RUN, "session_file": str(elsewhere)})
    corpus = ma.load(tmp_path / "proj")
    assert len(corpus.diagnostics) == 0  # no false missing_session
    row = corpus.frame("dispatch_sessions").iloc[0]
    assert (row["kind"], row["run_id"], row["session_id"], row["path"]) == ("run", RUN["run_id"], "sess-1",
                                                                          str(elsewhere))
    inside = write(tmp_path / "proj" / "a-keep" / "chat.session.json", SESSION)
    write(runs / f"{RUN['run_id']}.json", {**RUN, "session_file": str(inside)})
    both = ma.load(tmp_path / "proj")  # the session is also met by the walk: read once, with its record
    assert both.frame("dispatch_sessions")["kind"].tolist() == ["run"]
    assert len(both.conversations) == 1 and len(both.diagnostics) == 0
    relative = tmp_path / "rel" / ".dispatch" / "runs"
    write(tmp_path / "rel" / "s.session.json", SESSION)
    write(relative / f"{RUN['run_id']}.json", {**RUN, "session_file": "s.session.json"})
    assert ma.load(relative).frame("dispatch_sessions")["kind"].tolist() == ["run"]


def test_a_channel_reply_in_a_trace_is_the_assistants_reply(tmp_path: Path) -> None:
    write(tmp_path / "evals" / DIGEST / "1754000000000-smoke.dispatch-trace.json", trace([
        {"kind": "operation", "operation": "chat", "input": "hi"},
        {"kind": "event", "event": {"kind": "channel_reply", "message": {
            "content": "Hello from the bot", "reply_to": "m-1", "attachments": []}}},
        {"kind": "event", "event": {"kind": "done"}},
    ]))
    corpus = ma.load(tmp_path / "evals")
    assert corpus.messages["role"].tolist() == ["user", "assistant"]
    assert corpus.messages["text_chars"].tolist() == [2, len("Hello from the bot")]
    reply = corpus.conversations["conversation_id"].iloc[0]
    block = corpus.conversation(reply).entries[1].blocks[0]
    assert block == Text("Hello from the bot", {"channel_reply": {"reply_to": "m-1", "attachments": []}})


def test_a_memory_blob_is_its_text_and_its_bytes(tmp_path: Path) -> None:
    db = make_sqlite(tmp_path / "session.sqlite", [], [("prefs", "plain", "v", 1_754_001_000)])
    con = sqlite3.connect(db)
    con.execute("INSERT INTO dispatch_memory VALUES (?, 'blobs', 'utf8', ?, 1)", (DIGEST, "héllo".encode()))
    con.execute("INSERT INTO dispatch_memory VALUES (?, 'blobs', 'raw', ?, 1)", (DIGEST, b"\xff\x00\x01"))
    con.execute("INSERT INTO dispatch_memory VALUES (?, 'blobs', 'num', 42, 1)", (DIGEST,))
    con.commit()
    con.close()
    memory = ma.load(db).frame("memory").set_index("key")
    assert memory.loc["utf8", "value"] == "héllo" and memory.loc["utf8", "value_bytes"] == "héllo".encode()
    assert pd.isna(memory.loc["raw", "value"]) and memory.loc["raw", "value_bytes"] == b"\xff\x00\x01"
    assert memory.loc["num", "value"] == "42" and pd.isna(memory.loc["num", "value_bytes"])
    assert memory.loc["plain", "value"] == "v" and pd.isna(memory.loc["plain", "value_bytes"])


def test_a_hot_rollback_journal_reads_the_last_committed_state_and_leaves_the_file_alone(tmp_path: Path) -> None:
    db = make_sqlite(tmp_path / "session.sqlite", [("sess-db", json.dumps(SESSION))],
                     [("prefs", "units", "metric", 1_754_001_000)])
    writer = (
        "import sqlite3, os, sys\n"
        "con = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "con.execute('PRAGMA cache_size=1')\n"
        "con.execute('BEGIN')\n"
        "for i in range(3000):\n"
        "    con.execute(\"INSERT INTO dispatch_sessions VALUES (?, 'd', 'chat', 1, ?)\", (f'x{i}', 'y' * 400))\n"
        "con.execute(\"UPDATE dispatch_memory SET value = 'imperial'\")\n"
        "os._exit(0)  # a crash mid-transaction: the journal stays, hot\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(db)], check=True)
    journal = tmp_path / "session.sqlite-journal"
    assert journal.stat().st_size > 0
    before = (db.read_bytes(), journal.read_bytes())
    corpus = ma.load(db)
    assert corpus.conversations["conversation_id"].tolist() == ["sess-db"]
    assert corpus.frame("memory")["value"].tolist() == ["metric"]
    assert corpus.diagnostics["kind"].tolist() == ["rollback_journal"]
    assert (db.read_bytes(), journal.read_bytes()) == before
    assert ma.load(tmp_path).conversations["conversation_id"].tolist() == ["sess-db"]


def test_a_session_file_holding_json_null_is_reported_not_dropped(tmp_path: Path) -> None:
    # JSON's null parses; it is still no CourierSession, and must not vanish without a row.
    path = tmp_path / "1754000000000-3f9a1c2b7d4e.session.json"
    path.write_text("null")
    corpus = ma.load(path, source="dispatch")
    assert corpus.conversations.empty  # found by its name, read when loaded: no rows
    assert corpus.frame("dispatch_sessions").empty
    assert list(corpus.diagnostics.kind) == ["not_a_session"]


# -- read when loaded: an unchanged file is not read again ----------------------------------------


def aged_copy(tmp_path: Path) -> Path:
    """The sample, copied, every file dated long ago (no file is being written)."""
    home = tmp_path / "d"
    shutil.copytree(SAMPLE, home)
    for path in home.rglob("*"):
        os.utime(path, (1_700_000_000, 1_700_000_000))
    return home


def count_parses(monkeypatch: pytest.MonkeyPatch, files: dict[str, Path]) -> Counter[str]:
    """How often the JSON text of each of ``files`` is parsed, by name (counted from now on)."""
    texts = {path.read_bytes(): name for name, path in files.items()}
    parsed: Counter[str] = Counter()
    loads = orjson.loads

    def counting(data: Any) -> Any:
        if isinstance(data, bytes) and data in texts:
            parsed[texts[data]] += 1
        return loads(data)

    monkeypatch.setattr(orjson, "loads", counting)
    return parsed


def test_a_conversation_is_handed_over_before_its_file_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    session = SAMPLE / ".dispatch" / "runs" / f"1754000000000-{DIGEST[:12]}.session.json"
    trace_file = next(SAMPLE.rglob("*.dispatch-trace.json"))
    parsed = count_parses(monkeypatch, {"session": session, "trace": trace_file})
    source = DispatchSource()
    convs = [c for c in source.open(SAMPLE, Diagnostics("dispatch")) if isinstance(c, Conversation)]
    fingerprints = [source.fingerprint(c) for c in convs]
    assert all(fp is not None for fp in fingerprints)
    assert parsed == Counter()  # listed and fingerprinted: neither file read
    by_path = {c.path: c for c in convs}
    assert len(list(by_path[str(session)].entries)) == 4
    assert parsed == Counter({"session": 1})


def test_an_unchanged_session_file_is_not_decoded_on_re_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = aged_copy(tmp_path)
    session = home / ".dispatch" / "runs" / f"1754000000000-{DIGEST[:12]}.session.json"
    trace_file = next(home.rglob("*.dispatch-trace.json"))
    parsed = count_parses(monkeypatch, {"session": session, "trace": trace_file})
    out = tmp_path / "out"
    export(home, out=out, batch_conversations=2)
    assert parsed == Counter({"session": 1, "trace": 1})
    first = read_parquet(out).tables
    again = export(home, out=out, batch_conversations=2)
    assert parsed == Counter({"session": 1, "trace": 1})  # kept from the fingerprint, not decoded
    assert again.conversations_read == 0 and again.conversations_kept == 5
    assert {n: t.to_pylist() for n, t in read_parquet(out).tables.items()} == {
        n: t.to_pylist() for n, t in first.items()}
    # A changed session is read again, and its row replaced; the rows kept beside it stay whole.
    doc = json.loads(session.read_text())
    doc["history"].append({"role": "user", "content": "one more"})
    session.write_text(json.dumps(doc, indent=2))
    os.utime(session, (1_700_000_100, 1_700_000_100))
    export(home, out=out, batch_conversations=2)
    assert parsed["trace"] == 1
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    for name in ("messages", "conversations", "dispatch_sessions", "memory"):
        assert sorted(map(str, exported[name].to_pylist())) == sorted(map(str, loaded[name].to_pylist())), name
    row = loaded["dispatch_sessions"].to_pylist()[0]
    assert row["path"] == str(session) and row["history_messages"] == 5


def test_dispatch_tables_are_declared_and_only_in_a_load_that_read_them(tmp_path: Path) -> None:
    assert set(SOURCE_TABLES) == {"dispatch_sessions", "memory"}
    other = ma.load(REPO / "data" / "samples" / "flexigpt")
    assert "dispatch_sessions" not in other.tables and "memory" not in other.tables
    # dispatch data whose sessions all prove unreadable still has its (empty) sessions table
    (tmp_path / "a.session.json").write_text("{")
    corpus = ma.load(tmp_path)
    assert corpus.tables["dispatch_sessions"].num_rows == 0
    assert corpus.tables["dispatch_sessions"].schema == schema("dispatch_sessions")
    assert "memory" not in corpus.tables


def test_a_trace_is_named_by_the_folder_dispatch_writes_it_in(tmp_path: Path) -> None:
    steps = [{"kind": "operation", "operation": "chat", "input": "hi"}]
    write(tmp_path / "evals" / DIGEST / "1-a.dispatch-trace.json", trace(steps))
    write(tmp_path / "loose" / "1-a.dispatch-trace.json", trace(steps))
    ids = ma.load(tmp_path / "evals", tmp_path / "loose").conversations["conversation_id"].tolist()
    assert ids == [f"eval:{DIGEST[:12]}/1-a", "eval:/1-a"]


def _session_doc(n: int, label: str | None) -> dict[str, Any]:
    return {**SESSION, "label": label, "history": [{"role": "user", "content": str(i)} for i in range(n)]}


session_files = st.one_of(
    st.builds(_session_doc, st.integers(min_value=0, max_value=5), st.none() | st.text(max_size=5)),
    st.sampled_from([None, {"id": "x"}, [], "text", {"history": "no"}, b"{", b""]),
)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(session_files, min_size=1, max_size=5))
def test_every_session_file_is_one_conversation_read_only_when_loaded(tmp_path_factory: Any, docs: list[Any]) -> None:
    folder = tmp_path_factory.mktemp("sessions")
    for i, doc in enumerate(docs):
        path = folder / f"s{i}.session.json"
        path.write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    texts = {p.read_bytes() for p in folder.iterdir()}
    parsed: list[bytes] = []
    loads = orjson.loads

    def counting(data: Any) -> Any:
        if isinstance(data, bytes) and data in texts:
            parsed.append(data)
        return loads(data)

    with mock.patch.object(orjson, "loads", counting):
        source = DispatchSource()
        for conv in source.open(folder, Diagnostics("dispatch")):
            if isinstance(conv, Conversation):
                source.fingerprint(conv)
        assert parsed == []  # found, named and fingerprinted: nothing read
        corpus = ma.load(folder)
    sessions = [d for d in docs if isinstance(d, dict) and isinstance(d.get("history"), list)]
    assert len(parsed) == len(docs)  # the load read each file once
    # a file that turns out to hold no session adds no row to any table
    assert corpus.conversations["conversation_id"].tolist() == [f"s{i}" for i, d in enumerate(docs) if d in sessions]
    assert corpus.conversations["messages"].tolist() == [len(d["history"]) for d in sessions]
    assert corpus.frame("dispatch_sessions")["history_messages"].tolist() == [len(d["history"]) for d in sessions]
    assert len(corpus.diagnostics) == len(docs) - len(sessions)


def test_a_final_snapshot_written_beside_an_unchanged_record_changes_the_fingerprint(tmp_path: Path) -> None:
    runs = tmp_path / ".dispatch" / "runs"
    run_id = RUN["run_id"]
    write(runs / f"{run_id}.json", {**RUN, "status": "running"})
    write(runs / f"{run_id}.session.json", SESSION)
    source = DispatchSource()
    conv = next(c for c in source.open(runs, Diagnostics("dispatch")) if isinstance(c, Conversation))
    before = source.fingerprint(conv)
    assert before is not None
    write(runs / f"{run_id}.final.json", {**RUN, "status": "failed"})  # the run's state changed
    assert source.fingerprint(conv) != before


def test_a_store_reached_twice_gives_its_memory_rows_once(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    db = make_sqlite(tmp_path / "state" / "session.sqlite", [("s1", json.dumps(SESSION))],
                     [("prefs", "tz", "UTC", 1754000000)])
    for paths in [(tmp_path,), (tmp_path, db), (db, db), (tmp_path, tmp_path / "state")]:
        corpus = ma.load(*paths, source="dispatch")
        assert corpus.frame("memory")["key"].tolist() == ["tz"], paths
