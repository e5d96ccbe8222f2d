"""What a file is, for telling whether it grew, was replaced, or stayed as it was.

A file's identity is its device and inode, its size, its modification time in nanoseconds and
a checksum of its first bytes. An equal identity means "the same file, unchanged"; a larger
size with the same device, inode and head means it grew; anything else means it was replaced
or rewritten.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Any

__all__ = ["HEAD_BYTES", "Identity", "changed_since", "file_identity"]

#: ``{"dev", "ino", "size", "mtime_ns", "head"}``: what :func:`file_identity` returns.
Identity = dict[str, int | str]

#: How many leading bytes the checksum covers.
HEAD_BYTES = 4096


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
            "head": hashlib.blake2b(head, digest_size=16).hexdigest()}


def changed_since(value: Any, ns: int) -> bool:
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
