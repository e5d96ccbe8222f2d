"""One litany branch's commits, decoded into the events of its history.

Each commit of the branch (first-parent, oldest first) is one state of the transcript. The
decoder reads what the commit changed in ``messages/`` and tells the history core
(:mod:`murmur_analysis.algorithms.history`) what happened, without counting anything itself:

* a commit that does not touch ``messages/``: no event at all, the state stands (the history
  core's :class:`~murmur_analysis.algorithms.history.Timeline` spreads the states over every commit);
* a commit that touches only files that are no entries: nothing appended, the state stands;
* a commit that adds entries after the last one (litany's usual commit):
  :class:`~murmur_analysis.algorithms.history.Appended` with the entries it adds;
* any other change (a deletion, a rewrite, an entry sorting earlier, as compaction makes):
  :class:`~murmur_analysis.algorithms.history.Reset` to the new state's entries.

The decoding cost grows with the entries each commit adds, not with the commits that leave
them alone nor with the length of the transcript: only the commits that changed ``messages/``
are visited.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ...algorithms.history import Appended, Event, History, Reset, Timeline
from ...core.files import display
from ...core.model import Entry
from ...core.providers import resolve
from ...errors import GitError
from .entries import entry_name
from .gitlog import BranchLog
from .replay import MESSAGES, Replayer
from .spend import StepIndex

__all__ = ["Decoded", "decode", "dropped_at", "message_files"]

# One messages/ file as a branch holds it: name, blob id, mode, index of the commit adding it.
_Item = tuple[str, str, str, int]


def _sort_key(name: str) -> tuple[int, bytes]:
    parsed = entry_name(name)
    return (parsed.seq if parsed else -1, name.encode("utf-8", "surrogateescape"))


@dataclass(frozen=True, slots=True)
class Decoded:
    """A branch's history, decoded.

    Attributes:
        events: one history event per commit of the branch that changed ``messages/``, oldest first.
        at: the index of each event's commit on the branch.
        entries: the head's entries in order.
        added_at: the index of the commit adding each of the head's entries, by entry id.
    """

    events: list[Event]
    at: list[int]
    entries: list[Entry]
    added_at: dict[str, int]


def message_files(log: BranchLog) -> Iterator[tuple[str, str, str, str]]:
    """``(name, blob id, mode, commit)`` of every file added or changed in ``messages/``."""
    shas = log.shas
    for i, changes in log.changes.items():
        for ch in changes:
            name = ch.path[len(MESSAGES) :]
            if ch.status != "D" and ch.path.startswith(MESSAGES) and "/" not in name:
                yield name, ch.blob, ch.mode, shas[i]


def decode(replayer: Replayer, log: BranchLog, steps: StepIndex, shallow: frozenset[str]) -> Decoded:
    """Each commit of ``log`` that changed ``messages/`` as the history event it makes.

    Args:
        replayer: the repository's decoder (its blobs read beforehand, or read on demand).
        log: the branch's first-parent history, oldest first.
        steps: which step owns each commit (an entry's API is the one its step recorded).
        shallow: the boundary commits of a shallow clone (their entries have no known time).
    """
    state: dict[str, tuple[str, str, int]] = {}  # name -> (oid, mode, index of the adding commit)
    made: dict[_Item, Entry | None] = {}
    nested: set[str] = set()
    events: list[Event] = []
    shas = log.shas
    held: list[Entry] = []
    last: tuple[int, bytes] | None = None  # the sort key of the last entry name held

    def make(name: str, added: int) -> Entry | None:
        oid, mode, _added = state[name]
        item = (name, oid, mode, added)
        if item not in made:
            parsed = entry_name(name)
            rec = steps.of(added)
            api = resolve(rec.provider, parsed.origin if parsed else None) if rec and rec.provider else None
            # A shallow clone's boundary commit holds, as if it added them, entries written before it.
            at = None if shas[added] in shallow else log.at(added)
            made[item] = replayer.entry(name, oid, mode, shas[added], at, api)
        return made[item]

    for i, changes in log.changes.items():
        appended: list[tuple[tuple[int, bytes], str]] = []
        rebuild = False
        for ch in changes:
            if not ch.path.startswith(MESSAGES):
                continue
            name = ch.path[len(MESSAGES) :]
            if "/" in name:
                top = name.split("/", 1)[0]
                if entry_name(top) is not None and top not in nested:
                    nested.add(top)
                    replayer.diags.report(replayer.where(shas[i], top), "not_a_file",
                                          "an entry name that is a folder cannot be read")
                continue
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
        if rebuild:
            ordered = sorted((k, n) for n in state if (k := _sort_key(n))[0] >= 0)
            held = [e for _k, n in ordered if (e := make(n, state[n][2])) is not None]
            last = ordered[-1][0] if ordered else None
            events.append(Reset(tuple(held)))
        elif appended:
            appended.sort()
            new = [e for _key, name in appended if (e := make(name, i)) is not None]
            held.extend(new)
            last = appended[-1][0]
            events.append(Appended(tuple(new)))
        else:
            events.append(Appended(()))
    added_at = {display(name): added for name, (_oid, _mode, added) in state.items()}  # keyed as entry ids
    return Decoded(events, list(log.changes), held, added_at)


def dropped_at(
    replayer: Replayer, commit: str, index_of: dict[str, int], timeline: Timeline
) -> tuple[str, ...] | None:
    """The orphans assembly drops from the tree of ``commit`` (``None``: no such commit).

    A commit of the branch is looked up in its states; one no longer on the branch (history
    rewritten) is replayed alone.
    """
    index = index_of.get(commit)
    if index is not None:
        return timeline.state(index).dropped
    try:
        _sha, entries = replayer.entries_at(commit)
    except GitError as err:
        replayer.diags.report(f"{replayer.repo.git_dir}@{commit}", "unknown_commit", str(err))
        return None
    return History().reset(entries).dropped
