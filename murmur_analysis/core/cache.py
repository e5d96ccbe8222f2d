r"""The toolkit's cache folder: where record indexes and remembered prices live, how big it is, how to clear it.

The folder is ``$MURMUR_ANALYSIS_CACHE`` when that is set, otherwise the platform's user cache
folder plus ``murmur-analysis``: ``$XDG_CACHE_HOME/murmur-analysis`` (``~/.cache/murmur-analysis``)
on Linux and other Unixes, ``~/Library/Caches/murmur-analysis`` on macOS and
``%LOCALAPPDATA%\murmur-analysis`` on Windows. Everything in it is derived data: deleting any of it
(or all of it, with ``murmur-analysis cache clear``) only costs the next read a full parse.

What is in the folder is data, never trusted: a cache file is read only when it is a regular
file, reached without following a link (neither the file nor the folder holding it may be one),
and no larger than its reader's bound, so a FIFO, a device or a link to one there costs nothing
but the cache. The files the toolkit writes are signed with a secret key kept beside them
(:func:`folder_key`, readable only by its owner), so a file nobody holding the key wrote is
ignored.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
import sys
from dataclasses import dataclass
from hmac import compare_digest
from pathlib import Path

__all__ = [
    "ENV",
    "INDEX_DIR",
    "KEY_NAME",
    "PRICES_DIR",
    "CacheInfo",
    "cache_dir",
    "cache_info",
    "clear_cache",
    "folder_key",
    "read_bounded",
    "remove",
    "signed",
    "verified",
    "write_atomic",
]

ENV = "MURMUR_ANALYSIS_CACHE"
INDEX_DIR = "record-index"
INDEX_SUFFIX = ".idx"
#: Where what genai-prices answered is remembered (:mod:`murmur_analysis.core.price_memo`), one file per version.
PRICES_DIR = "prices"
PRICES_SUFFIX = ".prices"
#: The folders of the toolkit's files, and the suffix of each one's files.
_FOLDERS = ((INDEX_DIR, INDEX_SUFFIX), (PRICES_DIR, PRICES_SUFFIX))
#: Bytes of the keyed digest that signs a cache file.
_DIGEST = 32
#: The name of the key that signs a cache folder's files (:func:`folder_key`).
KEY_NAME = "key"
_KEY_BYTES = 32
#: How the scratch file of :func:`write_atomic` is named, before it is renamed over its file.
TMP_PREFIX = ".tmp-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BINARY = getattr(os, "O_BINARY", 0)
#: Whether files can be opened by name inside an open folder (POSIX): the folder is then opened
#: once, not followed if it is a link, and no later swap of it can redirect the open.
_AT = os.open in os.supports_dir_fd


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
        bytes: the total size of the toolkit's files in it.
        prices: files of remembered prices in it (one per genai-prices version used).
    """

    path: Path
    indexes: int
    bytes: int
    prices: int = 0


def _owned(folder: Path, suffix: str) -> list[Path]:
    """The files of ``folder`` this toolkit wrote: its ``suffix`` files, its key and leftovers of interrupted writes."""
    try:
        names = sorted(folder.iterdir())
    except OSError:
        return []
    return [p for p in names if p.name.endswith(suffix) or p.name.startswith(TMP_PREFIX) or p.name == KEY_NAME]


def cache_info() -> CacheInfo:
    """Count the persisted record indexes, the remembered prices and their bytes."""
    root = cache_dir()
    counts = {name: 0 for name, _ in _FOLDERS}
    size = 0
    for name, suffix in _FOLDERS:
        for path in _owned(root / name, suffix):
            try:
                size += path.lstat().st_size
            except OSError:
                continue
            counts[name] += path.name.endswith(suffix)
    return CacheInfo(root, counts[INDEX_DIR], size, counts[PRICES_DIR])


def clear_cache() -> int:
    """Delete every file the toolkit keeps in the cache folder; returns how many were removed.

    Only the toolkit's own files go (``record-index/*.idx``, ``prices/*.prices``, each folder's
    key and interrupted writes), so pointing ``MURMUR_ANALYSIS_CACHE`` at a folder that holds
    other things never loses them.
    """
    root = cache_dir()
    removed = 0
    for name, suffix in _FOLDERS:
        for path in _owned(root / name, suffix):
            try:
                path.unlink()
                removed += 1
            except FileNotFoundError:
                continue
        with contextlib.suppress(OSError):
            (root / name).rmdir()  # only when empty
    with contextlib.suppress(OSError):
        root.rmdir()
    return removed


