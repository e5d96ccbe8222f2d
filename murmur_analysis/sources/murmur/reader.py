"""murmur's record reader: the one reader of ``conversation.jsonl`` files, for pages and walks.

:class:`RecordReader` keeps, per record, the line index the native line rules build
(:func:`~murmur_analysis.sources.murmur.record.index_lines`: which lines are messages, at which
offsets, the header), keyed on the file's identity (:mod:`murmur_analysis.core.identity`) and
persisted between processes (:mod:`murmur_analysis.sources.murmur.index`); a record that grew is read
from where it grew, one that was replaced is read again. The cursor core
(:mod:`murmur_analysis.algorithms.cursor`) does the paging arithmetic over that index.

An index never decides what is served: every line served from it must be a whole line of the
record that is a message by the line rules, and the lines between two lines served must hold no
message (:func:`_check_lines`). When that fails (the record changed in a way its identity
missed, or the index is wrong), the index is dropped and the record parsed whole. The check
costs a scan for the line breaks of the lines served (each is parsed to be served anyway) and
one for a ``{`` in the lines between them (no message line lacks one).
"""

from __future__ import annotations

import errno
import os
import threading
from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...algorithms.cursor import Page, PageMessage, Reports, encode_cursor, window
from ...core.diagnostics import Diagnostic
from ...core.files import NotRegularFile, open_regular
from ...core.paths import user_path
from ...core.serde import lower
from ...core.values import json_count
from ...errors import ReadMessagesError
from .index import IndexStore, add_runs, classify, probe, subtract_runs
from .index import LineIndex as _Snapshot
from .record import LineKind, decide, header_of, index_lines, no_message_in, parse, skipped_line, truncation

__all__ = ["RecordReader", "read_messages", "walk"]

_CHUNK = 64 << 20
T = TypeVar("T")
_DEFAULT_STORE = IndexStore()


@dataclass(frozen=True, slots=True)
class _SkippedRow:
    """The report of a skipped line of one record that ends with a newline (a :class:`Reports` row)."""

    path: str

    def __call__(self, line: int) -> Diagnostic:
        return Diagnostic("murmur", self.path, *skipped_line(line, True))


@dataclass(slots=True)
class _Reported:
    """What a reader has reported about one record: runs of skipped lines, and the other reports' keys."""

    runs: array[int] = field(default_factory=lambda: array("q"))
    keys: set[tuple[int | None, str, str]] = field(default_factory=set)


