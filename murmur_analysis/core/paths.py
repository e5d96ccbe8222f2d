"""Paths as people type them: the one place a path given to the API becomes a path to open.

Every function that takes a path (``load``, ``read_messages``, ``export_parquet``'s paths and
``out``, ``read_parquet``, ``Corpus.to_parquet``, ``assemble_commit``, the murmur source's
``sessions``, a prices file, ``data_paths``' variable, ...) turns it into a
:class:`~pathlib.Path` here, so ``~`` and ``~user`` are expanded everywhere alike and a name
given as bytes (one that is not UTF-8) is kept losslessly.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PathArg", "user_path"]

#: A path given to the API: text, or bytes for a name that is not UTF-8 (kept losslessly).
PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]


def user_path(path: PathArg) -> Path:
    """``path`` as the user means it: ``~`` expanded, bytes decoded as the file system does.

    Args:
        path: text, bytes or a path-like object.

    Returns:
        The path (relative paths stay relative).
    """
    return Path(os.path.expanduser(os.fsdecode(path)))
