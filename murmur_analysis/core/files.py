"""The file system as every source meets it: listings, file checks and opens that never hang or raise.

Sources find their data by listing folders and opening files. Both can go wrong in ways that
must not stop a load nor pass in silence, so every source goes through these helpers:

* :func:`listing` lists a folder; a folder that cannot be listed (no permission, gone, not a
  folder) is one ``unreadable_folder`` diagnostics row, and lists nothing;
* :func:`check_file` says whether a path is a regular file that may be opened; anything else
  that stands where a file was expected is a row: ``not_a_regular_file`` (a FIFO, a device or
  a socket: opening one could block forever or have effects), ``not_a_file`` (a folder),
  ``broken_link`` (a link that loops or points nowhere), ``unreadable`` (no permission);
* :func:`open_regular` opens a file without blocking, and refuses it when what was opened is
  not a regular file (a FIFO swapped in after the check).

Names are text with undecodable bytes kept as surrogate escapes (Python's file-system
encoding), so no name is lost; :func:`display` and :func:`raw_name` give what Arrow can hold.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from ..core.diagnostics import Diagnostics
from ..engine import _native

__all__ = [
    "BROKEN_LINK",
    "NOT_A_FILE",
    "NOT_REGULAR",
    "UNREADABLE",
    "UNREADABLE_FOLDER",
    "NotRegularFile",
    "check_file",
    "display",
    "entry_is_dir",
    "file_kind",
    "identity",
    "is_dir",
    "listing",
    "open_regular",
    "raw_name",
    "read_file",
    "read_regular",
    "read_regular_files",
    "report_kind",
    "settled",
    "steady",
]

UNREADABLE_FOLDER = "unreadable_folder"
NOT_REGULAR = "not_a_regular_file"
NOT_A_FILE = "not_a_file"
BROKEN_LINK = "broken_link"
UNREADABLE = "unreadable"

_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISREG, "file"),
    (stat.S_ISDIR, "folder"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


class NotRegularFile(OSError):
    """What was opened is not a regular file (a FIFO, a device, a socket or a folder).

    Attributes:
        kind: what it is (``FIFO``, ``folder``, ...).
    """

    kind: str = "special file"


def _why(err: OSError) -> str:
    return err.strerror or str(err)


def file_kind(path: str | os.PathLike[str]) -> str:
    """What stands at ``path``, links followed.

    One of ``file``, ``folder``, ``FIFO``, ``socket``, ``character device``, ``block device``,
    ``missing``, ``dangling link``, ``link loop``, ``denied`` (its folder may not be searched)
    or ``unreadable``.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "dangling link" if os.path.islink(path) else "missing"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "link loop"
        return "denied" if err.errno in (errno.EACCES, errno.EPERM) else "unreadable"
    return next((name for test, name in _KINDS if test(mode)), "special file")


