"""The cursor core: murmur's ``read-messages`` paging, exactly, for every source.

The arithmetic is murmur's host's (``murmur:conversation/read@0.1.0``)::

    end   = len(messages) if cursor is None else n for "mc_<n>" (n <= len(messages))
    limit = clamp(limit, 1, 100);  start = max(end - limit, 0)
    page  = messages[start:end] reversed;  next = "mc_<start>" if start > 0 else None

A cursor counts from the *oldest* message, so appends between pages neither repeat nor skip a
message. :func:`paginate` is that arithmetic over any sequence; :class:`RecordReader` applies
it to a murmur ``conversation.jsonl`` with murmur's line rules and a line index keyed on the
file's identity (:mod:`murmur_analysis.record_index`), reading only the appended tail when the
file grows;
:func:`entries_page` applies it to any source's ordered entries.
"""

from __future__ import annotations

import errno
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .diagnostics import Diagnostic
from .errors import ReadMessagesError
from .model import Entry, ToolResult, blocks_to_wire
from .record_index import IndexStore, classify, probe
from .record_index import LineIndex as _Snapshot
from .sources.files import NotRegularFile, open_regular
from .sources.murmur_record import header_of, index_lines, lower, lower_value, parse, serde_text

__all__ = [
    "MAX_LIMIT",
    "Page",
    "PageMessage",
    "RecordReader",
    "decode_cursor",
    "encode_cursor",
    "entries_page",
    "lifecycle_message",
    "paginate",
    "read_messages",
    "walk",
]

CURSOR_PREFIX = "mc_"
MAX_LIMIT = 100
TOOL_MARKER = "__murmur_tool_msg__"
_CHUNK = 64 << 20
_DEFAULT_STORE = IndexStore()
# Rust's `str::parse::<usize>` accepts ASCII digits with one optional leading '+'.
_CURSOR_NUMBER = re.compile(r"\+?[0-9]+")
_USIZE_MAX = (1 << 64) - 1

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageMessage:
    """One message as murmur hands it to a hook (the lifecycle ``message`` record).

    Attributes:
        role: the line's ``role``.
        content: the JSON text of the line's ``content``; for a ``tool`` message, the JSON
            text of the envelope ``{"__murmur_tool_msg__":true,"body":…,"is_error":…,
            "tool_call_id":…}``.
        id: the line's string ``id``, if any.
        source_id: the line's string ``source_id``, if any.
    """

    role: str
    content: str
    id: str | None
    source_id: str | None


@dataclass(frozen=True, slots=True)
class Page:
    """One page, newest first.

    Attributes:
        messages: the page, ``messages[0]`` the newest.
        next_cursor: the cursor of the next (older) page, or ``None`` at the oldest message.
        total: messages in the whole record when the page was served.
        reports: what this reader had not yet reported about the record (skipped lines,
            a truncation marker), each reported once per reader.
    """

    messages: tuple[PageMessage, ...]
    next_cursor: str | None
    total: int
    reports: tuple[Diagnostic, ...] = ()


def encode_cursor(position: int) -> str:
    """The cursor naming ``position`` (messages counted from the oldest)."""
    return f"{CURSOR_PREFIX}{position}"


def decode_cursor(cursor: str) -> int | None:
    """The position a cursor names, or ``None`` when it is not one the host mints."""
    if not cursor.startswith(CURSOR_PREFIX):
        return None
    digits = cursor[len(CURSOR_PREFIX) :]
    if not _CURSOR_NUMBER.fullmatch(digits):
        return None
    value = int(digits)
    return value if value <= _USIZE_MAX else None


def window(count: int, cursor: str | None, limit: int) -> tuple[int, int]:
    """The ``[start, end)`` slice a page of ``count`` messages serves.

    Raises:
        ReadMessagesError: ``invalid-cursor`` for a cursor the host would refuse.
    """
    if cursor is None:
        end = count
    else:
        decoded = decode_cursor(cursor)
        if decoded is None or decoded > count:
            raise ReadMessagesError("invalid-cursor")
        end = decoded
    limit = min(max(limit, 1), MAX_LIMIT)
    return max(end - limit, 0), end


def paginate(items: Sequence[T], cursor: str | None, limit: int) -> tuple[list[T], str | None, int]:
    """Murmur's paging over any oldest-first sequence.

    Args:
        items: the messages, oldest first.
        cursor: ``None`` for the newest page, or a ``next_cursor`` handed back unmodified.
        limit: requested page size, clamped to ``1..=100``.

    Returns:
        ``(page newest first, next_cursor, total)``.

    Raises:
        ReadMessagesError: ``invalid-cursor``.
    """
    start, end = window(len(items), cursor, limit)
    page = list(items[start:end])
    page.reverse()
    return page, (encode_cursor(start) if start > 0 else None), len(items)