class RecordReader:
    """One reader of murmur records: a parse cache and a memory of what it has reported.

    Re-reading for each page would make a walk quadratic, so a reader keeps, per record, the
    byte offsets of its message lines and the identity of the file they came from (see
    :mod:`murmur_analysis.core.identity`). A record that only grew is read from where the last parse
    stopped; one that was replaced (a retention rewrite, even one that reuses the inode and is
    larger) is parsed again from the start. The offsets of a big record are also kept in the
    cache folder, so a fresh process serves its first page without parsing it.

    Every skipped line, and a truncation marker, is reported once per reader in
    :attr:`Page.reports` and kept in :attr:`diagnostics`. Skipped lines are remembered and
    reported as runs of line numbers (:class:`~murmur_analysis.algorithms.cursor.Reports`), so a page of a
    record with a million of them costs no more than one of a clean record. What a long-lived
    reader remembers is bounded: :attr:`diagnostics` keeps the newest ``max_diagnostics`` rows,
    and the memory of what was reported covers the ``max_remembered`` records read most recently
    (a record read again after that is reported again).

    Args:
        max_records: how many records' offsets to keep in memory (least recently used go first).
        index: where persisted line indexes are kept; ``None`` keeps none. By default the
            cache folder (:func:`murmur_analysis.core.cache.cache_dir`), for records of 1 MiB or more.
        max_diagnostics: how many rows :attr:`diagnostics` keeps.
        max_remembered: how many records' reports (and retention counts) are remembered.
    """

    def __init__(
        self,
        max_records: int = 16,
        *,
        index: IndexStore | None = _DEFAULT_STORE,
        max_diagnostics: int = 10_000,
        max_remembered: int = 4096,
    ) -> None:
        self._snapshots: OrderedDict[str, _Snapshot] = OrderedDict()
        self._reported: OrderedDict[str, _Reported] = OrderedDict()
        self._served: OrderedDict[str, int] = OrderedDict()  # retention's dropped count when last served
        self._max = max_records
        self._max_diagnostics = max_diagnostics
        self._max_remembered = max_remembered
        self._store = index
        self._lock = threading.Lock()
        self._log: deque[Reports] = deque()  # what was reported, newest last; the newest rows are diagnostics
        self._logged = 0  # rows in _log
        self.reads = 0  # parses that reached the record file; what pins a walk's cost
        self.parsed_lines = 0  # record lines parsed; a persisted index saves a fresh reader all of them

    def read_messages(
        self,
        record: str | os.PathLike[str],
        cursor: str | None = None,
        limit: int = 100,
        *,
        granted: bool = True,
    ) -> Page:
        """One page of a murmur record, newest first (see :func:`read_messages`)."""
        if not granted:
            raise ReadMessagesError("not-granted")
        path = os.fspath(user_path(record))
        with self._lock:
            fd = _open(path)
            if fd is None:
                return Page((), None, 0)
            try:
                snap, (start, messages) = self._serve(path, fd, lambda snap: _page(fd, snap, cursor, limit))
            except OSError as err:
                raise ReadMessagesError("unavailable", _reason(err)) from err
            finally:
                os.close(fd)
            runs, rest = self._report(snap)
            reports = Reports(runs, _SkippedRow(path), rest + self._shift(path, snap, cursor))
            return Page(messages, encode_cursor(start) if start > 0 else None, len(snap.starts), reports)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """The newest ``max_diagnostics`` rows this reader reported, oldest first (a new list each time)."""
        with self._lock:
            skip = max(self._logged - self._max_diagnostics, 0)
            out: list[Diagnostic] = []
            for reports in self._log:
                out.extend(reports[skip:] if skip else reports)
                skip = max(skip - len(reports), 0)
            return out

    def _serve(self, path: str, fd: int, read: Callable[[_Snapshot], T]) -> tuple[_Snapshot, T]:
        """``read`` applied to the record's index; a line the index misplaced means reading the record whole."""
        for force in (False, True):
            snap = self._refresh(path, fd, force=force)
            try:
                return snap, read(snap)
            except (ValueError, KeyError, TypeError):
                continue  # the offsets do not fit this file: it changed in a way its identity missed
        raise ReadMessagesError("unavailable", "the record changed while it was read")

    def messages(self, record: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """Every message line of a record, oldest first, as parsed JSON objects."""
        path = os.fspath(user_path(record))
        with self._lock:
            fd = _open(path)
            if fd is None:
                return []
            try:
                snap, out = self._serve(
                    path, fd, lambda snap: [_parsed_message(raw) for raw in _read_lines(fd, snap, 0, len(snap.starts))]
                )
            except OSError as err:
                raise ReadMessagesError("unavailable", _reason(err)) from err
            finally:
                os.close(fd)
            self._report(snap)
            return out

    def header(self, record: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The record's header line, if it has one (parsed on the reader's last read)."""
        snap = self._snapshots.get(os.fspath(user_path(record)))
        return snap.header if snap else None

    def _refresh(self, path: str, fd: int, *, force: bool = False) -> _Snapshot:
        st = os.fstat(fd)
        snap = self._snapshots.get(path)
        if force and self._store is not None:
            self._store.discard(path)  # it does not fit the record: parsed again, and saved again if due
        elif snap is None and self._store is not None:
            snap = self._store.load(path, st.st_size)
        verdict = "replaced" if force else classify(snap, fd, st)
        if verdict == "same" and snap is not None:
            self._keep(path, snap)
            return snap
        if verdict == "grew" and snap is not None:
            snap.forget_tail()  # what came from an unterminated last line is read again
        else:
            snap = _Snapshot(path, st.st_dev, st.st_ino, 0)
        snap.size, snap.mtime_ns, snap.ctime_ns = st.st_size, st.st_mtime_ns, st.st_ctime_ns
        self._snapshots.pop(path, None)
        self.reads += 1
        before = snap.lines_before
        _parse_from(fd, snap)
        self.parsed_lines += snap.lines_before - before + (snap.parsed_to < snap.size)
        snap.head, snap.tail = probe(fd, snap.size)
        if self._store is not None and self._store.due(snap):
            self._store.save(snap)
        self._keep(path, snap)
        return snap

    def _keep(self, path: str, snap: _Snapshot) -> None:
        self._snapshots[path] = snap
        self._snapshots.move_to_end(path)
        while len(self._snapshots) > self._max:
            self._snapshots.popitem(last=False)

    def _remember(self, table: OrderedDict[str, Any], path: str, value: Any) -> None:
        table[path] = value
        table.move_to_end(path)
        while len(table) > self._max_remembered:
            table.popitem(last=False)

    def _shift(self, path: str, snap: _Snapshot, cursor: str | None) -> tuple[Diagnostic, ...]:
        """A ``cursor_shifted`` report when retention dropped messages since this reader last served the record."""
        dropped = _dropped(snap.header) or 0
        before = self._served.get(path)
        self._remember(self._served, path, dropped)
        if cursor is None or before is None or dropped <= before:
            return ()
        # murmur serves the page anyway; a reader that can tell says the cursor moved.
        shifted = dropped - before
        return (
            Diagnostic(
                "murmur", path, None, "cursor_shifted",
                f"retention dropped {shifted} more message(s) since the cursor {cursor} was minted: it now "
                f"counts from a newer oldest message, so this walk returns up to {shifted} message(s) again",
            ),
        )

    def _report(self, snap: _Snapshot) -> tuple[array[int], tuple[Diagnostic, ...]]:
        """What the reader has not yet reported about a record: runs of skipped lines, and the other reports."""
        reported = self._reported.get(snap.path) or _Reported()
        self._remember(self._reported, snap.path, reported)
        runs = subtract_runs(snap.terminated_runs(), reported.runs)
        if runs:
            reported.runs = add_runs(reported.runs, runs)
        rest: list[Diagnostic] = []
        for found in (snap.partial_report(), truncation(snap.header)):
            if found is None:
                continue
            line, kind, detail = found
            key = (line, kind, detail if kind == "truncated_record" else "")
            if key not in reported.keys:
                reported.keys.add(key)
                rest.append(Diagnostic("murmur", snap.path, line, kind, detail))
        fresh = Reports(runs, _SkippedRow(snap.path), rest)
        if fresh:
            self._log.append(fresh)
            self._logged += len(fresh)
            while self._log and self._logged - len(self._log[0]) >= self._max_diagnostics:
                self._logged -= len(self._log.popleft())
        return runs, tuple(rest)


def _open(path: str) -> int | None:
    """An open descriptor of the record at ``path``, or ``None`` when there is none.

    Opened without blocking (:func:`~murmur_analysis.core.files.open_regular`): a FIFO or a
    device where the record should be is refused as ``unavailable`` instead of hanging the read.

    Raises:
        ReadMessagesError: ``unavailable`` when it is not a regular file or cannot be opened.
    """
    try:
        fh = open_regular(path)
    except FileNotFoundError:
        return None
    except NotRegularFile as err:
        # A folder fails murmur's read as reading it does; anything else is refused unread.
        reason = os.strerror(errno.EISDIR) if err.kind == "folder" else f"a {err.kind}, not a regular file"
        raise ReadMessagesError("unavailable", reason) from err
    except OSError as err:
        raise ReadMessagesError("unavailable", _reason(err)) from err
    with fh:
        return os.dup(fh.fileno())


def _page(fd: int, snap: _Snapshot, cursor: str | None, limit: int) -> tuple[int, tuple[PageMessage, ...]]:
    """The ``[start, …)`` window a page serves and its messages, newest first."""
    start, end = window(len(snap.starts), cursor, limit)
    lines = _read_lines(fd, snap, start, end)
    return start, tuple(PageMessage(*lower(raw)) for raw in reversed(lines))


def _read_lines(fd: int, snap: _Snapshot, start: int, end: int) -> list[bytes]:
    """The message lines ``start..end`` of a snapshot, read in one call per 64 MiB span.

    Message lines of a page sit in one stretch of the file (with at most skipped lines between
    them), so a page costs one read rather than one per line. What is read is checked against
    the snapshot (:func:`_check_lines`); whether each line is a message is the caller's decoder's
    to tell (``lower`` and :func:`_parsed_message` raise ``ValueError`` for a line that is not).

    Raises:
        ValueError: the record's bytes are not what the snapshot says (it is parsed again).
    """
    out: list[bytes] = []
    i = start
    while i < end:
        base = snap.starts[i]
        j = i + 1
        while j < end and snap.ends[j] - base <= _CHUNK:
            j += 1
        origin = base - 1 if base else 0  # the byte before the first line: the newline it follows
        want = min(snap.ends[j - 1] + 2, snap.size) - origin
        blob = os.pread(fd, want, origin)
        if len(blob) != want:
            raise ValueError("the record is shorter than its index")
        _check_lines(blob, origin, snap, i, j)
        out.extend(blob[snap.starts[k] - origin : snap.ends[k] - origin] for k in range(i, j))
        i = j
    return out


def _check_lines(blob: bytes, origin: int, snap: _Snapshot, i: int, j: int) -> None:
    r"""Check that the record's bytes ``blob`` (from offset ``origin``) hold lines ``i..j`` where the snapshot says.

    Each must be a whole line: it starts the record or follows a ``\n``, holds no ``\n``, and
    ends with ``\n`` or ``\r\n`` (or at the end of the record); and the lines between two of
    them must hold no message (they are decided by the line rules; there are none between most
    messages). So no index can serve a part of a line, a stretch of several, or hide a message
    between two it serves; with the caller's decoder refusing a line that is not a message,
    what is served is the record's message lines there, whatever the index says. It costs a
    scan for the line breaks of the lines served, and one for a ``{`` in the lines between two of
    them (they are decided only when they hold one: :func:`no_message_in`).

    Raises:
        ValueError: they are not.
    """
    after = -1  # where the line after the last one checked begins
    for k in range(i, j):
        first, last = snap.starts[k] - origin, snap.ends[k] - origin
        if first and blob[first - 1] != 0x0A:
            raise ValueError("a message line of the index does not start a line")
        if after >= 0 and after != first and not no_message_in(gap := blob[after:first]):
            found = index_lines(gap, first - after, origin + after, origin + after == 0)
            if found.starts or found.bad_utf8:
                raise ValueError("the index leaves out a message line")
        newline = blob.find(b"\n", first, last + 2)
        if newline == last or (newline == last + 1 and blob[last] == 0x0D):
            after = newline + 1
        elif newline < 0 and origin + last == snap.size:
            after = last
        else:
            raise ValueError("a message line of the index does not end a line")


def _parsed_message(raw: bytes) -> Any:
    """A message line parsed.

    Raises:
        ValueError: the line is not a message.
    """
    if decide(raw) != LineKind.MESSAGE:
        raise ValueError("not a message line")
    return parse(raw)


def _dropped(header: dict[str, Any] | None) -> int | None:
    """The cumulative ``dropped`` count of a record header's truncation marker."""
    marker = header.get("truncated") if header else None
    value = marker.get("dropped") if isinstance(marker, dict) else None
    return json_count(value)


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


class _Ahead:
    """One read of the record into ``buffer``, on a thread of its own while the chunk before it is decided.

    A buffer is filled again for each chunk, so reading a record writes into memory already
    mapped rather than new pages for every chunk; a larger one is made only when a line is
    longer than the buffer. With ``now``, the read is made here: nothing is to be decided
    meanwhile.
    """

    def __init__(self, fd: int, buffer: bytearray, length: int, offset: int, now: bool = False) -> None:
        if len(buffer) < length:
            buffer = bytearray(length)
        self.buffer = buffer
        self._read_bytes = 0
        self._error: OSError | None = None
        self._thread: threading.Thread | None = None
        if now:
            self._read(fd, length, offset)
        else:
            self._thread = threading.Thread(target=self._read, args=(fd, length, offset), daemon=True)
            self._thread.start()

    def _read(self, fd: int, length: int, offset: int) -> None:
        try:
            with memoryview(self.buffer) as view:
                self._read_bytes = os.preadv(fd, [view[:length]], offset)
        except OSError as err:
            self._error = err

    def join(self) -> None:
        """Wait for the read to end."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> int:
        """How many bytes were read (from the buffer's start); the read's own ``OSError`` is raised here."""
        self.join()
        if self._error is not None:
            raise self._error
        return self._read_bytes


def _parse_from(fd: int, snap: _Snapshot) -> None:
    """Parse the record from ``snap.parsed_to`` to its end, recording message line offsets.

    The record is read a chunk at a time, and the next chunk is read while this one's lines
    are decided (both leave the interpreter's lock).
    """
    offset = snap.parsed_to
    line_no = snap.lines_before
    size = snap.size
    want = _CHUNK
    # Two buffers take turns: one is decided while the next chunk is read into the other.
    spare = bytearray()
    # The first read is made here: nothing is decided meanwhile.
    ahead = _Ahead(fd, bytearray(), min(want, size - offset), offset, now=True) if offset < size else None
    try:
        while ahead is not None:
            # Each read starts at a line start (the partial line a read ends with is read again
            # by the next one), so no chunk is copied to join it to the one before.
            got = ahead.result()
            data, ahead = ahead.buffer, None
            if not got:
                break
            cut = got if offset + got >= size else data.rfind(b"\n", 0, got) + 1
            if cut == 0:  # one line longer than the read: read more of it, here (nothing is decided meanwhile)
                want *= 2
                ahead = _Ahead(fd, data, min(want, size - offset), offset, now=True)
                continue
            want = _CHUNK
            if offset + cut < size:
                ahead = _Ahead(fd, spare, min(want, size - offset - cut), offset + cut)
            found = index_lines(data, cut, offset, offset == 0)
            if ahead is not None:
                spare = data  # filled again by the read after next
            if found.bad_utf8:
                # murmur reads the record as one UTF-8 string: invalid UTF-8 anywhere fails the read.
                raise ReadMessagesError("unavailable", "stream did not contain valid UTF-8")
            snap.starts.frombytes(found.starts)
            snap.ends.frombytes(found.ends)
            if found.header is not None:
                snap.header = header_of(bytes(data[found.header[0] : found.header[1]]))
            for n, _ in found.skipped:  # whether it ends with a newline follows from its number
                snap.skip(line_no + n)
            if found.parsed_to > snap.parsed_to:
                unterminated = found.lines > 0 and found.parsed_to < offset + cut
                snap.lines_before = line_no + found.lines - (1 if unterminated else 0)
                snap.parsed_to = found.parsed_to
            line_no += found.lines
            offset += cut
        # At most one message can come from an unterminated last line.
        unterminated = bool(snap.starts) and snap.starts[-1] >= snap.parsed_to
        snap.tail_start = len(snap.starts) - (1 if unterminated else 0)
    finally:
        if ahead is not None:
            ahead.join()  # no read outlives the call: the caller closes ``fd``


_DEFAULT_READER = RecordReader()


def read_messages(
    record: str | os.PathLike[str] | None,
    cursor: str | None = None,
    limit: int = 100,
    *,
    granted: bool = True,
    reader: RecordReader | None = None,
) -> Page:
    """One page of a murmur conversation record, newest first: murmur's ``read-messages``.

    Args:
        record: the ``conversation.jsonl`` path (``~`` is expanded); ``None``, or a path where no
            record is, reads as an empty page (murmur serves a missing record so).
        cursor: ``None`` for the newest page, or the ``next_cursor`` of the page before.
        limit: page size, clamped to ``1..=100``.
        granted: ``False`` refuses as an ungranted hook is refused.
        reader: the reader whose cache and reports to use; a shared default otherwise.

    Returns:
        The page. ``total`` counts the record's messages when it was served.

    Raises:
        ReadMessagesError: ``not-granted``, ``invalid-cursor`` or ``unavailable: <reason>``.

    Example:
        >>> page = read_messages("conversation.jsonl", limit=2)  # doctest: +SKIP
        >>> page.next_cursor
        'mc_3'
    """
    if not granted:
        raise ReadMessagesError("not-granted")
    if record is None:
        return Page((), None, 0)
    return (reader or _DEFAULT_READER).read_messages(record, cursor, limit)


def walk(
    record: str | os.PathLike[str] | None,
    *,
    limit: int = 100,
    granted: bool = True,
    reader: RecordReader | None = None,
) -> Iterator[PageMessage]:
    """Every message of a record, newest first, paging until ``next_cursor`` is ``None``.

    The walk is anchored at the record as it was at the first page: messages appended while
    it runs are not part of it, and none repeats or goes missing.
    """
    owner = reader or _DEFAULT_READER  # shared, so a later read_messages of the record is warm
    cursor: str | None = None
    while True:
        page = read_messages(record, cursor, limit, granted=granted, reader=owner)
        yield from page.messages
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
