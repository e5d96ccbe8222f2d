"""Builders for purpose-made murmur homes: records and session traces written as the runtime does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from murmur_lines import line

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def v7(ms: int, n: int = 0) -> str:
    """A UUIDv7 (simple form) minted at ``ms``."""
    return f"{ms:012x}7000{0x8000 + n:04x}{n:012x}"


def mid(ms: int, n: int = 0) -> str:
    return "msg_" + v7(ms, n)


def msg(role: str, ms: int, *blocks: Any, n: int = 0, **extra: Any) -> dict[str, Any]:
    content = list(blocks) or [{"text": f"{role} at {ms}", "type": "text"}]
    return {"content": content, "id": mid(ms, n), "role": role, **extra}


def text(value: str) -> dict[str, Any]:
    return {"text": value, "type": "text"}


def call(call_id: str, name: str = "ls", args: Any = None) -> dict[str, Any]:
    return {"id": call_id, "input": args if args is not None else {}, "name": name, "type": "tool_call"}


def tool(ms: int, call_id: str | None, body: str = "ok", is_error: bool | None = False, n: int = 0) -> dict[str, Any]:
    value: dict[str, Any] = {"content": [text(body)], "id": mid(ms, n), "role": "tool", "is_error": is_error}
    if call_id is not None:
        value["tool_call_id"] = call_id
    return value


def header(truncated: dict[str, Any] | None = None, capsule: str = "bot") -> dict[str, Any]:
    value: dict[str, Any] = {"capsule": capsule, "created_ms": T0 - 1000, "type": "murmur.record"}
    if truncated is not None:
        value["truncated"] = truncated
    return value


def record(home: Path, rec: str, ctx: str, values: list[Any], tail: str = "") -> Path:
    path = home / "conversations" / rec / ctx / "conversation.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line(v) + "\n" for v in values) + tail, encoding="utf-8")
    return path


def ev(kind: str, ms: int, session: str = "ses_1", **fields: Any) -> dict[str, Any]:
    return {"event_type": kind, "event_id": "evt_" + v7(ms), "parent_id": None, "session_id": session,
            "timestamp": ms, **fields}


def inference(ms: int, task: str, turn: int, **fields: Any) -> dict[str, Any]:
    return ev("inference", ms, task_id=task, turn=turn, decision="end_turn", **fields)


def trace(workdir: Path, events: list[dict[str, Any]], summaries: list[dict[str, Any]] | None = None) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "trace.jsonl"
    path.write_text("".join(line(e) + "\n" for e in events), encoding="utf-8")
    if summaries is not None:
        (workdir / "out").mkdir(exist_ok=True)
        (workdir / "out" / "compaction-summaries.jsonl").write_text(
            "".join(line(s) + "\n" for s in summaries), encoding="utf-8"
        )
    return path


def home_with(tmp_path: Path, n: int = 3, lines: int = 4) -> Path:
    home = tmp_path / "home"
    for r in range(n):
        record(home, "bot", f"ctx-{r}", [msg("user" if i % 2 == 0 else "assistant", T0 + 1000 * r + i, n=i)
                                          for i in range(lines)])
    return home


def settle(home: Path) -> None:
    """Age every file so the reader's settle time has passed (no file is being written).

    A file aged already is left alone: setting its times changes its status change time, which
    its identity holds, so it would read as changed.
    """
    old = T0 / 1000  # always the same time: only the writes themselves tell files apart
    for path in home.rglob("*"):
        if path.stat().st_mtime != old:
            os.utime(path, (old, old))