def lifecycle_message(line: dict[str, Any]) -> PageMessage:
    """Lower one parsed murmur record line to the lifecycle ``message`` a hook receives."""
    return PageMessage(*lower_value(line))


def entry_message(entry: Entry) -> PageMessage:
    """An entry of any source as a lifecycle ``message``.

    A murmur entry keeps its line (``entry.raw``) and lowers exactly as the host does; other
    sources encode their blocks in their wire dialect, and a tool-side entry is wrapped in the
    tool envelope naming the call it answers when it answers exactly one.
    """
    if isinstance(entry.raw, dict) and isinstance(entry.raw.get("role"), str):
        return lifecycle_message(entry.raw)
    body = blocks_to_wire(entry.blocks)
    if entry.side == "tool":
        results = [b for b in entry.blocks if isinstance(b, ToolResult)]
        call_id = entry.tool_call_id
        is_error = entry.is_error
        if call_id is None and len(results) == 1:
            call_id, is_error = results[0].tool_use_id, results[0].is_error
        content = serde_text({TOOL_MARKER: True, "tool_call_id": call_id, "is_error": is_error, "body": body})
    else:
        content = serde_text(body)
    return PageMessage(entry.side, content, entry.id, entry.source_id)


def entries_page(entries: Sequence[Entry], cursor: str | None = None, limit: int = 100) -> Page:
    """Page any source's ordered entries exactly as murmur pages a record.

    Args:
        entries: the conversation's entries, oldest first.
        cursor: ``None`` or a ``next_cursor`` from an earlier page.
        limit: page size, clamped to ``1..=100``.

    Returns:
        The page, newest first.

    Raises:
        ReadMessagesError: ``invalid-cursor``.
    """
    page, next_cursor, total = paginate(entries, cursor, limit)
    return Page(tuple(entry_message(e) for e in page), next_cursor, total)


class RecordReader:
    """One reader of murmur records: a parse cache and a memory of what it has reported.

    Re-reading for each page would make a walk quadratic, so a reader keeps, per record, the
    byte offsets of its message lines and the identity of the file they came from (see
    :mod:`murmur_analysis.identity`). A record that only grew is read from where the last parse
    stopped; one that was replaced (a retention rewrite, even one that reuses the inode and is
    larger) is parsed again from the start. The offsets of a big record are also kept in the
    cache folder, so a fresh process serves its first page without parsing it.

    Every skipped line, and a truncation marker, is reported once per reader in
    :attr:`Page.reports` and kept in :attr:`diagnostics`. What a long-lived reader remembers is
    bounded: :attr:`diagnostics` keeps the newest ``max_diagnostics`` rows, and the memory of
    what was reported covers the ``max_remembered`` records read most recently (a record read
    again after that is reported again).

    Args:
        max_records: how many records' offsets to keep in memory (least recently used go first).
        index: where persisted line indexes are kept; ``None`` keeps none. By default the
            cache folder (:func:`murmur_analysis.cache.cache_dir`), for records of 1 MiB or more.
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
        self._reported: OrderedDict[str, set[tuple[int | None, str, str]]] = OrderedDict()
        self._served: OrderedDict[str, int] = OrderedDict()  # retention's dropped count when last served
        self._max = max_records
        self._max_diagnostics = max_diagnostics
        self._max_remembered = max_remembered
        self._store = index
        self._lock = threading.Lock()
        self.diagnostics: list[Diagnostic] = []
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
        path = os.fspath(record)
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
            reports = self._report(snap) + self._shift(path, snap, cursor)
            return Page(messages, encode_cursor(start) if start > 0 else None, len(snap.starts), reports)

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
        path = os.fspath(record)
        with self._lock:
            fd = _open(path)
            if fd is None:
                return []
            try:
                snap, out = self._serve(
                    path, fd, lambda snap: [parse(raw) for raw in _read_lines(fd, snap, 0, len(snap.starts))]
                )
            except OSError as err:
                raise ReadMessagesError("unavailable", _reason(err)) from err
            finally:
                os.close(fd)
            self._report(snap)
            return out

    def header(self, record: str | os.PathLike[str]) -> dict[str, Any] | None:
        """The record's header line, if it has one (parsed on the reader's last read)."""
        snap = self._snapshots.get(os.fspath(record))
        return snap.header if snap else None

    def _refresh(self, path: str, fd: int, *, force: bool = False) -> _Snapshot:
        st = os.fstat(fd)
        snap = self._snapshots.get(path)
        if snap is None and self._store is not None:
            snap = self._store.load(path)
        verdict = "replaced" if force else classify(snap, fd, st)
        if verdict == "same" and snap is not None:
            self._keep(path, snap)
            return snap
        if verdict == "grew" and snap is not None:
            snap.forget_tail()  # what came from an unterminated last line is read again
        else:
            snap = _Snapshot(path, st.st_dev, st.st_ino, 0)
        snap.size, snap.mtime_ns = st.st_size, st.st_mtime_ns
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

    def _report(self, snap: _Snapshot) -> tuple[Diagnostic, ...]:
        fresh: list[Diagnostic] = []
        found = list(snap.skipped)
        marker = snap.header.get("truncated") if snap.header else None
        if isinstance(marker, dict):
            dropped = marker.get("dropped")
            found.append(
                (
                    1,
                    "truncated_record",
                    f"retention dropped {dropped} message(s) from the front of this record "
                    f"(oldest surviving {marker.get('oldest_surviving_id')}); it is not the whole "
                    "conversation",
                )
            )
        reported = self._reported.get(snap.path)
        if reported is None:
            reported = set()
        self._remember(self._reported, snap.path, reported)
        for line, kind, detail in found:
            key = (line, kind, detail if kind == "truncated_record" else "")
            if key in reported:
                continue
            reported.add(key)
            diag = Diagnostic("murmur", snap.path, line, kind, detail)
            fresh.append(diag)
            self.diagnostics.append(diag)
        if len(self.diagnostics) > self._max_diagnostics:
            del self.diagnostics[: len(self.diagnostics) - self._max_diagnostics]
        return tuple(fresh)


def _open(path: str) -> int | None:
    """An open descriptor of the record at ``path``, or ``None`` when there is none.

    Opened without blocking (:func:`~murmur_analysis.sources.files.open_regular`): a FIFO or a
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
    them), so a page costs one read rather than one per line.
    """
    out: list[bytes] = []
    i = start
    while i < end:
        base = snap.starts[i]
        j = i + 1
        while j < end and snap.ends[j] - base <= _CHUNK:
            j += 1
        blob = os.pread(fd, snap.ends[j - 1] - base, base)
        out.extend(blob[snap.starts[k] - base : snap.ends[k] - base] for k in range(i, j))
        i = j
    return out


def _dropped(header: dict[str, Any] | None) -> int | None:
    """The cumulative ``dropped`` count of a record header's truncation marker."""
    marker = header.get("truncated") if header else None
    value = marker.get("dropped") if isinstance(marker, dict) else None
    return value if isinstance(value, int) else None


