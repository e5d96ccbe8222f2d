"""A murmur record's line index: where its message lines are, whose file it describes, and its copy on disk.

A :class:`LineIndex` holds the byte offsets of a record's message lines, the lines it skips (as
runs of consecutive line numbers) and the identity of the file they were read from. On every
read the identity decides, by the toolkit's one rule for telling change
(:func:`murmur_analysis.core.identity.classify`), whether the file is the same one, one that only grew
(read on from where the index stops), or one that was replaced (read again from the start).

The index persists in the cache folder (:mod:`murmur_analysis.core.cache`), one file per record,
written atomically, so a fresh process serves the first page of a big record without parsing it.
A persisted index is only a hint, and data, not trust:

* it is read as a bounded regular file (:func:`~murmur_analysis.core.cache.read_bounded`): a FIFO, a
  device or a link there is never read, and one larger than :func:`max_index_bytes` is not read;
* it is signed with the cache folder's secret key (:func:`~murmur_analysis.core.cache.folder_key`):
  one that is corrupt, forged by someone without the key, of another version, byte order or
  path, or whose identity no longer matches the file, is ignored, and deleting any of them is
  safe;
* its offsets are checked against the record's bytes whenever lines are served from it (see
  :mod:`murmur_analysis.sources.murmur.reader`).

Its size grows with the record's message lines, not its other lines: 16 bytes a message and 16 a
run of skipped lines, and an index with more runs than :data:`RUN_SLACK` plus its messages is not
persisted (parsing that record is what every fresh reader does).
"""

from __future__ import annotations

import hashlib
import os
import sys
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...core.cache import (
    INDEX_DIR,
    INDEX_SUFFIX,
    cache_dir,
    folder_key,
    read_bounded,
    remove,
    signed,
    verified,
    write_atomic,
)
from ...core.identity import HEAD_BYTES, classify, probe
from ...engine import _native
from .record import LineReport, skipped_line

__all__ = [
    "PROBE_BYTES",
    "RUN_SLACK",
    "IndexStore",
    "LineIndex",
    "add_runs",
    "classify",
    "max_index_bytes",
    "probe",
    "subtract_runs",
]

#: How many bytes at each end of a record its index's checksums cover.
PROBE_BYTES = HEAD_BYTES
#: How many more runs of skipped lines than messages an index may have and still be persisted.
RUN_SLACK = 64
_MAGIC = b"murmur-analysis line index\n"
_VERSION = 2


def max_index_bytes(record_size: int) -> int:
    """The most a persisted index of a record of ``record_size`` bytes can hold; a larger file is not read.

    A message line takes at least 12 bytes of the record and 32 of its index (two offsets and
    at most one run of skipped lines), and the rest (its identity, the header line) is bounded by
    the record too.
    """
    return 4 * record_size + (1 << 16)


@dataclass
class LineIndex:
    r"""The parsed state of one record file: where its message lines are, and which file that was.

    Attributes:
        path: the record's path as the reader was given it.
        dev: device of the file parsed.
        ino: inode of the file parsed.
        size: bytes parsed (the file's size when it was read).
        mtime_ns: the file's modification time then, in nanoseconds.
        ctime_ns: the file's status change time then, in nanoseconds.
        head: checksum of the first :data:`PROBE_BYTES` bytes of the ``size`` parsed.
        tail: checksum of the last :data:`PROBE_BYTES` bytes of the ``size`` parsed.
        parsed_to: offset just past the last newline-terminated line parsed.
        lines_before: lines wholly before ``parsed_to``.
        starts: byte offset of each message line.
        ends: byte offset just past each message line (before its ``\r\n`` or ``\n``).
        skipped: the lines skipped and reported (not messages, not blank, not the header), as
            runs of consecutive line numbers: ``first, count`` pairs, one after the other.
        header: the record header line 1 carries, if any.
        tail_start: a message parsed from an unterminated last line sits at this position.
    """

    path: str
    dev: int
    ino: int
    size: int
    mtime_ns: int = 0
    ctime_ns: int = 0
    head: bytes = b""
    tail: bytes = b""
    parsed_to: int = 0
    lines_before: int = 0
    starts: array[int] = field(default_factory=lambda: array("q"))
    ends: array[int] = field(default_factory=lambda: array("q"))
    skipped: array[int] = field(default_factory=lambda: array("q"))
    header: dict[str, Any] | None = None
    tail_start: int = 0
    saved_size: int = 0  # the size of the copy on disk (0: none); not itself persisted

    def skip(self, line: int) -> None:
        """Note that the 1-based ``line`` was skipped (lines are noted in order)."""
        runs = self.skipped
        if runs and runs[-2] + runs[-1] == line:
            runs[-1] += 1
        else:
            runs.extend((line, 1))

    def terminated_runs(self) -> array[int]:
        """The runs of skipped lines that end with a newline (all but an unterminated last line)."""
        runs = array("q", self.skipped)
        if runs and runs[-2] + runs[-1] - 1 > self.lines_before:  # only the line past lines_before can be
            runs[-1] -= 1
            if not runs[-1]:
                del runs[-2:]
        return runs

    def partial_report(self) -> LineReport | None:
        """The report of the unterminated last line, when it was skipped (one past :attr:`lines_before`)."""
        runs = self.skipped
        if runs and runs[-2] + runs[-1] - 1 > self.lines_before:
            return skipped_line(runs[-2] + runs[-1] - 1, False)
        return None

    def forget_tail(self) -> None:
        """Drop what came from an unterminated last line, before reading on from ``parsed_to``."""
        del self.starts[self.tail_start :]
        del self.ends[self.tail_start :]
        runs = self.skipped
        while runs and runs[-2] > self.lines_before:
            del runs[-2:]
        if runs and runs[-2] + runs[-1] - 1 > self.lines_before:
            runs[-1] = self.lines_before - runs[-2] + 1


