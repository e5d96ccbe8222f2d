r"""Line-delimited files read by the native engine, as Arrow: every JSONL format, a file at a time.

A format is declared once, in the engine (``native/src/formats/``): its line rule, the columns
it fills and what one line puts into them. :func:`scan_lines` reads many files of one format at
once, on every core, from where each should start (a byte offset and its line number, so a file
that only grew is read on from where an earlier read stopped), and gives each file's rows as a
:class:`LineRows`: its declared columns as one Arrow table, its block kinds, its tool events
and what it reported. The engine hands the files' columns back joined, as it does murmur's
records (:class:`~murmur_analysis.engine.groups.Group`): each column becomes an Arrow array once
for all the files, not once per file (texts too large to join without copying most of what was
read stay each file's own), and each file's rows are slices of them; :func:`joined` gives the
files' rows end to end, as the engine joined them. A file named ``*.zst`` is zstd-compressed: it
is decompressed in memory and read whole (a read of it never goes on from a point). murmur's
records are a format of the same engine, handed over many records joined at once, with their
tool pairing: :func:`~.murmur.record.scan_records`.
A format that reads content blocks reads them by its wire dialect's rules
(:data:`BLOCK_DIALECTS`, :func:`~murmur_analysis.core.wire.block_rules`), the rules its
conversation handles decode them by.

The line rule of these formats is the engine's default: split on ``\n`` alone, blank lines
skipped, a line read iff serde_json parses it into an object. Everything else is reported here,
once, in the words of :func:`line_report`; an unterminated last line that does not parse waits
until its file has settled (:func:`~murmur_analysis.core.files.settled`), since it may be a
write in progress.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..core.diagnostics import Diagnostics
from ..core.files import open_regular, settled
from ..core.wire import BlockRules, Dialect, block_rules
from ..engine.groups import EVENT_FIXED, EVENT_PLAIN, Group

__all__ = ["BLOCK_DIALECTS", "EVENTS", "Joined", "LineRows", "columns_of", "file_bytes", "joined", "line_report",
           "one_array", "report", "scan_lines"]

#: The wire dialect whose block rules a format reads content blocks by (a format not named
#: reads none): Claude Code's sessions hold the Messages API's blocks.
BLOCK_DIALECTS: dict[str, Dialect] = {"claude_code": "anthropic"}


def _rules(format: str) -> BlockRules | None:
    dialect = BLOCK_DIALECTS.get(format)
    return block_rules(dialect) if dialect is not None else None

#: The engine's codes of a reported line (``native/src/line.rs``).
NOT_OBJECT, PARTIAL_LINE, BAD_UTF8, BAD_UTF8_PARTIAL = 1, 2, 3, 4

_STR = pa.string()
_I64 = pa.int64()
_KINDS = pa.list_(_STR)

#: The tool events' columns: ``row`` is the index of the row (in :attr:`LineRows.table`) whose
#: line holds the event; ``kind`` 0 is a client tool, 1 a server tool; ``input_text`` is a call's
#: input (null at a result) and ``result_text`` a result's text (null at a call), each side's
#: texts in a buffer of its own, in event order (see :class:`~murmur_analysis.core.handoff.ToolEvents`).
EVENTS = pa.schema([
    ("row", _I64), ("call", pa.bool_()), ("kind", pa.uint8()), ("call_id", _STR), ("name", _STR),
    ("is_error", pa.bool_()), ("chars", _I64), ("input_bytes", _I64), ("input_text", _STR), ("result_text", _STR),
])


@dataclass(frozen=True)
class Joined:
    """The rows of several files end to end, as one table.

    Attributes:
        table: every file's rows in turn.
        kinds: their block kinds.
        events: their tool events, ``row`` an index into :attr:`table`.
        starts: file ``i``'s rows are ``starts[i]:starts[i + 1]`` (one more value than files).
        event_starts: file ``i``'s events are ``event_starts[i]:event_starts[i + 1]``.
    """

    table: pa.Table
    kinds: pa.ChunkedArray
    events: pa.Table
    starts: np.ndarray
    event_starts: np.ndarray


@dataclass(frozen=True)
class LineRows:
    """One file's rows as the engine read them: its stretch of the rows of the files scanned with it.

    Its own :attr:`table`, :attr:`kinds` and :attr:`events` are sliced from those when first
    asked for. A load that works on every file's rows at once takes them joined (:func:`joined`)
    and slices no file's: a slice of a column held as one chunk per file looks through the
    chunks before it, so slicing each of many files would cost the square of their number.

    Attributes:
        path: the file.
        lines: the lines read (blank and reported ones included).
        end: the byte offset a later read goes on from (before a torn last line).
        size: the file's size when it was read.
        reported: ``(line, code)`` of every line that was not read.
        error: why the file could not be opened or read, or ``None``.
        scanned_with: the files scanned with it, joined, and its place among them.
    """

    path: Path
    lines: int
    end: int
    size: int
    reported: tuple[tuple[int, int], ...]
    error: str | None
    scanned_with: tuple[Joined, int] = field(compare=False, repr=False)

    @property
    def _rows(self) -> tuple[int, int]:
        """Where its rows are among the joined rows: their first, and how many."""
        whole, i = self.scanned_with
        a = int(whole.starts[i])
        return a, int(whole.starts[i + 1]) - a

    @property
    def num_rows(self) -> int:
        """How many rows it has (its :attr:`table`'s, told without slicing it)."""
        return self._rows[1]

    @cached_property
    def table(self) -> pa.Table:
        """One row per line the format keeps: ``line`` (1-based) and the declared columns."""
        return self.scanned_with[0].table.slice(*self._rows)

    @cached_property
    def kinds(self) -> pa.ListArray:
        """The block kinds of each row (a list per row)."""
        return one_array(self.scanned_with[0].kinds.slice(*self._rows))

    @cached_property
    def events(self) -> pa.Table:
        """The rows' tool events, in line and block order (:data:`EVENTS`), ``row`` an index into :attr:`table`."""
        whole, i = self.scanned_with
        a, b = int(whole.event_starts[i]), int(whole.event_starts[i + 1])
        events = whole.events.slice(a, b - a)
        return events.set_column(0, "row", pc.subtract(events.column("row"), pa.scalar(int(whole.starts[i]), _I64)))


def one_array(column: pa.ChunkedArray) -> pa.Array:
    """A column of one chunk as that chunk (no copy), else its chunks combined.

    A load's columns hold a chunk per file, so a stretch of them that is one file's is taken
    with no copy.
    """
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def columns_of(format: str) -> tuple[list[str], list[str]]:
    """The integer and the string columns the engine's ``format`` declares."""
    from ..engine import _native

    ints, strs = _native.line_columns(format)
    return list(ints), list(strs)


def _starts(counts: Sequence[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(counts, np.int64))]).astype(np.int64)


