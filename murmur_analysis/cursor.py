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

import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from . import serde_numbers
from .diagnostics import Diagnostic
from .errors import ReadMessagesError
from .model import Entry, ToolResult, blocks_to_wire
from .record_index import IndexStore, classify, probe
from .record_index import LineIndex as _Snapshot

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
HEADER_TYPE = "murmur.record"
_CHUNK = 64 << 20
_DEFAULT_STORE = IndexStore()
# Rust's `str::parse::<usize>` accepts ASCII digits with one optional leading '+'.
_CURSOR_NUMBER = re.compile(r"\+?[0-9]+")
_USIZE_MAX = (1 << 64) - 1
# What Rust's str::trim strips (Unicode White_Space); Python's str.strip also strips \x1c-\x1f.
_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)
# serde_json refuses a value nested this deep (its recursion limit).
_SERDE_DEPTH = 128
# A JSON string (skipped when the brackets of a line are counted).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
# A JSON string (matched first, so it is left alone) or the "+" of a signed exponent.
_EXPONENT_PLUS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(?<=[0-9])e\+')

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


def _dumps(value: Any) -> str:
    """serde_json's compact, key-sorted encoding (murmur's ``Value::to_string``).

    orjson writes floats as serde does (shortest round trip, ryu's layout) except that it signs a
    positive exponent (``1e+21``, serde ``1e21``); that ``+`` is dropped outside strings.
    """
    out = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"e+" in out:
        out = _EXPONENT_PLUS.sub(lambda m: m[0] if m[0][:1] == b'"' else b"e", out)
    return out.decode()


def lifecycle_message(line: dict[str, Any]) -> PageMessage:
    """Lower one murmur record line to the lifecycle ``message`` a hook receives."""
    role = line["role"]
    if role == "tool":
        content = _dumps(
            {
                TOOL_MARKER: True,
                "tool_call_id": line.get("tool_call_id"),
                "is_error": line.get("is_error"),
                "body": line.get("content"),
            }
        )
    else:
        content = _dumps(line["content"]) if "content" in line else ""
    msg_id = line.get("id")
    source_id = line.get("source_id")
    return PageMessage(
        role,
        content,
        msg_id if isinstance(msg_id, str) else None,
        source_id if isinstance(source_id, str) else None,
    )


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
        content = _dumps({TOOL_MARKER: True, "tool_call_id": call_id, "is_error": is_error, "body": body})
    else:
        content = _dumps(body)
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


def parse_line(line: bytes, *, exact_numbers: bool = True) -> Any:
    """Parse one record line as JSON the way serde_json does, or raise ``ValueError``.

    Both are strict RFC 8259 parsers: both refuse a byte-order mark, a lone surrogate escape
    and a number out of the double range, and both read an integer wider than 64 bits as a
    double (``orjson.JSONDecodeError`` is a ``ValueError``). Two serde rules orjson lacks are
    added: nesting deeper than serde's recursion limit is refused, and a line whose numbers
    serde may read differently (``-0``, an exponent, 16 or more digits) is read again with
    serde's number rules (:mod:`murmur_analysis.serde_numbers`). With ``exact_numbers=False``
    (when only whether the line is a message matters) only a line with a number serde may
    refuse is read again.
    """
    value = orjson.loads(line)
    if line.count(b"[") + line.count(b"{") >= _SERDE_DEPTH and _too_deep(line):
        raise ValueError(f"nested deeper than serde_json's recursion limit ({_SERDE_DEPTH})")
    if serde_numbers.risky(line) if exact_numbers else serde_numbers.may_refuse(line):
        value = serde_numbers.loads(line)
    return value


def _too_deep(line: bytes) -> bool:
    """Whether a line (already valid JSON) opens arrays and objects ``_SERDE_DEPTH`` deep.

    Read from the text, not the value: serde's limit holds while parsing, so a deep value that a
    later duplicate key replaces still fails the line.
    """
    brackets = _STRING.sub(b"", line).translate(None, _NOT_BRACKET)
    depth = 0
    for byte in brackets:
        depth += 1 if byte in b"[{" else -1
        if depth >= _SERDE_DEPTH:
            return True
    return False


def is_message(value: Any) -> bool:
    """Murmur's rule: a message line is a JSON object carrying a string ``role``."""
    return isinstance(value, dict) and isinstance(value.get("role"), str)


