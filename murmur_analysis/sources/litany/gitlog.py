"""git history as data: the ``git log -z --raw`` output parsed into columns of commits and their changes.

:class:`LogParser` reads what ``git log`` writes with :data:`LOG_ARGS`, in pieces of any size
(a walk streams it), into a :class:`Walk`: every commit's id, committer time and parents as
columns, and the changes of the commits that have any. :meth:`Walk.chain` follows one branch
through it; :class:`Commit` objects are made only for callers that ask for them
(:meth:`Walk.commits`). Running git safely is :mod:`murmur_analysis.sources.litany.git`'s
business; this module only parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from ...core.values import EPOCH, BadTime, datetime_of_seconds
from ...engine import _native
from ...errors import GitError

__all__ = ["LOG_ARGS", "BranchLog", "Change", "Commit", "LogParser", "Walk", "first_parent", "parse_log"]

_HEADER = "commit "
#: The ``git log`` options whose output :class:`LogParser` reads.
LOG_ARGS = (
    "--raw", "-z", "--no-abbrev", "--no-renames", "--root", "--diff-merges=first-parent", "--no-relative",
    "--no-color", "--no-decorate", "--no-show-signature", "--no-ext-diff", "--no-textconv", "--no-mailmap",
    f"--format=tformat:{_HEADER}%H %ct %P",
)
#: Unix seconds a timestamp holds (years 1..9999, as :func:`datetime_of_seconds` decides).
_FIRST_SECOND, _LAST_SECOND = -62_135_596_800, 253_402_300_799


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


@dataclass(frozen=True, slots=True, eq=False)
class Walk:
    """The commits of one ``git log`` listing as columns, in git's order.

    Attributes:
        shas: each commit's id.
        times: each commit's committer time in Unix seconds, as written.
        seconds: the same as int64 (a time past int64 held as one past what a timestamp holds).
        parents: each commit's parents.
        changes: the changes of each commit that changed a path listed, by index.
        index: the index of each commit, by id.
        changed: whether each commit changed a path listed.
    """

    shas: list[str]
    times: list[int]
    seconds: np.ndarray
    parents: list[tuple[str, ...]]
    changes: dict[int, tuple[Change, ...]]
    index: dict[str, int]
    changed: np.ndarray  #: whether each commit has changes (bool)

    def commits(self) -> list[Commit]:
        """Every commit as a :class:`Commit`, in git's order."""
        changes = self.changes
        return [Commit(sha, datetime_of_seconds(int(s)), p, changes.get(i, ()))
                for i, (sha, s, p) in enumerate(zip(self.shas, self.times, self.parents, strict=True))]

    def extended(self, other: Walk) -> Walk:
        """This walk followed by the commits of ``other`` it does not hold (a later walk's, in git's order)."""
        new = [i for i, sha in enumerate(other.shas) if sha not in self.index]
        if not new:
            return self
        if len(new) < len(other.shas):
            other = other.subset(new)
        n = len(self.shas)
        changes = dict(self.changes)
        changes.update((n + i, c) for i, c in other.changes.items())
        index = dict(self.index)
        index.update((sha, n + i) for i, sha in enumerate(other.shas))
        return Walk(self.shas + other.shas, self.times + other.times, np.concatenate([self.seconds, other.seconds]),
                    self.parents + other.parents, changes, index, np.concatenate([self.changed, other.changed]))

    def subset(self, rows: list[int]) -> Walk:
        """The commits at ``rows`` (ascending), as a walk of their own."""
        at = np.asarray(rows, dtype=np.int64)
        shas = [self.shas[i] for i in rows]
        changes = {j: self.changes[i] for j, i in enumerate(rows) if i in self.changes}
        return Walk(shas, [self.times[i] for i in rows], self.seconds[at], [self.parents[i] for i in rows], changes,
                    dict(zip(shas, range(len(shas)), strict=True)), self.changed[at])

    def chain(self, head: str) -> list[int]:
        """The indexes of ``head``'s first-parent history, oldest first.

        Raises:
            GitError: a commit of the chain is not in the walk, or the chain loops.
        """
        index, parents = self.index, self.parents
        chain: list[int] = []
        sha = head
        while sha:
            i = index.get(sha)
            if i is None:
                raise GitError(f"commit {sha} is not in the walk")
            if len(chain) > len(index):
                raise GitError(f"the first-parent history of {head} loops")
            chain.append(i)
            sha = parents[i][0] if parents[i] else ""
        chain.reverse()
        return chain


