"""A murmur record's line index: where its message lines are, whose file it describes, and its copy on disk.

A :class:`LineIndex` holds the byte offsets of a record's message lines and the identity of the
file they were read from. On every read the identity decides, by the toolkit's one rule for
telling change (:func:`murmur_analysis.identity.classify`), whether the file is the same one, one
that only grew (read on from where the index stops), or one that was replaced (read again from
the start).

The index persists in the cache folder (:mod:`murmur_analysis.cache`), one file per record,
written atomically, so a fresh process serves the first page of a big record without parsing it.
A persisted index is only a hint: one that is corrupt, of another version, byte order or path,
or whose identity no longer matches the file, is ignored, and deleting any of them is safe.
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

from ...cache import INDEX_DIR, INDEX_SUFFIX, cache_dir, write_atomic
from ...identity import HEAD_BYTES, classify, probe
from .record import LineReport

__all__ = ["PROBE_BYTES", "IndexStore", "LineIndex", "classify", "probe"]

#: How many bytes at each end of a record its index's checksums cover.
PROBE_BYTES = HEAD_BYTES
_MAGIC = b"murmur-analysis line index\n"
_VERSION = 2
_DIGEST = 32


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
        skipped: ``(line, kind, detail)`` of each line that is not a message.
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
    skipped: list[LineReport] = field(default_factory=list)
    header: dict[str, Any] | None = None
    tail_start: int = 0
    saved_size: int = 0  # the size of the copy on disk (0: none); not itself persisted

    def forget_tail(self) -> None:
        """Drop what came from an unterminated last line, before reading on from ``parsed_to``."""
        del self.starts[self.tail_start :]
        del self.ends[self.tail_start :]
        self.skipped = [s for s in self.skipped if s[0] <= self.lines_before]


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

    def load(self, path: str) -> LineIndex | None:
        """The persisted index of ``path``, or ``None`` when there is none that can be trusted."""
        try:
            data = self.file_for(path).read_bytes()
        except OSError:
            return None
        try:
            return _decode(data, path)
        except (ValueError, KeyError, TypeError, IndexError):
            return None

    def save(self, index: LineIndex) -> bool:
        """Persist ``index`` atomically; ``False`` when it is too small or could not be written."""
        if index.size < self.min_bytes:
            return False
        try:
            data = _encode(index)
        except (TypeError, ValueError):  # a header orjson cannot write back: keep no copy
            return False
        try:
            write_atomic(self.file_for(index.path), data)
        except OSError:
            return False
        index.saved_size = index.size
        return True

    def due(self, index: LineIndex) -> bool:
        """Whether ``index`` should be written now: big enough, and new or grown by an eighth since.

        Growth is persisted geometrically, so a record appended to while it is paged costs at most
        a constant factor of its index size in writes, not one full write per page.
        """
        if index.size < self.min_bytes:
            return False
        return index.saved_size == 0 or index.size - index.saved_size >= index.saved_size // 8


def _encode(index: LineIndex) -> bytes:
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
        "skipped": [list(s) for s in index.skipped],
        "header": index.header,
    }
    encoded = orjson.dumps(meta)
    body = _MAGIC + len(encoded).to_bytes(8, "little") + encoded + index.starts.tobytes() + index.ends.tobytes()
    return body + hashlib.blake2b(body, digest_size=_DIGEST).digest()


def _decode(data: bytes, path: str) -> LineIndex | None:
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if not body.startswith(_MAGIC) or hashlib.blake2b(body, digest_size=_DIGEST).digest() != digest:
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
    count = int(meta["count"])
    width = array("q").itemsize * count
    if len(body) - at != 2 * width:
        return None
    starts, ends = array("q"), array("q")
    starts.frombytes(body[at : at + width])
    ends.frombytes(body[at + width :])
    header = meta["header"]
    return LineIndex(
        path=path,
        dev=int(meta["dev"]),
        ino=int(meta["ino"]),
        size=int(meta["size"]),
        mtime_ns=int(meta["mtime_ns"]),
        ctime_ns=int(meta["ctime_ns"]),
        head=bytes.fromhex(meta["head"]),
        tail=bytes.fromhex(meta["tail"]),
        parsed_to=int(meta["parsed_to"]),
        lines_before=int(meta["lines_before"]),
        starts=starts,
        ends=ends,
        skipped=[LineReport(int(line), str(kind), str(detail)) for line, kind, detail in meta["skipped"]],
        header=header if isinstance(header, dict) else None,
        tail_start=int(meta["tail_start"]),
        saved_size=int(meta["size"]),
    )