def signed(body: bytes, key: bytes) -> bytes:
    """``body`` followed by its digest keyed with ``key`` (a folder's :func:`folder_key`)."""
    return body + hashlib.blake2b(body, key=key, digest_size=_DIGEST).digest()


def verified(data: bytes, key: bytes) -> bytes | None:
    """The body of what :func:`signed` wrote with ``key``, or ``None`` when its digest does not match."""
    body, digest = data[:-_DIGEST], data[-_DIGEST:]
    if len(data) < _DIGEST or not compare_digest(hashlib.blake2b(body, key=key, digest_size=_DIGEST).digest(), digest):
        return None
    return body


def _folder_fd(folder: Path) -> int:
    """The folder opened for opening files inside it; a link is refused (``ELOOP``)."""
    return os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)


def _open_in(folder: Path, name: str, flags: int, mode: int = 0o600) -> int:
    """``folder/name`` opened with ``flags``, following no link: neither ``folder`` nor ``name`` may be one."""
    flags |= _NOFOLLOW | _CLOEXEC | _BINARY
    if not _AT:  # no opening inside an open folder: a link is told by looking first
        if os.path.islink(folder) or os.path.islink(folder / name):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(folder / name))
        return os.open(folder / name, flags, mode)
    dir_fd = _folder_fd(folder)
    try:
        return os.open(name, flags, mode, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


def read_bounded(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of the cache file ``path``, or ``None`` when there is none to read.

    ``None`` when it is missing or unreadable, when it or its folder is a symbolic link, when it
    is not a regular file (a FIFO or a device is never read, and opening one never blocks), and
    when it holds more than ``max_bytes``.
    """
    try:
        fd = _open_in(path.parent, path.name, os.O_RDONLY | _NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None
        want = st.st_size + 1  # one byte more than it holds: a file that changes while read is not taken
        parts: list[bytes] = []
        total = 0
        while total < want and (part := os.read(fd, want - total)):
            parts.append(part)
            total += len(part)
        return b"".join(parts) if total == st.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write ``data`` to ``path`` so a reader sees the old file or the new one, never a part.

    The folder is created if need be; it must not be a symbolic link, and a link at ``path``
    is replaced, not followed. The file has ``mode`` (by default, readable by its owner only).

    Raises:
        OSError: the folder could not be created or written, or it is a link.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{TMP_PREFIX}{secrets.token_hex(8)}"
    fd = _open_in(path.parent, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if _AT:
            dir_fd = _folder_fd(path.parent)
            try:
                os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            finally:
                os.close(dir_fd)
        else:
            os.replace(path.parent / tmp, path)
    except BaseException:
        remove(path.parent / tmp)
        raise


def remove(path: Path) -> None:
    """Delete the cache file ``path`` if it is there (a link is deleted, not followed); never raises."""
    with contextlib.suppress(OSError):
        if not _AT:
            if not os.path.islink(path.parent):
                os.unlink(path)
            return
        dir_fd = _folder_fd(path.parent)
        try:
            os.unlink(path.name, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


def folder_key(folder: Path, *, create: bool) -> bytes | None:
    """The secret key that signs the cache files of ``folder``, or ``None`` when there is none to trust.

    The key is :data:`KEY_NAME` in ``folder``: random bytes in a regular file (not a link) of
    this user's that nobody else may read. With ``create``, a key that is missing, damaged or
    readable by others is made anew (every file signed with the old one is then ignored, which
    costs a parse, never a row). A key of another user is never replaced, and never trusted:
    nothing is signed nor read in that folder.
    """
    try:
        fd = _open_in(folder, KEY_NAME, os.O_RDONLY | _NONBLOCK)
    except FileNotFoundError:
        pass
    except OSError:  # a link, or a key this user may not read
        return None
    else:
        try:
            st = os.fstat(fd)
            posix = hasattr(os, "geteuid")  # Windows has no owner nor mode bits to check
            if not stat.S_ISREG(st.st_mode) or (posix and st.st_uid != os.geteuid()):
                return None
            key = os.read(fd, _KEY_BYTES + 1)
            if len(key) == _KEY_BYTES and not (posix and st.st_mode & 0o077):
                return key
        except OSError:
            return None
        finally:
            os.close(fd)
    if not create:
        return None
    key = secrets.token_bytes(_KEY_BYTES)
    try:
        write_atomic(folder / KEY_NAME, key)
    except OSError:
        return None
    return key