def header_of(value: Any) -> dict[str, Any] | None:
    """The record header a first line carries, or ``None``."""
    if (
        isinstance(value, dict)
        and value.get("type") == HEADER_TYPE
        and "role" not in value
        and isinstance(value.get("capsule"), str)
        and isinstance(value.get("created_ms"), int)
    ):
        return value
    return None


class RecordReader:
    """One reader of murmur records: a parse cache and a memory of what it has reported.

    Re-reading for each page would make a walk quadratic, so a reader keeps, per record, the
    byte offsets of its message lines and the identity of the file they came from (device,
    inode, size, modification time in nanoseconds, checksums of its first and last bytes; see
    :mod:`murmur_analysis.record_index`). A record that only grew is read from where the last
    parse stopped; one that was replaced (a retention rewrite, even one that reuses the inode
    and is larger) is parsed again from the start. The offsets of a big record are also kept in
    the cache folder, so a fresh process serves its first page without parsing it.

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
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                return Page((), None, 0)
            except OSError as err:
                raise ReadMessagesError("unavailable", _reason(err)) from err
            try:
                snap, (start, messages) = self._serve(path, fd, lambda snap: self._page(fd, snap, cursor, limit))
            except OSError as err:
                raise ReadMessagesError("unavailable", _reason(err)) from err
            finally:
                os.close(fd)
            reports = self._report(snap) + self._shift(path, snap, cursor)
            return Page(messages, encode_cursor(start) if start > 0 else None, len(snap.starts), reports)

    def _page(self, fd: int, snap: _Snapshot, cursor: str | None, limit: int) -> tuple[int, tuple[PageMessage, ...]]:
        start, end = window(len(snap.starts), cursor, limit)
        lines = _read_lines(fd, snap, start, end)
        return start, tuple(lifecycle_message(parse_line(raw)) for raw in reversed(lines))

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
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                return []
            except OSError as err:
                raise ReadMessagesError("unavailable", _reason(err)) from err
            try:
                snap, out = self._serve(
                    path, fd, lambda snap: [parse_line(raw) for raw in _read_lines(fd, snap, 0, len(snap.starts))]
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
    carry = b""
    carry_at = offset
    size = snap.size
    while offset < size:
        chunk = os.pread(fd, min(_CHUNK, size - offset), offset)
        if not chunk:
            break
        offset += len(chunk)
        data = carry + chunk if carry else chunk
        base = carry_at
        cut = data.rfind(b"\n") + 1
        if offset >= size:
            cut = len(data)
        pos = 0
        while pos < cut:
            nl = data.find(b"\n", pos, cut)
            terminated = nl != -1
            stop = nl if terminated else cut
            line_no += 1
            _take_line(snap, data, pos, stop, base, line_no, terminated)
            if terminated:
                snap.parsed_to = base + nl + 1
                snap.lines_before = line_no
            pos = stop + 1
        carry = data[cut:]
        carry_at = base + cut
    # At most one message can come from an unterminated last line.
    unterminated = bool(snap.starts) and snap.starts[-1] >= snap.parsed_to
    snap.tail_start = len(snap.starts) - (1 if unterminated else 0)


def _take_line(snap: _Snapshot, data: bytes, pos: int, stop: int, base: int, line_no: int, terminated: bool) -> None:
    end = stop
    if terminated and end > pos and data[end - 1] == 0x0D:  # "\r\n" ends a line too
        end -= 1
    raw = data[pos:end]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        # murmur reads the record as one UTF-8 string: invalid UTF-8 anywhere fails the read.
        raise ReadMessagesError("unavailable", "stream did not contain valid UTF-8") from err
    if not text.strip(_RUST_WHITESPACE):
        return
    try:
        value = parse_line(raw, exact_numbers=False)
    except ValueError:
        value = None
    if is_message(value):
        snap.starts.append(base + pos)
        snap.ends.append(base + end)
        return
    if line_no == 1 and header_of(value) is not None:
        snap.header = value
        return
    if not terminated:
        snap.skipped.append(
            (line_no, "partial_line", f"line {line_no} is not a message (an unterminated last line) and was skipped")
        )
    else:
        snap.skipped.append((line_no, "not_a_message", f"line {line_no} is not a message and was skipped"))


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
