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

__all__ = ["HEAD_BYTES", "file_identity"]

#: How many leading bytes the checksum covers.
HEAD_BYTES = 4096


def file_identity(path: str | os.PathLike[str]) -> list[int | str] | None:
    """``[dev, inode, size, mtime_ns, head checksum]`` of a regular file, or ``None``.

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
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, hashlib.blake2b(head, digest_size=16).hexdigest()]
