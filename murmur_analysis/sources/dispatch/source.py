"""The dispatch source: what a path may be, and the conversations found there.

A session file or trace is handed over before it is read: its conversation names the file,
and its entries are read (and its ``dispatch_sessions`` row made) only when the conversation is
loaded. A run record, which names the run and where its session lives, is read when it is met.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Hashable, Iterator, Mapping
from pathlib import Path
from typing import ClassVar

from ...core.files import NOT_REGULAR, check_file, identity, is_dir
from ...core.handoff import Conversation, TableRows
from ...core.identity import file_identity
from ...core.values import json_str
from ..base import READ_ALL, Diagnostics, ReadContext, Source
from .detect import guess_can_open
from .documents import read_json
from .layout import (
    DB_SUFFIXES,
    FINAL_SUFFIX,
    SESSION_SUFFIX,
    TRACE_SUFFIX,
    beside,
    files,
    is_channel_session,
    run_id,
    stem,
    trace_id,
)
from .runs import run_record, session_of
from .sessions import Found, read_session
from .store import blocking_sidecar, read_store, store_tables
from .traces import read_trace

__all__ = ["DispatchSource"]

#: The files a walk has met, by identity.
_Walked = set[tuple[int, int]]


class DispatchSource(Source):
    """dispatch courier sessions, runs, SQLite session mounts and eval traces."""

    name: ClassVar[str] = "dispatch"
    description: ClassVar[str] = "dispatch courier sessions (session files, runs, session.sqlite, eval traces)"

    # -- detection --------------------------------------------------------------------------

    def guess_can_open(self, path: Path) -> bool:
        """A session, trace, run record or dispatch SQLite file, or a folder holding them."""
        return guess_can_open(path)

    # -- reading ----------------------------------------------------------------------------

    def open(
        self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL
    ) -> Iterator[Conversation | TableRows]:
        """Every session and trace under ``path``, each read when loaded; a store's memory rows.

        Conversations are keyed on the file they live in: courier session ids are minted per
        process (``native-<digest>-1`` in every run), so two files may carry the same id, and
        both load; the id is the ``session_id`` column of ``dispatch_sessions``. That table is
        in every load that opened dispatch data, even one whose sessions all prove unreadable.
        """
        yield TableRows("dispatch_sessions", (), str(path))
        if not is_dir(path):
            yield from self._file(path, diagnostics, {}, lone=True)
            return
        found = list(files(path, diagnostics))
        walked = {ident for f in found if (ident := identity(f)) is not None}
        # Run records whose session lives elsewhere (``session_file``): the session is read with
        # its record, when the walk meets it or, outside the walk, when the walk meets the record.
        claimed: dict[tuple[int, int], Path] = {}
        for f in found:
            if run_id(f.name) is not None and not os.path.lexists(beside(f, SESSION_SUFFIX)):
                session = session_of(f, Diagnostics(self.name))
                ident = identity(session) if session is not None else None
                if ident is not None:
                    claimed.setdefault(ident, f)
        for f in found:
            yield from self._file(f, diagnostics, claimed, walked=walked)

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """The session or trace ``key`` names, read again when its entries are."""
        if isinstance(key, tuple) and len(key) >= 2:
            kind, where = key[0], Path(key[1])
            if kind == "file":
                return self._session_file(where, Path(key[2]) if len(key) > 2 and key[2] else None, diagnostics)
            if kind == "trace":
                return self._trace(where, diagnostics)
            if kind == "sqlite":
                with contextlib.closing(read_store(self.name, where, diagnostics, memory=False)) as found:
                    conv = next((c for c in found if isinstance(c, Conversation) and c.key == key), None)
                if conv is not None:
                    return conv
        if isinstance(key, tuple) and len(key) >= 2:
            return Conversation(self.name, str(key[-1]), [], key=key, path=str(key[1]))
        return Conversation(self.name, str(key), [], key=key)

    def fingerprint(self, conv: Conversation) -> object:
        """The files the conversation is read from, and its run's final snapshot (read with its record)."""
        files_ = self.file_identities(conv)
        key = conv.key
        if files_ is None or not (isinstance(key, tuple) and len(key) > 2 and isinstance(key[2], str)):
            return files_
        final = beside(Path(key[2]), FINAL_SUFFIX)
        if not os.path.lexists(final):
            return files_
        ident = file_identity(final)
        return None if ident is None else [*files_, (str(final), ident)]

    def _file(
        self,
        path: Path,
        diagnostics: Diagnostics,
        claimed: Mapping[tuple[int, int], Path],
        *,
        lone: bool = False,
        walked: _Walked | None = None,
    ) -> Iterator[Conversation | TableRows]:
        name = path.name
        rid = run_id(name)
        if rid is not None:  # a run record: its session is read with it
            if check_file(path, diagnostics, missing_ok=False):
                yield from self._record(path, rid, diagnostics, claimed, lone=lone, walked=walked)
            return
        if not name.endswith((SESSION_SUFFIX, TRACE_SUFFIX, *DB_SUFFIXES)):
            return
        if not check_file(path, diagnostics, missing_ok=False):
            return
        if name.endswith(SESSION_SUFFIX):
            record: Path | None = beside(path, ".json")
            if not os.path.lexists(beside(path, ".json")) and not os.path.lexists(beside(path, FINAL_SUFFIX)):
                ident = identity(path)  # no record beside it: a record elsewhere may name it
                record = claimed.get(ident) if ident is not None else None
            yield self._session_file(path, record, diagnostics)
        elif name.endswith(TRACE_SUFFIX):
            yield self._trace(path, diagnostics)
        elif (sidecar := blocking_sidecar(path)) is not None:
            diagnostics.report(sidecar, NOT_REGULAR, "a FIFO, socket or device beside a SQLite file: SQLite would "
                               "block on it, so the database is not read")
        elif name == "session.sqlite" or store_tables(path):
            # a store reached twice gives its memory rows once: the loader admits rows per file
            yield from read_store(self.name, path, diagnostics, memory=True)

    def _record(
        self,
        path: Path,
        rid: str,
        diagnostics: Diagnostics,
        claimed: Mapping[tuple[int, int], Path],
        *,
        lone: bool,
        walked: _Walked | None,
    ) -> Iterator[Conversation | TableRows]:
        """A run record met by the walk (or given alone): the session it names, unless the walk reads it."""
        if os.path.lexists(beside(path, SESSION_SUFFIX)):
            if lone:  # a run record given alone: read the session beside it
                yield from self._file(beside(path, SESSION_SUFFIX), diagnostics, claimed)
            return
        session = session_of(path, diagnostics)
        if session is None:
            doc = read_json(path, Diagnostics(self.name))
            named = json_str(doc.get("session_file")) if isinstance(doc, dict) else None
            diagnostics.report(path, "missing_session",
                               f"run record {rid}: its session ({named or rid + SESSION_SUFFIX}) "
                               "was not found; no history to read")
        elif lone or walked is None or identity(session) not in walked:
            yield self._session_file(session, path, diagnostics)

    def _session_file(self, path: Path, record_path: Path | None, diagnostics: Diagnostics) -> Conversation:
        """A session file's conversation, named from its path and its run record; the file is read when loaded."""
        record = run_record(record_path, diagnostics) if record_path is not None else None
        channel = path.parent.name if is_channel_session(path.name) and record is None else None
        kind = "run" if record is not None else ("channel" if channel else "session_file")
        name = stem(path.name, SESSION_SUFFIX)
        if record is not None:
            conv_id = json_str(record.get("run_id")) or (run_id(record_path.name) if record_path else None) or name
        else:
            conv_id = f"{channel}/{name}" if channel else name
        key = ("file", str(path), str(record_path) if record is not None else None)
        entries = read_session(Found(kind, str(path), record, channel,
                                     record_path=str(record_path) if record is not None else None), diagnostics)
        return Conversation(self.name, conv_id, entries, key=key, path=str(path))

    def _trace(self, path: Path, diagnostics: Diagnostics) -> Conversation:
        """An eval trace's conversation, named from its path; the file is read when loaded."""
        return Conversation(self.name, trace_id(path), read_trace(path, diagnostics), key=("trace", str(path)),
                            path=str(path))
