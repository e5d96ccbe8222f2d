"""Discovery: which source reads which path, and each conversation admitted once.

Every source that claims a path reads it, and a folder is also searched one level down for the
sources that did not, so a folder holding several runtimes' data loads them all at once. A
conversation reached twice (two paths, a parent and its child, a link) loads once, with a
``reached_twice`` diagnostics row; a folder that cannot be listed is a row, never an exception.
Every loader (``load``, ``iter_batches``, the export, ``load_dask``) discovers through
:class:`Discovery`.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.diagnostics import Diagnostic
from ..core.files import check_file, display, file_kind, identity, is_dir, listing, raw_name
from ..core.handoff import Conversation, TableRows
from ..core.paths import PathArg, user_path
from ..errors import NoSourceError, SourceError, UnknownSourceError
from ..sources import Diagnostics, claims, detect, get_source, names
from ..sources.base import Source

__all__ = ["REACHED_TWICE", "Discovery", "PathArg", "checked_options", "nothing_found", "printable"]

#: The diagnostics kind of a conversation (or a path) met a second time in one load.
REACHED_TWICE = "reached_twice"


class _Targets:
    """Which source reads which path: one instance per source for the whole load.

    A source is made when it claims a path, or up front when options are given for it (so an
    option it does not take is refused whether or not it reads anything).
    """

    def __init__(self, options: Mapping[str, Mapping[str, Any]]) -> None:
        self.options = options
        self._made: dict[str, Source] = {}
        for name in options:
            self.source(name)

    def source(self, name: str) -> Source:
        if name not in self._made:
            self._made[name] = get_source(name, **self.options.get(name, {}))
        return self._made[name]

    def _claimed(self, path: Path, candidates: list[str]) -> list[str]:
        return [name for name in candidates if claims(name, path, self.source)]

    def of(self, path: Path, forced: str | None, diags: Diagnostics) -> list[tuple[Source, Path]]:
        """Every ``(source, path)`` to open for one path given to :func:`load`.

        Each source that claims ``path`` reads it; a folder is also searched one level down
        for the sources that did not claim it, so sources side by side all load. A folder
        that cannot be listed is a diagnostics row. A ``forced`` source is the only one
        asked: it reads what it claims at or directly inside ``path`` (its part of a folder
        of several runtimes), and ``path`` itself where it claims nothing there.

        Raises:
            NoSourceError: nothing at or directly inside a readable ``path`` is recognised
                (never with a ``forced`` source).
        """
        candidates = [forced] if forced is not None else names()
        claimed = self._claimed(path, candidates)
        found = [(self.source(name), path) for name in claimed]
        if is_dir(path):
            rest = [name for name in candidates if name not in claimed]
            before = len(diags.rows)
            entries = listing(path, diags)
            if len(diags.rows) > before and not found:
                return []  # the folder could not be listed: reported, nothing to read
            for entry in entries:
                if not entry.name.startswith("."):
                    child = Path(entry.path)
                    found += [(self.source(name), child) for name in self._claimed(child, rest)]
        if not found:
            if forced is not None:
                return [(self.source(forced), path)]  # claimed nowhere: the source asked for reads it as it can
            if is_dir(path):
                raise NoSourceError(f"no source recognises {path} or anything directly inside it")
            raise NoSourceError(f"no source recognises {path}")
        return found


def _identity(conv: Conversation) -> Hashable | None:
    """What makes two conversations the same data: the file or folder read, and the part of it."""
    if conv.path is None:
        return None
    found = identity(conv.path)
    return None if found is None else (conv.source, *found, conv.part)


def checked_options(options: Mapping[str, Mapping[str, Any]] | None) -> Mapping[str, Mapping[str, Any]]:
    """``options`` (or ``{}``) once every key names a registered source.

    Raises:
        UnknownSourceError: a key names no registered source (a misspelling is never ignored).
    """
    known = names()
    unknown = sorted(set(options or {}) - set(known))
    if unknown:
        raise UnknownSourceError(f"options name no registered source: {', '.join(map(repr, unknown))}",
                                 hint=f"registered sources: {', '.join(known)}")
    return options or {}


def nothing_found(source: str, path: Path, options: Mapping[str, Mapping[str, Any]]) -> SourceError:
    """The error for a forced ``source`` that found nothing in ``path``, saying what it looks like."""
    try:
        looks = f"it looks like a {detect(path, options).name} source"
    except NoSourceError:
        looks = "no source recognises it"
    return SourceError(f"the {source} source found no conversations in {path}: {looks}",
                       hint="drop source= to detect the source, or point at the right folder",
                       cli_hint="drop --source to detect the source, or point at the right folder")



class Discovery:
    """What one load reads, found once for every loader (:func:`load`, ``load_dask``).

    It resolves each path to the sources that read it (:class:`_Targets`), opens each
    ``(source, path)`` once, and admits each conversation once however many paths or links
    lead to it; what it met is in :attr:`rows` (folders that could not be listed, data reached
    twice).

    Attributes:
        rows: diagnostics the discovery itself reported (source ``load``).
    """

    def __init__(self, source: str | None, options: Mapping[str, Mapping[str, Any]]) -> None:
        self._forced = source
        self._targets = _Targets(options)
        self._loader = Diagnostics("load")
        self.rows = self._loader.rows
        self._opened: dict[Hashable, str] = {}  # (source, identity of a path opened) -> the path
        self._seen: dict[Hashable, str] = {}  # identity of each conversation admitted -> where read
        self._taken: dict[tuple[str, str], Hashable] = {}  # (source, id) -> the identity holding it
        self._reported: set[Diagnostic] = set()

    def targets(self, paths: Iterable[PathArg]) -> Iterator[tuple[Source, Path]]:
        """Every ``(source, path)`` to open, each once.

        Raises:
            FileNotFoundError: a path that does not exist.
            NoSourceError: a readable path nothing recognises.
        """
        for raw in paths:
            path = user_path(raw)  # bytes: a name that is not UTF-8
            if not os.path.lexists(path):
                raise FileNotFoundError(f"no such file or folder: {path}")
            if self._forced is None and file_kind(path) in ("link loop", "dangling link"):
                check_file(path, self._loader)  # reported: a link that leads nowhere
                continue
            for src, target in self._targets.of(path, self._forced, self._loader):
                where = identity(target)
                key = None if where is None else (src.name, *where)
                if key is not None and key in self._opened:
                    self._loader.report(target, REACHED_TWICE,
                                        f"{src.name} already read this as {self._opened[key]}; read once")
                    continue
                if key is not None:
                    self._opened[key] = os.fspath(target)
                yield src, target

    def fresh(self, rows: Iterable[Diagnostic]) -> list[Diagnostic]:
        """``rows`` less those already reported in this load (a file read again through another path)."""
        out = []
        for row in rows:
            if row not in self._reported:
                self._reported.add(row)
                out.append(row)
        return out

    def admit(self, conv: Conversation, diags: Diagnostics) -> Conversation | None:
        """``conv`` as it loads, or ``None`` when it was reached before in this load (then reported).

        The conversation handed over is never changed: an admitted one whose id another of its
        source holds in this load loads as a copy under an id of its own.
        """
        ident = _identity(conv)
        if ident is not None and ident in self._seen:
            diags.report(conv.path or "", REACHED_TWICE,
                         f"conversation {conv.conversation_id} was reached twice (first as {self._seen[ident]}); "
                         "loaded once")
            return None
        if ident is not None:
            self._seen[ident] = conv.path or ""
        unique = _unique_id(conv, ident, self._taken, diags)
        return conv if unique == conv.conversation_id else replace(conv, conversation_id=unique)

    def admit_rows(self, source: str, rows: TableRows) -> bool:
        """Whether ``rows`` load: rows of one table read from a file reached before in this load do not.

        Rows with no ``path`` always load. (A store reached through a folder and as itself gives
        its rows once, as a conversation reached twice loads once.)
        """
        found = identity(rows.path) if rows.path is not None else None
        if found is None:
            return True
        key = ("rows", source, rows.table, *found)
        if key in self._seen:
            return False
        self._seen[key] = rows.path or ""
        return True


def _unique_id(
    conv: Conversation, ident: Hashable | None, taken: dict[tuple[str, str], Hashable], diags: Diagnostics
) -> str:
    """An id for ``conv`` no other conversation of its source holds in this corpus.

    Two different files may carry the same id (two homes with a record of the same name, two
    session files of one name): both load, the later one's id qualified with ``#2``, ``#3``, ...
    """
    key = (conv.source, conv.conversation_id)
    if key not in taken:
        taken[key] = ident
        return conv.conversation_id
    n = 2
    while (conv.source, f"{conv.conversation_id}#{n}") in taken:
        n += 1
    new = f"{conv.conversation_id}#{n}"
    diags.report(conv.path or "", "duplicate_id",
                 f"conversation id {conv.conversation_id} is already held by another file; this one loads as {new}")
    taken[(conv.source, new)] = ident
    return new


def printable(conv: Conversation) -> Conversation:
    r"""``conv`` with names Arrow can hold: undecodable bytes of file names shown as ``\xNN``.

    The exact bytes go to ``conversations.conversation_id_bytes`` and ``conversations.path_bytes``.
    """
    raw_id, raw_path = raw_name(conv.conversation_id), raw_name(conv.path)
    if raw_id is None and raw_path is None:
        return conv
    return replace(
        conv,
        conversation_id=display(conv.conversation_id),
        path=display(conv.path) if conv.path is not None else None,
        conversation_id_bytes=raw_id,
        path_bytes=raw_path,
    )

