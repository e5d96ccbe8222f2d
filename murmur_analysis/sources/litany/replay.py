"""Decoding litany ``messages/`` files from git: each blob parsed once per load.

:class:`Replayer` holds one repository's cache of parsed blobs, keyed by ``(blob id, kind)``,
so a blob held by many commits and branches is parsed once, and turns a ``messages/`` file of
a commit into an :class:`~murmur_analysis.core.model.Entry`. Counting the states those entries make
is the history core's (:mod:`murmur_analysis.algorithms.history`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from ...core.files import display
from ...core.model import Entry, sorted_entries
from ...core.providers import Resolved, resolve
from ..base import Diagnostics
from .entries import Parsed, entry_name, normalize_usage, parse_body
from .git import GitRepo

__all__ = ["MESSAGES", "Replayer"]

MESSAGES = "messages/"
_FILE_MODES = ("100644", "100755")


class Replayer:
    """Decodes the ``messages/`` files of one repository, with its cache of parsed blobs.

    Attributes:
        parses: blobs parsed so far (each ``(blob id, kind)`` once).
    """

    def __init__(self, repo: GitRepo, diags: Diagnostics) -> None:
        self.repo = repo
        self.diags = diags
        self.parses = 0
        self._parsed: dict[tuple[str, bool], Parsed] = {}
        self._reported: set[tuple[str, str]] = set()

    def where(self, commit: str, name: str) -> str:
        """The diagnostics path of a file of a commit."""
        return f"{self.repo.git_dir}@{commit}:{MESSAGES}{name}"

    def prefetch(
        self, wanted: Iterable[tuple[str, str, str, str]], also: Iterable[str] = ()
    ) -> dict[str, bytes | None]:
        """Read and parse, in one batch, every ``(name, oid, mode, commit)`` not parsed yet.

        Args:
            wanted: ``messages/`` files as ``(name, blob id, mode, a commit holding it)``.
            also: other objects to read in the same batch (e.g. ``<commit>:name``).

        Returns:
            The contents of the ``also`` objects, as :meth:`GitRepo.read` gives them.
        """
        todo = self.plan(wanted)
        extra = list(also)
        if not todo and not extra:
            return {}
        data = self.repo.read([*(oid for oid, _ in todo), *extra])
        self.take(todo, data)
        return {name: data.get(name) for name in extra}

    def plan(self, wanted: Iterable[tuple[str, str, str, str]]) -> dict[tuple[str, bool], str]:
        """The blobs :meth:`prefetch` would read: ``(blob id, is markdown) -> where it was met``."""
        todo: dict[tuple[str, bool], str] = {}
        for name, oid, mode, commit in wanted:
            parsed_name = entry_name(name)
            if parsed_name is None or mode not in _FILE_MODES:
                continue
            key = (oid, parsed_name.is_md)
            if key not in self._parsed and key not in todo:
                todo[key] = self.where(commit, name)
        return todo

    def take(self, todo: dict[tuple[str, bool], str], data: Mapping[str, bytes | None]) -> None:
        """Parse the blobs of a :meth:`plan`, read by the caller (``data``: blob id -> contents).

        A blob parsed since the plan was made (read on demand meanwhile) is not parsed again.
        """
        for (oid, is_md), where in todo.items():
            if (oid, is_md) in self._parsed:
                continue
            raw = data.get(oid)
            if raw is None:
                parsed = Parsed(error=f"blob {oid} is missing from the repository")
            else:
                self.parses += 1
                parsed = parse_body(raw, is_md)
            self._parsed[(oid, is_md)] = parsed
            if parsed.error:
                self.diags.report(where, "bad_entry", parsed.error)

    def entry(
        self, name: str, oid: str, mode: str, commit: str, at: datetime | None, resolved: Resolved | None
    ) -> Entry | None:
        """The entry a ``messages/`` file makes, or ``None`` (not an entry, or unreadable).

        Args:
            name: the file name under ``messages/``.
            oid: its blob id.
            mode: its git file mode.
            commit: a commit holding it (for diagnostics).
            at: the entry's ``created_at``.
            resolved: the API the entry's step recorded (``None``: guessed from the model id).
        """
        parsed_name = entry_name(name)
        if parsed_name is None:
            return None
        if mode not in _FILE_MODES:
            if (name, oid) not in self._reported:
                self._reported.add((name, oid))
                self.diags.report(self.where(commit, name), "not_a_file",
                                  f"an entry of mode {mode} (a link or submodule) cannot be read")
            return None
        parsed = self._parsed.get((oid, parsed_name.is_md))
        if parsed is None:
            self.prefetch([(name, oid, mode, commit)])
            parsed = self._parsed[(oid, parsed_name.is_md)]
        if parsed.error:
            return None
        assistant = parsed_name.side == "assistant"
        model = parsed_name.origin if assistant else None
        usage = None
        if parsed.usage is not None:
            usage = normalize_usage(parsed.usage, resolved or resolve(None, model))
        # A file name that is not UTF-8 is shown with \xNN escapes (git's bytes are in the tree).
        return Entry(
            position=parsed_name.seq, side=parsed_name.side, blocks=parsed.blocks, id=display(name),
            origin=display(parsed_name.origin), model=model, created_at=at, usage=usage,
        )

    def entries_at(self, rev: str) -> tuple[str, list[Entry]]:
        """The commit ``rev`` names and the entries of its tree, in order (``created_at`` null).

        Raises:
            GitError: ``rev`` names no commit of the repository.
        """
        sha = self.repo.resolve(rev)
        items = [i for i in self.repo.ls_tree(sha, "messages") if i.type != "tree"]
        self.prefetch((i.name, i.oid, i.mode, sha) for i in items)
        made = (self.entry(i.name, i.oid, i.mode, sha, None, None) for i in items)
        return sha, list(sorted_entries(e for e in made if e is not None))