class IndexStore:
    """Persisted line indexes, one file per record under ``<cache>/record-index/``.

    Args:
        folder: where the index files go; the cache folder's ``record-index`` by default (read
            when used, so ``MURMUR_ANALYSIS_CACHE`` set later still counts).
        min_bytes: records smaller than this are not persisted (parsing them is cheap).
    """

    def __init__(self, folder: str | os.PathLike[str] | None = None, *, min_bytes: int = 1 << 20) -> None:
        self._folder = Path(folder) if folder is not None else None
        self.min_bytes = min_bytes

    @property
    def folder(self) -> Path:
        """The folder index files are kept in."""
        return self._folder if self._folder is not None else cache_dir() / INDEX_DIR

    def file_for(self, path: str) -> Path:
        """The index file of the record at ``path``."""
        key = hashlib.blake2b(os.path.abspath(path).encode("utf-8", "surrogateescape"), digest_size=16)
        return self.folder / f"{key.hexdigest()}{INDEX_SUFFIX}"

    def load(self, path: str, record_size: int | None = None) -> LineIndex | None:
        """The persisted index of ``path``, or ``None`` when there is none that can be trusted.

        Args:
            path: the record.
            record_size: its size now (its index is at most :func:`max_index_bytes` of it);
                looked up when not given.
        """
        if record_size is None:
            try:
                record_size = os.stat(path).st_size
            except OSError:
                return None
        key = folder_key(self.folder, create=False)
        if key is None:
            return None
        data = read_bounded(self.file_for(path), max_index_bytes(record_size))
        if data is None:
            return None
        try:
            return _decode(data, path, key)
        except (ValueError, KeyError, TypeError, IndexError, OverflowError):
            return None

    def save(self, index: LineIndex) -> bool:
        """Persist ``index`` atomically and signed; ``False`` when it is not kept or could not be written.

        It is not kept when the record is smaller than ``min_bytes``, or when its skipped lines
        form more than :data:`RUN_SLACK` runs more than it has messages.
        """
        if index.size < self.min_bytes or len(index.skipped) // 2 > len(index.starts) + RUN_SLACK:
            return False
        key = folder_key(self.folder, create=True)
        if key is None:
            return False
        try:
            data = _encode(index, key)
        except (TypeError, ValueError):  # a header orjson cannot write back: keep no copy
            return False
        try:
            write_atomic(self.file_for(index.path), data)
        except OSError:
            return False
        index.saved_size = index.size
        return True

    def discard(self, path: str) -> None:
        """Delete the persisted index of ``path``, if there is one."""
        remove(self.file_for(path))

    def due(self, index: LineIndex) -> bool:
        """Whether ``index`` should be written now: big enough, and new or grown by an eighth since.

        Growth is persisted geometrically, so a record appended to while it is paged costs at most
        a constant factor of its index size in writes, not one full write per page.
        """
        if index.size < self.min_bytes:
            return False
        return index.saved_size == 0 or index.size - index.saved_size >= index.saved_size // 8