def _reason(err: OSError) -> str:
    return err.strerror or str(err)


def _parse_from(fd: int, snap: _Snapshot) -> None:
    """Parse the record from ``snap.parsed_to`` to its end, recording message line offsets."""
    offset = snap.parsed_to
    line_no = snap.lines_before
    size = snap.size
    want = _CHUNK
    while offset < size:
        # Each read starts at a line start (the partial line a read ends with is read again by
        # the next one), so no chunk is copied to join it to the one before.
        data = os.pread(fd, min(want, size - offset), offset)
        if not data:
            break
        cut = len(data) if offset + len(data) >= size else data.rfind(b"\n") + 1
        if cut == 0:  # one line longer than the read: read more of it
            want *= 2
            continue
        want = _CHUNK
        found = index_lines(data, cut, offset, offset == 0)
        if found.bad_utf8:
            # murmur reads the record as one UTF-8 string: invalid UTF-8 anywhere fails the read.
            raise ReadMessagesError("unavailable", "stream did not contain valid UTF-8")
        snap.starts.frombytes(found.starts)
        snap.ends.frombytes(found.ends)
        if found.header is not None:
            snap.header = header_of(data[found.header[0] : found.header[1]])
        for n, terminated in found.skipped:
            snap.skipped.append(_skipped(line_no + n, terminated))
        if found.parsed_to > snap.parsed_to:
            unterminated = found.lines > 0 and found.parsed_to < offset + cut
            snap.lines_before = line_no + found.lines - (1 if unterminated else 0)
            snap.parsed_to = found.parsed_to
        line_no += found.lines
        offset += cut
    # At most one message can come from an unterminated last line.
    unterminated = bool(snap.starts) and snap.starts[-1] >= snap.parsed_to
    snap.tail_start = len(snap.starts) - (1 if unterminated else 0)


def _skipped(line_no: int, terminated: bool) -> tuple[int, str, str]:
    if not terminated:
        return line_no, "partial_line", f"line {line_no} is not a message (an unterminated last line) and was skipped"
    return line_no, "not_a_message", f"line {line_no} is not a message and was skipped"


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
        record: the ``conversation.jsonl`` path; ``None`` (no record) reads as an empty page.
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
