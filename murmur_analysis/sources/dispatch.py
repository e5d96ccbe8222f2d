"""dispatch courier sessions (formats.md §4): session files, run folders, SQLite mounts, eval traces.

What a path may be:

* a ``*.session.json`` (``--session-file``, a run's session, or a channel bot's
  ``<plugin>/<sha24>.session.json``);
* a folder: ``.dispatch/runs/`` pairs each ``<run_id>.session.json`` with its run record
  ``<run_id>.json``; a channel bot's session folder; or any folder holding these (searched
  recursively, hidden ``.dispatch`` folders included, :data:`SKIP_DIRS` left out);
* a ``session.sqlite`` (table ``dispatch_sessions``, column ``payload_json``), opened read-only;
  its ``dispatch_memory`` rows become the ``memory`` table;
* an eval trace ``evals/<parcel-digest>/<ms>-<case>.dispatch-trace.json``.

What the frames say, and why:

* A session's ``history`` holds plain ``{role, content}`` strings: no ids, no times, no tool
  calls, no token usage. Each becomes one entry whose ``seq`` is its index; ``message_id``,
  ``created_at`` and every token counter are null: nothing is invented. The run's own times,
  status and parcel are in the ``dispatch_sessions`` table (one row per session or trace).
* Tool outcomes exist only in eval traces. Each trace is a conversation of its own
  (``eval:<digest[:12]>/<file stem>``): the operation's input (user), the resolved prompt
  (system), each ``tool_call_started`` (an assistant ``ToolUse``), each ``tool_call_finished``
  (a tool ``ToolResult``, an error when ``exit_code != 0``), and courier messages. Traces give
  calls no ids, so call ``n`` is ``call_<n>``; a result answers the oldest open call of the same
  tool (else the oldest open call; with none open it is an orphan ``result_<n>``). The exit code
  reaches ``tool_calls.exit_code``.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Hashable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import orjson
import pyarrow as pa

from ..model import Block, Entry, Text, ToolResult, ToolUse, Unknown
from ..schema import Column
from .base import Conversation, Diagnostics, Source, ToolMeta

__all__ = ["MEMORY_COLUMNS", "SESSION_COLUMNS", "SKIP_DIRS", "DispatchSource", "history_entries", "trace_conversation"]

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.string()
_I64 = pa.int64()

#: The ``dispatch_sessions`` table: one row per session or eval trace read.
SESSION_COLUMNS: tuple[Column, ...] = (
    Column("source", _STR, "always dispatch"),
    Column("conversation_id", _STR, "the conversation (a session id, or eval:<digest>/<trace>)"),
    Column("kind", _STR, "run, session_file, channel, sqlite or eval_trace: where it was found"),
    Column("session_id", _STR, "the courier session id"),
    Column("run_id", _STR, "the run (<ms>-<digest[:12]>), for a run's session"),
    Column("parcel_digest", _STR, "the parcel's digest"),
    Column("parcel_name", _STR, "the parcel's name, from the run record"),
    Column("entrypoint", _STR, "chat, job, heartbeat, ..."),
    Column("label", _STR, "the session's label, when set"),
    Column("channel", _STR, "the channel plugin folder, for a channel bot's session"),
    Column("courier", _STR, "the courier that ran it (run record or trace)"),
    Column("status", _STR, "run status (starting running exited failed stopped), or passed/failed for a trace"),
    Column("exit_code", _I64, "the run's exit code"),
    Column("turn_count", _I64, "turns the session ran"),
    Column("elapsed_ms", _I64, "the session's elapsed_ms"),
    Column("history_messages", _I64, "messages in the session's history"),
    Column("started_at", _TS, "when the run or trace started (the only times dispatch records)"),
    Column("stopped_at", _TS, "when the run stopped or the trace finished"),
    Column("error", _STR, "the run's last_error, or the trace's error and failures"),
    Column("path", _STR, "the file it was read from"),
)

#: The ``memory`` table: one row per ``dispatch_memory`` entry.
MEMORY_COLUMNS: tuple[Column, ...] = (
    Column("source", _STR, "always dispatch"),
    Column("parcel_digest", _STR, "the parcel whose memory it is"),
    Column("namespace", _STR, "the memory namespace"),
    Column("key", _STR, "the key"),
    Column("value", _STR, "the value as stored"),
    Column("updated_at", _TS, "updated_at as a time (Unix seconds; values past 1e11 read as milliseconds)"),
    Column("updated_at_raw", _I64, "updated_at as stored"),
    Column("path", _STR, "the SQLite file"),
)


def _schema(columns: tuple[Column, ...]) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.type) for c in columns])


_RUN_ID = re.compile(r"^[0-9]+-[0-9a-f]{1,64}$")
_CHANNEL_SESSION = re.compile(r"^[0-9a-f]{24}\.session\.json$")
#: Folders a recursive search never enters: version control, dependencies, build output, built parcels.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", "target", "parcels"})
SESSION_SUFFIX = ".session.json"
TRACE_SUFFIX = ".dispatch-trace.json"


def _ms(value: Any) -> datetime | None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    try:
        return datetime.fromtimestamp(value / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _memory_time(value: Any) -> datetime | None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    return _ms(value if value >= 100_000_000_000 else value * 1000)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _read_json(path: Path, diagnostics: Diagnostics) -> Any:
    """A JSON file's value, or ``None`` after reporting why it could not be read."""
    try:
        raw = path.read_bytes()
    except OSError as err:
        diagnostics.report(path, "unreadable", f"could not read the file: {err.strerror or err}")
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        diagnostics.report(path, "bad_json", f"not a JSON document ({err}); skipped")
        return None


