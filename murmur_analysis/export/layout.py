"""The export folder: generations, the manifest, and the switch from one export to the next.

Layout of an output folder ``out``::

    out/<table>             -> .export/current/<table>       (a link, made once)
    out/manifest.json       -> .export/current/manifest.json (a link, made once)
    out/.export/current     -> g000007                       (switched by one rename)
    out/.export/g000007/    the current export: manifest.json, state.json, <table>/...
    out/.export/g000006/    the export it replaced, kept for readers still reading it
    out/.export/staging-*/  an export being written (a killed run's is removed by the next)
    out/.export/lock        held while an export runs

An export writes a whole new generation into a staging folder, renames it to its generation
name, then points ``current`` at it with one ``rename``. Until that rename the previous export
is untouched; after it, the new one is whole. A reader that resolves ``current`` once (as
:func:`~murmur_analysis.export.read_parquet` does) sees one export, never a mix.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..errors import ExportError

__all__ = ["CONTROL", "MANIFEST", "STATE", "Generation", "Output"]

CONTROL = ".export"
MANIFEST = "manifest.json"
STATE = "state.json"
_CURRENT = "current"
_GENERATION = re.compile(r"g(\d{6,})$")


def _write_json(path: Path, doc: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    os.replace(tmp, path)


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


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
        doc = _read_json(self.path / MANIFEST)
        return doc if isinstance(doc, dict) else None

    def state(self) -> dict[str, Any] | None:
        """What the export read (see :mod:`murmur_analysis.export.state`), or ``None``."""
        doc = _read_json(self.path / STATE)
        return doc if isinstance(doc, dict) else None

    def write(self, manifest: dict[str, Any], state: dict[str, Any]) -> None:
        """Write the state, then the manifest (a generation with a manifest is complete).

        Raises:
            ExportError: they could not be written.
        """
        try:
            _write_json(self.path / STATE, state)
            _write_json(self.path / MANIFEST, manifest)
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
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
        except OSError as err:
            raise ExportError(f"could not keep {src} of the previous export: {err}",
                              hint="export again with --full (incremental=False)") from err


class Output:
    """An output folder, locked for one export while the context is open.

    Raises:
        ExportError: ``out`` exists and is not a folder, holds a file where a table's link
            goes, or another export holds the lock.
    """

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.root = Path(os.fspath(out)).expanduser().absolute()
        self.control = self.root / CONTROL
        self._lock: int | None = None

    # -- reading ---------------------------------------------------------------------------

    def current(self) -> Generation | None:
        """The switched-in generation, resolved once; ``None`` before the first export."""
        try:
            name = os.readlink(self.control / _CURRENT)
        except OSError:
            return None
        m = _GENERATION.match(name)
        if m is None:
            return None
        return Generation(self.control / name, int(m.group(1)))

    # -- writing ---------------------------------------------------------------------------

    def __enter__(self) -> Output:
        if self.root.exists() and not self.root.is_dir():
            raise ExportError(f"{self.root} exists and is not a folder")
        try:
            self.control.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.control / "lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise ExportError(f"cannot write under {self.root}: {err}") from err
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
            m = _GENERATION.match(child.name)
            if m is not None:
                found.append((int(m.group(1)), child))
        return sorted(found)

    def _remove_strays(self) -> None:
        """Remove what killed exports left: staging folders and generations never switched in."""
        current = self.current()
        keep = set()
        if current is not None:
            keep.add(current.name)
            manifest = current.manifest() or {}
            replaced = manifest.get("replaces")
            if isinstance(replaced, str):
                keep.add(replaced)
        for child in self.control.iterdir():
            stray = child.name.startswith("staging-") or child.name.startswith("legacy-") or (
                _GENERATION.match(child.name) is not None and child.name not in keep
            )
            if stray:
                shutil.rmtree(child, ignore_errors=True)

    def stage(self) -> Generation:
        """A new, empty staging folder for the next generation.

        Raises:
            ExportError: the folder cannot be made.
        """
        numbers = [n for n, _ in self._generations()]
        path = self.control / f"staging-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError as err:
            raise ExportError(f"cannot write under {self.control}: {err}") from err
        return Generation(path, (max(numbers) if numbers else 0) + 1)

    @contextlib.contextmanager
    def staging(self) -> Iterator[Generation]:
        """A staging folder (see :meth:`stage`), removed again if the export fails before its switch."""
        staged = self.stage()
        try:
            yield staged
        except BaseException:
            shutil.rmtree(staged.path, ignore_errors=True)
            raise

    def switch(self, staged: Generation, tables: list[str]) -> Generation:
        """Make ``staged`` the current export, link its tables, and drop older generations.

        The old current generation is kept (readers may still be reading it); any older one is
        removed. Links of tables the new export does not hold are removed.

        Raises:
            ExportError: the switch failed (the previous export is still current, or the new
                one is and a table link could not be made).
        """
        try:
            return self._switch(staged, tables)
        except OSError as err:
            raise ExportError(f"could not switch {self.root} to the new export: {err}") from err

    def _switch(self, staged: Generation, tables: list[str]) -> Generation:
        previous = self.current()
        final = self.control / staged.name
        os.rename(staged.path, final)
        link = self.control / f"{_CURRENT}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        os.symlink(staged.name, link)
        os.replace(link, self.control / _CURRENT)  # the switch
        self._link_tables(tables, previous)
        for number, path in self._generations():
            if number != staged.number and (previous is None or number != previous.number):
                shutil.rmtree(path, ignore_errors=True)
        return Generation(final, staged.number)

    def _link_tables(self, tables: list[str], previous: Generation | None) -> None:
        wanted = [*tables, MANIFEST]
        for name in wanted:
            target = Path(CONTROL) / _CURRENT / name
            here = self.root / name
            if here.is_symlink():
                if Path(os.readlink(here)) == target:
                    continue
                here.unlink()
            elif here.is_dir():  # a table folder of the earlier, in-place layout
                os.rename(here, self.control / f"legacy-{name}-{secrets.token_hex(4)}")
            elif here.exists():
                raise ExportError(f"{here} is in the way of the export's link to its {name} table")
            os.symlink(target, here)
        gone = set((previous.manifest() or {}).get("tables", {})) - set(tables) if previous else set()
        for name in gone:
            here = self.root / name
            if here.is_symlink():
                here.unlink()
        for child in self.control.iterdir():
            if child.name.startswith("legacy-"):
                shutil.rmtree(child, ignore_errors=True)

    def files(self, generation: Generation) -> Iterator[Path]:
        """Every file a generation's manifest names, as paths under its folder."""
        manifest = generation.manifest() or {}
        for entry in manifest.get("tables", {}).values():
            for f in entry.get("files", []):
                yield generation.path / f["path"]