def is_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder (links followed); never raises."""
    return os.path.isdir(path)


def listing(path: str | os.PathLike[str], diagnostics: Diagnostics | None) -> list[os.DirEntry[str]]:
    """The entries of the folder ``path``, sorted by name; hidden ones included.

    A folder that cannot be listed is reported as ``unreadable_folder`` (when ``diagnostics``
    is given) and lists nothing; nothing is raised.
    """
    try:
        with os.scandir(path) as it:
            entries = list(it)
    except OSError as err:
        if diagnostics is not None:
            diagnostics.report(path, UNREADABLE_FOLDER, f"could not list the folder: {_why(err)}")
        return []
    entries.sort(key=lambda e: e.name)
    return entries


def entry_is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether a listed entry is a folder (links followed); never raises."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def check_file(path: str | os.PathLike[str], diagnostics: Diagnostics | None, *, missing_ok: bool = True) -> bool:
    """Whether ``path`` is a regular file (links followed) this toolkit may open.

    Anything else at ``path`` is reported (see the module doc) and gives ``False``; a path with
    nothing at it gives ``False`` and is reported only when ``missing_ok`` is false. A file that
    cannot be looked at because its folder may not be searched is an ``unreadable_folder`` row
    for the folder.
    """
    kind = file_kind(path)
    if kind == "file":
        return True
    if diagnostics is not None and not (kind == "missing" and missing_ok):
        report_kind(path, kind, diagnostics)
    return False


def report_kind(path: str | os.PathLike[str], kind: str, diagnostics: Diagnostics) -> None:
    """Report what stands at ``path`` where a regular file was expected (a :func:`file_kind`)."""
    if kind == "folder":
        diagnostics.report(path, NOT_A_FILE, "a folder stands where a file was expected; skipped")
    elif kind in ("link loop", "dangling link"):
        diagnostics.report(path, BROKEN_LINK, f"a symbolic link that leads to no file ({kind}); skipped")
    elif kind == "denied":
        diagnostics.report(os.path.dirname(path) or ".", UNREADABLE_FOLDER,
                           "could not look inside the folder: permission denied")
    elif kind == "unreadable":
        diagnostics.report(path, UNREADABLE, "could not look at the file; skipped")
    elif kind == "missing":
        diagnostics.report(path, UNREADABLE, "no such file")
    else:
        diagnostics.report(path, NOT_REGULAR, f"a {kind}, not a regular file: never opened (it could block)")


#: How a file is opened for reading: never blocking on a FIFO or a device.
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def open_regular(path: str | os.PathLike[str], *, follow: bool = True) -> BinaryIO:
    """Open a regular file for reading, without ever blocking on a FIFO or a device.

    Args:
        path: the file.
        follow: follow a link at ``path`` itself; ``False`` refuses one (``ELOOP``), for files
            the toolkit wrote itself, where a link is never its own.

    Raises:
        NotRegularFile: what is at ``path`` is not a regular file.
        OSError: it could not be opened (``ELOOP``: a link, with ``follow=False``).
    """
    flags = _READ_FLAGS
    if not follow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "special file")
            err = NotRegularFile(errno.EINVAL, f"a {kind}, not a regular file", os.fspath(path))
            err.kind = kind
            raise err
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_file(path: str | os.PathLike[str], diagnostics: Diagnostics) -> tuple[bytes, float] | None:
    """The bytes of a regular file and its modification time, or ``None`` after reporting why not."""
    try:
        with open_regular(path) as fh:
            mtime = os.fstat(fh.fileno()).st_mtime
            return fh.read(), mtime
    except NotRegularFile as err:
        report_kind(path, err.kind, diagnostics)
    except OSError as err:
        kind = BROKEN_LINK if err.errno == errno.ELOOP else UNREADABLE
        diagnostics.report(path, kind, f"could not read the file: {_why(err)}")
    return None


def read_regular(path: str | os.PathLike[str], diagnostics: Diagnostics, *, missing_ok: bool = False) -> bytes | None:
    """The bytes of a regular file, or ``None`` after reporting why they could not be read.

    The file is read with the fewest system calls (open, fstat, read, close): a reader of
    thousands of small files pays for little else. Anything unusual is read again by
    :func:`read_file`, which reports it.

    Args:
        path: the file.
        diagnostics: where what cannot be read is reported.
        missing_ok: nothing at ``path`` (not even a dangling link, or a path that cannot be
            looked at) gives ``None`` unreported.
    """
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        if missing_ok and not os.path.lexists(path):
            return None
    else:
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                parts = [os.read(fd, st.st_size + 1)]
                while parts[-1]:
                    parts.append(os.read(fd, 1 << 20))
                return b"".join(parts)
        except OSError:
            pass  # read again below, and reported
        finally:
            os.close(fd)
    found = read_file(path, diagnostics)
    return None if found is None else found[0]


def read_regular_files(
    paths: Sequence[str | os.PathLike[str]], diagnostics: Diagnostics | Sequence[Diagnostics], *,
    missing_ok: bool = False,
) -> list[bytes | None]:
    """:func:`read_regular` of many files at once: the bytes of each, in order.

    The files are read by the native engine on every core with the GIL released (opened
    without blocking, checked to be regular files on the handles opened, read whole); any path
    it could not read that way is read again by :func:`read_regular`, which reports why.

    Args:
        paths: the files.
        diagnostics: where what cannot be read is reported: one for every path, or one per path.
        missing_ok: as for :func:`read_regular`.
    """
    found = _native.read_files([os.fsencode(p) for p in paths])
    each = [diagnostics] * len(paths) if isinstance(diagnostics, Diagnostics) else diagnostics
    return [data if data is not None else read_regular(path, diags, missing_ok=missing_ok)
            for path, data, diags in zip(paths, found, each, strict=True)]


def identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """``(device, inode)`` of what ``path`` leads to (links followed), or ``None``."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def display(text: str) -> str:
    r"""``text`` as valid Unicode: undecodable bytes of a name (surrogate escapes) shown as ``\xNN``.

    Text that is valid already is returned as it is; :func:`raw_name` gives the exact bytes.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _bytes(text).decode("utf-8", "backslashreplace")
    return text


def raw_name(text: str | None) -> bytes | None:
    """The exact bytes of a name holding undecodable bytes (surrogate escapes); ``None`` for valid text."""
    if text is None:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _bytes(text)
    return None


def _bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file name decodes to: kept as its UTF-8 form
        return text.encode("utf-8", "surrogatepass")


def settled(path: Path, settle_seconds: float) -> bool:
    """Whether ``path`` has been unchanged for ``settle_seconds`` (a file that is gone has)."""
    try:
        return time.time() - path.stat().st_mtime >= settle_seconds
    except OSError:
        return True


def steady(path: Path, settle_seconds: float, ends: bool | None = None) -> bool:
    """Whether settling can no longer change what ``path`` reads as: it ends at a line's end, or has settled.

    Only an unterminated last line waits for its file to settle, so a file that ends with a
    newline (or is empty) reads the same before and after: an export's fingerprint of it does
    not change when it settles, and an unchanged re-export keeps its rows. ``ends``: whether it
    ends so, as already read with its identity (``file_identity_ending``); ``None``: read it now.
    """
    if ends is not None:
        return ends or settled(path, settle_seconds)
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0 or os.pread(f.fileno(), 1, size - 1) == b"\n":
                return True
    except OSError:
        pass
    return settled(path, settle_seconds)
