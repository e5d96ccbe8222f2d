"""Build data/samples/dispatch/: dispatch courier sessions, runs, a SQLite mount and an eval trace.

Shapes follow serenorg/dispatch: ``CourierSession`` (``dispatch-core/src/courier.rs``), the run
record ``RunRecord`` (``dispatch-cli/src/runs.rs``), ``dispatch_sessions``/``dispatch_memory``
(``courier/session_store.rs``, ``courier/memory_store.rs``) and the trace artifact
``DispatchTraceArtifact`` with ``DispatchTraceStep``/``CourierEvent`` tagged on ``kind``
(``dispatch-core/src/trace.rs``), written where ``dispatch eval --trace-dir`` writes it.

    dispatch/
      .dispatch/runs/<run_id>.json + <run_id>.session.json       two runs: exited, failed
      .dispatch/runs/<run_id>.json                                a run still starting: no session yet
      .dispatch/traces/evals/<digest>/<ms>-weather-smoke.dispatch-trace.json   a failing tool (exit 2)
      channels/telegram/<sha24>.session.json                      a channel bot's session
      state/session.sqlite     dispatch_sessions (one good row, one bad payload) + dispatch_memory (3 rows)
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

DIGEST = "3f9a1c2b7d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff"
SHORT = DIGEST[:12]  # a run id is <now_ms>-<digest[..12]>
T0 = 1_754_000_000_000  # 2025-07-31T22:13:20Z


def write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def session(sid: str, history: list[tuple[str, str]], *, entrypoint: str = "chat", label: str | None = None,
            elapsed_ms: int = 0, mounts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": sid,
        "parcel_digest": DIGEST,
        "entrypoint": entrypoint,
        "turn_count": sum(1 for role, _ in history if role == "user"),
        "elapsed_ms": elapsed_ms,
        "history": [{"role": role, "content": content} for role, content in history],
        "resolved_mounts": mounts or [],
    }
    if label is not None:
        doc["label"] = label
    return doc


def run_record(run_id: str, status: str, started: int | None, stopped: int | None, exit_code: int | None,
               last_error: str | None, operation: dict[str, Any]) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "parcel_digest": DIGEST,
        "parcel_name": "weather-bot",
        "parcel_version": "0.3.1",
        "parcel_path": ".dispatch/parcels/weather-bot",
        "courier": "native",
        "registry": None,
        "operation": operation,
        "status": status,
        "pid": None,
        "process_group_id": None,
        "started_at_ms": started,
        "stopped_at_ms": stopped,
        "exit_code": exit_code,
        "session_file": f".dispatch/runs/{run_id}.session.json",
        "log_path": f".dispatch/runs/{run_id}.log",
        "tool_approval": "never",
        "a2a_policy": {"allowed_origins": [], "trust_policy": None},
        "last_error": last_error,
        "detached": True,
    }


def trace() -> dict[str, Any]:
    started = T0 + 7_200_000
    return {
        "version": 1,
        "kind": "parcel_eval_case",
        "parcel_digest": DIGEST,
        "courier": "native",
        "dataset": None,
        "case_name": "weather smoke",
        "packaged_path": "evals/weather.eval",
        "entrypoint": "chat",
        "started_at_ms": started,
        "finished_at_ms": started + 1_840,
        "passed": False,
        "failures": ["expected tool `forecast` exit code `0`"],
        "error": None,
        "steps": [
            {"kind": "operation", "operation": "chat", "input": "What's the weather in Paris, and tomorrow's?"},
            {"kind": "session_open", "session_id": "sess-eval-0001", "status": "ok", "error": None},
            {"kind": "event", "event": {"kind": "prompt_resolved", "text": "You report the weather briefly."}},
            {"kind": "event", "event": {"kind": "local_tools_listed", "tools": []}},
            {"kind": "event", "event": {"kind": "tool_call_started",
                                        "invocation": {"name": "weather", "input": "{\"city\":\"Paris\"}"},
                                        "command": "scripts/weather.sh", "args": ["Paris"]}},
            {"kind": "event", "event": {"kind": "tool_call_finished", "result": {
                "tool": "weather", "command": "scripts/weather.sh", "args": ["Paris"], "exit_code": 0,
                "stdout": "18C cloudy", "stderr": ""}}},
            {"kind": "event", "event": {"kind": "tool_call_started",
                                        "invocation": {"name": "forecast", "input": "{\"city\":\"Paris\",\"days\":1}"},
                                        "command": "scripts/forecast.sh", "args": ["Paris", "1"]}},
            {"kind": "event", "event": {"kind": "tool_call_finished", "result": {
                "tool": "forecast", "command": "scripts/forecast.sh", "args": ["Paris", "1"], "exit_code": 2,
                "stdout": "", "stderr": "forecast service unavailable"}}},
            {"kind": "event", "event": {"kind": "message", "role": "assistant",
                                        "content": "Paris is 18C and cloudy; the forecast is unavailable."}},
            {"kind": "event", "event": {"kind": "done"}},
        ],
    }


def sqlite_state(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    try:
        con.executescript(
            """
            CREATE TABLE dispatch_sessions (
                session_id TEXT PRIMARY KEY,
                parcel_digest TEXT NOT NULL,
                entrypoint TEXT,
                turn_count INTEGER NOT NULL,
                payload_json TEXT NOT NULL
            );
            CREATE TABLE dispatch_checkpoints (
                session_id TEXT NOT NULL,
                parcel_digest TEXT NOT NULL,
                checkpoint_name TEXT NOT NULL,
                value TEXT NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY(session_id, parcel_digest, checkpoint_name)
            );
            CREATE TABLE dispatch_memory (
                parcel_digest TEXT NOT NULL,
                namespace TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY(parcel_digest, namespace, key)
            );
            """
        )
        good = session("sess-sqlite-0001", [("user", "heartbeat: check the queue"),
                                            ("assistant", "Queue is empty.")], entrypoint="heartbeat",
                       elapsed_ms=950, mounts=[{"kind": "session", "driver": "sqlite",
                                                "target_path": "state/session.sqlite"}])
        con.execute("INSERT INTO dispatch_sessions VALUES (?, ?, ?, ?, ?)",
                    (good["id"], DIGEST, "heartbeat", good["turn_count"], json.dumps(good)))
        con.execute("INSERT INTO dispatch_sessions VALUES (?, ?, ?, ?, ?)",
                    ("sess-sqlite-0002", DIGEST, "chat", 1, '{"id": "sess-sqlite-0002", "history": ['))
        for ns, key, value, at in (("prefs", "units", "metric", 1_754_001_000),
                                   ("prefs", "city", "Paris", 1_754_001_060),
                                   ("cache", "last_report", "18C cloudy", 1_754_007_201)):
            con.execute("INSERT INTO dispatch_memory VALUES (?, ?, ?, ?, ?)", (DIGEST, ns, key, value, at))
        con.commit()
    finally:
        con.close()


def build(root: Path) -> None:
    """Write ``root/dispatch``."""
    out = root / "dispatch"
    runs = out / ".dispatch" / "runs"
    first, second, third = f"{T0}-{SHORT}", f"{T0 + 3_600_000}-{SHORT}", f"{T0 + 5_400_000}-{SHORT}"
    write(runs / f"{first}.json", run_record(first, "exited", T0 + 120, T0 + 4_620, 0, None,
                                             {"kind": "job", "payload": "Summarize today's weather alerts."}))
    write(runs / f"{first}.session.json", session("sess-run-0001", [
        ("user", "Summarize today's weather alerts."),
        ("assistant", "Two alerts: heat in Lyon, storms near Berlin."),
        ("user", "Which is more severe?"),
        ("assistant", "The Berlin storm warning (level 3)."),
    ], entrypoint="job", elapsed_ms=4_500))
    write(runs / f"{second}.json", run_record(second, "failed", T0 + 3_600_090, T0 + 3_602_100, 1,
                                              "model backend returned 503", {"kind": "heartbeat", "payload": None}))
    write(runs / f"{second}.session.json", session("sess-run-0002", [
        ("user", "heartbeat"),
        ("assistant", "Checking feeds."),
    ], entrypoint="heartbeat", elapsed_ms=2_010))
    write(runs / f"{third}.json", run_record(third, "starting", None, None, None, None,
                                             {"kind": "job", "payload": "Queue a report."}))
    write(out / ".dispatch" / "traces" / "evals" / DIGEST / f"{T0 + 7_200_000}-weather-smoke.dispatch-trace.json",
          trace())
    write(out / "channels" / "telegram" / "5e1d7c0a9b8f6e4d3c2b1a09.session.json", session(
        "telegram:chat:4242", [("user", "hi bot"), ("assistant", "Hello! Ask me about the weather."),
                               ("user", "rain tomorrow?")], label="telegram 4242", elapsed_ms=1_200))
    sqlite_state(out / "state" / "session.sqlite")
