"""The murmur source: conversation records, joined to their sessions' traces.

murmur keeps one record per (record store, context id) at
``~/.murmur/conversations/<record>/<context-id>/conversation.jsonl``: one JSON message per line,
appended by the runtime while it runs. This source finds records under a murmur home, its
``conversations/`` folder, a record folder, a context folder, or one ``conversation.jsonl``,
and decodes each one as a stream, with the cursor core's line rules (so its messages are
exactly the ones :func:`~murmur_analysis.cursor.read_messages` pages):

* blank lines are skipped; a line that is not a JSON object with a string ``role`` is skipped
  and reported with its 1-based line number; line 1 may be the ``murmur.record`` header (not a
  message; its ``truncated`` marker is reported and sets ``truncated_dropped``);
* an unterminated last line that is not JSON is a line still being written: it is no message
  and is reported (``partial_line``) only once the file has been still for ``settle_seconds``.

Each message becomes one :class:`~murmur_analysis.model.Entry` (``raw`` keeps the line, so the
cursor core lowers it exactly as murmur's host does). Token usage, tool timings, compactions and
retention come from session traces (:mod:`.murmur_trace`); the join rules are in
``docs/tokens.md`` (``## murmur``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import orjson

from ..assembly import ToolEvent
from ..cursor import header_of, parse_line
from ..model import (
    Block,
    Entry,
    Text,
    ToolResult,
    ToolUse,
    block_from_wire,
    blocks_from_wire,
    uuid7_datetime,
)
from .base import Conversation, Diagnostics, EntryColumns, Source, ToolMeta
from .files import check_file, entry_is_dir, is_dir, listing, open_regular
from .murmur_columns import TITLE_CHARS, Row, chunk, entry_columns, fast_columns
from .murmur_join import Join, inference_row, ms_of
from .murmur_trace import TraceIndex, discover, trace_files

__all__ = ["MurmurSource"]

RECORD_NAME = "conversation.jsonl"
CONVERSATIONS = "conversations"
_CHUNK = 8 << 20
_PEEK = 1 << 20
_ROWS = 65_536
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_NOT_JSON = object()


@dataclass(frozen=True, slots=True)
class _Record:
    """One record file and the two path segments that name it."""

    path: Path
    record: str
    context_id: str

    @property
    def conversation_id(self) -> str:
        return f"{self.record}/{self.context_id}"


def _blocks(content: Any) -> tuple[Block, ...]:
    """``blocks_from_wire(content, "murmur")``, with the two commonest block shapes built directly.

    A ``{"text", "type"}`` text block and a ``{"id", "input", "name", "type"}`` tool call with a
    non-null input decode to exactly what :func:`~murmur_analysis.model.block_from_wire` gives;
    every other block goes through it.
    """
    if type(content) is not list:
        return blocks_from_wire(content, "murmur")
    out: list[Block] = []
    append = out.append
    for block in content:
        if type(block) is dict:
            kind = block.get("type")
            if kind == "text" and len(block) == 2:
                value = block.get("text")
                if type(value) is str:
                    append(Text(value))
                    continue
            elif kind == "tool_call" and len(block) == 4:
                call_id, name, args = block.get("id"), block.get("name"), block.get("input")
                if type(call_id) is str and type(name) is str and args is not None:
                    append(ToolUse(call_id, name, args))
                    continue
        append(block_from_wire(block, "murmur"))
    return tuple(out)


def _visible_dirs(path: Path, diagnostics: Diagnostics | None = None) -> list[Path]:
    """The folders directly inside ``path`` (links followed), hidden ones left out; links last.

    Links come after real folders, so that data reached both ways is named by its real folder.
    """
    found = [e for e in listing(path, diagnostics) if not e.name.startswith(".") and entry_is_dir(e)]
    return [Path(e.path) for e in sorted(found, key=lambda e: e.is_symlink())]


def _holds_record(folder: Path) -> bool:
    """Whether a ``conversation.jsonl`` of any kind stands in ``folder`` (never raises)."""
    return os.path.lexists(folder / RECORD_NAME)


class MurmurSource(Source):
    """murmur conversation records, with usage and tool timings from session traces.

    Args:
        sessions: session paths to join: a ``trace.jsonl``, a session workdir, a folder of
            them (``<manifest-dir>/workdir``, ``<workdir>/.murmur``), or a folder holding one of
            those. ``ma.load(path, options={"murmur": {"sessions": [...]}})``.
        discover_sessions: also join the traces found under the murmur home being loaded
            (``formations/*/*/.murmur/*/`` and ``sessions/*``).
        settle_seconds: how long a file must be unchanged before its unterminated, unparsable
            last line is reported as ``partial_line`` rather than taken as still being written.

    Example:
        >>> import murmur_analysis as ma
        >>> corpus = ma.load("~/.murmur", options={"murmur": {"sessions": ["~/proj/workdir"]}})  # doctest: +SKIP
    """

    name: ClassVar[str] = "murmur"
    description: ClassVar[str] = "murmur conversation records (~/.murmur/conversations), joined to session traces"

    def __init__(
        self,
        *,
        sessions: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
        discover_sessions: bool = True,
        settle_seconds: float = 5.0,
    ) -> None:
        if sessions is None:
            paths: list[Path] = []
        elif isinstance(sessions, str | os.PathLike):
            paths = [Path(os.path.expanduser(os.fspath(sessions)))]
        else:
            paths = [Path(os.path.expanduser(os.fspath(p))) for p in sessions]
        self.sessions = paths
        self.discover_sessions = discover_sessions
        self.settle_seconds = float(settle_seconds)
        self._index: TraceIndex | None = None

    # ---------------------------------------------------------------------------- finding

    def guess_can_open(self, path: Path) -> bool:
        """A ``conversation.jsonl``, or a folder holding records at one of murmur's depths."""
        if not is_dir(path):
            return path.name == RECORD_NAME and os.path.lexists(path)
        if _holds_record(path) or is_dir(path / CONVERSATIONS):
            return True
        for n, child in enumerate(_visible_dirs(path)):
            if n >= 64:
                break
            if _holds_record(child):
                return True
            if path.name == CONVERSATIONS and any(_holds_record(g) for g in _visible_dirs(child)[:64]):
                return True
        return False

    def _records(self, path: Path, diagnostics: Diagnostics) -> Iterator[_Record]:
        """Every record under ``path``; what stands where a record should and is no file is reported."""
        if not is_dir(path):
            if check_file(path, diagnostics, missing_ok=False):
                yield _Record(path, path.parent.parent.name, path.parent.name)
            return
        if _holds_record(path):
            if check_file(path / RECORD_NAME, diagnostics):
                yield _Record(path / RECORD_NAME, path.parent.name, path.name)
            return
        root = path / CONVERSATIONS if is_dir(path / CONVERSATIONS) else path
        children = _visible_dirs(root, diagnostics)
        if root is path and path.name != CONVERSATIONS and any(_holds_record(c) for c in children):
            records = [path]  # a record folder
        else:
            records = children
        for record in records:
            for context in _visible_dirs(record, diagnostics):
                file = context / RECORD_NAME
                if check_file(file, diagnostics):
                    yield _Record(file, record.name, context.name)

    @staticmethod
    def _home(path: Path) -> Path | None:
        if is_dir(path / CONVERSATIONS):
            return path
        for candidate in (path, *list(path.parents)[:3]):
            if candidate.name == CONVERSATIONS:
                return candidate.parent
        return None

    def _build_index(self, path: Path, diagnostics: Diagnostics) -> TraceIndex:
        traces: list[Path] = []
        for session in self.sessions:
            found = trace_files(session, diagnostics)
            if not found:
                diagnostics.report(session, "no_trace", "no trace.jsonl found at this sessions path")
            traces.extend(found)
        home = self._home(path) if self.discover_sessions else None
        if home is not None:
            traces.extend(discover(home, diagnostics))
        return TraceIndex(diagnostics, self.settle_seconds).add_all(traces)

    # ---------------------------------------------------------------------------- decoding

    def open(self, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
        """Every record under ``path``, each joined to its sessions (see the module doc)."""
        index = self._build_index(path, diagnostics)
        self._index = index
        by_context: dict[str, list[_Record]] = {}
        records = list(self._records(path, diagnostics))
        index.claim((rec.record, rec.context_id) for rec in records)
        for rec in records:
            by_context.setdefault(rec.context_id, []).append(rec)
            yield self._conversation(rec, index, diagnostics, columns=True)
        for event in index.retentions:
            if event.store not in (None, "records"):
                continue
            for target in event.targets:
                detail = (
                    f"retention ({event.reason or 'unknown reason'}) acted on context {target}"
                    + (f", dropping {event.messages_dropped} message(s)" if event.messages_dropped is not None else "")
                    + f"; recorded in {event.trace} line {event.line}"
                )
                recs = by_context.get(target)
                if recs:
                    for rec in recs:
                        diagnostics.report(rec.path, "retention", detail)
                else:
                    diagnostics.report(event.trace, "retention", detail + " (no such record loaded)", event.line)

    def extra_tables(self) -> Mapping[str, Any]:
        """Usage no conversation holds: ``inference`` events outside any task (the session's).

        murmur writes ``task_id`` null when no task is in scope, as for the calls of
        on-session-end hooks made after the task loop; those rows have ``conversation_id``
        null and name their ``session_id``.
        """
        if self._index is None or not self._index.session_usage:
            return {}
        from ..frames import usage_table  # the frame builder's own rows (frames imports the sources)

        return {"usage": usage_table(self.name, [inference_row(inf) for _trace, inf in self._index.session_usage])}

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode one record again (joined to the traces the last :meth:`open` read)."""
        assert isinstance(key, tuple) and len(key) == 3
        path, record, context_id = key
        index = self._index if self._index is not None else TraceIndex(diagnostics)
        return self._conversation(_Record(Path(path), record, context_id), index, diagnostics)

    def _conversation(
        self, rec: _Record, index: TraceIndex, diagnostics: Diagnostics, columns: bool = False
    ) -> Conversation:
        header = self._peek_header(rec.path)
        marker = header.get("truncated") if header else None
        dropped: int | None = None
        cutoff: int | None = None
        if isinstance(marker, dict):
            raw_dropped = marker.get("dropped")
            dropped = raw_dropped if type(raw_dropped) is int else None
            last_id = marker.get("last_dropped_id")
            at_ms = marker.get("at_ms")
            cutoff = ms_of(uuid7_datetime(last_id)) if isinstance(last_id, str) else None
            if cutoff is None:
                cutoff = at_ms if type(at_ms) is int else (1 << 62)
            diagnostics.report(
                rec.path,
                "truncated_record",
                f"retention dropped {raw_dropped} message(s) from the front of this record "
                f"(oldest surviving {marker.get('oldest_surviving_id')}); it is not the whole conversation",
                1,
            )
        tasks = index.for_record(rec.record, rec.context_id)
        conv = Conversation(
            source=self.name,
            conversation_id=rec.conversation_id,
            entries=(),
            key=(str(rec.path), rec.record, rec.context_id),
            path=str(rec.path),
            truncated_dropped=dropped,
        )
        join: Join | None = None
        if tasks:
            join = Join(tasks, cutoff)
            conv.usage = []
            conv.growth = []
            meta: dict[str, ToolMeta] = {}
            for task in tasks:
                meta.update(task.tool_meta)
            conv.tool_meta = meta
            conv.extra["sessions"] = sorted({t.session_id for t in tasks if t.session_id})
            summaries = [c.summary for t in tasks for c in t.compactions if c.summary is not None]
            if summaries:
                conv.extra["compaction_summaries"] = summaries
        # Two views of the same lines, each read on demand with a join of its own: the frame
        # builder reads ``columns``; handles and tests read ``entries``. Read one of them.
        conv.entries = self._stream(rec, conv, Join(tasks, cutoff) if join else None, diagnostics)
        if columns:
            conv.columns = self._columns(rec, conv, join, diagnostics)
        return conv

    @staticmethod
    def _peek_header(path: Path) -> dict[str, Any] | None:
        try:
            with open_regular(path) as f:
                first = f.readline(_PEEK).rstrip(b"\n")
        except OSError:
            return None
        if b"murmur.record" not in first:  # a header names its type; most records have none
            return None
        try:
            return header_of(parse_line(first))
        except ValueError:
            return None

    def _stream(
        self, rec: _Record, conv: Conversation, join: Join | None, diagnostics: Diagnostics
    ) -> Iterator[Entry]:
        """The record's entries, one line dict alive at a time (see :meth:`_lines`)."""
        entry_of = self._entry
        path = rec.path
        for position, (line_no, value) in enumerate(self._lines(rec, conv, join, diagnostics)):
            yield entry_of(value, position, line_no, conv, join, path, diagnostics)

    def _columns(
        self, rec: _Record, conv: Conversation, join: Join | None, diagnostics: Diagnostics
    ) -> Iterator[EntryColumns]:
        """The record's entries decoded straight to columns, in chunks of ``_ROWS`` entries.

        The two commonest line shapes (text and ``tool_call`` blocks; a tool message of text
        blocks) are decoded inline; any other line goes through :meth:`_entry` and the values
        are read off the entry, so both paths give the same values (tested).
        """
        path = rec.path
        rows: list[Row] = []
        events: list[tuple[int, list[ToolEvent]]] = []
        for position, (line_no, value) in enumerate(self._lines(rec, conv, join, diagnostics)):
            decoded = fast_columns(value, position, conv, join)
            if decoded is None:
                decoded = entry_columns(self._entry(value, position, line_no, conv, join, path, diagnostics))
            row, found = decoded
            if found:
                events.append((len(rows), found))
            rows.append(row)
            if len(rows) >= _ROWS:
                yield chunk(rows, events)
                rows, events = [], []
        if rows:
            yield chunk(rows, events)

    def _lines(
        self, rec: _Record, conv: Conversation, join: Join | None, diagnostics: Diagnostics
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """The record's message lines as ``(line number, parsed line)``, read in large chunks.

        When the stream ends it hands the joined usage and compaction rows to ``conv`` (the
        frame builder reads them after the entries).
        """
        path = rec.path
        try:
            f = open_regular(path)
        except OSError as err:
            diagnostics.report(path, "unreadable", f"could not open: {err.strerror or err}")
            return
        with f:
            try:
                st = os.fstat(f.fileno())
            except OSError as err:
                diagnostics.report(path, "unreadable", f"could not stat: {err.strerror or err}")
                return
            settled = time.time() - st.st_mtime >= self.settle_seconds
            remaining = st.st_size
            line_no = 0
            carry = b""
            loads = _loads
            decode_error = _JSONDecodeError
            while remaining > 0:
                try:
                    chunk = f.read(min(_CHUNK, remaining))
                except OSError as err:
                    diagnostics.report(path, "unreadable", f"read failed: {err.strerror or err}", line_no + 1)
                    break
                if not chunk:
                    break
                remaining -= len(chunk)
                data = carry + chunk if carry else chunk
                lines = data.split(b"\n")
                carry = lines.pop()
                del data
                for raw in lines:
                    line_no += 1
                    try:
                        value = loads(raw)
                    except decode_error:
                        value = self._slow_line(raw, line_no, True, settled, path, diagnostics)
                        if value is _NOT_JSON:
                            continue
                    if type(value) is dict and type(value.get("role")) is str:
                        yield line_no, value
                    elif not (line_no == 1 and header_of(value) is not None):
                        diagnostics.report(path, "not_a_message", f"line {line_no} is not a message and was skipped",
                                           line_no)
            if carry:
                line_no += 1
                value = self._slow_line(carry, line_no, False, settled, path, diagnostics)
                if value is not _NOT_JSON:
                    if isinstance(value, dict) and isinstance(value.get("role"), str):
                        yield line_no, value
                    elif not (line_no == 1 and header_of(value) is not None) and settled:
                        diagnostics.report(path, "partial_line",
                                           f"line {line_no} is not a message (an unterminated last line) and was "
                                           "skipped", line_no)
        if join is not None:
            conv.usage = join.usage_rows()
            conv.growth = join.growth_rows()

    @staticmethod
    def _slow_line(
        raw: bytes, line_no: int, terminated: bool, settled: bool, path: Path, diagnostics: Diagnostics
    ) -> Any:
        """A line orjson refused: blank, CR-ended, wider-than-64-bit numbers, or not JSON.

        Returns the parsed value, or ``_NOT_JSON`` for a line that is no JSON value (reported
        unless blank, or unless it is an unterminated last line of a file still being written).
        """
        if terminated and raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            if terminated or settled:
                diagnostics.report(path, "bad_utf8", f"line {line_no} is not valid UTF-8 and was skipped", line_no)
            return _NOT_JSON
        if not text.strip():
            return _NOT_JSON
        try:
            return parse_line(raw)
        except ValueError:
            if terminated:
                diagnostics.report(path, "not_a_message", f"line {line_no} is not a message and was skipped", line_no)
            elif settled:
                diagnostics.report(path, "partial_line",
                                   f"line {line_no} is not a message (an unterminated last line) and was skipped",
                                   line_no)
            return _NOT_JSON

    @staticmethod
    def _entry(
        line: dict[str, Any],
        position: int,
        line_no: int,
        conv: Conversation,
        join: Join | None,
        path: Path,
        diagnostics: Diagnostics,
    ) -> Entry:
        role: str = line["role"]
        msg_id = line.get("id")
        if type(msg_id) is not str:
            msg_id = None
        created = uuid7_datetime(msg_id) if msg_id is not None else None
        source_id = line.get("source_id")
        content = line.get("content")
        blocks = _blocks(content) if content is not None else ()
        call_id: str | None = None
        is_error: bool | None = None
        if role == "tool":
            raw_call = line.get("tool_call_id")
            call_id = raw_call if type(raw_call) is str else None
            raw_error = line.get("is_error")
            is_error = raw_error if type(raw_error) is bool else None
            if call_id is not None:
                blocks = (ToolResult(call_id, blocks if content is not None else None, is_error),)
            else:
                diagnostics.report(path, "missing_tool_call_id",
                                   f"line {line_no}: a tool message names no tool_call_id; kept as text", line_no)
        elif conv.title is None and role == "user":
            for block in blocks:
                if isinstance(block, Text) and block.text.strip():
                    conv.title = block.text.strip().splitlines()[0][:TITLE_CHARS]
                    break
        usage = model = None
        if join is not None:
            found = join.claim(position, msg_id, role, ms_of(created))
            if found is not None:
                usage, model = found.usage, found.model
        return Entry(
            position=position,
            side=role,
            blocks=blocks,
            id=msg_id,
            model=model,
            created_at=created,
            source_id=source_id if type(source_id) is str else None,
            usage=usage,
            tool_call_id=call_id,
            is_error=is_error,
            raw=line,
        )
