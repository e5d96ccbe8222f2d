"""dispatch: session files, run records, SQLite mounts, eval traces (shapes from serenorg/dispatch); the sample."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import murmur_analysis as ma
from murmur_analysis.model import Text, ToolResult, ToolUse, Unknown
from murmur_analysis.schema import schema
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.dispatch import DispatchSource

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
    assert conv["conversation_id"] == "sess-1" and conv["title"] == "demo"
    assert corpus.conversations["first_at"].isna().all()
    row = corpus.frame("dispatch_sessions").iloc[0]
    assert (row["kind"], row["turn_count"], row["elapsed_ms"], row["history_messages"]) == ("session_file", 2, 1500, 4)
    assert corpus.conversation("sess-1").entries[1].blocks == (Text("hello"),)


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
        assert corpus.conversations["conversation_id"].tolist() == ["sess-1"]
    corpus = ma.load(runs)
    assert corpus.diagnostics["kind"].tolist() == ["missing_session"]


def test_a_channel_bot_folder(tmp_path: Path) -> None:
    folder = tmp_path / "slack"
    write(folder / "0123456789abcdef01234567.session.json", {**SESSION, "id": "slack:1"})
    write(folder / "fedcba9876543210fedcba98.session.json", {**SESSION, "id": "slack:2", "history": []})
    corpus = ma.load(folder)
    assert corpus.conversations["conversation_id"].tolist() == ["slack:1", "slack:2"]
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
    assert list(memory.columns) == DispatchSource.extra_table_schemas["memory"].names
    assert memory["key"].tolist() == ["tz", "units"]
    assert [t.isoformat() for t in memory["updated_at"]] == ["2025-07-31T22:30:00.123000+00:00",
                                                             "2025-07-31T22:30:00+00:00"]
    assert corpus.tables["memory"].schema == DispatchSource.extra_table_schemas["memory"]
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
    assert [e.side for e in entries] == ["user", "assistant", "assistant", "tool", "tool", "tool", "assistant", "event"]
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
    assert corpus.diagnostics["kind"].tolist() == ["bad_json", "not_a_session", "not_a_trace", "duplicate_session"]
    assert corpus.conversations["conversation_id"].tolist() == ["dup", "odd"]
    odd = corpus.conversation("odd").entries
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
    convs = list(source.open(tmp_path, Diagnostics("dispatch")))
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
        assert table.schema == (schema(name) if name not in DispatchSource.extra_table_schemas
                                else DispatchSource.extra_table_schemas[name])
    conv = corpus.conversations.set_index("conversation_id")
    assert conv["messages"].to_dict() == {
        "sess-run-0001": 4, "sess-run-0002": 2, f"eval:{DIGEST[:12]}/1754007200000-weather-smoke": 7,
        "telegram:chat:4242": 3, "sess-sqlite-0001": 2}
    assert conv["tool_errors"].sum() == 1 and conv["first_at"].isna().all() and conv["tokens"].isna().all()
    assert corpus.messages["created_at"].isna().all()
    calls = corpus.tool_calls
    assert calls[["tool_name", "status", "exit_code"]].values.tolist() == [["weather", "ok", 0],
                                                                           ["forecast", "error", 2]]
    sessions = corpus.frame("dispatch_sessions").set_index("conversation_id")
    assert sessions["kind"].tolist() == ["run", "run", "eval_trace", "channel", "sqlite"]
    assert sessions.loc["sess-run-0002", "status"] == "failed"
    assert sessions.loc["sess-run-0002", "error"] == "model backend returned 503"
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
