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

import contextlib
import errno
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Hashable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote

import orjson
import pyarrow as pa

from ..handoff import Conversation, ToolMeta
from ..model import Block, Entry, Text, ToolResult, ToolUse, Unknown
from ..schema import Column
from .base import Diagnostics, Source
from .files import (
    NOT_REGULAR,
    NotRegularFile,
    check_file,
    display,
    file_kind,
    identity,
    is_dir,
    listing,
    read_regular,
    report_kind,
)

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
    Column("value", _STR, "the value as text: as stored, or a BLOB's UTF-8 text (null when a BLOB is not UTF-8)"),
    Column("value_bytes", pa.binary(), "the value's bytes when it is stored as a BLOB"),
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
#: ``<run_id>.final.json``: the run's final state, written before the record is.
FINAL_SUFFIX = ".final.json"
_DB_SUFFIXES = (".sqlite", ".sqlite3", ".db")
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


def _memory_text(value: Any) -> str | None:
    """A memory value as text: TEXT as stored, a number in SQLite's text form, a BLOB when it is UTF-8."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return str(value)


def _blocking_sidecar(path: Path) -> Path | None:
    """A journal, WAL or shared-memory file of ``path`` that is no regular file (SQLite would block on it)."""
    for suffix in ("-journal", "-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if file_kind(side) not in ("file", "missing", "folder", "dangling link"):
            return side
    return None


@contextlib.contextmanager
def _database(path: Path, diagnostics: Diagnostics | None) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a SQLite file, never writing to it.

    A rollback journal beside the file (a writer crashed mid-transaction, or is writing) makes
    a read-only connection fail: SQLite must roll the journal back first. The file and its
    journal are then copied to a private folder and the copy is opened, so SQLite rolls the copy
    back and the last committed state is read; the original is left as it is.
    """
    sidecar = _blocking_sidecar(path)
    if sidecar is not None:
        raise NotRegularFile(errno.EINVAL, "a FIFO, socket or device beside the database: SQLite would block on it",
                             os.fspath(sidecar))
    journal = Path(f"{path}-journal")
    if file_kind(journal) == "file" and os.path.getsize(journal) > 0:
        with tempfile.TemporaryDirectory(prefix="murmur-analysis-sqlite-") as tmp:
            copy = Path(tmp) / "snapshot.sqlite"
            shutil.copyfile(path, copy)
            shutil.copyfile(journal, f"{copy}-journal")
            con = sqlite3.connect(copy)
            try:
                con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
                if diagnostics is not None:
                    diagnostics.report(path, "rollback_journal",
                                       f"a rollback journal stands beside the database ({journal.name}): a writer "
                                       "crashed or is writing; read a private copy rolled back to the last commit")
                yield con
            finally:
                con.close()
        return
    con = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True)
    try:
        yield con
    finally:
        con.close()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _run_id(name: str) -> str | None:
    """The run id of a run record's file name ``<run_id>.json``, or ``None``."""
    return name[:-5] if name.endswith(".json") and _RUN_ID.match(name[:-5]) else None


def _beside(record_or_session: Path, suffix: str) -> Path:
    """The file of the same run beside ``record_or_session`` with ``suffix`` (``.json``, ``.session.json``, ...)."""
    name = record_or_session.name
    for known in (SESSION_SUFFIX, FINAL_SUFFIX, ".json"):
        if name.endswith(known):
            return record_or_session.with_name(name[: -len(known)] + suffix)
    return record_or_session.with_name(name + suffix)


def _printable(value: Any) -> Any:
    return display(value) if isinstance(value, str) else value


#: What :func:`_parse_json` gives for a document that is not JSON (``None`` is JSON's ``null``).
_UNREADABLE = object()


def _read_json(path: Path, diagnostics: Diagnostics) -> Any:
    """A JSON file's value, or ``None`` after reporting why it could not be read."""
    raw = read_regular(path, diagnostics)
    value = _parse_json(raw, path, diagnostics) if raw is not None else None
    return None if value is _UNREADABLE else value


def _document(path: Path, listing: str, diagnostics: Diagnostics, kind: str, what: str) -> dict[str, Any] | None:
    """A JSON object holding a list under ``listing``, or ``None`` once reported.

    Unreadable, not JSON, or JSON of another shape (``null`` included): nothing is dropped
    without a row.
    """
    raw = read_regular(path, diagnostics)
    data = _parse_json(raw, path, diagnostics) if raw is not None else _UNREADABLE
    if data is _UNREADABLE:
        return None
    if not isinstance(data, dict) or not isinstance(data.get(listing), list):
        diagnostics.report(path, kind, f"not {what} (no {listing} list); skipped")
        return None
    return data


