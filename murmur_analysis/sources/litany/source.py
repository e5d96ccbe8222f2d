"""The litany source: transcripts committed to git, one branch per agent (formats.md §2).

``load`` accepts a workspace (``repo.git/`` beside ``steps/``), a workspaces root (or a data
root holding ``workspaces/``), or any git repository with ``agents/*`` branches. Each branch
``agents/<agent-id>`` is one conversation:

* **entries** are the ``messages/`` files of the branch head, decoded as litany reads them
  (:mod:`.litany_entries`); ``message_id`` is the file name, ``created_at`` the commit time
  of the commit that added the file;
* **growth** has one row per commit of the branch (first-parent, oldest first): the entries,
  characters, context tokens (the last reported prompt plus its output) and the orphans
  assembly would drop, for the tree of that commit;
* **steps** come from ``steps/<agent-id>/NNN/`` (:mod:`.litany_steps`);
* **usage**: a step whose ``response.json`` reported usage gives one row per attempt
  (``found_in="response"``; ``sealed`` false for spend on a discarded attempt); a model
  entry whose step's sealing attempt reported no usage (or that no step claims) gives its own
  row (``found_in="entry"``). The entry's usage is the sealing attempt's, so the two are never
  both counted. A step whose read-state commit left the branch (a rebase, an unreadable
  ``meta.json``) is matched to its entry by content (:func:`_match_outputs`). A child agent's branch
  (its id extends a loaded parent's with ``-``) inherits the parent's history: entries added
  by commits of the parent's branch are the parent's spend and give no usage row here;
* **orphans**: ``found_by="assembly"`` for the orphans dropped when assembling each step's
  read-state commit and the branch head (``step`` null), ``found_by="record"`` for the ids
  each ``meta.json`` recorded, so a disagreement is a row under one and not the other. An
  orphan that stays in the tree is dropped again at every later step, so it has a row per
  step; ``conversations.orphans`` counts the head's rows (what the branch drops now).

Git is read through :mod:`.git` (plumbing only, safe on hostile repositories): one ``git log``
for the whole repository, listing only ``messages/`` changes, gives every branch's first-parent
history, and one ``git cat-file --batch`` reads every blob; every blob is parsed once per load
however many commits and branches hold it. A commit that does not touch ``messages/`` costs one
log line and one growth row: no read, no parse, no assembly. A commit that adds entries after
the last one (litany's usual commit) costs the entries it adds: the branch's running
:class:`~.litany_replay.Tally` carries sizes, context and orphans forward. Any other change to
``messages/`` (a deletion, a rewrite, an entry sorting earlier, as compaction makes) re-tallies
that state once. The cost grows with the entries each commit adds, not with the commits that
leave them alone nor with the length of the transcript.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Hashable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from ..._git import GitRepo, find_git_dir, is_git_dir
from ..._gitlog import Commit, first_parent
from ...assembly import Assembled, assemble
from ...diagnostics import Diagnostic
from ...errors import GitError
from ...handoff import Conversation, GrowthRow, OrphanRow, StepRow, UsageRow
from ...identity import file_identity
from ...model import Entry, Usage, context_tokens
from ...providers import Resolved, resolve
from ..base import Diagnostics, Source
from ..files import check_file, display, entry_is_dir, is_dir, listing, open_regular
from .entries import entry_name, normalize_usage
from .replay import MESSAGES, Replayer, Summary, Tally
from .steps import StepRecord, read_steps

__all__ = ["LitanySource", "Replayer", "assemble_commit"]

AGENTS = "refs/heads/agents/"
# One messages/ file as a branch holds it: name, blob id, mode, index of the commit adding it.
_Item = tuple[str, str, str, int]


def _sort_key(name: str) -> tuple[int, bytes]:
    parsed = entry_name(name)
    return (parsed.seq if parsed else -1, name.encode("utf-8", "surrogateescape"))


@dataclass
class _Branch:
    agent_id: str
    head: str
    log: list[Commit]


class _Steps:
    """Which step a commit of the branch belongs to: the last whose read state precedes it."""

    def __init__(self, records: list[StepRecord], index_of: dict[str, int]) -> None:
        points = sorted((index_of[r.commit], r.step, r) for r in records if r.commit in index_of)
        self._at = [p[0] for p in points]
        self._records = [p[2] for p in points]

    def of(self, commit_index: int) -> StepRecord | None:
        i = bisect.bisect_left(self._at, commit_index)
        return self._records[i - 1] if i else None


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
        return bool(_workspaces(path, limit=1)) or is_dir(path / "repo.git")

    def open(self, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
        """Every agent branch of every workspace under ``path``."""
        for git_dir, steps_dir in _workspaces(path, diagnostics=diagnostics):
            yield from self._read(git_dir, steps_dir, diagnostics, None)

    def fingerprint(self, conv: Conversation) -> Any:
        """The branch's tip and its ancestors' tips, and the identity of its step records."""
        tips = conv.extra.get("tips")
        if not isinstance(conv.key, tuple) or tips is None:
            return None
        steps_dir = conv.key[1]
        records: list[list[Any]] = []
        if steps_dir:
            for folder, dirs, names in os.walk(Path(steps_dir) / conv.key[2]):
                dirs.sort()
                records.extend([os.path.join(folder, n), file_identity(os.path.join(folder, n))] for n in sorted(names))
        return ["git", sorted(tips.items()), records]

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode one agent branch again (``key`` is ``(git_dir, steps_dir, agent_id)``)."""
        assert isinstance(key, tuple)
        git_dir, steps_dir, agent_id = key
        for conv in self._read(Path(git_dir), Path(steps_dir) if steps_dir else None, diagnostics, agent_id):
            return conv
        raise GitError(f"no branch agents/{agent_id} in {git_dir}")

    def _read(
        self, git_dir: Path, steps_dir: Path | None, diags: Diagnostics, only: str | None
    ) -> Iterator[Conversation]:
        repo = GitRepo(git_dir, self.git)
        replayer = Replayer(repo, diags)
        if repo.hazards():
            for where in repo.hazards():
                diags.report(where, "not_a_regular_file", "a FIFO, socket or device among the repository's files: "
                             "git would block on it, so the repository is not read")
            return
        try:
            refs = repo.ref_kinds(AGENTS)
        except GitError as err:
            diags.report(git_dir, "unreadable_repo", str(err))
            return
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
            if only not in wanted:
                return
            wanted = {a: v for a, v in wanted.items() if a == only or only.startswith(a + "-")}
        with ThreadPoolExecutor(max_workers=1) as pool:  # git works while the step records are read
            fetching = pool.submit(_fetch, repo, replayer, wanted)
            records = {agent: _read_steps(steps_dir, agent, diags.source) for agent in wanted}
            branches, failed, todo, data = fetching.result()
        for where, why in failed:
            diags.report(where, "unreadable_branch", why)
        replayer.take(todo, data)
        shallow = _shallow(git_dir)
        if shallow and only is None:
            diags.report(git_dir, "shallow_history",
                         f"a shallow clone: the history before {len(shallow)} boundary commit(s) is not in the "
                         "repository; the entries a boundary commit holds were written at an unknown time "
                         "(created_at null), and growth starts at the boundary")
        names = {f"{b.head}:name": data.get(f"{b.head}:name") for b in branches}
        shas = {b.agent_id: {c.sha for c in b.log} for b in branches}
        for branch in branches:
            if only is not None and branch.agent_id != only:
                continue
            steps, reported = records[branch.agent_id]
            diags.extend(reported)
            inherited: set[str] = set()
            for other, held in shas.items():
                if branch.agent_id.startswith(other + "-"):
                    inherited |= held
            conv = _replay(replayer, branch, steps, inherited, shallow)
            title = names.get(f"{branch.head}:name")
            conv.title = title.decode("utf-8", "replace").strip() if title else None
            conv.path = os.fspath(git_dir)
            conv.part = branch.agent_id
            conv.key = (os.fspath(git_dir), os.fspath(steps_dir) if steps_dir else None, branch.agent_id)
            conv.extra["tips"] = {b.agent_id: b.head for b in branches
                                  if b is branch or branch.agent_id.startswith(b.agent_id + "-")}
            yield conv
        if steps_dir is not None and only is None and is_dir(steps_dir):
            known = {b.agent_id for b in branches}
            for entry in listing(steps_dir, diags):
                if entry_is_dir(entry) and entry.name not in known:
                    diags.report(entry.path, "no_branch", f"step records for agent {entry.name} with no agents/ branch")