def joined(rows: Sequence[LineRows]) -> Joined:
    """The files' rows end to end (the engine's buffers are kept, not copied).

    Files the engine scanned together, all of them in order, are the rows it joined, as they are.
    """
    first = rows[0].scanned_with if rows else None
    if first is not None and len(rows) == len(first[0].starts) - 1 and all(
            r.scanned_with[0] is first[0] and r.scanned_with[1] == i for i, r in enumerate(rows)):
        return first[0]
    starts = _starts([r.num_rows for r in rows])
    counts = [r.events.num_rows for r in rows]
    events = pa.concat_tables([r.events for r in rows]) if rows else EVENTS.empty_table()
    at = events.column("row").to_numpy() + np.repeat(starts[:-1], counts)
    kinds = pa.chunked_array([r.kinds for r in rows], _KINDS)
    return Joined(pa.concat_tables([r.table for r in rows]), kinds, events.set_column(0, "row", pa.array(at, _I64)),
                  starts, _starts(counts))


#: The engine's columns of a line-delimited scan that have no nulls, and their types.
_PLAIN = {"line": _I64, **EVENT_PLAIN, "ev_kind": pa.uint8()}
_EVENT_KEYS = ["ev_row", "ev_call", "ev_kind", "ev_id", "ev_name", "ev_error", "ev_chars", "ev_bytes",
               "ev_input_text", "ev_result_text"]


def _group_rows(paths: Sequence[Path], raw: dict[str, Any], ints: list[str], strs: list[str]) -> list[LineRows]:
    """The files of one group the engine joined, each a :class:`LineRows` of its stretch of the group's rows."""
    group = Group(raw, "files", _PLAIN, {**dict.fromkeys(ints, _I64), **EVENT_FIXED})
    names = ["line", *ints, *strs]
    table = pa.table([group.whole(k) for k in names], names=names)
    events = pa.table([group.whole(k) for k in _EVENT_KEYS], names=EVENTS.names).cast(EVENTS)
    row_starts, event_starts = group.starts["rows"], group.starts["events"]
    at = events.column("row").to_numpy() + np.repeat(row_starts[:-1], np.diff(event_starts))
    kinds = group.joined("kinds")
    whole = Joined(table, pa.chunked_array([kinds]), events.set_column(0, "row", pa.array(at, _I64)), row_starts,
                   event_starts)
    return [LineRows(path=path, lines=raw["lines"][i], end=raw["end"][i], size=raw["size"][i],
                     reported=tuple(raw["diagnostics"][i]), error=raw["error"][i], scanned_with=(whole, i))
            for i, path in enumerate(paths)]


def _scanned(paths: Sequence[Path], groups: list[dict[str, Any]], ints: list[str], strs: list[str]) -> list[LineRows]:
    """The files of ``groups`` (the engine's, in order), one :class:`LineRows` each."""
    out: list[LineRows] = []
    for raw in groups:
        out += _group_rows(paths[len(out):len(out) + raw["files"]], raw, ints, strs)
    return out


