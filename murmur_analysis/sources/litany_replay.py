"""Replaying litany ``messages/`` states from git: decode each blob once, assemble each state once.

:class:`Replayer` holds one repository's caches: parsed blobs keyed by ``(blob id, kind)``
and state summaries keyed by the state's files, so neither grows with commits that leave
``messages/`` alone. Assembly is the assembly core's (:func:`murmur_analysis.assembly.assemble`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from ..assembly import assemble
from ..model import Entry, sorted_entries, text_chars
from .base import Diagnostics
from .git import GitRepo
from .litany_entries import Family, Parsed, entry_name, normalize_usage, parse_body, provider_family

__all__ = ["MESSAGES", "Replayer", "Summary"]

MESSAGES = "messages/"
_FILE_MODES = ("100644", "100755")


@dataclass(frozen=True, slots=True)
class Summary:
    """Size, context tokens and dropped orphans of one ``messages/`` state."""

    messages: int
    chars: int
    context_tokens: int | None
    dropped: tuple[str, ...]


class Replayer:
    """Decodes and assembles ``messages/`` states of one repository, with its caches.

    Attributes:
        parses: blobs parsed so far (each ``(blob id, kind)`` once).
    """

    def __init__(self, repo: GitRepo, diags: Diagnostics) -> None:
        self.repo = repo
        self.diags = diags
        self.parses = 0
        self._parsed: dict[tuple[str, bool], Parsed] = {}
        self._summaries: dict[tuple[tuple[str, str, str], ...], Summary] = {}
        self._reported: set[tuple[str, str]] = set()

    def where(self, commit: str, name: str) -> str:
        """The diagnostics path of a file of a commit."""
        return f"{self.repo.git_dir}@{commit}:{MESSAGES}{name}"

    def prefetch(self, wanted: Iterable[tuple[str, str, str, str]]) -> None:
        """Read and parse, in one batch, every ``(name, oid, mode, commit)`` not parsed yet."""
        todo: dict[tuple[str, bool], str] = {}
        for name, oid, mode, commit in wanted:
            parsed_name = entry_name(name)
            if parsed_name is None or mode not in _FILE_MODES:
                continue
            key = (oid, parsed_name.is_md)
            if key not in self._parsed and key not in todo:
                todo[key] = self.where(commit, name)
        if not todo:
            return
        data = self.repo.read(oid for oid, _ in todo)
        for (oid, is_md), where in todo.items():
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
        self, name: str, oid: str, mode: str, commit: str, at: datetime | None, family: Family | None
    ) -> Entry | None:
        """The entry a ``messages/`` file makes, or ``None`` (not an entry, or unreadable).

        Args:
            name: the file name under ``messages/``.
            oid: its blob id.
            mode: its git file mode.
            commit: a commit holding it (for diagnostics).
            at: the entry's ``created_at``.
            family: the usage accounting to apply (``None``: from the model id).
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
            usage = normalize_usage(parsed.usage, family or provider_family(None, model))
        return Entry(
            position=parsed_name.seq, side=parsed_name.side, blocks=parsed.blocks, id=name,
            origin=parsed_name.origin, model=model, created_at=at, usage=usage,
        )

    def summary(self, entries: list[Entry], key: tuple[tuple[str, str, str], ...]) -> Summary:
        """Size, context and orphans of one state (cached by its files and their accounting)."""
        hit = self._summaries.get(key)
        if hit is None:
            context = None
            for e in entries:
                u = e.usage
                if u is not None and u.input_total_tokens is not None:
                    context = u.input_total_tokens + (u.output_tokens or 0) + (u.reasoning_tokens or 0)
            dropped = assemble(entries).dropped_orphans
            hit = Summary(len(entries), sum(text_chars(e.blocks) for e in entries), context, tuple(dropped))
            self._summaries[key] = hit
        return hit

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