def _read_steps(steps_dir: Path | None, agent: str, source: str) -> tuple[list[StepRecord], list[Diagnostic]]:
    """An agent's step records, and what reading them reported (kept for the agent's turn)."""
    if steps_dir is None:
        return [], []
    reported = Diagnostics(source)
    return read_steps(steps_dir / agent, reported), reported.rows


_Fetched = tuple[list[_Branch], list[tuple[str, str]], dict[tuple[str, bool], str], dict[str, bytes | None]]


def _fetch(repo: GitRepo, replayer: Replayer, wanted: dict[str, tuple[str, str]]) -> _Fetched:
    """What git has to say, in two processes: every wanted branch with its history, and the blobs.

    Returns ``(branches, failures, blobs planned, contents)``: each wanted branch
    (``agent id -> (ref, head)``) with its first-parent history; ``(where, why)`` of each
    branch git could not walk; the ``messages/`` blobs to parse (:meth:`Replayer.plan`) and the
    contents of those and of each head's ``name`` file. The history is one ``git log`` of the
    whole repository (:meth:`GitRepo.walk`, listing only ``messages/`` changes); should it fail
    (a missing object, say), each branch is walked alone so that only the broken ones fail.
    Nothing is reported here: this runs beside the reading of the step records.
    """
    try:
        commits: dict[str, Commit] | None = repo.walk((head for _ref, head in wanted.values()), [MESSAGES])
    except GitError:
        commits = None
    branches: list[_Branch] = []
    failed: list[tuple[str, str]] = []
    for agent, (ref, head) in wanted.items():
        try:
            log = first_parent(commits, head) if commits is not None else repo.log(head)
        except GitError as err:
            failed.append((f"{repo.git_dir}@{ref}", str(err)))
            continue
        branches.append(_Branch(agent, head, log))
    todo = replayer.plan(_message_files(branches))
    names = [f"{b.head}:name" for b in branches]
    data = repo.read([*(oid for oid, _ in todo), *names]) if todo or names else {}
    return branches, failed, todo, data


