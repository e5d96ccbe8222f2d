"""The export folder: generations, the manifest, and the switch from one export to the next.

Layout of an output folder ``out``::

    out/<table>             -> .export/current/<table>        (a link, made once)
    out/_manifest.json      -> .export/current/manifest.json  (a link, made once)
    out/.export/murmur-analysis  marks the folder as an export of this package
    out/.export/current     -> g000007                        (switched by one rename)
    out/.export/g000007/    the current export: manifest.json, state.json, <table>/...
    out/.export/staging-*/  an export being written (a killed run's is removed by the next)
    out/.export/lock        held while an export runs

An export writes a whole new generation into a staging folder, renames it to its generation
name, then points ``current`` at it with one ``rename``. Until that rename the previous export
is untouched; after it, the new one is whole, and the one it replaced is removed, so the only
Parquet files under ``out`` are the current export's: a recursive glob over ``out`` (DuckDB's
``read_parquet('out/**/*.parquet')``, ``pyarrow.dataset`` of ``out``) reads every row once.
The manifest's link starts with ``_``, which pyarrow, Spark and Hive skip as a data file.

**What is ours.** An export deletes or replaces only what it wrote: the files a generation's
manifest names (and its own manifest and state), a killed run's staging files, and links that
point where an export points them. It refuses, with nothing written:

* an ``out`` that exists, is not empty and holds no export of this package;
* an ``out`` that is an input path, lies inside one, or holds one;
* anything at ``out/<table>`` or ``out/_manifest.json`` that it did not make (a folder, a file,
  a link elsewhere): it is the user's, and left as it is.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.files import display, open_regular
from ..core.paths import user_path
from ..errors import ExportError
from ..tables.schema import TABLES
from .owned import inside, read_control, read_json, remove_files, remove_staged, safe_relative, write_bytes, write_json

__all__ = ["CONTROL", "FORMAT", "MANIFEST", "ROOT_MANIFEST", "STAMPS", "STATE", "Generation", "Output"]

CONTROL = ".export"
MANIFEST = "manifest.json"
#: The manifest's link at the top of an export (``_``: not a data file to pyarrow, Spark and Hive).
ROOT_MANIFEST = "_manifest.json"
STATE = "state.json"
#: Each file's stamp, noted once a generation is switched in (see :mod:`~murmur_analysis.export.integrity`).
STAMPS = "stamps.json"
#: The ``format`` of a manifest (and of every file's metadata) this package writes.
FORMAT = "murmur-analysis-parquet"
#: The file that marks ``out/.export`` as this package's.
OWNER = "murmur-analysis"
_OWNER_TEXT = b'{"format": "murmur-analysis-export"}\n'
_CURRENT = "current"
_GENERATION = re.compile(r"g(\d{6,})$")
#: Where each earlier layout put the manifest's link (removed when it is ours).
_OLD_ROOT_MANIFESTS = (MANIFEST,)

class Generation:
    """One export's folder (``.export/gNNNNNN``, or a staging folder while being written).

    Attributes:
        path: the folder.
        number: the generation's number.
    """

    def __init__(self, path: Path, number: int) -> None:
        self.path = path
        self.number = number

    @property
    def name(self) -> str:
        """The folder name this generation has once switched in."""
        return f"g{self.number:06d}"

    def manifest(self) -> dict[str, Any] | None:
        """The generation's manifest, or ``None`` if it has none (or it is unreadable)."""
        doc = read_json(self.path / MANIFEST)
        return doc if isinstance(doc, dict) else None

    def state(self) -> dict[str, Any] | None:
        """What the export read (see :mod:`murmur_analysis.export.state`), or ``None``."""
        doc = read_json(self.path / STATE)
        return doc if isinstance(doc, dict) else None

    def write(self, manifest: dict[str, Any], state: dict[str, Any]) -> None:
        """Write the state, then the manifest (a generation with a manifest is complete).

        Raises:
            ExportError: they could not be written.
        """
        try:
            write_json(self.path / STATE, state)
            write_json(self.path / MANIFEST, manifest)
        except OSError as err:
            raise ExportError(f"could not write the manifest in {self.path}: {err}") from err

    def carry(self, relative: str, previous: Generation) -> None:
        """Make ``relative`` of ``previous`` part of this generation too (a hard link, or a copy).

        Raises:
            ExportError: the file is gone or cannot be linked or copied.
        """
        src, dst = previous.path / relative, self.path / relative
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst, follow_symlinks=False)
            except OSError as err:
                if err.errno in (errno.ENOSPC, errno.EDQUOT, errno.ENOENT):
                    raise
                with open_regular(src, follow=False) as fin, open(dst, "xb") as fout:
                    while chunk := fin.read(1 << 20):
                        fout.write(chunk)
        except OSError as err:
            raise ExportError(f"could not keep {src} of the previous export: {err}",
                              hint="export again with incremental=False", cli_hint="export again with --full") from err

    def remove(self) -> None:
        """Remove what this generation's manifest names, its manifest and state, and the folders left empty.

        A generation whose manifest cannot be read is left as it is (what it holds cannot be
        told apart from what someone else put there).
        """
        manifest = self.manifest()
        if manifest is None:
            return
        named = [f.get("path") for entry in (manifest.get("tables") or {}).values() if isinstance(entry, dict)
                 for f in entry.get("files", []) if isinstance(f, dict)]
        remove_files(self.path, [*(p for p in named if isinstance(p, str)), STATE, STAMPS, MANIFEST])

