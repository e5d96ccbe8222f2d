"""dispatch's SQLite store: ``session.sqlite`` (and any SQLite file holding dispatch's tables).

Table ``dispatch_sessions`` (``session_id, parcel_digest, entrypoint, turn_count,
payload_json``) holds one session per row, ``payload_json`` its ``CourierSession``; each row is
a conversation keyed on ``session_id``. Table ``dispatch_memory`` holds the parcels' memory, whose
rows belong to no conversation: they are handed over as rows of the ``memory`` table.

The file is opened read-only and never written; a rollback journal left by a crashed writer is
rolled back in a private copy (see :func:`database`). One file holds many sessions, so the
store is read whole when it is opened: its conversations are handed over decoded.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Generator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from ...core.files import NotRegularFile, file_kind
from ...core.handoff import Conversation, TableRows
from ...core.values import BadTime, datetime_of_ms, held, json_count, json_int, json_str
from ..base import Diagnostics
from .documents import printable_row
from .sessions import Found, history_entries, session_summary

__all__ = ["blocking_sidecar", "database", "read_store", "store_tables"]

#: The tables that make a SQLite file dispatch's.
_TABLES = frozenset({"dispatch_sessions", "dispatch_memory"})


def _memory_time(value: object) -> datetime | BadTime | None:
    """``updated_at`` as a time: Unix seconds, or milliseconds once past 1e11."""
    n = json_count(value)
    if n is None:
        return None
    return datetime_of_ms(n if n >= 100_000_000_000 else n * 1000)


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


def blocking_sidecar(path: Path) -> Path | None:
    """A journal, WAL or shared-memory file of ``path`` that is no regular file (SQLite would block on it)."""
    for suffix in ("-journal", "-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if file_kind(side) not in ("file", "missing", "folder", "dangling link"):
            return side
    return None


@contextlib.contextmanager
def database(path: Path, diagnostics: Diagnostics | None) -> Iterator[sqlite3.Connection]:
    """A read-only connection to a SQLite file, never writing to it.

    A rollback journal beside the file (a writer crashed mid-transaction, or is writing) makes
    a read-only connection fail: SQLite must roll the journal back first. The file and its
    journal are then copied to a private folder and the copy is opened, so SQLite rolls the copy
    back and the last committed state is read; the original is left as it is.
    """
    sidecar = blocking_sidecar(path)
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


def store_tables(path: Path) -> set[str]:
    """The tables of dispatch's in a SQLite file (none when it is no readable SQLite file)."""
    try:
        with database(path, None) as con:
            rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except (sqlite3.Error, OSError):
        return set()
    return {r[0] for r in rows} & _TABLES


def read_store(
    source: str, path: Path, diagnostics: Diagnostics, *, memory: bool
) -> Generator[Conversation | TableRows, None, None]:
    """Every session of a store, decoded, then (when ``memory``) its memory rows."""
    with contextlib.ExitStack() as stack:
        try:
            con = stack.enter_context(database(path, diagnostics))
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except (sqlite3.Error, OSError) as err:
            diagnostics.report(path, "unreadable", f"could not open the SQLite file read-only: {err}")
            return
        rows: list[dict[str, Any]] = []  # memory rows, kept as far as they could be read
        try:
            if "dispatch_sessions" in tables:
                yield from _sessions(source, con, path, diagnostics)
            if memory and "dispatch_memory" in tables:
                rows.extend(_memory(con, path, diagnostics))
        except sqlite3.Error as err:
            diagnostics.report(path, "unreadable", f"could not read the SQLite file: {err}")
        if rows:
            yield TableRows("memory", tuple(rows), str(path))


def _sessions(source: str, con: sqlite3.Connection, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
    rows = con.execute(
        "SELECT rowid, session_id, parcel_digest, entrypoint, turn_count, payload_json "
        "FROM dispatch_sessions ORDER BY rowid"
    ).fetchall()
    for rowid, sid, digest, entrypoint, turns, payload in rows:
        try:
            data = orjson.loads(payload)
        except (orjson.JSONDecodeError, TypeError) as err:
            diagnostics.report(path, "bad_json",
                               f"dispatch_sessions row {rowid} ({sid}): payload_json is not JSON ({err})", line=rowid)
            continue
        if not isinstance(data, dict) or not isinstance(data.get("history"), list):
            diagnostics.report(path, "not_a_session",
                               f"dispatch_sessions row {rowid} ({sid}): payload_json has no history list", line=rowid)
            continue
        data.setdefault("parcel_digest", digest)
        data.setdefault("entrypoint", entrypoint)
        data.setdefault("turn_count", turns)
        sid = sid if isinstance(sid, str) else json_str(data.get("id")) or str(rowid)
        entries = history_entries(data["history"])
        summary = session_summary(data, Found("sqlite", str(path), session_id=sid), len(entries), diagnostics)
        yield Conversation(source, sid, entries, key=("sqlite", str(path), sid), path=str(path), part=sid,
                           summary=summary)


def _memory(con: sqlite3.Connection, path: Path, diagnostics: Diagnostics) -> Iterator[dict[str, Any]]:
    cols = {r[1] for r in con.execute("PRAGMA table_info(dispatch_memory)")}
    digest_col = "parcel_digest" if "parcel_digest" in cols else "NULL"
    for digest, ns, key, value, updated in con.execute(
        f"SELECT {digest_col}, namespace, key, value, updated_at FROM dispatch_memory ORDER BY 1, namespace, key"
    ):
        yield printable_row({
            "parcel_digest": json_str(digest), "namespace": json_str(ns), "key": json_str(key),
            "value": _memory_text(value), "value_bytes": bytes(value) if isinstance(value, bytes) else None,
            "updated_at": held(_memory_time(updated), diagnostics, path,
                               f"dispatch_memory.updated_at (namespace {ns!r}, key {key!r})"),
            "updated_at_raw": json_int(updated), "path": str(path),
        })
