"""The litany source: transcripts committed to git, one branch per agent (formats.md §2).

``load`` accepts a workspace (``repo.git/`` beside ``steps/``), a workspaces root (or a data
root holding ``workspaces/``), or any git repository with ``agents/*`` branches. Each branch
``agents/<agent-id>`` is one conversation:

* **entries** are the ``messages/`` files of the branch head, decoded as litany reads them
  (:mod:`.entries`); ``message_id`` is the file name, ``created_at`` the commit time of the
  commit that added the file;
* **growth** has one row per commit of the branch (first-parent, oldest first): the entries,
  characters, context tokens (the last reported prompt plus its output) and the orphans
  assembly would drop, for the tree of that commit. The branch's commits are decoded into
  history events (:mod:`.branch`) and counted by the history core
  (:mod:`murmur_analysis.algorithms.history`);
* **steps** come from ``steps/<agent-id>/NNN/`` (:mod:`.steps`);
* **usage**: per step attempt and per unclaimed model entry (:mod:`.spend`). A child agent's
  branch (its id extends a loaded parent's with ``-``) inherits the parent's history: entries
  added by commits of the parent's branch are the parent's spend and give no usage row here;
* **orphans**: ``found_by="assembly"`` for the orphans dropped when assembling each step's
  read-state commit and the branch head (``step`` null), ``found_by="record"`` for the ids
  each ``meta.json`` recorded, so a disagreement is a row under one and not the other. An
  orphan that stays in the tree is dropped again at every later step, so it has a row per
  step; ``conversations.orphans`` counts the head's rows (what the branch drops now).

A conversation is handed over before anything of it is read: its key, path, part and branch
tips are known from the refs alone, so an incremental export can compare
:meth:`LitanySource.fingerprint` and skip it unread. Its commits are walked, its blobs read and
its steps matched when its entries are iterated; the entries' generator returns the
conversation's :class:`~murmur_analysis.core.handoff.Summary`.

Git is read through :mod:`murmur_analysis.sources.litany.git` (plumbing only, safe on hostile repositories).
Branches are read in batches (one, then twice as many as the batch before, up to 32): each batch
is walked in one ``git log`` listing only ``messages/`` changes, parsed into columns (a history
a batch before walked, such as the parent's a fork inherited, is not listed again), and then
asks the repository's one ``git cat-file --batch`` process for the blobs no branch read before:
every blob is parsed once per load however many commits and branches hold it. While a load
decodes one batch, the next is read and the one after it walked, one walk at a time on a thread
of its own. A commit that does not touch ``messages/`` costs one log line and no Python object
of its own: the history core spreads the states over the commits, and the growth rows leave as
columns.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Generator, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from ...algorithms.assembly import Assembled, assemble
from ...algorithms.history import Timeline, replay
from ...core.diagnostics import Diagnostic
from ...core.files import display, entry_is_dir, is_dir, listing
from ...core.handoff import Conversation, GrowthColumns, OrphanRow, Summary, repeated
from ...core.identity import file_identity
from ...core.model import Entry
from ...core.paths import user_path
from ...core.values import datetime_of_seconds, held
from ...errors import GitError
from ..base import READ_ALL, Diagnostics, ReadContext, Source
from .branch import decode, dropped_at, message_files
from .git import GitRepo
from .gitlog import BranchLog, Walk
from .replay import MESSAGES, Replayer
from .spend import StepIndex, settle
from .steps import StepRecord, read_steps
from .workspaces import find_git_dir, find_workspaces, guess_can_open, shallow_boundary

__all__ = ["LitanySource", "Replayer", "assemble_commit"]

AGENTS = "refs/heads/agents/"
#: The most branches after the one asked for that one read of git reads ahead (the last batch is
#: decoded after the last walk ends: at 10x the commits, 64 left 0.3 s of it).
_MOST_AHEAD = 32


class LitanySource(Source):
    """Litany workspaces: one conversation per ``agents/<agent-id>`` branch."""

    name: ClassVar[str] = "litany"
    description: ClassVar[str] = "litany git transcripts: one agents/<id> branch per agent, steps/ records beside"

    def __init__(self, git: str = "git") -> None:
        """Create the source.

        Args:
            git: the git executable to run.
        """
        self.git = git

    def guess_can_open(self, path: Path) -> bool:
        """Whether ``path`` is a workspace, a workspaces root, or a repo with ``agents/*`` branches.

        A workspace whose ``repo.git`` cannot be read is claimed too, so that it is reported.
        """
        return guess_can_open(path)

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every agent branch of every workspace under ``path``, each read when its entries are."""
        for git_dir, steps_dir in find_workspaces(path, diagnostics=diagnostics):
            workspace = _Workspace.open(self.git, git_dir, steps_dir, diagnostics, None)
            if workspace is None:
                continue
            shallow = workspace.shallow
            if shallow:
                diagnostics.report(git_dir, "shallow_history",
                                   f"a shallow clone: the history before {len(shallow)} boundary commit(s) is not in "
                                   "the repository; the entries a boundary commit holds were written at an unknown "
                                   "time (created_at null), and growth starts at the boundary")
            for agent in workspace.wanted:
                yield workspace.conversation(agent)
            if steps_dir is not None and is_dir(steps_dir):
                for entry in listing(steps_dir, diagnostics):
                    if entry_is_dir(entry) and entry.name not in workspace.wanted:
                        diagnostics.report(entry.path, "no_branch",
                                           f"step records for agent {entry.name} with no agents/ branch")

    def fingerprint(self, conv: Conversation) -> object:
        """The branch's tip and its ancestors' tips, and the identity of its step records.

        Known without reading the conversation: the tips come with it from the refs.
        """
        tips = conv.versions
        if not isinstance(conv.key, tuple) or not tips:
            return None
        steps_dir = conv.key[1]
        records: list[list[Any]] = []
        if steps_dir:
            for folder, dirs, names in os.walk(Path(steps_dir) / conv.key[2]):
                dirs.sort()
                records.extend([os.path.join(folder, n), file_identity(os.path.join(folder, n))] for n in sorted(names))
        return ["git", sorted(tips.items()), records]

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """The agent branch ``key`` names (``(git_dir, steps_dir, agent_id)``), read when iterated.

        Raises:
            GitError: the repository has no such branch.
        """
        assert isinstance(key, tuple)
        git_dir, steps_dir, agent_id = key
        workspace = _Workspace.open(self.git, Path(git_dir), Path(steps_dir) if steps_dir else None, diagnostics,
                                    agent_id)
        if workspace is None or agent_id not in workspace.wanted:
            raise GitError(f"no branch agents/{agent_id} in {git_dir}")
        return workspace.conversation(agent_id)


@dataclass(frozen=True, slots=True)
class _Walked:
    """What one walk of branches found.

    Attributes:
        listed: the commits the walk listed (``None``: it failed, and each branch was walked alone).
        logs: each branch walked: its first-parent history, or why git cannot give it.
    """

    listed: Walk | None
    logs: dict[str, BranchLog | GitError]


@dataclass(frozen=True, slots=True)
class _Found:
    """The blobs and ``name`` files of a batch's branches that have a history.

    Attributes:
        read: the batch's branches that have a history, in ref order (the others are reported when read).
        todo: the blobs asked for (:meth:`Replayer.plan`).
        names: each branch's ``<head>:name`` object, as ``read``.
        data: what git answered, by object name.
    """

    read: list[str]
    todo: dict[tuple[str, bool], str]
    names: list[str]
    data: dict[str, bytes | None]


@dataclass(slots=True)
class _Fetch:
    """One batch of branches being read: its blobs from git once it is walked, its step records from disk.

    Attributes:
        agents: the batch's branches, in ref order.
        found: what git answered.
        records: each branch's step records, and what reading them reported.
    """

    agents: list[str]
    found: Future[_Found]
    records: Future[list[tuple[list[StepRecord], list[Diagnostic]]]]

    def drop(self) -> None:
        """Let the reads finish and throw away what they found (nothing of it was parsed or reported)."""
        for pending in (self.found, self.records):
            with contextlib.suppress(Exception):
                pending.result()


class _Workspace:
    """One repository's agent branches: listed up front, walked and read on demand.

    Attributes:
        wanted: each branch to read, ``agent id -> (ref, head)``, in ref order.
        shallow: the boundary commits of a shallow clone.
    """

    def __init__(self, repo: GitRepo, steps_dir: Path | None, diags: Diagnostics,
                 wanted: dict[str, tuple[str, str]]) -> None:
        self.repo = repo
        self.steps_dir = steps_dir
        self.diags = diags
        self.wanted = wanted
        self.shallow = shallow_boundary(repo.git_dir)
        self.replayer = Replayer(repo, diags)
        # Walks are queued by the thread that reads the branches and run one at a time on a
        # thread of their own, the only one that changes what they found (the three after these).
        self._walker: ThreadPoolExecutor | None = None
        self._walking: dict[str, Future[None]] = {}  # the walk that gives each branch's history
        self._walks: list[Walk] = []  # what the walks so far listed
        self._logs: dict[str, BranchLog | GitError] = {}
        self._in_walk: set[str] = set()  # branches whose whole history is in the walk
        self._order = {a: i for i, a in enumerate(wanted)}
        self._handed: dict[str, str | None] = {}  # branches handed over: the one handed over before each
        self._last: str | None = None
        self._started: set[str] = set()  # branches whose entries were iterated
        self._read_ahead = 0
        self._ready: dict[str, tuple[list[StepRecord], list[Diagnostic], bytes | None]] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._coming: _Fetch | None = None  # the next batch, read while this one's branches are

    @classmethod
    def open(cls, git: str, git_dir: Path, steps_dir: Path | None, diags: Diagnostics,
             only: str | None) -> _Workspace | None:
        """List a repository's agent branches (only ``only`` and its ancestors when given).

        What makes the repository or a branch unreadable is reported (for ``only``: nothing
        about other branches); ``None`` when the repository cannot be read at all.
        """
        repo = GitRepo(git_dir, git)
        if repo.hazards():
            for where in repo.hazards():
                diags.report(where, "not_a_regular_file", "a FIFO, socket or device among the repository's files: "
                             "git would block on it, so the repository is not read")
            return None
        try:
            refs = repo.ref_kinds(AGENTS)
        except GitError as err:
            diags.report(git_dir, "unreadable_repo", str(err))
            return None
        wanted: dict[str, tuple[str, str]] = {}
        for ref, (head, kind) in refs.items():
            if kind == "commit":
                wanted[ref[len(AGENTS) :]] = (ref, head)
            elif only is None and kind == "missing":
                diags.report(f"{git_dir}@{ref}", "unreadable_branch",
                             f"the branch holds {head}, which is no object in the repository (a dangling ref)")
            elif only is None:
                diags.report(f"{git_dir}@{ref}", "not_a_commit",
                             f"the branch names a {kind} ({head}), not a commit; it holds no transcript")
        if only is not None:
            # One branch, with the histories of the agents it was forked from: their commits
            # are what it inherited, and their spend is theirs, not counted again here.
            wanted = {a: v for a, v in wanted.items() if a == only or only.startswith(a + "-")}
        return cls(repo, steps_dir, diags, wanted)

    def _ancestors(self, agent: str) -> list[str]:
        """The wanted agents ``agent`` was forked from (its id extends theirs with ``-``), in ref order."""
        parts = agent.split("-")
        found = (a for a in ("-".join(parts[:k]) for k in range(1, len(parts))) if a in self.wanted)
        return sorted(found, key=self._order.__getitem__)

    def conversation(self, agent: str) -> Conversation:
        """The conversation of branch ``agent``: nothing of it read until its entries are iterated."""
        git_dir = os.fspath(self.repo.git_dir)
        steps_dir = os.fspath(self.steps_dir) if self.steps_dir else None
        tips = {a: self.wanted[a][1] for a in [*self._ancestors(agent), agent]}
        self._handed[agent], self._last = self._last, agent
        return Conversation(source="litany", conversation_id=agent, entries=self._read(agent), key=(
            git_dir, steps_dir, agent), path=git_dir, part=agent, versions=dict(sorted(tips.items())))

    def log(self, agent: str) -> BranchLog:
        """The branch's first-parent history, oldest first (walked now if no walk under way gives it).

        Raises:
            GitError: git cannot walk this branch.
        """
        self._walk_ahead([agent])
        self._wait_walks([agent])
        found = self._logs[agent]
        if isinstance(found, GitError):
            raise found
        return found

    def _walk_ahead(self, batch: list[str]) -> None:
        """Queue a walk of the batch's branches no walk gives yet (walks run one after another, in order).

        Only the thread that reads the branches queues walks.
        """
        todo = [a for a in batch if a not in self._walking and a not in self._logs]
        if todo:
            if self._walker is None:
                self._walker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="litany-walk")
            walking = self._walker.submit(self._walk_now, todo)
            self._walking.update(dict.fromkeys(todo, walking))

    def _wait_walks(self, batch: list[str]) -> None:
        """Wait for the walks queued for the batch's branches."""
        for walking in {w for a in batch if (w := self._walking.get(a)) is not None}:
            walking.result()

    def _walk_now(self, batch: list[str]) -> None:
        """Walk a batch and keep what it found (on the walking thread)."""
        heads, known = self._to_walk(batch)
        self._learn(self._walk_heads(heads, known, self._walked() if known else None))

    def _to_walk(self, batch: list[str]) -> tuple[dict[str, str], list[str]]:
        """The heads a batch's walk lists, by branch, and the heads whose history is walked already.

        It lists the batch's branches not walked yet, and the branches they were forked from that
        are not walked yet either; a history walked before is not listed again.
        """
        agents = list(dict.fromkeys(a for b in batch for a in [*self._ancestors(b), b]))
        heads = {a: self.wanted[a][1] for a in agents if a not in self._logs}
        return heads, [self.wanted[a][1] for a in agents if a in self._in_walk]

    def _walked(self) -> Walk | None:
        """Every commit the walks so far listed, as one walk (``None``: none listed any)."""
        if len(self._walks) > 1:
            joined = self._walks[0]
            for walk in self._walks[1:]:
                joined = joined.extended(walk)
            self._walks = [joined]
        return self._walks[0] if self._walks else None

    def _walk_heads(self, heads: dict[str, str], known: list[str], base: Walk | None) -> _Walked:
        """Walk branches in one ``git log`` listing only ``messages/`` changes (nothing of the workspace changes).

        ``known`` are heads whose history is in ``base`` (the walks before): it is not listed
        again, and the branches are followed into it. Should the walk fail (a missing object,
        say), each branch is walked alone, so that only the broken ones fail.
        """
        if not heads:
            return _Walked(None, {})
        logs: dict[str, BranchLog | GitError] = {}
        try:
            listed = self.repo.walk_columns(heads.values(), [MESSAGES], known)
        except GitError:
            for agent, head in heads.items():
                try:
                    logs[agent] = BranchLog.of_commits(self.repo.log(head))
                except GitError as err:
                    logs[agent] = err
            return _Walked(None, logs)
        walk = listed if base is None else base.extended(listed)
        for agent, head in heads.items():
            try:
                logs[agent] = BranchLog.of_walk(walk, head)
            except GitError as err:
                logs[agent] = err
        return _Walked(listed, logs)

    def _learn(self, walked: _Walked) -> None:
        """Keep what a walk found (the first history found for a branch is kept)."""
        if walked.listed is not None:
            self._walks.append(walked.listed)
        for agent, log in walked.logs.items():
            if agent not in self._logs:
                self._logs[agent] = log
                if walked.listed is not None and isinstance(log, BranchLog):
                    self._in_walk.add(agent)

    def _prepare(self, agent: str) -> None:
        """Walk ``agent`` and some branches after it, and read their blobs, ``name`` files and step records.

        Git starts once per batch of branches: while every branch handed over is read (a
        load), each batch reads ahead twice as many of the branches not handed over yet (up to
        :data:`_MOST_AHEAD`); once one is left unread (an export that keeps it), a batch is the
        one branch asked for. A batch is walked, then its blobs read while its step records
        are, on threads of their own; during a load, the next batch is read while this one's
        branches are decoded, and the batch after it walked.
        """
        before = self._handed.get(agent)
        if before is not None and before not in self._started:
            self._read_ahead = 0
        elif before is not None:
            self._read_ahead = _ahead_after(self._read_ahead)
        batch = self._batch(agent, self._read_ahead)
        fetch, self._coming = self._coming, None
        if fetch is None or fetch.agents != batch:
            if fetch is not None:
                fetch.drop()  # read for branches that are not read next after all
            fetch = self._fetch(batch)
        found = fetch.found.result()
        self.replayer.take(found.todo, found.data)
        read = dict(zip(found.read, found.names, strict=True))
        for a, (records, reported) in zip(batch, fetch.records.result(), strict=True):
            if a in read:
                self._ready[a] = (records, reported, found.data.get(read[a]))
        if self._read_ahead and batch:
            following = self._batch_after(batch[-1], _ahead_after(self._read_ahead))
            if following:
                self._coming = self._fetch(following)
                self._walk_ahead(self._batch_after(following[-1], _ahead_after(_ahead_after(self._read_ahead))))

    def _batch(self, agent: str, ahead: int) -> list[str]:
        """``agent`` and the ``ahead`` branches after it that a batch may read (:meth:`_readable_after`)."""
        return [agent, *itertools.islice(self._readable_after(agent), ahead)]

    def _batch_after(self, last: str, ahead: int) -> list[str]:
        """The batch :meth:`_prepare` makes next if the branches are read in order after ``last``."""
        first = next(self._readable_after(last), None)
        return [] if first is None else self._batch(first, ahead)

    def _readable_after(self, agent: str) -> Iterator[str]:
        """The branches after ``agent`` neither handed over nor read yet, and not found broken."""
        following = itertools.islice(self.wanted, self._order[agent] + 1, None)
        return (a for a in following if a not in self._handed and a not in self._ready
                and not isinstance(self._logs.get(a), GitError))

    def _fetch(self, batch: list[str]) -> _Fetch:
        """Start reading a batch's blobs (those not parsed yet) and ``name`` files once walked, and its step records."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="litany-read")
        self._walk_ahead(batch)
        found = self._pool.submit(self._find, batch)
        records = self._pool.submit(_read_steps, self.steps_dir, batch, self.diags.source)
        return _Fetch(batch, found, records)

    def _find(self, batch: list[str]) -> _Found:
        """Read what a batch's branches hold, once they are walked (on a reading thread)."""
        self._wait_walks(batch)
        histories = {a: log for a in batch if isinstance(log := self._logs[a], BranchLog)}
        todo = self.replayer.plan(f for log in histories.values() for f in message_files(log))
        read = list(histories)
        names = [f"{self.wanted[a][1]}:name" for a in read]
        data = self.repo.read([*(oid for oid, _ in todo), *names])
        return _Found(read, todo, names, data)

    def _done(self) -> None:
        """Every branch is read: git's cat-file process and the reading threads are not needed any more."""
        fetch, self._coming = self._coming, None
        if fetch is not None:
            fetch.drop()
        for pool in (self._pool, self._walker):
            if pool is not None:
                pool.shutdown(wait=True)
        self._pool = self._walker = None
        self.repo.close()

    def _read(self, agent: str) -> Generator[Entry, None, Summary]:
        ref, head = self.wanted[agent]
        if agent not in self._ready and not isinstance(self._logs.get(agent), GitError):
            self._prepare(agent)
        try:
            log = self.log(agent)
        except GitError as err:
            self.diags.report(f"{self.repo.git_dir}@{ref}", "unreadable_branch", str(err))
            return Summary(readable=False)  # found unreadable once read: no row of any table
        self._started.add(agent)
        records, reported, title = self._ready.pop(agent)
        self.diags.extend(reported)
        for i, seconds in log.unheld.items():  # a committer time no timestamp holds: reported, and it is null
            held(datetime_of_seconds(seconds), self.diags, f"{self.repo.git_dir}@{log.shas[i]}", "committer time")
        inherited: set[str] = set()
        for other in self._ancestors(agent):
            try:
                inherited.update(self.log(other).shas)
            except GitError:
                continue  # reported when that branch is read
        entries, summary = _replay(self.replayer, agent, head, log, records, inherited, self.shallow,
                                   title.decode("utf-8", "replace").strip() if title else None)
        if all(a in self._started or isinstance(self._logs.get(a), GitError) for a in self.wanted):
            self._done()
        yield from entries
        return summary


def _ahead_after(ahead: int) -> int:
    """How many branches a batch reads ahead when the one before it read ``ahead`` (a load's doubling)."""
    return min(_MOST_AHEAD, max(1, 2 * ahead))


def _read_steps(
    steps_dir: Path | None, agents: list[str], source: str
) -> list[tuple[list[StepRecord], list[Diagnostic]]]:
    """Each agent's step records, and what reading them reported (kept for the agent's turn)."""
    if steps_dir is None:
        return [([], []) for _ in agents]
    reported = [Diagnostics(source) for _ in agents]
    records = read_steps([steps_dir / a for a in agents], reported)
    return [(found, r.rows) for found, r in zip(records, reported, strict=True)]


def _replay(
    replayer: Replayer, agent: str, head: str, log: BranchLog, records: list[StepRecord], inherited: set[str],
    shallow: frozenset[str], title: str | None,
) -> tuple[list[Entry], Summary]:
    """One branch read: its entries (in order) and its summary.

    The commits are decoded into history events (:func:`.branch.decode`), the steps' spend is
    settled (:func:`.spend.settle`), and the history core counts the state each event leaves and
    spreads them over every commit, as the growth columns.
    """
    n = len(log)
    index_of = dict(zip(log.shas, range(n), strict=True))
    steps = StepIndex(records, index_of)
    decoded = decode(replayer, log, steps, shallow)
    theirs = {name for name, added in decoded.added_at.items() if log.shas[added] in inherited}
    spend = settle(decoded.entries, records, steps, decoded.added_at, theirs)
    timeline = Timeline(list(replay(decoded.events, spend.usage_of)), decoded.at, n)
    messages, chars, context, orphans = timeline.columns()
    growth = GrowthColumns(n, pa.array(np.arange(n, dtype=np.int64)), log.timestamps(), repeated("commit", n),
                           messages, chars, context, commit=pa.array(log.shas, pa.string()), orphans=orphans)
    assembly = [OrphanRow(t, "assembly", None, head) for t in timeline.state(n - 1).dropped]
    recorded: list[dict[str, Any]] = []
    steps_rows: list[dict[str, Any]] = []
    for rec in records:
        last = rec.attempts[-1] if rec.attempts else None
        sealing = rec.sealing
        steps_rows.append({
            "agent_id": display(agent), "step": rec.step, "commit": rec.commit, "started_at": rec.started_at,
            "ended_at": rec.ended_at, "model": rec.model, "provider": rec.provider,
            "dropped_orphans": list(rec.dropped_orphans) if rec.dropped_orphans is not None else None,
            "attempts": len(rec.attempts), "finish_reason": sealing.finish_reason if sealing else None,
            "error": last.error if last is not None else None,
        })
        recorded += [{"step": rec.step, "commit": rec.commit, "tool_use_id": t, "found_by": "record"}
                     for t in rec.dropped_orphans or ()]
        dropped = dropped_at(replayer, rec.commit, index_of, timeline) if rec.commit else None
        assembly += [OrphanRow(t, "assembly", rec.step, rec.commit) for t in dropped or ()]
    summary = Summary(usage=spend.usage, growth=growth, title=title, assembly_orphans=tuple(assembly),
                      rows={"orphans": tuple(recorded), "steps": tuple(steps_rows)})
    return spend.entries, summary


def assemble_commit(repo: str | os.PathLike[str], rev: str) -> Assembled:
    """Replay one git revision: assemble the ``messages/`` of its tree as litany would.

    Args:
        repo: a workspace (holding ``repo.git/``), a bare repository, or a work tree.
        rev: any revision: a branch (``agents/x``), a commit id, ``agents/x~3``.

    Returns:
        The wire messages and the dropped orphan ids. Entries that cannot be read are left
        out (``load`` reports them as diagnostics).

    Raises:
        GitError: ``repo`` is not a git repository, or ``rev`` names no commit in it.

    Example:
        >>> asm = assemble_commit("data/samples/litany/workspaces/demo", "agents/x~3")  # doctest: +SKIP
    """
    path = user_path(repo)
    git_dir = find_git_dir(path)
    if git_dir is None:
        raise GitError(f"not a git repository or litany workspace: {path}")
    git = GitRepo(git_dir)
    try:
        _sha, entries = Replayer(git, Diagnostics("litany")).entries_at(rev)
    finally:
        git.close()
    return assemble(entries)