def _message_files(branches: list[_Branch]) -> Iterator[tuple[str, str, str, str]]:
    """``(name, blob id, mode, commit)`` of every file added or changed in ``messages/``."""
    seen: set[str] = set()  # commits shared by branches (forks) are listed once
    for b in branches:
        for c in b.log:
            if not c.changes or c.sha in seen:
                continue
            seen.add(c.sha)
            for ch in c.changes:
                name = ch.path[len(MESSAGES) :]
                if ch.status != "D" and ch.path.startswith(MESSAGES) and "/" not in name:
                    yield name, ch.blob, ch.mode, c.sha


def _shallow(git_dir: Path) -> frozenset[str]:
    """The boundary commits of a shallow clone (``<git_dir>/shallow``); empty for a whole history."""
    try:
        with open_regular(git_dir / "shallow") as fh:
            return frozenset(line.strip().decode("ascii", "replace") for line in fh if line.strip())
    except OSError:
        return frozenset()


def _replay(
    replayer: Replayer, branch: _Branch, records: list[StepRecord], inherited: set[str], shallow: frozenset[str]
) -> Conversation:
    log = branch.log
    index_of = {c.sha: i for i, c in enumerate(log)}
    steps = _Steps(records, index_of)
    state: dict[str, tuple[str, str, int]] = {}  # name -> (oid, mode, index of the adding commit)
    made: dict[_Item, Entry | None] = {}
    nested: set[str] = set()
    growth: list[GrowthRow] = []
    states: list[tuple[list[Entry], int]] = []  # each growth row's state: a prefix of a tally's entries
    dropped_at: list[tuple[str, ...]] = []
    tally = Tally()
    last: tuple[int, bytes] | None = None  # the sort key of the last entry name held
    summary: Summary | None = None

    def make(name: str, added: int) -> Entry | None:
        oid, mode, _added = state[name]
        item = (name, oid, mode, added)
        if item not in made:
            parsed = entry_name(name)
            rec = steps.of(added)
            api = resolve(rec.provider, parsed.origin if parsed else None) if rec and rec.provider else None
            # A shallow clone's boundary commit holds, as if it added them, entries written before it.
            at = None if log[added].sha in shallow else log[added].time
            made[item] = replayer.entry(name, oid, mode, log[added].sha, at, api)
        return made[item]

    for i, commit in enumerate(log):
        if not commit.changes and summary is not None:  # nothing in messages/ changed: the last state stands
            dropped_at.append(summary.dropped)
            growth.append(GrowthRow(position=i, event="commit", messages=summary.messages, chars=summary.chars,
                                    orphans=len(summary.dropped), at=commit.time, commit=commit.sha))
            states.append(states[-1])
            continue
        changed = summary is None
        appended: list[tuple[tuple[int, bytes], str]] = []
        rebuild = False
        for ch in commit.changes:
            if not ch.path.startswith(MESSAGES):
                continue
            name = ch.path[len(MESSAGES) :]
            if "/" in name:
                top = name.split("/", 1)[0]
                if entry_name(top) is not None and top not in nested:
                    nested.add(top)
                    replayer.diags.report(replayer.where(commit.sha, top), "not_a_file",
                                          "an entry name that is a folder cannot be read")
                continue
            changed = True
            key = _sort_key(name)
            if ch.status == "D":
                if state.pop(name, None) is not None and key[0] >= 0:
                    rebuild = True
            else:
                old = state.get(name)
                state[name] = (ch.blob, ch.mode, old[2] if old else i)
                if key[0] < 0:
                    continue  # not an entry: nothing to assemble
                if old is not None or (last is not None and key <= last):
                    rebuild = True
                else:
                    appended.append((key, name))
        if changed:
            if rebuild:
                ordered = sorted((k, n) for n in state if (k := _sort_key(n))[0] >= 0)
                tally.reset(e for _k, n in ordered if (e := make(n, state[n][2])) is not None)
                last = ordered[-1][0] if ordered else None
            elif appended:
                appended.sort()
                for _key, name in appended:
                    entry = make(name, i)
                    if entry is not None:
                        tally.append(entry)
                last = appended[-1][0]
            summary = replayer.summary(tally, None)
        assert summary is not None
        dropped_at.append(summary.dropped)
        growth.append(GrowthRow(position=i, event="commit", messages=summary.messages, chars=summary.chars,
                                orphans=len(summary.dropped), at=commit.time, commit=commit.sha))
        states.append((tally.entries, len(tally.entries)))
    entries = tally.entries
    added_at = {display(name): added for name, (_oid, _mode, added) in state.items()}  # keyed as entry ids
    theirs = {name for name, added in added_at.items() if log[added].sha in inherited}
    conv = Conversation(source="litany", conversation_id=branch.agent_id, entries=entries, growth=growth)
    _attach_steps(conv, replayer, branch, records, steps, index_of, added_at, theirs, dropped_at)
    conv.growth = fill_context(growth, states, conv.usage or [])
    return conv


