r"""The toolkit's cache folder: where persisted record indexes live, how big it is, how to clear it.

The folder is ``$MURMUR_ANALYSIS_CACHE`` when that is set, otherwise the platform's user cache
folder plus ``murmur-analysis``: ``$XDG_CACHE_HOME/murmur-analysis`` (``~/.cache/murmur-analysis``)
on Linux and other Unixes, ``~/Library/Caches/murmur-analysis`` on macOS and
``%LOCALAPPDATA%\murmur-analysis`` on Windows. Everything in it is derived data: deleting any of it
(or all of it, with ``murmur-analysis cache clear``) only costs the next read a full parse.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV", "INDEX_DIR", "CacheInfo", "cache_dir", "cache_info", "clear_cache", "write_atomic"]

ENV = "MURMUR_ANALYSIS_CACHE"
INDEX_DIR = "record-index"
INDEX_SUFFIX = ".idx"
_TMP_PREFIX = ".tmp-"


def cache_dir() -> Path:
    """The cache folder (it may not exist yet)."""
    override = os.environ.get(ENV)
    if override:
        return Path(override).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "murmur-analysis"


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What the cache folder holds.

    Attributes:
        path: the cache folder.
        indexes: persisted record indexes in it.
        bytes: their total size.
    """

    path: Path
    indexes: int
    bytes: int


def _owned(folder: Path) -> list[Path]:
    """The files of ``folder`` this toolkit wrote: indexes and leftovers of interrupted writes."""
    try:
        names = sorted(folder.iterdir())
    except OSError:
        return []
    return [p for p in names if p.name.endswith(INDEX_SUFFIX) or p.name.startswith(_TMP_PREFIX)]


def cache_info() -> CacheInfo:
    """Count the persisted record indexes and their bytes."""
    root = cache_dir()
    count = size = 0
    for path in _owned(root / INDEX_DIR):
        try:
            size += path.stat().st_size
        except OSError:
            continue
        count += path.name.endswith(INDEX_SUFFIX)
    return CacheInfo(root, count, size)


def clear_cache() -> int:
    """Delete every file the toolkit keeps in the cache folder; returns how many were removed.

    Only the toolkit's own files go (``record-index/*.idx`` and interrupted writes), so pointing
    ``MURMUR_ANALYSIS_CACHE`` at a folder that holds other things never loses them.
    """
    root = cache_dir()
    removed = 0
    for path in _owned(root / INDEX_DIR):
        try:
            path.unlink()
            removed += 1
        except FileNotFoundError:
            continue
    for folder in (root / INDEX_DIR, root):
        try:
            folder.rmdir()  # only when empty
        except OSError:
            break
    return removed


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part.

    Raises:
        OSError: the folder could not be created or written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
