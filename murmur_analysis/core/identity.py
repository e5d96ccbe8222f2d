"""What a file is, for telling whether it grew, was replaced, or stayed as it was.

A file's identity is its device and inode, its size, its modification time and its status
change time (``ctime``) in nanoseconds, and a checksum (BLAKE2b) of its first
:data:`HEAD_BYTES` bytes; a record's line index adds one of the last :data:`HEAD_BYTES` bytes it
covers. An equal identity means "the same file, unchanged"; a larger size with the same device,
inode and checksums of what was there means it grew; anything else means it was replaced or
rewritten. The incremental export (:func:`file_identity`) and the record reader's line index
(:func:`classify`) both tell change by this one rule.

murmur's runtime only appends to a record, and replaces it whole only by an atomic rename
(retention). A rename can hand a new file the inode an earlier one had, and a replacement can
be larger than what it replaced, so neither the inode nor the size alone tells growth from
replacement: :func:`classify` says

* a different device or inode, or a smaller file: **replaced**;
* otherwise the first and the last :data:`HEAD_BYTES` bytes the known state covers must read
  as they did, else **replaced**;
* then the same size and the same modification and change times: **same**; a larger file
  neither of whose times went back: **grew**; anything else: **replaced**.

The modification time alone is not enough: ``touch -r``, ``cp -p`` and ``os.utime`` put it back
after an edit. The change time is what the kernel sets, to its clock, on every write (and on
every ``utime``); no unprivileged call sets it back. It also changes on ``chmod``, ``chown``,
a new hard link and (on most file systems) a rename: such a file is then taken as replaced
and read again, which costs time, never a row. A file that grew also changed its change time,
so growth is still **grew**.

What an identity still cannot see:

* an edit that keeps the size, away from the first and last :data:`HEAD_BYTES` bytes, that
  lands in the same tick of the file system's clock as the change before the identity was
  taken, so both get one change time: Linux stamps files from a clock that advances every few
  milliseconds (newer kernels keep finer times on some file systems), and file systems with
  coarse times or none of their own (FAT, some network file systems) may say no more than the
  modification time does. The export reads again next time a file modified in the second
  before or during its run (:func:`changed_since`), which covers this unless the modification
  time was also put back; the record reader has no such guard;
* an edit of the bytes between the two checksummed ends together with an append: it reads as
  growth (murmur never does that; its retention renames a new file in);
* a change time set back: only root can (by setting the clock back, or by writing the device
  under the file system);
* on Windows, where ``st_ctime`` is the creation time, the change time adds nothing.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["HEAD_BYTES", "Identity", "Known", "KnownFile", "Verdict", "changed_since", "checksum", "classify",
           "file_identity", "file_identity_ending", "known_file", "probe", "same_file", "stat_fields"]

#: ``{"dev", "ino", "size", "mtime_ns", "ctime_ns", "head"}``: what :func:`file_identity` returns.
Identity = dict[str, int | str]

#: How many leading bytes the checksum covers.
HEAD_BYTES = 4096

Verdict = Literal["same", "grew", "replaced"]

#: The fields of a file's identity its status gives (:func:`stat_fields`).
_STAT = ("dev", "ino", "size", "mtime_ns", "ctime_ns")


class KnownFile(Protocol):
    """What was known of a file when it was read (a record's line index is one)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    head: bytes  #: :func:`checksum` of its first :data:`HEAD_BYTES` bytes
    tail: bytes  #: :func:`checksum` of the last :data:`HEAD_BYTES` bytes of its ``size``


@dataclass(slots=True)
class Known:
    """A :class:`KnownFile` read back from JSON values (:func:`known_file`), or taken of a file now."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    head: bytes
    tail: bytes


def checksum(data: bytes) -> bytes:
    """The checksum an identity keeps of a stretch of a file."""
    return hashlib.blake2b(data, digest_size=16).digest()


def probe(fd: int, size: int) -> tuple[bytes, bytes]:
    """Checksums of the first and the last :data:`HEAD_BYTES` of the first ``size`` bytes of ``fd``."""
    head = os.pread(fd, min(size, HEAD_BYTES), 0)
    start = max(size - HEAD_BYTES, 0)
    tail = head[start:size] if size <= HEAD_BYTES else os.pread(fd, size - start, start)
    return checksum(head), checksum(tail)


def known_doc(known: Known) -> dict[str, int | str]:
    """``known`` as the JSON values :func:`known_file` reads back (``head`` and ``tail`` in hex)."""
    return {"dev": known.dev, "ino": known.ino, "size": known.size, "mtime_ns": known.mtime_ns,
            "ctime_ns": known.ctime_ns, "head": known.head.hex(), "tail": known.tail.hex()}


def stat_fields(st: os.stat_result) -> dict[str, int]:
    """The fields of an identity a file's status gives: device, inode, size, modification and change times."""
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "ctime_ns": st.st_ctime_ns}