def fill_context(growth: list[GrowthRow], states: list[tuple[list[Entry], int]],
                 usage: list[UsageRow]) -> list[GrowthRow]:
    """Each state's context tokens (``model.context_tokens``), over the responses it holds.

    A response's counters are its entry's own or, where the entry has none, its step's sealing
    attempt's (the usage row linked to it). A state that history was rewritten to (a compaction
    that removed or replaced entries) holds only its own entries, so its context is theirs.
    """
    linked = {r.message_id: r.usage for r in usage if r.message_id is not None and r.sealed is not False}
    prefix: dict[int, list[int | None]] = {}  # id(entries) -> context after each prefix
    out: list[GrowthRow] = []
    for row, (entries, n) in zip(growth, states, strict=True):
        contexts = prefix.get(id(entries))
        if contexts is None or len(contexts) <= n:
            contexts = [None]
            for e in entries:
                u = e.usage if e.usage is not None else linked.get(e.id or "")
                contexts.append(contexts[-1] if u is None else context_tokens(u, contexts[-1]))
            prefix[id(entries)] = contexts
        out.append(replace(row, context_tokens=contexts[n]))
    return out


def _dropped_at(replayer: Replayer, commit: str, index_of: dict[str, int],
                dropped_at: list[tuple[str, ...]]) -> tuple[str, ...] | None:
    index = index_of.get(commit)
    if index is not None:
        return dropped_at[index]
    try:  # a read state no longer on the branch (history rewritten): replay its tree alone
        _sha, entries = replayer.entries_at(commit)
    except GitError as err:
        replayer.diags.report(f"{replayer.repo.git_dir}@{commit}", "unknown_commit", str(err))
        return None
    return tuple(assemble(entries).dropped_orphans)


