"""What an export may touch: its own files, read without trusting what stands there, and removal of only what it wrote.

Every file the export reads back (manifest, state, stamps) is opened as a regular file without
following a link, so a FIFO or a device put there is never opened in a way that could block,
and a link never leads the export out of its folder. Removal takes names (a manifest's, or the
names an export gives the files it stages), checks each stays inside its folder (no ``..``, no
link on the way), removes only those files, and then only the folders left empty.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from ..core.cache import TMP_PREFIX, read_bounded, write_atomic

__all__ = ["inside", "read_control", "read_json", "remove_files", "remove_staged", "safe_relative", "write_bytes",
           "write_json"]

#: The names of the files an export writes into a staging folder (and their scratch names).
_STAGED_FILE = re.compile(r"part-[0-9A-Za-z-]+\.parquet|(manifest|state|stamps)\.json|"
                          + re.escape(TMP_PREFIX) + r"[0-9a-f]+")
#: The most bytes a manifest, state or stamps file is read with.
_CONTROL_BYTES = 1 << 32


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``path`` whole, as the cache writes its files (:func:`~murmur_analysis.core.cache.write_atomic`).

    A link at the name or its folder is replaced or refused, never written through; the file is
    readable by all, as the export's Parquet files are.

    Raises:
        OSError: it could not be written.
    """
    write_atomic(path, data, mode=0o644)


def write_json(path: Path, doc: Any) -> None:
    """Write ``doc`` as the JSON file ``path``, replaced whole (a reader sees the old file or the new one)."""
    write_bytes(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def read_control(path: Path) -> bytes | None:
    """The bytes of a file the export wrote itself, or ``None`` when it is not a regular file there.

    Read as the cache reads its files (:func:`~murmur_analysis.core.cache.read_bounded`): a link (at
    the name or its folder), a FIFO or a device is never followed or opened in a way that could
    block.
    """
    return read_bounded(path, _CONTROL_BYTES)


def read_json(path: Path) -> Any:
    """The JSON value of a file the export wrote (:func:`read_control`), or ``None``."""
    data = read_control(path)
    if data is None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (as written: links are not resolved)."""
    return path == folder or folder in path.parents


def safe_relative(relative: object) -> str | None:
    """A manifest's path if it stays inside its generation (no ``..``, not absolute), else ``None``."""
    if not isinstance(relative, str) or not relative or relative.startswith("/") or "\x00" in relative:
        return None
    return None if ".." in relative.split("/") else relative


def remove_files(folder: Path, relatives: Iterable[str], folders: Iterable[Path] = ()) -> None:
    """Remove the regular files (or links) ``relatives`` of ``folder``, then every folder left empty.

    Nothing else is removed: a file the toolkit did not name stays, and so do the folders that
    hold it. Nothing is followed out of ``folder``. ``folders`` are more folders to remove if
    empty (folders of a staging folder that no file was written into yet).
    """
    parents: set[Path] = {folder, *folders}
    real = os.path.realpath(folder)
    for relative in relatives:
        safe = safe_relative(relative)
        if safe is None:
            continue
        path = folder / safe
        if not inside(Path(os.path.realpath(path.parent)), Path(real)):
            continue  # a folder on the way is a link out of the export
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            path.unlink()
        except OSError:
            continue
        parent = path.parent
        while inside(parent, folder) and parent not in parents:
            parents.add(parent)
            parent = parent.parent
    for parent in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            parent.rmdir()  # only an empty one goes


def remove_staged(folder: Path) -> None:
    """Remove a staging folder's files that an export writes there (by their names), walked without recursion."""
    found: list[str] = []
    folders: list[Path] = []
    stack = [folder]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(here) as listed:
                entries = list(listed)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
                folders.append(Path(entry.path))
            elif _STAGED_FILE.fullmatch(entry.name):
                found.append(os.path.relpath(entry.path, folder))
    remove_files(folder, found, folders)