def history_entries(history: Any) -> list[Entry]:
    """A session's ``history`` as entries: position = index, no ids, no times."""
    entries: list[Entry] = []
    for index, item in enumerate(history if isinstance(history, list) else []):
        role, content = (item.get("role"), item.get("content")) if isinstance(item, Mapping) else (None, None)
        if isinstance(role, str) and isinstance(content, str):
            entries.append(Entry(index, role, (Text(content),)))
        else:
            entries.append(Entry(index, role if isinstance(role, str) else "unknown", (Unknown(item),)))
    return entries


def trace_conversation(data: Mapping[str, Any], path: str) -> tuple[Conversation, dict[str, Any]]:
    """An eval trace artifact as a conversation, plus its ``dispatch_sessions`` row values."""
    entries: list[Entry] = []
    meta: dict[str, ToolMeta] = {}
    open_calls: list[tuple[str, str]] = []  # (call id, tool name), oldest first
    session_id: str | None = None
    steps = data.get("steps")
    steps = steps if isinstance(steps, list) else []
    events = [s.get("event") for s in steps if isinstance(s, Mapping) and s.get("kind") == "event"]
    has_reply = any(isinstance(e, Mapping) and e.get("kind") == "message" and e.get("role") == "assistant"
                    for e in events)
    calls = results = 0
    deltas: list[str] = []

    def add(side: str, *blocks: Block) -> None:
        entries.append(Entry(len(entries), side, tuple(blocks)))

    def flush_deltas() -> None:
        if deltas:
            add("assistant", Text("".join(deltas)))
            deltas.clear()

    for step in steps:
        if not isinstance(step, Mapping):
            add("event", Unknown(step))
            continue
        kind = step.get("kind")
        if kind == "operation":
            text = _str(step.get("input"))
            add("user", Text(text) if text is not None else Unknown(dict(step)))
            continue
        if kind == "session_open":
            session_id = _str(step.get("session_id")) or session_id
            continue
        event = step.get("event") if kind == "event" else None
        if not isinstance(event, Mapping):
            add("event", Unknown(dict(step)))
            continue
        ekind = event.get("kind")
        if ekind == "text_delta":
            if not has_reply and isinstance(event.get("content"), str):
                deltas.append(event["content"])
            continue
        flush_deltas()
        if ekind == "tool_call_started":
            inv = event.get("invocation")
            name = _str(inv.get("name")) if isinstance(inv, Mapping) else None
            if name is None or not isinstance(inv, Mapping):
                add("event", Unknown(dict(event)))
                continue
            calls += 1
            call_id = f"call_{calls}"
            raw = _str(inv.get("input"))
            args: Any = None
            if raw is not None:
                try:
                    args = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    args = raw
            extra = {k: v for k, v in event.items() if k not in ("kind", "invocation")}
            if raw is not None:
                extra["input"] = raw
            open_calls.append((call_id, name))
            meta[call_id] = ToolMeta(input_bytes=len(raw.encode()) if raw is not None else None)
            add("assistant", ToolUse(call_id, name, args, None, extra))
        elif ekind == "tool_call_finished":
            res = event.get("result")
            if not isinstance(res, Mapping):
                add("event", Unknown(dict(event)))
                continue
            results += 1
            tool, code = _str(res.get("tool")), _int(res.get("exit_code"))
            match = next((i for i, (_, n) in enumerate(open_calls) if n == tool), 0 if open_calls else None)
            call_id = open_calls.pop(match)[0] if match is not None else f"result_{results}"
            stdout, stderr = _str(res.get("stdout")) or "", _str(res.get("stderr")) or ""
            content: tuple[Block, ...] = (Text(stdout),) + ((Text(stderr),) if stderr else ())
            extra = {k: v for k, v in res.items() if k not in ("stdout",)}
            is_error = code != 0 if code is not None else None
            add("tool", ToolResult(call_id, content, is_error, extra))
            if call_id in meta:
                meta[call_id] = ToolMeta(input_bytes=meta[call_id].input_bytes, exit_code=code,
                                         status=None if is_error is None else ("error" if is_error else "ok"))
        elif ekind == "message":
            role, text = _str(event.get("role")), _str(event.get("content"))
            add(role or "unknown", Text(text) if text is not None else Unknown(dict(event)))
        elif ekind == "prompt_resolved" and isinstance(event.get("text"), str):
            add("system", Text(event["text"]))
        elif ekind in ("done", "local_tools_listed", "backend_fallback"):
            continue  # lifecycle, not conversation content
        else:
            add("event", Unknown(dict(event)))
    flush_deltas()
    digest = _str(data.get("parcel_digest")) or ""
    stem = Path(path).name[: -len(TRACE_SUFFIX)] if path.endswith(TRACE_SUFFIX) else Path(path).stem
    conv_id = f"eval:{digest[:12]}/{stem}"
    failures = [f for f in data.get("failures", []) if isinstance(f, str)] if isinstance(
        data.get("failures"), list) else []
    errors = [e for e in [_str(data.get("error")), *failures] if e]
    passed = data.get("passed")
    row = {
        "kind": "eval_trace",
        "session_id": session_id,
        "parcel_digest": digest or None,
        "entrypoint": _str(data.get("entrypoint")),
        "label": _str(data.get("case_name")),
        "courier": _str(data.get("courier")),
        "status": ("passed" if passed else "failed") if isinstance(passed, bool) else None,
        "started_at": _ms(data.get("started_at_ms")),
        "stopped_at": _ms(data.get("finished_at_ms")),
        "error": "; ".join(errors) or None,
    }
    conv = Conversation("dispatch", conv_id, entries, key=("trace", path), title=_str(data.get("case_name")),
                        path=path, tool_meta=meta)
    return conv, row