def subtract_runs(runs: array[int], taken: array[int]) -> array[int]:
    """The lines of ``runs`` not in ``taken``, as runs (both are runs of :attr:`LineIndex.skipped`'s form)."""
    if runs == taken or not runs:
        return array("q")
    out: array[int] = array("q")
    at, k = 0, 0
    for i in range(0, len(runs), 2):
        first, end = runs[i], runs[i] + runs[i + 1]
        while k < len(taken) and taken[k] + taken[k + 1] <= first:
            k += 2  # taken runs wholly before this one
        at = k
        while first < end:
            if at >= len(taken) or taken[at] >= end:
                out.extend((first, end - first))
                break
            if taken[at] > first:
                out.extend((first, taken[at] - first))
            first = max(first, taken[at] + taken[at + 1])
            at += 2
    return out


def add_runs(runs: array[int], more: array[int]) -> array[int]:
    """The lines of ``runs`` and of ``more``, as runs (both are runs of :attr:`LineIndex.skipped`'s form)."""
    if not runs or not more:
        return array("q", runs or more)
    out: array[int] = array("q")
    for first, count in sorted([*zip(runs[0::2], runs[1::2], strict=True), *zip(more[0::2], more[1::2], strict=True)]):
        if out and first <= out[-2] + out[-1]:
            out[-1] = max(out[-2] + out[-1], first + count) - out[-2]
        else:
            out.extend((first, count))
    return out


def _encode(index: LineIndex, key: bytes) -> bytes:
    meta = {
        "version": _VERSION,
        "byteorder": sys.byteorder,
        "path": os.path.abspath(index.path),
        "dev": index.dev,
        "ino": index.ino,
        "size": index.size,
        "mtime_ns": index.mtime_ns,
        "ctime_ns": index.ctime_ns,
        "head": index.head.hex(),
        "tail": index.tail.hex(),
        "parsed_to": index.parsed_to,
        "lines_before": index.lines_before,
        "tail_start": index.tail_start,
        "count": len(index.starts),
        "runs": len(index.skipped) // 2,
        "header": index.header,
    }
    encoded = orjson.dumps(meta)
    body = b"".join((_MAGIC, len(encoded).to_bytes(8, "little"), encoded, index.starts.tobytes(),
                     index.ends.tobytes(), index.skipped.tobytes()))
    return signed(body, key)


def _integer(meta: dict[str, Any], name: str) -> int:
    value = meta[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(name)
    return value


def _decode(data: bytes, path: str, key: bytes) -> LineIndex | None:
    body = verified(data, key)
    if body is None or not body.startswith(_MAGIC):
        return None
    at = len(_MAGIC)
    length = int.from_bytes(body[at : at + 8], "little")
    at += 8
    meta = orjson.loads(body[at : at + length])
    at += length
    if (
        not isinstance(meta, dict)
        or meta.get("version") != _VERSION
        or meta.get("byteorder") != sys.byteorder
        or meta.get("path") != os.path.abspath(path)
    ):
        return None
    n = {name: _integer(meta, name) for name in ("dev", "ino", "size", "mtime_ns", "ctime_ns", "parsed_to",
                                                 "lines_before", "tail_start", "count", "runs")}
    width = array("q").itemsize
    count, runs = n["count"], n["runs"]
    if min(n.values()) < 0 or len(body) - at != width * (2 * count + 2 * runs):
        return None
    columns = [array("q") for _ in range(3)]
    for column, items in zip(columns, (count, count, 2 * runs), strict=True):
        column.frombytes(body[at : at + width * items])
        at += width * items
    starts, ends, skipped = columns
    if not _coherent(starts, ends, skipped, n):
        return None
    header = meta["header"]
    return LineIndex(
        path=path,
        dev=n["dev"],
        ino=n["ino"],
        size=n["size"],
        mtime_ns=n["mtime_ns"],
        ctime_ns=n["ctime_ns"],
        head=bytes.fromhex(meta["head"]),
        tail=bytes.fromhex(meta["tail"]),
        parsed_to=n["parsed_to"],
        lines_before=n["lines_before"],
        starts=starts,
        ends=ends,
        skipped=skipped,
        header=header if isinstance(header, dict) else None,
        tail_start=n["tail_start"],
        saved_size=n["size"],
    )


def _coherent(starts: array[int], ends: array[int], skipped: array[int], n: dict[str, int]) -> bool:
    """Whether the offsets and runs of an index can describe a file of its size (whatever its bytes)."""
    if not n["parsed_to"] <= n["size"] or not n["tail_start"] <= n["count"] or n["count"] - n["tail_start"] > 1:
        return False
    # Read as bytes, aligned or not (an empty array's buffer is not aligned for int64).
    return _native.index_coherent(memoryview(starts).cast("B"), memoryview(ends).cast("B"),
                                  memoryview(skipped).cast("B"), n["size"])
