"""The cursor core: murmur's ``read-messages`` paging, exactly, for every source.

The arithmetic is murmur's host's (``murmur:conversation/read@0.1.0``)::

    end   = len(messages) if cursor is None else n for "mc_<n>" (n <= len(messages))
    limit = clamp(limit, 1, 100);  start = max(end - limit, 0)
    page  = messages[start:end] reversed;  next = "mc_<start>" if start > 0 else None

A cursor counts from the *oldest* message, so appends between pages neither repeat nor skip a
message. :func:`paginate` is that arithmetic over any sequence; :func:`entries_page` applies it
to any source's ordered entries, and murmur's record reader
(:class:`murmur_analysis.sources.murmur.reader.RecordReader`) to a ``conversation.jsonl`` by its
line index. This module pages; it reads no file.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Any, Generic, NamedTuple, TypeVar, overload

from ..core.diagnostics import Diagnostic
from ..core.model import Entry, ToolResult
from ..core.serde import lower_value, serde_text
from ..core.wire import blocks_to_wire
from ..errors import ReadMessagesError

__all__ = [
    "MAX_LIMIT",
    "Page",
    "PageMessage",
    "Paged",
    "Reports",
    "Window",
    "decode_cursor",
    "encode_cursor",
    "entries_page",
    "lifecycle_message",
    "paginate",
]

CURSOR_PREFIX = "mc_"
MAX_LIMIT = 100
TOOL_MARKER = "__murmur_tool_msg__"
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


class Reports(Sequence[Diagnostic]):
    """An immutable sequence of diagnostics whose rows for runs of lines are made only when read.

    A record with a million skipped lines reports a million rows; they are held as the runs of
    line numbers they cover, and each row is made when it is read (by index, iteration or
    equality). It compares equal to a tuple of the same rows, and hashes as that tuple does.

    Args:
        runs: runs of 1-based line numbers, ``first, count`` pairs in order.
        row: the diagnostic of one line of ``runs``.
        rest: the diagnostics after the rows of ``runs``.
    """

    __slots__ = ("_ends", "_firsts", "_hash", "_rest", "_row")

    _firsts: tuple[int, ...]
    _ends: tuple[int, ...]
    _row: Callable[[int], Diagnostic] | None
    _rest: tuple[Diagnostic, ...]
    _hash: int | None

    def __init__(
        self,
        runs: Sequence[int] = (),
        row: Callable[[int], Diagnostic] | None = None,
        rest: Iterable[Diagnostic] = (),
    ) -> None:
        if runs and row is None:
            raise TypeError("runs of lines need a row to make their diagnostics")
        firsts = tuple(runs[0::2])
        counts = tuple(runs[1::2])
        if len(firsts) != len(counts) or any(count < 1 for count in counts):
            raise ValueError("runs are first, count pairs with counts of at least 1")
        init = object.__setattr__
        init(self, "_firsts", firsts)
        init(self, "_ends", tuple(accumulate(counts)))
        init(self, "_row", row if firsts else None)
        init(self, "_rest", tuple(rest))
        init(self, "_hash", None)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __len__(self) -> int:
        return (self._ends[-1] if self._ends else 0) + len(self._rest)

    @overload
    def __getitem__(self, index: int) -> Diagnostic: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Diagnostic, ...]: ...

    def __getitem__(self, index: int | slice) -> Diagnostic | tuple[Diagnostic, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        size = len(self)
        at = index + size if index < 0 else index
        if not 0 <= at < size:
            raise IndexError("Reports index out of range")
        lined = self._ends[-1] if self._ends else 0
        if at >= lined:
            return self._rest[at - lined]
        k = bisect_right(self._ends, at)
        assert self._row is not None
        return self._row(self._firsts[k] + at - (self._ends[k - 1] if k else 0))

    def __iter__(self) -> Iterator[Diagnostic]:
        before = 0
        for first, end in zip(self._firsts, self._ends, strict=True):
            assert self._row is not None
            yield from map(self._row, range(first, first + end - before))
            before = end
        yield from self._rest

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Reports):
            if (self._firsts, self._ends, self._row, self._rest) == (other._firsts, other._ends, other._row,
                                                                     other._rest):
                return True
        elif not isinstance(other, tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(tuple(self)))
        assert self._hash is not None
        return self._hash

    def __repr__(self) -> str:
        shown = ", ".join(map(repr, islice(self, 3)))
        return f"Reports(<{len(self)} diagnostic(s)>: {shown}{', ...' if len(self) > 3 else ''})"

    def __reduce__(self) -> tuple[Any, ...]:
        return tuple, (tuple(self),)


@dataclass(frozen=True, slots=True)
class Page:
    """One page, newest first.

    Attributes:
        messages: the page, ``messages[0]`` the newest.
        next_cursor: the cursor of the next (older) page, or ``None`` at the oldest message.
        total: messages in the whole record when the page was served.
        reports: what this reader had not yet reported about the record (skipped lines,
            a truncation marker), each reported once per reader: a tuple, or for murmur's
            record reader :class:`Reports`, whose rows for skipped lines are made when read.
    """

    messages: tuple[PageMessage, ...]
    next_cursor: str | None
    total: int
    reports: tuple[Diagnostic, ...] | Reports = ()


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


class Window(NamedTuple):
    """The ``[start, end)`` slice of the oldest-first messages a page serves."""

    start: int
    end: int


class Paged(NamedTuple, Generic[T]):
    """One page of any oldest-first sequence (:func:`paginate`)."""

    items: list[T]  #: the page, newest first
    next_cursor: str | None  #: the cursor of the next (older) page, ``None`` at the oldest
    total: int  #: items in the whole sequence


def window(count: int, cursor: str | None, limit: int) -> Window:
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
    return Window(max(end - limit, 0), end)


def paginate(items: Sequence[T], cursor: str | None, limit: int) -> Paged[T]:
    """Murmur's paging over any oldest-first sequence.

    Args:
        items: the messages, oldest first.
        cursor: ``None`` for the newest page, or a ``next_cursor`` handed back unmodified.
        limit: requested page size, clamped to ``1..=100``.

    Returns:
        The page newest first, the next cursor and the total.

    Raises:
        ReadMessagesError: ``invalid-cursor``.
    """
    start, end = window(len(items), cursor, limit)
    page = list(items[start:end])
    page.reverse()
    return Paged(page, encode_cursor(start) if start > 0 else None, len(items))


def lifecycle_message(line: dict[str, object]) -> PageMessage:
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