def scan_lines(
    format: str,
    paths: Sequence[Path],
    *,
    starts: Sequence[tuple[int, int]] | None = None,
    text: bool = True,
) -> list[LineRows]:
    """Every file of ``paths`` read by the engine's line-delimited ``format``, all at once.

    Args:
        format: a format the engine declares (``claude_code``, ``codex``).
        paths: the files.
        starts: per file, ``(byte offset, line number)`` to read from (a line's start; by
            default ``(0, 1)``, the whole file).
        text: whether the text columns and event texts are filled (null when false).

    Returns:
        One :class:`LineRows` per path, in order. Nothing is reported yet: see :func:`report`.
    """
    from ..engine import _native

    starts = list(starts) if starts is not None else [(0, 1)] * len(paths)
    paths = [p if isinstance(p, Path) else Path(p) for p in paths]  # made once: a load hands over thousands
    ints, strs = columns_of(format)
    rules = _rules(format)
    packed = [i for i, p in enumerate(paths) if p.name.endswith(".zst")]
    plain = sorted(set(range(len(paths))) - set(packed))
    scanned: list[LineRows | None] = [None] * len(paths)
    if plain:  # each call of the engine starts its own threads: none is made for nothing
        groups = _native.scan_lines(format, [os.fsencode(paths[i]) for i in plain], [starts[i] for i in plain], text,
                                    rules)
        for i, r in zip(plain, _scanned([paths[i] for i in plain], groups, ints, strs), strict=True):
            scanned[i] = r
    datas = [_decompressed(paths[i]) for i in packed]
    readable = [i for i, d in zip(packed, datas, strict=True) if isinstance(d, bytes)]
    if readable:
        groups = _native.scan_data(format, [d for d in datas if isinstance(d, bytes)], text, None, rules)
        for i, r in zip(readable, _scanned([paths[i] for i in readable], groups, ints, strs), strict=True):
            scanned[i] = r
    for i, d in zip(packed, datas, strict=True):
        if isinstance(d, str):
            (empty,) = _scanned([paths[i]], _native.scan_data(format, [b""], text, None, rules), ints, strs)
            scanned[i] = replace(empty, error=d)
    return [r for r in scanned if r is not None]


def scan_bytes(format: str, path: Path, data: bytes, first_line: int, *, text: bool = True) -> LineRows:
    """Whole lines of ``path`` already read into ``data`` (a range of it), as :func:`scan_lines` reads a file.

    Line numbers count from ``first_line`` (the number of ``data``'s first line); ``end`` is an
    offset into ``data``.
    """
    from ..engine import _native

    ints, strs = columns_of(format)
    (rows,) = _scanned([Path(path)], _native.scan_data(format, [data], text, [first_line], _rules(format)), ints, strs)
    return rows


def file_bytes(path: Path) -> bytes | str:
    """A file's bytes as :func:`scan_lines` reads them (a ``*.zst`` file decompressed), or why they cannot be had."""
    if Path(path).name.endswith(".zst"):
        return _decompressed(Path(path))
    try:
        with open_regular(path) as fh:
            return fh.read()
    except OSError as err:
        return f"could not open: {err.strerror or err}"


#: How far a compressed file may expand (times its size, plus 64 MiB) before it is refused as a bomb.
_EXPANSION = 1_000


def _decompressed(path: Path) -> bytes | str:
    """A zstd file's bytes, or why they cannot be had (the file's ``error``)."""
    import zstandard

    try:
        with open(path, "rb") as f:
            limit = os.fstat(f.fileno()).st_size * _EXPANSION + (64 << 20)
            data = zstandard.ZstdDecompressor().stream_reader(f).read(limit + 1)
    except OSError as err:
        return f"could not open: {err.strerror or err}"
    except zstandard.ZstdError as err:
        return f"could not decompress (zstd): {err}"
    if len(data) > limit:
        return f"refused: it expands past {_EXPANSION} times its size"
    return data


def line_report(line: int, code: int) -> tuple[str, str]:
    """The diagnostics ``(kind, detail)`` of a line the engine did not read, from its code."""
    if code == NOT_OBJECT:
        return "bad_json", f"line {line} is not a JSON object and was skipped"
    if code == PARTIAL_LINE:
        return "partial_line", f"line {line} is unterminated and not a JSON object (a torn last line); skipped"
    return "bad_utf8", f"line {line} is not valid UTF-8 and was skipped"


def report(rows: LineRows, diagnostics: Diagnostics, settle_seconds: float) -> None:
    """Report what ``rows``' file could not give: its open or read error, and every line not read.

    A torn last line (``partial_line``, an unterminated line that is not UTF-8 too) is reported
    only once the file has been unchanged for ``settle_seconds``: until then it is a line still
    being written, and a later read reads it whole.
    """
    if rows.error is not None:
        diagnostics.report(rows.path, "unreadable", rows.error)
    waiting: bool | None = None
    for line, code in rows.reported:
        if code in (PARTIAL_LINE, BAD_UTF8_PARTIAL):
            if waiting is None:
                waiting = not settled(rows.path, settle_seconds)
            if waiting:
                continue
        kind, detail = line_report(line, code)
        diagnostics.report(rows.path, kind, detail, line)
