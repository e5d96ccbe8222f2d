"""Whether a file of the previous export is still the file that export wrote.

Every Parquet file an export writes is recorded with its size and a checksum (BLAKE2b, 128
bits), in the manifest (``bytes``, ``blake2b``) and in the state. Once an export is switched in,
it also notes each file's *stamp* (inode, modification and change times in nanoseconds) in
``stamps.json``. Before the next export keeps a file, it checks it:

* it must be a regular file (not a link, a FIFO or a folder) of the recorded size;
* when its stamp is as noted, that is enough: the kernel changes the change time on every
  write, and no call sets it back; otherwise its bytes are read and must give the recorded
  checksum;
* a file of an export that recorded no checksum (an earlier version) must have a Parquet
  footer that counts the rows the state says it holds.

A file that fails is *damaged*: the conversations with rows in it are read again from the
input, so the damage is written over and never carried on.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from .layout import STAMPS, Generation
from .owned import read_control, write_bytes
from .state import ExportState

__all__ = ["Damage", "checksum", "drop_damaged", "fault", "integrity", "note_stamps"]

#: ``(relative path, what is wrong)`` of a damaged file.
Damage = tuple[str, str]


def checksum(data: bytes | memoryview) -> str:
    """The checksum an export records of a whole file."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _file_checksum(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def integrity(data: bytes | memoryview) -> dict[str, Any]:
    """What is recorded of a file written with ``data``: its ``bytes`` and ``blake2b``."""
    return {"bytes": len(data), "blake2b": checksum(data)}


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_mtime_ns, st.st_ctime_ns]


def note_stamps(generation: Generation, relatives: list[str]) -> None:
    """Note the stamp of each of a switched-in generation's files (best effort: a file left unnoted is read)."""
    stamps: dict[str, list[int]] = {}
    for relative in relatives:
        try:
            stamps[relative] = _stamp(os.lstat(generation.path / relative))
        except OSError:
            continue
    with contextlib.suppress(OSError):
        write_bytes(generation.path / STAMPS, orjson.dumps(stamps))


def _stamps(generation: Generation) -> dict[str, Any]:
    data = read_control(generation.path / STAMPS)
    try:
        doc = orjson.loads(data) if data is not None else None
    except orjson.JSONDecodeError:
        doc = None
    return doc if isinstance(doc, dict) else {}


def fault(path: Path, entry: Mapping[str, Any], rows: int | None = None, stamp: object = None) -> str | None:
    """What is wrong with the file at ``path`` given what was recorded of it, or ``None`` if it is intact.

    Args:
        path: the file.
        entry: its record (``bytes``, ``blake2b``; an earlier export's has neither).
        rows: the rows it should hold, checked against its footer when no checksum was recorded.
        stamp: its stamp as noted after its export was switched in, if it was.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return "it is gone"
    except OSError as err:
        return f"it cannot be read ({err.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    recorded = entry.get("blake2b")
    if not isinstance(recorded, str):
        try:
            found = pq.read_metadata(path).num_rows
        except (OSError, pa.ArrowException):
            return "it is not a readable Parquet file"
        return None if rows is None or found == rows else f"it holds {found} rows, not {rows}"
    if st.st_size != entry.get("bytes"):
        return f"it has {st.st_size} bytes, not {entry.get('bytes')}"
    if stamp == _stamp(st):
        return None
    try:
        return None if _file_checksum(path) == recorded else "its bytes changed"
    except OSError as err:
        return f"it cannot be read ({err.strerror})"


def drop_damaged(previous: ExportState, generation: Generation) -> list[Damage]:
    """Check every conversation file of the previous export; forget the conversations of damaged ones.

    The conversations with rows in a damaged file lose their recorded state, so the export
    reads them again from the input and keeps none of their earlier rows.

    Returns:
        The damaged files and what is wrong with each.
    """
    damaged: list[Damage] = []
    stamps = _stamps(generation)
    for relative, entry in list(previous.files.items()):
        if entry.get("whole"):
            continue  # rows of no conversation are written again by every export
        rows = sum(n for _, n in entry.get("units", []))
        why = fault(generation.path / relative, entry, rows, stamps.get(relative))
        if why is None:
            continue
        damaged.append((relative, why))
        for unit, _ in entry.get("units", []):
            previous.units.pop(unit, None)  # not kept: read again, and its other files rewritten without it
    return damaged
