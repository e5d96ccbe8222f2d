"""murmur's line rules: the one place the toolkit decides what a record line is.

murmur reads a record as one UTF-8 string, walks its lines, skips blank ones and keeps a line
iff ``serde_json::from_str::<Value>(line)`` succeeds and the value is an object whose ``role``
is a string. The toolkit does not re-implement that test: the native engine
(``murmur_analysis.engine._native``, built from ``native/``) runs serde_json itself, with the default
features murmur builds it with. So every refusal (nesting deeper than 128, ``NaN``, a trailing
comma, a lone surrogate, a byte-order mark, a control character in a string, content after
the value, a number outside f64's range) is murmur's by construction, and a message's
``content`` is lowered with serde_json's own ``to_string``.

The cursor's :class:`~murmur_analysis.sources.murmur.reader.RecordReader`, the murmur source's entries and its
table scan all call these functions; nothing else reads a record line. How a message line is
lowered to what a hook receives is :mod:`murmur_analysis.core.serde`'s.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ...core.wire import block_rules
from ...engine import _native

if TYPE_CHECKING:
    from .engine import RecordScan

__all__ = [
    "HEADER_TYPE",
    "LineKind",
    "LineReport",
    "decide",
    "header_of",
    "index_lines",
    "message_values",
    "no_message_in",
    "parse",
    "scan_records",
    "skipped_detail",
    "skipped_line",
    "truncation",
    "unreadable",
]

HEADER_TYPE = "murmur.record"


class LineKind(enum.IntEnum):
    """What one record line is."""

    BLANK = 0  #: empty or whitespace only: skipped silently
    MESSAGE = 1  #: a JSON object with a string ``role``
    HEADER = 2  #: line 1 only: the ``murmur.record`` header (not a message, not reported)
    NOT_MESSAGE = 3  #: anything else: skipped and reported
    BAD_UTF8 = 4  #: not UTF-8 (murmur's whole read of the record fails)


# Codes of the lines a scan skips and reports, worded here.
_NOT_MESSAGE, _PARTIAL_LINE, _BAD_UTF8, _BAD_UTF8_PARTIAL, _MISSING_CALL_ID = 1, 2, 3, 4, 5


def decide(line: bytes, first: bool = False) -> LineKind:
    r"""What one line is, by murmur's rule.

    Args:
        line: the line without its ``\\n`` (and without the ``\\r`` of a ``\\r\\n``).
        first: whether it is line 1 (the only line that can be the header).
    """
    return LineKind(_native.decide_line(line, first))


class LineSpans(NamedTuple):
    """Where the message lines of a stretch of a record are (see :func:`index_lines`)."""

    starts: bytes  #: absolute offsets of the message lines' starts, native int64
    ends: bytes  #: and of their ends (without the ``\n`` or ``\r\n``)
    skipped: list[tuple[int, bool]]  #: lines skipped and reported: (1-based line in the stretch, terminated)
    header: tuple[int, int] | None  #: the header line's span within the stretch
    lines: int  #: lines in the stretch
    parsed_to: int  #: the absolute offset just past its last ``\n`` (``base`` without one)
    bad_utf8: bool  #: a line is not UTF-8 (murmur's whole read fails)


def index_lines(data: bytes | bytearray, limit: int, base: int, first: bool) -> LineSpans:
    """Decide every line of ``data[:limit]`` (whole lines of a record at offset ``base``) on every core.

    This is the record reader's index: which lines are messages, where they are, and which
    lines are skipped and reported. ``first`` says whether ``data`` starts at line 1. A
    ``bytearray`` is read in place (the reader fills one again for each chunk); it must not be
    changed during the call.
    """
    return LineSpans(*_native.index_lines(data, limit, base, first))


def no_message_in(data: bytes) -> bool:
    """Whether whole record lines ``data`` surely hold no message line and are UTF-8, told without deciding them.

    A message line is a JSON object, so it holds a ``{``: lines without one, that are UTF-8, are
    each blank, the header or skipped. ``False`` says nothing: decide them (:func:`index_lines`).
    """
    if b"{" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def parse(line: bytes) -> Any:
    """The line as serde_json reads it, as Python values.

    Raises:
        ValueError: serde_json refuses it.
    """
    return _native.parse(line)


def header_of(line: bytes) -> dict[str, Any] | None:
    """The record header line 1 holds, as murmur reads it into its header struct, or ``None``.

    murmur reads the header with serde's derive into ``RecordHeader`` (``type``, ``capsule``,
    ``created_ms`` a u64, an optional ``truncated`` marker of four typed fields): the array form
    is a header too, a duplicate field or a negative ``created_ms`` is not. The dict returned is
    that struct written back (``truncated`` only when there is a marker).
    """
    header: dict[str, Any] | None = _native.header(line)
    return header


def message_values(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], list[tuple[int, str, str]]]:
    """A whole record's message lines, parsed, and the lines it skips.

    Args:
        data: the record's bytes.

    Returns:
        ``([(line number, parsed line)], [(line number, kind, detail)])``; an unterminated last
        line that is not a message is reported as ``partial_line`` (or ``bad_utf8_partial``).
    """
    values, codes = _native.messages(data, True)
    return values, [skipped_detail(line, code) for line, code in codes]


def scan_records(paths: list[str], text: bool = True) -> list[RecordScan]:
    """Every record decided and derived into Arrow buffers, all records and cores at once.

    The records come back joined into groups (:class:`~.engine.ScanGroup`); each result is one
    record's share of its group, and holds, per message line, its line number, UUIDv7 time, id, role, source id,
    block count, text characters and block kinds, and per tool block a call or result event
    (row, id, name, error flag, text characters, input size), the lines skipped, the first user
    text (for the title), the header line and an open or read error; with ``text``, each
    message's text and reasoning text and each event's input or result text as well (null
    columns without); and the pairing walk of its tool events, with the state it leaves for a
    walk of lines appended later.
    """
    from .engine import ScanGroup

    groups = _native.scan_records([os.fsencode(p) for p in paths], block_rules("murmur"), text)
    return [scan for group in groups for scan in ScanGroup(group).records()]


class LineReport(NamedTuple):
    """What a read of a record reports about one of its lines (a diagnostics row)."""

    line: int  #: the 1-based line
    kind: str  #: the diagnostics kind
    detail: str  #: the sentence


def skipped_detail(line: int, code: int) -> tuple[int, str, str]:
    """The report of a line a scan skipped, from its code (a :class:`LineReport`)."""
    if code == _NOT_MESSAGE:
        return LineReport(line, "not_a_message", f"line {line} is not a message and was skipped")
    if code == _PARTIAL_LINE:
        return LineReport(line, "partial_line",
                          f"line {line} is not a message (an unterminated last line) and was skipped")
    if code in (_BAD_UTF8, _BAD_UTF8_PARTIAL):
        kind = "bad_utf8" if code == _BAD_UTF8 else "bad_utf8_partial"
        return LineReport(line, kind, f"line {line} is not valid UTF-8 and was skipped")
    return LineReport(line, "missing_tool_call_id", f"line {line}: a tool message names no tool_call_id; kept as text")


def skipped_line(line: int, terminated: bool) -> LineReport:
    """The report of a line that is not a message (``terminated``: it ends with a newline)."""
    return LineReport(*skipped_detail(line, _NOT_MESSAGE if terminated else _PARTIAL_LINE))


def truncation(header: Mapping[str, object] | None) -> LineReport | None:
    """The ``truncated_record`` report of a record whose header carries a truncation marker, or ``None``."""
    marker = header.get("truncated") if header else None
    if not isinstance(marker, dict):
        return None
    return LineReport(
        1, "truncated_record",
        f"retention dropped {marker.get('dropped')} message(s) from the front of this record "
        f"(oldest surviving {marker.get('oldest_surviving_id')}); it is not the whole conversation",
    )


def unreadable(skipped: Iterable[tuple[int, str, str]], settled: bool) -> LineReport | None:
    """Why murmur reads nothing from a record, given the lines a read of it skipped, or ``None``.

    murmur reads a record as one UTF-8 string (``read_to_string``): one byte that is not UTF-8,
    on any line, fails the whole read, so murmur serves no message of it, and neither does the
    toolkit (``read_messages`` raises ``unavailable``; ``load`` reads no message of it and reports
    this one diagnostics row, at the first such line). An unterminated last line counts only
    once the record has ``settled``: until then it may be a write in progress.

    Returns:
        ``(line, "bad_utf8", detail)``, or ``None`` when the record is readable.
    """
    for line, kind, _ in skipped:
        if kind == "bad_utf8" or (kind == "bad_utf8_partial" and settled):
            return LineReport(line, "bad_utf8", (
                f"line {line} is not valid UTF-8: murmur reads nothing from this record (its read "
                "fails), so no line of it was read"
            ))
    return None