class DispatchSource(Source):
    """dispatch courier sessions, runs, SQLite session mounts and eval traces."""

    name: ClassVar[str] = "dispatch"
    description: ClassVar[str] = "dispatch courier sessions (session files, runs, session.sqlite, eval traces)"
    #: The declared schemas of the tables this source adds (see :meth:`extra_tables`).
    extra_table_schemas: ClassVar[Mapping[str, pa.Schema]] = {
        "dispatch_sessions": _schema(SESSION_COLUMNS),
        "memory": _schema(MEMORY_COLUMNS),
    }

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._sessions: list[dict[str, Any]] = []
        self._memory: list[dict[str, Any]] = []

    # -- detection --------------------------------------------------------------------------

    def guess_can_open(self, path: Path) -> bool:
        """A session, trace, run record or dispatch SQLite file, or a folder holding them."""
        if path.is_file():
            return self._claims_file(path)
        if not path.is_dir():
            return False
        if path.name == ".dispatch" or (path / ".dispatch").is_dir():
            return True
        try:
            with os.scandir(path) as it:
                return any(e.is_file() and self._claims_name(e.name) for e in it)
        except OSError:
            return False

    @staticmethod
    def _claims_name(name: str) -> bool:
        return name.endswith((SESSION_SUFFIX, TRACE_SUFFIX)) or name == "session.sqlite"

    def _claims_file(self, path: Path) -> bool:
        name = path.name
        if self._claims_name(name):
            return True
        if name.endswith(".json") and _RUN_ID.match(name[:-5]):
            return (path.parent / f"{name[:-5]}{SESSION_SUFFIX}").is_file()
        if name.endswith((".sqlite", ".sqlite3", ".db")):
            return bool(self._sqlite_tables(path))
        return False

    # -- reading ----------------------------------------------------------------------------

    def open(self, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
        """Every session and trace under ``path``; memory rows are gathered for :meth:`extra_tables`."""
        self._sessions, self._memory = [], []
        seen: set[str] = set()
        for conv, row in self._walk(path, diagnostics):
            if conv.conversation_id in seen:
                diagnostics.report(conv.path or str(path), "duplicate_session",
                                   f"session {conv.conversation_id} was already read from another file; skipped")
                continue
            seen.add(conv.conversation_id)
            self._sessions.append({"conversation_id": conv.conversation_id, "path": conv.path, **row})
            yield conv

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode again the session or trace ``key`` names."""
        if not isinstance(key, tuple) or len(key) < 2:
            return Conversation(self.name, str(key), [], key=key)
        kind, where = key[0], Path(key[1])
        found: tuple[Conversation, dict[str, Any]] | None = None
        if kind == "file":
            record = Path(key[2]) if len(key) > 2 and key[2] else None
            found = self._session_file(where, record, diagnostics)
        elif kind == "trace":
            found = self._trace(where, diagnostics)
        elif kind == "sqlite":
            found = next((c for c in list(self._sqlite(where, diagnostics, memory=False)) if c[0].key == key), None)
        if found is None:
            return Conversation(self.name, str(key[-1]), [], key=key, path=str(where))
        return found[0]

    def extra_tables(self) -> Mapping[str, Any]:
        """``dispatch_sessions`` (always, after an open) and ``memory`` (when a ``dispatch_memory`` was read)."""
        tables = {"dispatch_sessions": self._table(SESSION_COLUMNS, self._sessions)}
        if self._memory:
            tables["memory"] = self._table(MEMORY_COLUMNS, self._memory)
        return tables

    @staticmethod
    def _table(columns: tuple[Column, ...], rows: list[dict[str, Any]]) -> pa.Table:
        schema = _schema(columns)
        arrays = [pa.array([("dispatch" if c.name == "source" else r.get(c.name)) for r in rows], type=c.type)
                  for c in columns]
        return pa.Table.from_arrays(arrays, schema=schema)

    def _walk(self, path: Path, diagnostics: Diagnostics) -> Iterator[tuple[Conversation, dict[str, Any]]]:
        if path.is_file():
            yield from self._file(path, diagnostics, with_memory=True)
            return
        for folder, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            here = Path(folder)
            for name in sorted(names):
                yield from self._file(here / name, diagnostics, with_memory=True, lone_record=False)

    def _file(
        self, path: Path, diagnostics: Diagnostics, *, with_memory: bool, lone_record: bool = True
    ) -> Iterator[tuple[Conversation, dict[str, Any]]]:
        name = path.name
        if name.endswith(SESSION_SUFFIX):
            record = path.parent / f"{name[: -len(SESSION_SUFFIX)]}.json"
            found = self._session_file(path, record if record.is_file() else None, diagnostics)
        elif name.endswith(TRACE_SUFFIX):
            found = self._trace(path, diagnostics)
        elif name.endswith((".sqlite", ".sqlite3", ".db")):
            if name == "session.sqlite" or self._sqlite_tables(path):
                yield from self._sqlite(path, diagnostics, memory=with_memory)
            return
        elif name.endswith(".json") and _RUN_ID.match(name[:-5]):
            session = path.parent / f"{name[:-5]}{SESSION_SUFFIX}"
            if session.is_file():
                if lone_record:  # a run record given alone: read the session beside it
                    yield from self._file(session, diagnostics, with_memory=with_memory)
                return
            diagnostics.report(path, "missing_session",
                               f"run record {name[:-5]} has no {session.name} beside it; no history to read")
            return
        else:
            return
        if found is not None:
            yield found

    def _session_file(
        self, path: Path, record_path: Path | None, diagnostics: Diagnostics
    ) -> tuple[Conversation, dict[str, Any]] | None:
        data = _read_json(path, diagnostics)
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("history"), list):
            diagnostics.report(path, "not_a_session", "not a dispatch CourierSession (no history list); skipped")
            return None
        record = _read_json(record_path, diagnostics) if record_path is not None else None
        record = record if isinstance(record, dict) else None
        channel = path.parent.name if _CHANNEL_SESSION.match(path.name) and record is None else None
        kind = "run" if record is not None else ("channel" if channel else "session_file")
        return self._session(data, str(path), ("file", str(path), str(record_path) if record else None),
                             kind, record, channel)

    def _session(
        self,
        data: Mapping[str, Any],
        path: str,
        key: tuple[str, str, str | None],
        kind: str,
        record: Mapping[str, Any] | None = None,
        channel: str | None = None,
        session_id: str | None = None,
    ) -> tuple[Conversation, dict[str, Any]]:
        sid = session_id or _str(data.get("id")) or Path(path).name.split(".")[0]
        history = data.get("history")
        entries = history_entries(history)
        rec = record or {}
        row = {
            "kind": kind,
            "session_id": sid,
            "run_id": _str(rec.get("run_id")),
            "parcel_digest": _str(data.get("parcel_digest")) or _str(rec.get("parcel_digest")),
            "parcel_name": _str(rec.get("parcel_name")),
            "entrypoint": _str(data.get("entrypoint")),
            "label": _str(data.get("label")),
            "channel": channel,
            "courier": _str(rec.get("courier")),
            "status": _str(rec.get("status")),
            "exit_code": _int(rec.get("exit_code")),
            "turn_count": _int(data.get("turn_count")),
            "elapsed_ms": _int(data.get("elapsed_ms")),
            "history_messages": len(entries),
            "started_at": _ms(rec.get("started_at_ms")),
            "stopped_at": _ms(rec.get("stopped_at_ms")),
            "error": _str(rec.get("last_error")),
        }
        conv = Conversation(self.name, sid, entries, key=key, title=_str(data.get("label")), path=path)
        return conv, row

    def _trace(self, path: Path, diagnostics: Diagnostics) -> tuple[Conversation, dict[str, Any]] | None:
        data = _read_json(path, diagnostics)
        if data is None:
            return None
        if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
            diagnostics.report(path, "not_a_trace", "not a dispatch trace artifact (no steps list); skipped")
            return None
        return trace_conversation(data, str(path))

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        return sqlite3.connect(uri, uri=True)

    def _sqlite_tables(self, path: Path) -> set[str]:
        try:
            con = self._connect(path)
        except sqlite3.Error:
            return set()
        try:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        except sqlite3.Error:
            return set()
        finally:
            con.close()
        return {r[0] for r in rows} & {"dispatch_sessions", "dispatch_memory"}

    def _sqlite(
        self, path: Path, diagnostics: Diagnostics, *, memory: bool
    ) -> Iterator[tuple[Conversation, dict[str, Any]]]:
        try:
            con = self._connect(path)
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.Error as err:
            diagnostics.report(path, "unreadable", f"could not open the SQLite file read-only: {err}")
            return
        try:
            if "dispatch_sessions" in tables:
                rows = con.execute(
                    "SELECT rowid, session_id, parcel_digest, entrypoint, turn_count, payload_json "
                    "FROM dispatch_sessions ORDER BY rowid"
                ).fetchall()
                for rowid, sid, digest, entrypoint, turns, payload in rows:
                    try:
                        data = orjson.loads(payload)
                    except (orjson.JSONDecodeError, TypeError) as err:
                        diagnostics.report(path, "bad_json",
                                           f"dispatch_sessions row {rowid} ({sid}): payload_json is not JSON ({err})",
                                           line=rowid)
                        continue
                    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
                        diagnostics.report(path, "not_a_session",
                                           f"dispatch_sessions row {rowid} ({sid}): payload_json has no history list",
                                           line=rowid)
                        continue
                    data.setdefault("parcel_digest", digest)
                    data.setdefault("entrypoint", entrypoint)
                    data.setdefault("turn_count", turns)
                    sid = sid if isinstance(sid, str) else _str(data.get("id")) or str(rowid)
                    yield self._session(data, str(path), ("sqlite", str(path), sid), "sqlite", session_id=sid)
            if memory and "dispatch_memory" in tables:
                cols = {r[1] for r in con.execute("PRAGMA table_info(dispatch_memory)")}
                digest_col = "parcel_digest" if "parcel_digest" in cols else "NULL"
                for digest, ns, key, value, updated in con.execute(
                    f"SELECT {digest_col}, namespace, key, value, updated_at FROM dispatch_memory "
                    "ORDER BY 1, namespace, key"
                ):
                    self._memory.append({
                        "parcel_digest": _str(digest), "namespace": _str(ns), "key": _str(key),
                        "value": value if isinstance(value, str) else None if value is None else str(value),
                        "updated_at": _memory_time(updated), "updated_at_raw": _int(updated), "path": str(path),
                    })
        except sqlite3.Error as err:
            diagnostics.report(path, "unreadable", f"could not read the SQLite file: {err}")
        finally:
            con.close()