class Output:
    """An output folder, locked for one export while the context is open.

    Args:
        out: the folder.
        inputs: the paths the export reads; ``out`` may be none of them, inside none of them,
            and hold none of them.

    Raises:
        ExportError: ``out`` is empty text, exists and is not a folder, is not empty and holds
            no export of this package, overlaps an input, holds something of the user's where
            a table's link goes, or another export holds the lock.
    """

    def __init__(self, out: str | os.PathLike[str], inputs: Sequence[str | os.PathLike[str]] = ()) -> None:
        text = os.fspath(out)
        if not text:
            raise ExportError("no output folder given (an empty path)", hint="name a folder: out=DIR",
                              cli_hint="name a folder: --out DIR")
        self.root = user_path(text).absolute()
        self.control = self.root / CONTROL
        self.inputs = tuple(inputs)
        self._lock: int | None = None

    # -- reading ---------------------------------------------------------------------------

    def current(self) -> Generation | None:
        """The switched-in generation, resolved once; ``None`` before the first export."""
        try:
            name = os.readlink(self.control / _CURRENT)
        except OSError:
            return None
        m = _GENERATION.fullmatch(name)
        if m is None:
            return None
        path = self.control / name
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        except OSError:
            return None
        return Generation(path, int(m.group(1)))

    def is_export(self) -> bool:
        """Whether ``out/.export`` is this package's.

        It is when it is marked so, or (an export of an earlier version) when its ``current``
        generation has a manifest of this package's format.
        """
        if read_control(self.control / OWNER) == _OWNER_TEXT:
            return True
        current = self.current()
        manifest = current.manifest() if current is not None else None
        return manifest is not None and manifest.get("format") == FORMAT

    # -- checks ----------------------------------------------------------------------------

    def _refuse_overlap(self) -> None:
        real = Path(os.path.realpath(self.root))
        for given in self.inputs:
            path = user_path(given)
            if not os.path.lexists(path):
                continue  # the load says it is missing
            source = Path(os.path.realpath(path))
            if inside(real, source):
                where = "is" if real == source else "is inside"
                raise ExportError(f"{self.root} {where} the input {display(os.fspath(path))}: an export never writes "
                                  "into what it reads", hint="export into a folder outside the inputs")
            if inside(source, real):
                raise ExportError(f"the input {display(os.fspath(path))} is inside the output folder {self.root}",
                                  hint="export into a folder that holds no input")

    def _refuse_foreign(self) -> None:
        try:
            st = os.stat(self.root)
        except FileNotFoundError:
            return
        except OSError as err:
            raise ExportError(f"cannot use {self.root} as the output folder: {err.strerror}") from err
        if not stat.S_ISDIR(st.st_mode):
            raise ExportError(f"{self.root} exists and is not a folder", hint="export into a folder")
        try:
            with os.scandir(self.root) as entries:
                empty = next(entries, None) is None
        except OSError as err:
            raise ExportError(f"cannot list {self.root}: {err.strerror}") from err
        if not empty and not self.is_export():
            raise ExportError(f"{self.root} is not empty and holds no murmur-analysis export: refusing to write "
                              "into it (nothing in it is touched)",
                              hint="export into a new or empty folder, or into the folder of an earlier export")

    def link_in_the_way(self, names: Iterable[str]) -> None:
        """Refuse an export whose links would replace something of the user's.

        Raises:
            ExportError: ``out/<name>`` (or the manifest's link) exists and is not a link an
                export made.
        """
        for name, target in self._links(names):
            here = self.root / name
            if not os.path.lexists(here):
                continue
            try:
                ours = os.readlink(here) == target
            except OSError:
                ours = False
            if not ours:
                raise ExportError(f"{here} is in the way of the export's {name.removesuffix('.json')} link; it was "
                                  "not made by murmur-analysis and is left as it is",
                                  hint="move it elsewhere, or export into another folder")

    @staticmethod
    def _links(names: Iterable[str]) -> list[tuple[str, str]]:
        links = [(name, os.path.join(CONTROL, _CURRENT, name)) for name in names]
        return [*links, (ROOT_MANIFEST, os.path.join(CONTROL, _CURRENT, MANIFEST))]

    # -- writing ---------------------------------------------------------------------------

    def __enter__(self) -> Output:
        self._refuse_overlap()
        self._refuse_foreign()
        self.link_in_the_way(TABLES)  # every export links these: refused now, not after the work
        try:
            self.control.mkdir(parents=True, exist_ok=True)
            if read_control(self.control / OWNER) != _OWNER_TEXT:
                write_bytes(self.control / OWNER, _OWNER_TEXT)
            fd = os.open(self.control / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as err:
            raise ExportError(f"cannot write under {self.root}: {err.strerror or err}") from err
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            raise ExportError(f"another export into {self.root} is running", hint="wait for it to finish") from err
        self._lock = fd
        self._remove_strays()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def _generations(self) -> list[tuple[int, Path]]:
        found = []
        for child in self.control.iterdir():
            m = _GENERATION.fullmatch(child.name)
            if m is not None and child.is_dir() and not child.is_symlink():
                found.append((int(m.group(1)), child))
        return sorted(found)

    def _remove_strays(self) -> None:
        """Remove what killed exports left: staging files, and generations that are not current."""
        current = self.current()
        for child in self.control.iterdir():
            if child.is_symlink() or not child.is_dir():
                continue
            if child.name.startswith("staging-"):
                remove_staged(child)
        for number, path in self._generations():
            if current is None or number != current.number:
                Generation(path, number).remove()

    def stage(self) -> Generation:
        """A new, empty staging folder for the next generation.

        Raises:
            ExportError: the folder cannot be made.
        """
        numbers = [n for n, _ in self._generations()]
        current = self.current()
        if current is not None:
            numbers.append(current.number)
        path = self.control / f"staging-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError as err:
            raise ExportError(f"cannot write under {self.control}: {err.strerror or err}") from err
        return Generation(path, (max(numbers) if numbers else 0) + 1)

    @contextlib.contextmanager
    def staging(self) -> Iterator[Generation]:
        """A staging folder (see :meth:`stage`), removed again if the export fails before its switch."""
        staged = self.stage()
        try:
            yield staged
        except BaseException:
            remove_staged(staged.path)
            raise

    def switch(self, staged: Generation, tables: list[str]) -> Generation:
        """Make ``staged`` the current export, link its tables, and remove the export it replaced.

        The links are made first and ``current`` is switched last, so a failure before the
        switch leaves the previous export current and whole. Links of tables the new export
        does not hold are removed.

        Raises:
            ExportError: the switch failed (the previous export is still current).
        """
        self.link_in_the_way(tables)
        previous = self.current()
        made: list[Path] = []
        try:
            final = self.control / staged.name
            for name, target in self._links(tables):
                here = self.root / name
                if not os.path.lexists(here):
                    os.symlink(target, here)
                    made.append(here)
            os.rename(staged.path, final)
            try:
                link = self.control / f"{_CURRENT}.{os.getpid()}.tmp"
                with contextlib.suppress(FileNotFoundError):
                    link.unlink()
                os.symlink(staged.name, link)
                os.replace(link, self.control / _CURRENT)  # the switch
            except OSError:
                os.rename(final, staged.path)  # staged again: removed by the caller
                raise
        except OSError as err:
            for here in made:
                with contextlib.suppress(OSError):
                    here.unlink()
            raise ExportError(f"could not switch {self.root} to the new export: {err.strerror or err}",
                              hint="the previous export is still the current one") from err
        self._unlink_gone(tables, previous)
        for number, path in self._generations():
            if number != staged.number:
                Generation(path, number).remove()
        return Generation(final, staged.number)

    def _unlink_gone(self, tables: list[str], previous: Generation | None) -> None:
        """Remove the links an export made that now lead nowhere: tables gone, an earlier manifest link."""
        gone = set((previous.manifest() or {}).get("tables", {})) - set(tables) if previous else set()
        old = [(name, os.path.join(CONTROL, _CURRENT, name)) for name in [*gone, *_OLD_ROOT_MANIFESTS]]
        for name, target in old:
            here = self.root / name
            with contextlib.suppress(OSError):
                if os.readlink(here) == target:
                    here.unlink()

    def files(self, generation: Generation) -> Iterator[Path]:
        """Every file a generation's manifest names, as paths under its folder."""
        manifest = generation.manifest() or {}
        for entry in manifest.get("tables", {}).values():
            for f in entry.get("files", []):
                safe = safe_relative(f.get("path"))
                if safe is not None:
                    yield generation.path / safe

