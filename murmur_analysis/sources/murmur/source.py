"""The murmur source: conversation records, joined to their sessions' traces.

murmur keeps one record per (record store, context id) at
``~/.murmur/conversations/<record>/<context-id>/conversation.jsonl``: one JSON message per line,
appended by the runtime while it runs. This source finds records under a murmur home, its
``conversations/`` folder, a record folder, a context folder, or one ``conversation.jsonl``.
Every line is decided by murmur's line rules (:mod:`.record`, serde_json itself, the same
decision :func:`~murmur_analysis.sources.murmur.reader.read_messages` pages by):

* blank lines are skipped; a line that is not a JSON object with a string ``role`` is skipped
  and reported with its 1-based line number; line 1 may be the ``murmur.record`` header (not a
  message; its ``truncated`` marker is reported and sets ``truncated_dropped``);
* an unterminated last line that is not JSON is a line still being written: it is no message
  and is reported (``partial_line``) only once the file has been still for ``settle_seconds``.

For the tables, the records are scanned natively, many at once on every core
(:func:`~.record.scan_records`): each message line becomes one row of typed columns and the
record's tool events are paired by the assembly core's walk in the same pass. The next group of
records is scanned on a thread of its own while the consumer works through the one before.
Reopened, each message becomes one :class:`~murmur_analysis.core.model.Entry` (:mod:`.entries`).
Token usage, tool timings, compactions and retention come from session traces (:mod:`.trace`);
the join rules are in ``docs/tokens.md`` (``## murmur``).

Nothing is written into a conversation once it is made: what is known before its lines are read
(the sessions, tool timings, retention) goes in at construction, with the scanned columns'
:class:`~murmur_analysis.core.handoff.Summary` (usage, compactions, title, pairing); the entries
stream returns its own summary when it ends. The usage of no conversation (a session's own
spend) is yielded beside the conversations as ``usage`` rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import orjson
import pyarrow as pa

from ...core.files import check_file, is_dir, open_regular, settled, steady
from ...core.handoff import Conversation, EntryColumns, ResumePoint, Summary, TableRows, ToolMeta
from ...core.identity import file_identity
from ...core.paths import user_path
from ...core.values import JSON, held, json_int, uuid7_datetime, uuid7_ms
from ..base import READ_ALL, Diagnostics, ReadContext, Source
from ..resume import Tail
from .append import cut as line_cut
from .append import resume_point, scan_range, tail_of, traces_unchanged
from .engine import pairing, scanned_columns
from .entries import report_skipped, stream, title_of
from .join import Join, inference_row, learned, usage_columns
from .layout import CONVERSATIONS, RECORD_NAME, guess_can_open, holds_record, visible_dirs
from .record import header_of, scan_records, skipped_detail, truncation, unreadable
from .sessions import discover, trace_files
from .trace import TraceIndex

if TYPE_CHECKING:
    from .engine import RecordScan

__all__ = ["NO_SESSION_TRACES", "MurmurSource"]

#: The diagnostics kind of a murmur home whose records load with no session trace found or given:
#: murmur keeps token usage and tool timings in the traces, so its usage is null.
NO_SESSION_TRACES = "no_session_traces"

_PEEK = 1 << 20
# Bytes of records decoded ahead of the one handed over, when the consumer sets no bound: two
# groups of half this each, every group scanned together (every core busy, one native call).
_SCAN_BYTES = 256 << 20
_STR = pa.string()


def _id_times(path: Path, scanned: RecordScan) -> list[tuple[int, str, str]]:
    """``(line, kind, detail)`` of each scanned message whose id's UUIDv7 time no timestamp holds.

    The engine leaves ``created_at`` null for an id that is no UUIDv7 and for one whose time is
    past year 9999; only the second is written but unreadable, and is reported.
    """
    created = scanned.column("created_ms")
    if not created.null_count:  # every id's time is held (the usual record): nothing to look at
        return []
    ids = scanned.column("id")
    unknown = np.flatnonzero(created.is_null().to_numpy(zero_copy_only=False) & ids.is_valid().to_numpy(
        zero_copy_only=False))
    if not len(unknown):
        return []
    lines = scanned.line_numbers()
    found = Diagnostics("murmur")
    for row in unknown.tolist():
        held(uuid7_datetime(ids[row].as_py()), found, path, "message id", int(lines[row]))
    return [(d.line or 0, d.kind, d.detail) for d in found.rows]


@dataclass(frozen=True, slots=True)
class _Record:
    """One record file and the two path segments that name it."""

    path: Path
    record: str
    context_id: str

    @property
    def conversation_id(self) -> str:
        return f"{self.record}/{self.context_id}"


def _groups(records: list[_Record], limit: int = _SCAN_BYTES) -> Iterator[list[_Record]]:
    """Records in order, in groups of about ``limit`` bytes of files."""
    group: list[_Record] = []
    size = 0
    for rec in records:
        with contextlib.suppress(OSError):
            size += rec.path.stat().st_size
        group.append(rec)
        if size >= limit:
            yield group
            group, size = [], 0
    if group:
        yield group


def _scanned_ahead(groups: Iterator[tuple[list[_Record], list[bool]]],
                   text: bool) -> Iterator[tuple[list[_Record], list[RecordScan | None]]]:
    """Each group with its records' scans (``None``: not scanned), the next group scanned while this one is used.

    One scan runs at a time, on a thread of its own: the next group's starts once this group's
    is done, and runs while the caller works through this one. A group none of whose records is
    wanted starts no scan.
    """

    def scan(group: list[_Record], wanted: list[bool]) -> list[RecordScan | None]:
        found = iter(scan_records([str(rec.path) for rec, w in zip(group, wanted, strict=True) if w], text))
        return [next(found) if w else None for w in wanted]

    def unscanned(group: list[_Record]) -> Future[list[RecordScan | None]]:
        found: Future[list[RecordScan | None]] = Future()
        found.set_result([None] * len(group))
        return found

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="murmur-scan")
    try:
        pending: tuple[list[_Record], Future[list[RecordScan | None]]] | None = None
        for group, wanted in groups:
            # the next group's scan starts once the one before it is done
            ahead = (group, pool.submit(scan, group, wanted) if any(wanted) else unscanned(group))
            if pending is not None:
                yield pending[0], pending[1].result()
            pending = ahead
        if pending is not None:
            yield pending[0], pending[1].result()
    finally:  # a consumer that stops early waits for the scan under way, and no other starts
        pool.shutdown(wait=True, cancel_futures=True)


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
            paths = [user_path(sessions)]
        else:
            paths = [user_path(p) for p in sessions]
        self.sessions = paths
        self.discover_sessions = discover_sessions
        self.settle_seconds = float(settle_seconds)
        self._index: TraceIndex | None = None
        self._traces: list[Path] = []
        self._traces_identity: Any = None

    # ---------------------------------------------------------------------------- finding

    def guess_can_open(self, path: Path) -> bool:
        """A ``conversation.jsonl``, or a folder holding records at one of murmur's depths."""
        return guess_can_open(path)

    def _records(self, path: Path, diagnostics: Diagnostics) -> Iterator[_Record]:
        """Every record under ``path``; what stands where a record should and is no file is reported."""
        if not is_dir(path):
            if check_file(path, diagnostics, missing_ok=False):
                yield _Record(path, path.parent.parent.name, path.parent.name)
            return
        if holds_record(path):
            if check_file(path / RECORD_NAME, diagnostics):
                yield _Record(path / RECORD_NAME, path.parent.name, path.name)
            return
        root = path / CONVERSATIONS if is_dir(path / CONVERSATIONS) else path
        children = visible_dirs(root, diagnostics)
        if root is path and path.name != CONVERSATIONS and any(holds_record(c) for c in children):
            records = [path]  # a record folder
        else:
            records = children
        for record in records:
            for context in visible_dirs(record, diagnostics):
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
        self._traces, self._traces_identity = traces, None
        return TraceIndex(diagnostics, self.settle_seconds).add_all(traces)

    # ---------------------------------------------------------------------------- decoding

    def open(
        self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL
    ) -> Iterator[Conversation | TableRows]:
        """Every record under ``path``, each joined to its sessions (see the module doc).

        Then the usage no conversation holds, as ``usage`` rows: ``inference`` events outside
        any task (the session's). murmur writes ``task_id`` null when no task is in scope, as for
        the calls of on-session-end hooks made after the task loop; those rows have
        ``conversation_id`` null and name their ``session_id``.
        """
        index = self._build_index(path, diagnostics)
        self._index = index
        by_context: dict[str, list[_Record]] = {}
        records = list(self._records(path, diagnostics))
        if records and not self._traces:
            diagnostics.report(
                self._home(path) or path, NO_SESSION_TRACES,
                "murmur keeps token usage and tool timings in each session's trace.jsonl, in the session's work dir "
                "outside the murmur home; none was found under this home or given, so its records load with null "
                "usage (name the work dirs: the murmur source's sessions option, --sessions DIR on the command line)")
        index.claim((rec.record, rec.context_id) for rec in records)
        # Two groups are decoded ahead at most, each half the read-ahead: the one being handed
        # over, and the next, scanned meanwhile so the consumer's work overlaps the scan.
        limit = max(1, (ctx.read_ahead or _SCAN_BYTES) // 2)
        for group, scanned in _scanned_ahead(self._wanted(_groups(records, limit), ctx), ctx.text):
            for rec, scan in zip(group, scanned, strict=True):
                by_context.setdefault(rec.context_id, []).append(rec)
                yield self._unread(rec) if scan is None else self._conversation(rec, index, diagnostics, scan)
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
        if index.session_usage:
            yield TableRows("usage", tuple(usage_columns(inference_row(inf)) for _trace, inf in index.session_usage))

    def _wanted(self, groups: Iterator[list[_Record]], ctx: ReadContext) -> Iterator[tuple[list[_Record], list[bool]]]:
        """Each group, and which of its records are scanned: not those the consumer will not read (``ctx.skip``)."""
        skip = ctx.skip
        for group in groups:
            yield group, [skip is None or not skip(self._unread(rec)) for rec in group]

    def fingerprint(self, conv: Conversation) -> object:
        """The identities of the record and of every trace it is joined to, and whether each is steady.

        An unterminated last line is reported only once its file has been still for
        ``settle_seconds``, so for a file that ends mid-line, whether it has settled is part of
        what its rows depend on (:func:`~murmur_analysis.sources.murmur.entries.steady`); a file
        that ends at a line's end reads the same either way.
        """
        own = self.file_identities(conv)
        if own is None:
            return None
        if self._traces_identity is None:
            # Every record is joined against the same traces: their identities go in as one
            # digest (the state stays small), with the newest one whole (its time tells whether
            # a trace changed while it was read).
            identities = [(str(t), file_identity(t), steady(t, self.settle_seconds)) for t in self._traces]
            newest = max((i for _, i, _ in identities if i is not None), key=lambda i: int(i["mtime_ns"]),
                         default=None)
            digest = hashlib.blake2b(orjson.dumps(identities), digest_size=16).hexdigest()
            self._traces_identity = [digest, newest]
        return [own, steady(Path(own[0][0]), self.settle_seconds), self._traces_identity]

    def _unread(self, rec: _Record) -> Conversation:
        """``rec``'s conversation as found, nothing of it read (for a consumer that skips it)."""
        return Conversation(source=self.name, conversation_id=rec.conversation_id, entries=(),
                            key=(str(rec.path), rec.record, rec.context_id), path=str(rec.path))

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode one record again (joined to the traces the last :meth:`open` read)."""
        assert isinstance(key, tuple) and len(key) == 3
        path, record, context_id = key
        index = self._index if self._index is not None else TraceIndex(diagnostics)
        return self._conversation(_Record(Path(path), record, context_id), index, diagnostics)

    def _conversation(
        self, rec: _Record, index: TraceIndex, diagnostics: Diagnostics, scanned: RecordScan | None = None
    ) -> Conversation:
        key, where = (str(rec.path), rec.record, rec.context_id), str(rec.path)
        if scanned is not None:
            skipped = [skipped_detail(line_no, code) for line_no, code in scanned.diagnostics]
            bad = unreadable(skipped, self._settled(rec.path)) if skipped else None
            if bad is not None:
                diagnostics.report(rec.path, bad[1], bad[2], bad[0])
                return Conversation(source=self.name, conversation_id=rec.conversation_id, entries=(), key=key,
                                    path=where)
        if scanned is None:
            header = self._peek_header(rec.path)
        else:
            header = header_of(scanned.header) if scanned.header is not None else None
        dropped, cutoff = self._truncation(rec.path, header, diagnostics)
        tasks = index.for_record(rec.record, rec.context_id)
        meta: dict[str, ToolMeta] = {}
        extra: dict[str, Any] = {}
        if tasks:
            for task in tasks:
                meta.update(task.tool_meta)
            extra["sessions"] = sorted({t.session_id for t in tasks if t.session_id})
            summaries = [c.summary for t in tasks for c in t.compactions if c.summary is not None]
            if summaries:
                extra["compaction_summaries"] = summaries
        # Two views of the same lines, each with a join of its own: the frame builder reads the
        # scanned ``columns``; handles and tests read ``entries`` (decoded when iterated, and then
        # reporting their lines only when they are the view asked for).
        stream_diagnostics = Diagnostics(self.name) if scanned is not None else diagnostics
        entries = stream(rec.path, Join(tasks, cutoff) if tasks else None, self.settle_seconds, stream_diagnostics)
        columns: list[EntryColumns] | None = None
        summary: Summary | None = None
        point: ResumePoint | None = None
        if scanned is not None:
            chunk, summary = self._columns(rec, scanned, skipped, Join(tasks, cutoff) if tasks else None, diagnostics)
            columns = [chunk]
            # Where an export may read on from, when the record grows (not for a record joined to traces).
            point = resume_point(scanned) if not tasks else None
        return Conversation(source=self.name, conversation_id=rec.conversation_id, entries=entries, key=key,
                            path=where, tool_meta=meta, truncated_dropped=dropped, extra=extra, columns=columns,
                            summary=summary, resume=point)

    # ------------------------------------------------------------------ reading on (Resumable)

    def resumable(self, conv: Conversation, before: JSON, now: JSON) -> bool:
        """Whether ``conv`` may be read on from a point: a record joined to no session trace, the traces unchanged.

        A record joined to traces is read whole (the join's state spans the whole record), and
        so is every record when a trace changed (a changed trace may join any record).
        """
        if not isinstance(conv.key, tuple) or len(conv.key) != 3 or self._index is None:
            return False
        if self._index.for_record(conv.key[1], conv.key[2]):
            return False
        return before is None or traces_unchanged(before, now)

    def read_range(self, conv: Conversation, fd: int, start: int, end: int, point: ResumePoint,
                   diagnostics: Diagnostics, text: bool, scratch: Path) -> Tail | None:
        """Decode the bytes ``start:end`` of ``conv``'s record after ``point`` (see :class:`Resumable`).

        ``None`` also when a line of them is not UTF-8 (murmur then reads nothing of the record).
        """
        assert isinstance(conv.key, tuple) and len(conv.key) == 3
        path, record, context = conv.key
        scanned = scan_range(fd, start, end, point, text, scratch)
        if scanned is None:
            return None
        if unreadable([skipped_detail(n, c) for n, c in scanned.diagnostics], self._settled(Path(path))):
            return None
        assert self._index is not None
        read = self._conversation(_Record(Path(path), record, context), self._index, diagnostics, scanned)
        return tail_of(replace(read, conversation_id=conv.conversation_id, extra=conv.extra, resume=None),
                       scanned, point)

    def read_whole(self, conv: Conversation, diagnostics: Diagnostics, text: bool) -> Conversation:
        """``conv``'s record scanned whole, as :meth:`open` reads it (joined to the traces it read)."""
        assert isinstance(conv.key, tuple) and len(conv.key) == 3
        path, record, context = conv.key
        index = self._index if self._index is not None else TraceIndex(diagnostics)
        scanned = scan_records([path], text)[0]
        read = self._conversation(_Record(Path(path), record, context), index, diagnostics, scanned)
        return replace(read, conversation_id=conv.conversation_id)

    def cut(self, fd: int, target: int, end: int, window: int) -> int | None:
        """Where a range begins after ``target``: a new run of one side if one is near (:func:`.append.cut`)."""
        return line_cut(fd, target, end, window)

    @staticmethod
    def _truncation(
        path: Path, header: dict[str, Any] | None, diagnostics: Diagnostics
    ) -> tuple[int | None, int | None]:
        """The messages retention dropped from the record's front, and when (ms), from its header."""
        report = truncation(header)
        marker = header.get("truncated") if header else None
        if report is None or not isinstance(marker, dict):
            return None, None
        diagnostics.report(path, report.kind, report.detail, report.line)
        last_id, at_ms = marker.get("last_dropped_id"), json_int(marker.get("at_ms"))
        cutoff = held(uuid7_ms(last_id), diagnostics, path, "truncated.last_dropped_id", 1) if isinstance(
            last_id, str) else None
        if cutoff is None:
            cutoff = at_ms if at_ms is not None else (1 << 62)
        return json_int(marker.get("dropped")), cutoff

    @staticmethod
    def _peek_header(path: Path) -> dict[str, Any] | None:
        try:
            with open_regular(path) as f:
                first = f.readline(_PEEK).rstrip(b"\n")
        except OSError:
            return None
        return header_of(first)  # its type may be written with escapes: serde decides

    def _settled(self, path: Path) -> bool:
        return settled(path, self.settle_seconds)

    def _columns(
        self, rec: _Record, scanned: RecordScan, skipped: Sequence[tuple[int, str, str]], join: Join | None,
        diagnostics: Diagnostics,
    ) -> tuple[EntryColumns, Summary]:
        """The record's message rows as scanned by the native engine, joined to its traces, and what they tell.

        ``skipped``: ``(line, kind, detail)`` of each line the scan skipped (:func:`skipped_detail`).
        """
        path = rec.path
        if scanned.error is not None:
            diagnostics.report(path, "unreadable", scanned.error)
        # In line order, as the entries report them: a line's id time before what else it has.
        reported = sorted([*_id_times(path, scanned), *skipped], key=lambda r: r[0])
        if reported:  # whether the record has settled matters to its skipped lines alone
            report_skipped(path, reported, self._settled(path), diagnostics)
        title = title_of(scanned.title) if scanned.title is not None else None
        if join is None:
            return scanned_columns(scanned, None, None), learned(None, title, pairing(scanned))
        models: list[str | None] = []
        usages: list[Any] = []
        triples = zip(scanned.column("id").to_pylist(), scanned.column("role").to_pylist(),
                      scanned.column("created_ms").to_pylist(), strict=True)
        for position, (msg_id, side, ms) in enumerate(triples):
            found = join.claim(position, msg_id, side, ms)
            models.append(found.model if found is not None else None)
            usages.append(found.usage if found is not None else None)
        usage = usages if any(u is not None for u in usages) else None
        return scanned_columns(scanned, pa.array(models, _STR), usage), learned(join, title, pairing(scanned))
