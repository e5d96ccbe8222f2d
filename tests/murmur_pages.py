"""Reading a murmur record's pages, and changing a record as editors do, for tests of its readers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import murmur_analysis as ma

__all__ = ["edit_in_place", "unindexed", "walk_pages", "write_lines"]


def write_lines(path: Path, rows: list[str], tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("".join(r + "\n" for r in rows) + tail).encode())
    return path


def walk_pages(reader: ma.RecordReader, path: Path, limit: int) -> list[ma.Page]:
    """Every page of a record, newest first, as ``read_messages`` serves them."""
    pages = []
    cursor = None
    while True:
        page = reader.read_messages(path, cursor, limit)
        pages.append(page)
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def unindexed(path: Path, limit: int = 7) -> list[ma.Page]:
    return walk_pages(ma.RecordReader(index=None), path, limit)


def edit_in_place(path: Path, offset: int, data: bytes) -> None:
    """Overwrite bytes of ``path`` without changing its size, then put its access and modification times back.

    As ``touch -r`` and ``cp -p`` do. The write is repeated until the kernel's clock has moved
    on from the file's change time (it does within milliseconds), so the edit is one an
    identity can see.
    """
    before = os.stat(path)
    fd = os.open(path, os.O_WRONLY)
    try:
        while True:
            os.pwrite(fd, data, offset)
            if os.fstat(fd).st_ctime_ns != before.st_ctime_ns:
                break
            time.sleep(0.001)
    finally:
        os.close(fd)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
