r"""Line-delimited files read by the native engine, as Arrow: every JSONL format, a file at a time.

A format is declared once, in the engine (``native/src/formats/``): its line rule, the columns
it fills and what one line puts into them. :func:`scan_lines` reads many files of one format at
once, on every core, from where each should start (a byte offset and its line number, so a file
that only grew is read on from where an earlier read stopped), and gives each file's rows as a
:class:`LineRows`: its declared columns as one Arrow table, its block kinds, its tool events
and what it reported. The buffers the engine built become Arrow arrays without a copy. A file
named ``*.zst`` is zstd-compressed: it is decompressed in memory and read whole (a read of it
never goes on from a point). murmur's records are a format of the same engine, handed over
many records joined at once, with their tool pairing: :func:`~.murmur.record.scan_records`.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.diagnostics import Diagnostics
from ..core.files import open_regular, settled
from ..core.wire import BlockRules, Dialect, block_rules

__all__ = ["BLOCK_DIALECTS", "EVENTS", "LineRows", "columns_of", "file_bytes", "line_report", "one_array", "report",
           "scan_lines"]

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

#: The tool events' columns: ``row`` is the index of the row (in :attr:`LineRows.table`) whose
#: line holds the event; ``kind`` 0 is a client tool, 1 a server tool; ``input_text`` is a call's
#: input (null at a result) and ``result_text`` a result's text (null at a call), each side's
#: texts in a buffer of its own, in event order (see :class:`~murmur_analysis.core.handoff.ToolEvents`).
EVENTS = pa.schema([
    ("row", _I64), ("call", pa.bool_()), ("kind", pa.uint8()), ("call_id", _STR), ("name", _STR),
    ("is_error", pa.bool_()), ("chars", _I64), ("input_bytes", _I64), ("input_text", _STR), ("result_text", _STR),
])


@dataclass(frozen=True)
class LineRows:
    """One file's rows as the engine read them.

    Attributes:
        path: the file.
        table: one row per line the format keeps: ``line`` (1-based) and the declared columns.
        kinds: the block kinds of each row (a list per row).
        events: the rows' tool events, in line and block order (:data:`EVENTS`).
        lines: the lines read (blank and reported ones included).
        end: the byte offset a later read goes on from (before a torn last line).
        size: the file's size when it was read.
        reported: ``(line, code)`` of every line that was not read.
        error: why the file could not be opened or read, or ``None``.
    """

    path: Path
    table: pa.Table
    kinds: pa.ListArray
    events: pa.Table
    lines: int
    end: int
    size: int
    reported: tuple[tuple[int, int], ...]
    error: str | None


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


def _strings(scanned: dict[str, Any], key: str, n: int) -> pa.Array:
    valid, offsets, data = scanned[key]
    return pa.Array.from_buffers(_STR, n, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)])


def _ints(scanned: dict[str, Any], key: str, n: int) -> pa.Array:
    valid, values = scanned[key]
    return pa.Array.from_buffers(_I64, n, [pa.py_buffer(valid), pa.py_buffer(values)])


def _rows(path: Path, scanned: dict[str, Any], ints: list[str], strs: list[str]) -> LineRows:
    n, e = scanned["rows"], scanned["events"]
    columns = {"line": pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(scanned["line"])])}
    columns.update({name: _ints(scanned, name, n) for name in ints})
    columns.update({name: _strings(scanned, name, n) for name in strs})
    offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(scanned["kinds_offsets"])])
    kinds = _strings(scanned, "kinds", offsets[-1].as_py() if n else 0)
    events = pa.table([
        pa.Array.from_buffers(_I64, e, [None, pa.py_buffer(scanned["ev_row"])]),
        pa.Array.from_buffers(pa.uint8(), e, [None, pa.py_buffer(scanned["ev_call"])]).cast(pa.bool_()),
        pa.Array.from_buffers(pa.uint8(), e, [None, pa.py_buffer(scanned["ev_kind"])]),
        _strings(scanned, "ev_id", e),
        _strings(scanned, "ev_name", e),
        _ints(scanned, "ev_error", e).cast(pa.bool_()),
        _ints(scanned, "ev_chars", e),
        _ints(scanned, "ev_bytes", e),
        _strings(scanned, "ev_input_text", e),
        _strings(scanned, "ev_result_text", e),
    ], schema=EVENTS)
    return LineRows(
        path=path, table=pa.table(columns), kinds=pa.ListArray.from_arrays(offsets, kinds), events=events,
        lines=scanned["lines"], end=scanned["end"], size=scanned["size"],
        reported=tuple(scanned["diagnostics"]), error=scanned["error"],
    )


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
    ints, strs = columns_of(format)
    rules = _rules(format)
    packed = [i for i, p in enumerate(paths) if Path(p).name.endswith(".zst")]
    plain = sorted(set(range(len(paths))) - set(packed))
    scanned: list[dict[str, Any] | None] = [None] * len(paths)
    if plain:  # each call of the engine starts its own threads: none is made for nothing
        for i, s in zip(plain, _native.scan_lines(format, [os.fsencode(paths[i]) for i in plain],
                                                  [starts[i] for i in plain], text, rules), strict=True):
            scanned[i] = s
    datas = [_decompressed(Path(paths[i])) for i in packed]
    readable = [(i, d) for i, d in zip(packed, datas, strict=True) if isinstance(d, bytes)]
    if readable:
        for (i, _), s in zip(readable, _native.scan_data(format, [d for _, d in readable], text, None, rules),
                             strict=True):
            scanned[i] = s
    for i, d in zip(packed, datas, strict=True):
        if isinstance(d, str):
            scanned[i] = _native.scan_data(format, [b""], text, None, rules)[0] | {"error": d}
    return [_rows(Path(p), s, ints, strs) for p, s in zip(paths, scanned, strict=True) if s is not None]


def scan_bytes(format: str, path: Path, data: bytes, first_line: int, *, text: bool = True) -> LineRows:
    """Whole lines of ``path`` already read into ``data`` (a range of it), as :func:`scan_lines` reads a file.

    Line numbers count from ``first_line`` (the number of ``data``'s first line); ``end`` is an
    offset into ``data``.
    """
    from ..engine import _native

    ints, strs = columns_of(format)
    return _rows(Path(path), _native.scan_data(format, [data], text, [first_line], _rules(format))[0], ints, strs)


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