def _parse_json(raw: bytes, path: Path, diagnostics: Diagnostics) -> Any:
    """The document's value, or :data:`_UNREADABLE` after reporting why it is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        diagnostics.report(path, "bad_json", f"not a JSON document ({err}); skipped")
        return _UNREADABLE


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


def _is_reply(event: Any) -> bool:
    """Whether a trace event is the assistant's whole reply (a message, or a reply tagged for a channel)."""
    if not isinstance(event, Mapping):
        return False
    if event.get("kind") == "channel_reply":
        envelope = event.get("message")
        return isinstance(envelope, Mapping) and isinstance(envelope.get("content"), str)
    return event.get("kind") == "message" and event.get("role") == "assistant"


def trace_conversation(data: Mapping[str, Any], path: str) -> tuple[Conversation, dict[str, Any]]:
    """An eval trace artifact as a conversation, plus its ``dispatch_sessions`` row values."""
    entries: list[Entry] = []
    meta: dict[str, ToolMeta] = {}
    open_calls: list[tuple[str, str]] = []  # (call id, tool name), oldest first
    session_id: str | None = None
    steps = data.get("steps")
    steps = steps if isinstance(steps, list) else []
    events = [s.get("event") for s in steps if isinstance(s, Mapping) and s.get("kind") == "event"]
    has_reply = any(_is_reply(e) for e in events)
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
        elif ekind == "channel_reply":
            # courier's normalize_assistant_reply: a reply tagged for a channel is the assistant's
            # reply; its text is the envelope's content, the rest of the envelope is kept beside it.
            envelope = event.get("message")
            text = _str(envelope.get("content")) if isinstance(envelope, Mapping) else None
            if text is None:
                add("assistant", Unknown(dict(event)))
            else:
                rest = {k: v for k, v in envelope.items() if k != "content"} if isinstance(envelope, Mapping) else {}
                add("assistant", Text(text, {"channel_reply": rest}))
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
        self._memory_read: set[tuple[int, int]] = set()  # SQLite files whose memory is gathered already

    # -- detection --------------------------------------------------------------------------

    def guess_can_open(self, path: Path) -> bool:
        """A session, trace, run record or dispatch SQLite file, or a folder holding them."""
        if not is_dir(path):
            return os.path.lexists(path) and self._claims_file(path)
        if path.name == ".dispatch" or is_dir(path / ".dispatch"):
            return True
        return any(self._claims_name(e.name) for e in listing(path, None))

    @staticmethod
    def _claims_name(name: str) -> bool:
        return name.endswith((SESSION_SUFFIX, TRACE_SUFFIX)) or name == "session.sqlite"

    def _claims_file(self, path: Path) -> bool:
        name = path.name
        if self._claims_name(name):
            return True
        if _run_id(name) is not None:
            return self._session_of(path, Diagnostics(self.name)) is not None
        if name.endswith(_DB_SUFFIXES):
            return file_kind(path) == "file" and bool(self._sqlite_tables(path))
        return False

    # -- reading ----------------------------------------------------------------------------

    def open(self, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
        """Every session and trace under ``path``; memory rows are gathered for :meth:`extra_tables`.

        Conversations are keyed on the file they live in: courier session ids are minted per
        process (``native-<digest>-1`` in every run), so two files may carry the same id, and
        both load; the id is the ``session_id`` column of ``dispatch_sessions``.
        """
        self._sessions, self._memory = [], []
        for conv, row in self._walk(path, diagnostics):
            yield conv
            if not conv.skipped:  # the loader may have met this file before
                self._sessions.append({"conversation_id": conv.conversation_id, "path": conv.path, **row})

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
        arrays = [pa.array([("dispatch" if c.name == "source" else _printable(r.get(c.name))) for r in rows],
                           type=c.type) for c in columns]
        return pa.Table.from_arrays(arrays, schema=schema)

    def _files(self, folder: Path, diagnostics: Diagnostics) -> Iterator[Path]:
        """The files under ``folder`` this source reads (by name), depth first in name order.

        Hidden folders are entered (``.dispatch``); :data:`SKIP_DIRS` and links to folders are not.
        A folder that cannot be listed is a diagnostics row.
        """
        for entry in listing(folder, diagnostics):
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if is_folder and entry.name.endswith((SESSION_SUFFIX, TRACE_SUFFIX)):
                report_kind(entry.path, "folder", diagnostics)
            elif is_folder:
                if entry.name not in SKIP_DIRS:
                    yield from self._files(Path(entry.path), diagnostics)
            elif self._claims_name(entry.name) or _run_id(entry.name) is not None or entry.name.endswith(_DB_SUFFIXES):
                yield Path(entry.path)

    def _walk(self, path: Path, diagnostics: Diagnostics) -> Iterator[tuple[Conversation, dict[str, Any]]]:
        if not is_dir(path):
            yield from self._file(path, diagnostics, {}, lone=True)
            return
        files = list(self._files(path, diagnostics))
        walked = {ident for f in files if (ident := identity(f)) is not None}
        # Run records whose session lives elsewhere (``session_file``): the session is read with
        # its record, when the walk meets it or, outside the walk, when the walk meets the record.
        claimed: dict[tuple[int, int], Path] = {}
        for f in files:
            if _run_id(f.name) is not None and not os.path.lexists(_beside(f, SESSION_SUFFIX)):
                session = self._session_of(f, Diagnostics(self.name))
                ident = identity(session) if session is not None else None
                if ident is not None:
                    claimed.setdefault(ident, f)
        for f in files:
            yield from self._file(f, diagnostics, claimed, walked=walked)

    def _file(
        self,
        path: Path,
        diagnostics: Diagnostics,
        claimed: Mapping[tuple[int, int], Path],
        *,
        lone: bool = False,
        walked: set[tuple[int, int]] | None = None,
    ) -> Iterator[tuple[Conversation, dict[str, Any]]]:
        name = path.name
        run_id = _run_id(name)
        if run_id is not None:  # a run record: its session is read with it
            if not check_file(path, diagnostics, missing_ok=False):
                return
            if os.path.lexists(_beside(path, SESSION_SUFFIX)):
                if lone:  # a run record given alone: read the session beside it
                    yield from self._file(_beside(path, SESSION_SUFFIX), diagnostics, claimed)
                return
            session = self._session_of(path, diagnostics)
            if session is None:
                doc = _read_json(path, Diagnostics(self.name))
                named = _str(doc.get("session_file")) if isinstance(doc, dict) else None
                diagnostics.report(path, "missing_session",
                                   f"run record {run_id}: its session ({named or run_id + SESSION_SUFFIX}) "
                                   "was not found; no history to read")
            elif lone or walked is None or identity(session) not in walked:
                found = self._session_file(session, path, diagnostics)
                if found is not None:
                    yield found
            return
        if not name.endswith((SESSION_SUFFIX, TRACE_SUFFIX, *_DB_SUFFIXES)):
            return
        if not check_file(path, diagnostics, missing_ok=False):
            return
        if name.endswith(SESSION_SUFFIX):
            record: Path | None = _beside(path, ".json")
            assert record is not None
            if not os.path.lexists(record) and not os.path.lexists(_beside(path, FINAL_SUFFIX)):
                ident = identity(path)
                record = claimed.get(ident) if ident is not None else None
            found = self._session_file(path, record, diagnostics)
            if found is not None:
                yield found
        elif name.endswith(TRACE_SUFFIX):
            found = self._trace(path, diagnostics)
            if found is not None:
                yield found
        elif (sidecar := _blocking_sidecar(path)) is not None:
            diagnostics.report(sidecar, NOT_REGULAR, "a FIFO, socket or device beside a SQLite file: SQLite would "
                               "block on it, so the database is not read")
        elif name == "session.sqlite" or self._sqlite_tables(path):
            yield from self._sqlite(path, diagnostics, memory=True)

    def _session_of(self, record_path: Path, diagnostics: Diagnostics) -> Path | None:
        """Where a run record's session lives: beside it, or where its ``session_file`` says."""
        beside = _beside(record_path, SESSION_SUFFIX)
        if os.path.lexists(beside):
            return beside
        record = self._run_record(record_path, diagnostics)
        named = _str(record.get("session_file")) if record else None
        if not named:
            return None
        where = Path(named)
        candidates = [where] if where.is_absolute() else [record_path.parent / where]
        runs = record_path.parent
        if not where.is_absolute() and runs.name == "runs" and runs.parent.name == ".dispatch":
            candidates.append(record_path.parent.parent.parent / where)  # the parcel's folder
        return next((c for c in candidates if file_kind(c) == "file"), None)

    def _run_record(self, record_path: Path, diagnostics: Diagnostics) -> dict[str, Any] | None:
        """A run record, brought to its final state by ``<run_id>.final.json`` when one stands beside it.

        dispatch writes the final snapshot before it rewrites the record, and reading a record
        consumes it (``refresh_run_record``): a snapshot beside a record that still says
        ``running`` means the run finished, as the snapshot says.
        """
        record = _read_json(record_path, diagnostics) if os.path.lexists(record_path) else None
        final_path = _beside(record_path, FINAL_SUFFIX)
        final = _read_json(final_path, diagnostics) if os.path.lexists(final_path) else None
        for value, where in ((record, record_path), (final, final_path)):
            if value is not None and not isinstance(value, dict):
                diagnostics.report(where, "not_a_run_record", "not a dispatch run record (not a JSON object); "
                                   "its run's times and status are unknown")
        record = record if isinstance(record, dict) else None
        if isinstance(final, dict):
            return {**(record or {}), **final}
        return record

    def _session_file(
        self, path: Path, record_path: Path | None, diagnostics: Diagnostics
    ) -> tuple[Conversation, dict[str, Any]] | None:
        data = _document(path, "history", diagnostics, "not_a_session", "a dispatch CourierSession")
        if data is None:
            return None
        record = self._run_record(record_path, diagnostics) if record_path is not None else None
        channel = path.parent.name if _CHANNEL_SESSION.match(path.name) and record is None else None
        kind = "run" if record is not None else ("channel" if channel else "session_file")
        stem = path.name[: -len(SESSION_SUFFIX)] if path.name.endswith(SESSION_SUFFIX) else path.stem
        if record is not None:
            conv_id = _str(record.get("run_id")) or (_run_id(record_path.name) if record_path else None) or stem
        else:
            conv_id = f"{channel}/{stem}" if channel else stem
        return self._session(data, str(path), ("file", str(path), str(record_path) if record else None),
                             kind, conv_id, record, channel)

    def _session(
        self,
        data: Mapping[str, Any],
        path: str,
        key: tuple[str, str, str | None],
        kind: str,
        conversation_id: str,
        record: Mapping[str, Any] | None = None,
        channel: str | None = None,
        session_id: str | None = None,
        part: str | None = None,
    ) -> tuple[Conversation, dict[str, Any]]:
        sid = session_id or _str(data.get("id"))
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
        conv = Conversation(self.name, conversation_id, entries, key=key, title=_str(data.get("label")), path=path,
                            part=part)
        return conv, row

    def _trace(self, path: Path, diagnostics: Diagnostics) -> tuple[Conversation, dict[str, Any]] | None:
        data = _document(path, "steps", diagnostics, "not_a_trace", "a dispatch trace artifact")
        if data is None:
            return None
        return trace_conversation(data, str(path))

    def _sqlite_tables(self, path: Path) -> set[str]:
        try:
            with _database(path, None) as con:
                rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        except (sqlite3.Error, OSError):
            return set()
        return {r[0] for r in rows} & {"dispatch_sessions", "dispatch_memory"}

    def _sqlite(
        self, path: Path, diagnostics: Diagnostics, *, memory: bool
    ) -> Iterator[tuple[Conversation, dict[str, Any]]]:
        with contextlib.ExitStack() as stack:
            try:
                con = stack.enter_context(_database(path, diagnostics))
                tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            except (sqlite3.Error, OSError) as err:
                diagnostics.report(path, "unreadable", f"could not open the SQLite file read-only: {err}")
                return
            yield from self._sqlite_rows(con, tables, path, diagnostics, memory=memory)

    def _sqlite_rows(
        self, con: sqlite3.Connection, tables: set[str], path: Path, diagnostics: Diagnostics, *, memory: bool
    ) -> Iterator[tuple[Conversation, dict[str, Any]]]:
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
                    yield self._session(data, str(path), ("sqlite", str(path), sid), "sqlite", sid, session_id=sid,
                                        part=sid)
            ident = identity(path)
            if memory and "dispatch_memory" in tables and (ident is None or ident not in self._memory_read):
                if ident is not None:
                    self._memory_read.add(ident)
                cols = {r[1] for r in con.execute("PRAGMA table_info(dispatch_memory)")}
                digest_col = "parcel_digest" if "parcel_digest" in cols else "NULL"
                for digest, ns, key, value, updated in con.execute(
                    f"SELECT {digest_col}, namespace, key, value, updated_at FROM dispatch_memory "
                    "ORDER BY 1, namespace, key"
                ):
                    self._memory.append({
                        "parcel_digest": _str(digest), "namespace": _str(ns), "key": _str(key),
                        "value": _memory_text(value), "value_bytes": bytes(value) if isinstance(value, bytes) else None,
                        "updated_at": _memory_time(updated), "updated_at_raw": _int(updated), "path": str(path),
                    })
        except sqlite3.Error as err:
            diagnostics.report(path, "unreadable", f"could not read the SQLite file: {err}")
