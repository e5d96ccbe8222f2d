"""What a file is, for telling whether it grew, was replaced, or stayed as it was.

A file's identity is its device and inode, its size, its modification time in nanoseconds and
a checksum (BLAKE2b) of its first :data:`HEAD_BYTES` bytes; a record's line index adds one of
the last :data:`HEAD_BYTES` bytes it covers. An equal identity means "the same file,
unchanged"; a larger size with the same device, inode and checksums of what was there means it
grew; anything else means it was replaced or rewritten. The incremental export
(:func:`file_identity`) and the record reader's line index (:func:`classify`) both tell change
by this one rule.

murmur's runtime only appends to a record, and replaces it whole only by an atomic rename
(retention). A rename can hand a new file the inode an earlier one had, and a replacement can
be larger than what it replaced, so neither the inode nor the size alone tells growth from
replacement: :func:`classify` says

* a different device or inode, or a smaller file: **replaced**;
* otherwise the first and the last :data:`HEAD_BYTES` bytes the known state covers must read
  as they did, else **replaced**;
* then the same size and the same modification time: **same**; a larger file whose
  modification time did not go back: **grew**; anything else: **replaced**.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Literal, Protocol

__all__ = ["HEAD_BYTES", "Identity", "KnownFile", "Verdict", "changed_since", "checksum", "classify",
           "file_identity", "probe"]

#: ``{"dev", "ino", "size", "mtime_ns", "head"}``: what :func:`file_identity` returns.
Identity = dict[str, int | str]

#: How many leading bytes the checksum covers.
HEAD_BYTES = 4096

Verdict = Literal["same", "grew", "replaced"]


class KnownFile(Protocol):
    """What was known of a file when it was read (a record's line index is one)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    head: bytes  #: :func:`checksum` of its first :data:`HEAD_BYTES` bytes
    tail: bytes  #: :func:`checksum` of the last :data:`HEAD_BYTES` bytes of its ``size``


def checksum(data: bytes) -> bytes:
    """The checksum an identity keeps of a stretch of a file."""
    return hashlib.blake2b(data, digest_size=16).digest()


def probe(fd: int, size: int) -> tuple[bytes, bytes]:
    """Checksums of the first and the last :data:`HEAD_BYTES` of the first ``size`` bytes of ``fd``."""
    head = os.pread(fd, min(size, HEAD_BYTES), 0)
    start = max(size - HEAD_BYTES, 0)
    tail = head[start:size] if size <= HEAD_BYTES else os.pread(fd, size - start, start)
    return checksum(head), checksum(tail)


def classify(known: KnownFile | None, fd: int, st: os.stat_result) -> Verdict:
    """Whether the open file ``fd`` (stat ``st``) is the file ``known`` describes, grown, or another."""
    if known is None or (known.dev, known.ino) != (st.st_dev, st.st_ino) or st.st_size < known.size:
        return "replaced"
    if probe(fd, known.size) != (known.head, known.tail):
        return "replaced"
    if st.st_size == known.size:
        return "same" if st.st_mtime_ns == known.mtime_ns else "replaced"
    return "grew" if st.st_mtime_ns >= known.mtime_ns else "replaced"


def file_identity(path: str | os.PathLike[str]) -> Identity | None:
    """The device, inode, size, modification time and head checksum of a regular file, or ``None``.

    ``None`` when ``path`` is not a regular file or cannot be read: an identity that cannot be
    taken never equals another.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO is never opened: it could block
            return None
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            head = fh.read(HEAD_BYTES)
    except (OSError, ValueError):
        return None
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "head": checksum(head).hex()}


def changed_since(value: object, ns: int) -> bool:
    """Whether any identity inside ``value`` (nested lists and dicts) was modified at or after ``ns``.

    A file modified while it was being read (or just before) may have been read in either
    state: like git's "racily clean" entries, its identity must not be trusted to mean
    "unchanged" later.
    """
    if isinstance(value, dict):
        if isinstance(value.get("mtime_ns"), int) and "head" in value:
            return bool(value["mtime_ns"] >= ns)
        return any(changed_since(v, ns) for v in value.values())
    if isinstance(value, list | tuple):
        return any(changed_since(v, ns) for v in value)
    return False