def same_file(identity: Mapping[str, object], st: os.stat_result) -> bool:
    """Whether a file of status ``st`` is, by its status, the file of ``identity``, unchanged."""
    return all(identity.get(k) == v for k, v in stat_fields(st).items())


def known_file(fields: Mapping[str, object]) -> Known | None:
    """The :class:`KnownFile` JSON values describe (the fields of :func:`stat_fields` and hex ``head`` and ``tail``).

    ``None`` when a field is missing or of another type (an identity written by an older
    version): a file that cannot be compared is read again.
    """
    numbers: list[int] = []
    for name in _STAT:
        value = fields.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        numbers.append(value)
    head, tail = fields.get("head"), fields.get("tail")
    if not isinstance(head, str) or not isinstance(tail, str):
        return None
    try:
        ends = bytes.fromhex(head), bytes.fromhex(tail)
    except ValueError:
        return None
    dev, ino, size, mtime_ns, ctime_ns = numbers
    return Known(dev, ino, size, mtime_ns, ctime_ns, *ends)


def classify(known: KnownFile | None, fd: int, st: os.stat_result) -> Verdict:
    """Whether the open file ``fd`` (stat ``st``) is the file ``known`` describes, grown, or another."""
    if known is None or (known.dev, known.ino) != (st.st_dev, st.st_ino) or st.st_size < known.size:
        return "replaced"
    if probe(fd, known.size) != (known.head, known.tail):
        return "replaced"
    if st.st_size == known.size:
        same = (st.st_mtime_ns, st.st_ctime_ns) == (known.mtime_ns, known.ctime_ns)
        return "same" if same else "replaced"
    grew = st.st_mtime_ns >= known.mtime_ns and st.st_ctime_ns >= known.ctime_ns
    return "grew" if grew else "replaced"


def file_identity(path: str | os.PathLike[str]) -> Identity | None:
    """The device, inode, size, modification and change times and head checksum of a regular file, or ``None``.

    ``None`` when ``path`` is not a regular file or cannot be read: an identity that cannot be
    taken never equals another.
    """
    return file_identity_ending(path)[0]


def file_identity_ending(path: str | os.PathLike[str]) -> tuple[Identity | None, bool | None]:
    """:func:`file_identity`, and whether the file, at the size it took, ends at a line's end or is empty.

    Both from one opening of the file (``None, None`` when no identity can be taken).
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO is never opened: it could block
            return None, None
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None, None
            head = fh.read(HEAD_BYTES)
            ends = st.st_size == 0 or os.pread(fh.fileno(), 1, st.st_size - 1) == b"\n"
    except (OSError, ValueError):
        return None, None
    return {**stat_fields(st), "head": checksum(head).hex()}, ends


def changed_since(value: object, ns: int) -> bool:
    """Whether any identity inside ``value`` (nested lists and dicts) was modified at or after ``ns``.

    A file modified while it was being read (or just before) may have been read in either
    state: like git's "racily clean" entries, its identity must not be trusted to mean
    "unchanged" later.

    Only the modification time counts. A later edit that keeps the size and puts the
    modification time back is still seen by the change time the identity holds, unless it
    shares that change time (the same tick of the file system's clock; see the module doc).
    Counting the change time here would close that gap at the price of taking as changed every
    file whose times were set (``touch``, ``cp -p``) or mode changed, or that was linked or
    renamed, at or after ``ns``.
    """
    if isinstance(value, dict):
        if isinstance(value.get("mtime_ns"), int) and "head" in value:
            return bool(value["mtime_ns"] >= ns)
        return any(changed_since(v, ns) for v in value.values())
    if isinstance(value, list | tuple):
        return any(changed_since(v, ns) for v in value)
    return False
