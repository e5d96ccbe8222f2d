"""git history as data: the ``git log -z --raw`` output parsed into commits and their changes.

:class:`LogParser` reads what ``git log`` writes with :data:`LOG_ARGS`, in pieces of any size
(a walk streams it); :func:`first_parent` follows one branch through the commits a walk found.
Running git safely is :mod:`murmur_analysis.sources.litany.git`'s business; this module only parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ...core.values import BadTime, datetime_of_seconds
from ...errors import GitError

__all__ = ["LOG_ARGS", "Change", "Commit", "LogParser", "first_parent", "parse_log"]

_HEADER = "commit "
#: The ``git log`` options whose output :class:`LogParser` reads.
LOG_ARGS = (
    "--raw", "-z", "--no-abbrev", "--no-renames", "--root", "--diff-merges=first-parent", "--no-relative",
    "--no-color", "--no-decorate", "--no-show-signature", "--no-ext-diff", "--no-textconv", "--no-mailmap",
    f"--format=tformat:{_HEADER}%H %ct %P",
)


@dataclass(frozen=True, slots=True)
class Change:
    """One path a commit changed against its first parent (a ``--raw`` line)."""

    path: str
    mode: str
    blob: str
    status: str


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit of a walk, with the paths it changed."""

    sha: str
    time: datetime | BadTime  #: the committer time as git wrote it (a :class:`~.values.BadTime`: none holds it)
    parents: tuple[str, ...]
    changes: tuple[Change, ...]

    @property
    def at(self) -> datetime | None:
        """The committer time, ``None`` when no timestamp holds it (its reader reports that)."""
        return self.time if isinstance(self.time, datetime) else None


def first_parent(commits: dict[str, Commit], head: str) -> list[Commit]:
    """The first-parent history of ``head`` through a :meth:`GitRepo.walk` map, oldest first.

    Raises:
        GitError: a commit of the chain is not in the map.
    """
    chain: list[Commit] = []
    sha = head
    while sha:
        commit = commits.get(sha)
        if commit is None:
            raise GitError(f"commit {sha} is not in the walk")
        if len(chain) > len(commits):
            raise GitError(f"the first-parent history of {head} loops")
        chain.append(commit)
        sha = commit.parents[0] if commit.parents else ""
    chain.reverse()
    return chain


def parse_log(out: bytes) -> list[Commit]:
    """Parse the ``-z`` output of :meth:`GitRepo.log`."""
    parser = LogParser()
    parser.feed(out)
    return parser.finish()


class LogParser:
    """Commits from the ``-z --raw`` output of ``git log``, fed in pieces of any size."""

    def __init__(self) -> None:
        self.commits: list[Commit] = []
        self._head: list[str] | None = None  # the open commit's header fields: sha, time, parents
        self._changes: list[Change] = []
        self._raw: bytes | None = None  # a --raw line waiting for its path
        self._rest = b""  # an unfinished token

    def feed(self, data: bytes) -> None:
        """Parse the next piece of output.

        Raises:
            GitError: the output is not what ``git log -z --raw`` writes.
        """
        tokens = (self._rest + data).split(b"\0") if self._rest else data.split(b"\0")
        self._rest = tokens.pop()
        raw = self._raw
        for token in tokens:
            if raw is not None:
                _old_mode, mode, _old, blob, status = raw[1:].decode().split(" ")
                self._changes.append(Change(token.decode("utf-8", "surrogateescape"), mode, blob, status[:1]))
                raw = None
            elif token[:7] == b"commit ":
                self._close()
                self._head = token[7:].decode().split(" ")
            elif token:
                token = token.lstrip(b"\n")
                if token[:1] == b":" and self._head is not None:
                    raw = token
                elif token[:7] == b"commit ":
                    self._close()
                    self._head = token[7:].decode().split(" ")
                elif token:
                    raise GitError(f"unexpected git log output: {token[:80]!r}")
        self._raw = raw

    def finish(self) -> list[Commit]:
        """Every commit parsed, in git's order.

        Raises:
            GitError: the output ended inside a record.
        """
        rest, self._rest = self._rest, b""
        if rest:
            self.feed(rest + b"\0")
        if self._raw is not None:
            raise GitError("git log output ended inside a change")
        self._close()
        return self.commits

    def _close(self) -> None:
        head = self._head
        if head is None:
            return
        if len(head) < 2 or not head[1].isdigit():
            raise GitError(f"unexpected git log header: {' '.join(head)[:80]!r}")
        self.commits.append(Commit(head[0], datetime_of_seconds(int(head[1])),
                                   tuple(p for p in head[2:] if p), tuple(self._changes) if self._changes else ()))
        self._head = None
        if self._changes:
            self._changes = []