def _usage_key(u: Usage) -> tuple[int | None, ...]:
    """The counters as written, whatever accounting read them: equal for an entry and its attempt."""
    total = u.input_total_tokens if u.provider_input_tokens is None else None
    return (u.provider_input_tokens, total, u.provider_output_tokens, u.cache_read_tokens, u.cache_write_tokens,
            u.reasoning_tokens, u.context_window)


def _match_outputs(
    entries: list[Entry], records: list[StepRecord], placed: dict[str, StepRecord | None],
    sealed_usage: dict[int, Usage], theirs: set[str],
) -> dict[str, StepRecord]:
    """Which step committed each model entry.

    A step whose read-state commit is on the branch owns the model entries added after it (and
    before the next such step); among them the one whose usage equals the sealing attempt's
    is its output, else the first. A step whose commit is not on the branch (history rewritten
    by a rebase, a ``meta.json`` that cannot be read) is matched by content: the first model
    entry no step claims whose counters equal its sealing attempt's (the entry's usage is the
    sealing attempt's, formats.md §2).
    """
    model = [e for e in entries if e.side == "assistant" and e.id not in theirs]
    owner: dict[str, StepRecord] = {}
    claimed: set[int] = set()

    def take(rec: StepRecord, pool: list[Entry], placed_pool: bool) -> bool:
        want = sealed_usage.get(rec.step)
        pick = next((e for e in pool if want is not None and e.usage is not None
                     and _usage_key(e.usage) == _usage_key(want)), None)
        if pick is None and placed_pool and pool:
            pick = pool[0]
        if pick is None:
            return False
        owner[pick.id or ""] = rec
        claimed.add(rec.step)
        return True

    for rec in records:
        pool = [e for e in model if placed.get(e.id or "") is rec and (e.id or "") not in owner]
        take(rec, pool, True)
    for rec in records:
        if rec.step not in claimed and rec.step in sealed_usage:
            take(rec, [e for e in model if (e.id or "") not in owner], False)
    return owner


def _attach_steps(
    conv: Conversation, replayer: Replayer, branch: _Branch, records: list[StepRecord], steps: _Steps,
    index_of: dict[str, int], added_at: dict[str, int], theirs: set[str], dropped_at: list[tuple[str, ...]],
) -> None:
    entries = conv.entries
    assert isinstance(entries, list)
    assembly = [OrphanRow(t, "assembly", None, branch.head) for t in (dropped_at[-1] if dropped_at else ())]
    placed = {e.id or "": steps.of(added_at[e.id or ""]) for e in entries}
    attempts_usage: dict[tuple[int, int], tuple[Usage, str | None, Resolved]] = {}
    sealed_usage: dict[int, Usage] = {}
    for rec in records:
        for attempt in rec.attempts:
            model = rec.model or attempt.model
            api = resolve(rec.provider, model)
            u = normalize_usage(attempt.usage, api)
            if u is not None:
                attempts_usage[(rec.step, attempt.number)] = (u, model, api)
                if attempt is rec.sealing:
                    sealed_usage[rec.step] = u
    owner = _match_outputs(entries, records, placed, sealed_usage, theirs)
    output_of = {r.step: e for e in entries if (r := owner.get(e.id or "")) is not None}
    usage: list[UsageRow] = []
    for rec in records:
        last = rec.attempts[-1] if rec.attempts else None
        sealing = rec.sealing
        conv.steps.append(StepRow(
            branch.agent_id, rec.step, rec.commit, rec.started_at, rec.ended_at, rec.model, rec.provider,
            rec.dropped_orphans, len(rec.attempts), sealing.finish_reason if sealing else None,
            last.error if last is not None else None,
        ))
        conv.recorded_orphans += [OrphanRow(t, "record", rec.step, rec.commit) for t in rec.dropped_orphans or ()]
        dropped = _dropped_at(replayer, rec.commit, index_of, dropped_at) if rec.commit else None
        assembly += [OrphanRow(t, "assembly", rec.step, rec.commit) for t in dropped or ()]
        out = output_of.get(rec.step)
        for attempt in rec.attempts:
            found = attempts_usage.get((rec.step, attempt.number))
            if found is None:
                continue
            u, model, api = found
            sealed = attempt is sealing
            linked = out if sealed else None
            usage.append(UsageRow(
                u, linked.id if linked else None, linked.position if linked else None,
                model or (out.model if out else None), rec.provider, rec.ended_at, attempt.number, sealed, "response",
                api.accounting.family, api.source,
            ))
    for i, e in enumerate(entries):
        claim = owner.get(e.id or "")
        if e.usage is None or e.id in theirs:
            continue
        if claim is not None and claim.step in sealed_usage:
            # The step's sealing attempt reported this response: its row counts it, and its
            # normalization (by the API the step recorded) is the message's.
            entries[i] = replace(e, usage=sealed_usage[claim.step])
            continue
        provider = claim.provider if claim else None
        api = resolve(provider, e.model)
        usage.append(UsageRow(e.usage, e.id, e.position, e.model, provider, e.created_at, found_in="entry",
                              accounting=api.accounting.family, provider_source=api.source))
    conv.usage = usage
    conv.assembly_orphans = assembly