@dataclass(frozen=True, slots=True, eq=False)
class BranchLog:
    """One branch's first-parent history as columns, oldest first.

    Attributes:
        shas: each commit's id.
        seconds: each commit's committer time in Unix seconds (int64, as :attr:`Walk.seconds`).
        changes: the changes of each commit that has any, by position on the branch (ascending).
        unheld: the committer time of each commit whose time no timestamp holds, as written, by position.
    """

    shas: list[str]
    seconds: np.ndarray
    changes: dict[int, tuple[Change, ...]]
    unheld: dict[int, int]

    def __len__(self) -> int:
        return len(self.shas)

    @classmethod
    def of_walk(cls, walk: Walk, head: str) -> BranchLog:
        """``head``'s first-parent history through a walk.

        Raises:
            GitError: a commit of the chain is not in the walk, or the chain loops.
        """
        chain = walk.chain(head)
        seconds = walk.seconds[np.asarray(chain, dtype=np.int64)]
        changes = walk.changes
        changed = np.flatnonzero(walk.changed[chain]).tolist()
        bad = np.flatnonzero(~_held(seconds)).tolist()
        return cls([walk.shas[i] for i in chain], seconds, {p: changes[chain[p]] for p in changed},
                   {p: walk.times[chain[p]] for p in bad})

    @classmethod
    def of_commits(cls, commits: list[Commit]) -> BranchLog:
        """The history :meth:`GitRepo.log` gives, as columns."""
        times = [_written(c.time) for c in commits]
        seconds = _int64(times)
        return cls([c.sha for c in commits], seconds, {p: c.changes for p, c in enumerate(commits) if c.changes},
                   {p: times[p] for p in np.flatnonzero(~_held(seconds)).tolist()})

    def at(self, position: int) -> datetime | None:
        """The committer time of the commit at ``position``, ``None`` when no timestamp holds it."""
        if position in self.unheld:
            return None
        return EPOCH + timedelta(seconds=int(self.seconds[position]))

    def timestamps(self) -> pa.Array:
        """Each commit's committer time as ``timestamp[us, UTC]``, null where no timestamp holds it."""
        micros = pa.array(self.seconds * 1_000_000, mask=~_held(self.seconds))
        return micros.cast(pa.timestamp("us", tz="UTC"))


def _held(seconds: np.ndarray) -> np.ndarray:
    """Whether a timestamp holds each of ``seconds`` (:func:`datetime_of_seconds` gives no :class:`BadTime`)."""
    return (seconds >= _FIRST_SECOND) & (seconds <= _LAST_SECOND)


def _written(time: datetime | BadTime) -> int:
    """The Unix seconds a commit's time was read from."""
    if isinstance(time, datetime):
        return (time - EPOCH) // timedelta(seconds=1)
    return int(time.written)


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
    """The ``-z --raw`` output of ``git log``, fed in pieces of any size, parsed as they arrive.

    The whole records of each piece are read by the engine in one pass
    (:func:`~murmur_analysis.engine._native.git_log`): every record is a commit's header, a
    ``--raw`` line, or the path the record before it names, whatever that holds. A record cut by
    the end of a piece waits for the next, and so does a ``--raw`` line whose path does.
    """

    def __init__(self) -> None:
        self._shas: list[str] = []
        self._times: list[int] = []
        self._parents: list[tuple[str, ...]] = []
        self._changes: dict[int, list[Change]] = {}
        self._rest = b""  # an unfinished record
        self._raw: bytes | None = None  # a --raw line waiting for its path

    def feed(self, data: bytes) -> None:
        """Parse the next piece of output.

        Raises:
            GitError: the output is not what ``git log -z --raw`` writes.
        """
        held = self._rest + data if self._rest else data
        end = held.rfind(b"\0") + 1
        self._rest = held[end:]
        if end:
            self._take(held, end)

    def finish(self) -> list[Commit]:
        """Every commit parsed, in git's order.

        Raises:
            GitError: the output is not what ``git log -z --raw`` writes, or it ended inside a record.
        """
        return self.finish_walk().commits()

    def finish_walk(self) -> Walk:
        """Every commit parsed, as columns (see :meth:`finish`)."""
        rest, self._rest = self._rest, b""
        if rest:
            self._take(rest, len(rest))  # the last record, with no NUL after it
        if self._raw is not None:
            raise GitError("git log output ended inside a change")
        shas, times = self._shas, self._times
        changed = np.zeros(len(shas), dtype=bool)
        changed[list(self._changes)] = True
        return Walk(shas, times, _int64(times), self._parents, {i: tuple(c) for i, c in self._changes.items()},
                    dict(zip(shas, range(len(shas)), strict=True)), changed)

    def _take(self, data: bytes, end: int) -> None:
        try:
            shas, times, parents, changes, self._raw = _native.git_log(data, end, self._raw, len(self._shas))
        except ValueError as err:
            kind, record = err.args
            if kind == "header":
                raise GitError(f"unexpected git log header: {record.decode(errors='replace')[7:][:80]!r}") from None
            raise GitError(f"unexpected git log output: {record[:80]!r}") from None
        self._shas += shas
        self._times += times
        self._parents += parents
        for owner, path, mode, blob, status in changes:
            self._changes.setdefault(owner, []).append(Change(path.decode("utf-8", "surrogateescape"), mode, blob,
                                                              status))


def _int64(seconds: list[int]) -> np.ndarray:
    """Unix seconds as int64, a time past int64 held as one past what a timestamp holds."""
    try:
        return np.array(seconds, dtype=np.int64)
    except OverflowError:
        return np.array([min(s, _LAST_SECOND + 1) for s in seconds], dtype=np.int64)