def _has_agents(git_dir: Path) -> bool:
    if (git_dir / "refs" / "heads" / "agents").is_dir():
        return True
    try:
        with open_regular(git_dir / "packed-refs") as fh:
            return any(b" refs/heads/agents/" in line for line in fh)
    except OSError:
        return False


def _not_a_repository(repo: Path, diagnostics: Diagnostics | None) -> None:
    """Report why a workspace's ``repo.git`` is not read: it cannot be listed, or is no repository."""
    if diagnostics is None:
        return
    before = len(diagnostics.rows)
    if not listing(repo, diagnostics) and len(diagnostics.rows) > before:
        return  # reported as a folder that cannot be listed
    if os.path.lexists(repo / "HEAD") and not check_file(repo / "HEAD", diagnostics):
        return  # reported: HEAD is a FIFO, a folder, a broken link...
    diagnostics.report(repo, "not_a_repository", "the workspace's repo.git is not a git repository "
                       "(it needs a HEAD file, objects/ and refs/); skipped")


def _workspaces(
    path: Path, limit: int | None = None, diagnostics: Diagnostics | None = None
) -> list[tuple[Path, Path | None]]:
    """``(git_dir, steps_dir)`` of each workspace at or directly under ``path``.

    A folder that cannot be listed is reported to ``diagnostics`` when it is given.
    """
    git_dir = find_git_dir(path)
    if git_dir is None and is_dir(path / "repo.git"):
        _not_a_repository(path / "repo.git", diagnostics)
        return []
    if git_dir is not None:
        if git_dir.name == "repo.git" and is_dir(git_dir.parent / "steps"):
            return [(git_dir, git_dir.parent / "steps")]
        return [(git_dir, None)] if git_dir.name == "repo.git" or _has_agents(git_dir) else []
    base = path / "workspaces" if is_dir(path / "workspaces") else path
    found: list[tuple[Path, Path | None]] = []
    if not is_dir(base):
        return found
    for entry in listing(base, diagnostics):
        child = Path(entry.path)
        repo = child / "repo.git"
        if entry.name.startswith(".") or not is_dir(repo):
            continue
        if not is_git_dir(repo):
            _not_a_repository(repo, diagnostics)
            continue
        found.append((repo, child / "steps" if is_dir(child / "steps") else None))
        if limit is not None and len(found) >= limit:
            break
    return found


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
    path = Path(os.path.expanduser(os.fspath(repo)))
    git_dir = find_git_dir(path)
    if git_dir is None:
        raise GitError(f"not a git repository or litany workspace: {path}")
    replayer = Replayer(GitRepo(git_dir), Diagnostics("litany"))
    _sha, entries = replayer.entries_at(rev)
    return assemble(entries)
