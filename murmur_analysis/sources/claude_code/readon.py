"""Which grown session files of a home can be read on from where an earlier read stopped.

A Claude Code home is counted as a whole (:mod:`.usage`): a response written into several files
counts once, in the file whose first line is earliest, with each counter's largest value over
its lines; a subagent's spawning call is found in its parent's lines. So what a file grew by
may change the rows of other files, and of its own earlier lines. It is read on, alone, only
where it cannot; this module tells, from a lean scan of the grown files as they are now
(:func:`~murmur_analysis.sources.lines.scan_lines` without texts) and what the others' last read
kept of them (:class:`Kept`), before any file is read:

* **Across files** (:func:`independent`): no line a file grew by shares a ``uuid`` (a copy) or a
  ``message.id`` (a response, or its replay) with any line outside what that file grew by;
  none names, by ``toolUseResult.agentId``, a subagent whose file is in the home and whose
  spawning call its ``.meta.json`` does not give; and the files' order by their earliest line
  (which decides whose a shared response is) is what it was. Otherwise the home is read whole.
  Only the grown files (and any whose last read kept nothing, :class:`Kept`) are scanned: of the
  others, what their last read kept is enough, the 64-bit keys of their ``uuid`` and
  ``message.id`` values and their earliest line's time (a key shared by chance reads the home
  whole, never the other way round).
* **Within the file** (:class:`Grown`): the earlier lines keep their status (a rewind's
  abandoned branch is decided over the whole file, so a prompt in the new lines may abandon
  earlier ones), and no earlier compaction boundary waits for its summary line. Otherwise that
  file alone is read whole. Its title is read over the whole file.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.values import JSON
from .layout import SessionFile
from .pieces import Messages, abandoned, titles
from .whole import Whole, mask, true

__all__ = ["Grown", "Kept", "independent"]


@dataclass(frozen=True)
class Grown:
    """A file of the home that grew since a read that stopped after its first ``lines`` lines.

    Attributes:
        file: its index among the home's files.
        lines: the lines the earlier read read.
        end: the byte offset the lean scan read it to (after its last whole line), and
        size: its size then: what is read on is what was checked (to ``size``, a torn last
            line reported as a whole read reports it; to ``end`` when it has grown since).
        alone: whether it can be read on alone (the checks within the file hold).
        lost: whether each of its rows after the point (the engine's rows of its new lines) is
            on a rewind's abandoned branch, as a read of the whole file decides (a read of those
            lines alone cannot see the earlier lines they answer).
        title: its conversation's title, read over the whole file (the last ``ai-title``
            may be among the new lines, the first prompt among the earlier ones).
    """

    file: int
    lines: int
    end: int
    size: int
    alone: bool = False
    lost: np.ndarray | None = None
    title: str | None = None


@dataclass(frozen=True)
class Kept:
    """What a read of a file keeps of it (in its resume point's ``carry``) for a later check.

    Attributes:
        keys: the sorted 64-bit keys (the engine's FNV-1a) of every ``uuid`` and ``message.id``
            of its lines.
        first: its earliest line's time (microseconds), ``None`` when no line has one.
    """

    keys: np.ndarray
    first: int | None

    @classmethod
    def of(cls, table: pa.Table) -> Kept:
        """What is kept of a file's rows (the engine's ``uuid_key``, ``msg_key``, ``ts_us``)."""
        (kept,) = cls.each(table, np.array([0, table.num_rows], np.int64))
        return kept

    @classmethod
    def each(cls, table: pa.Table, starts: np.ndarray) -> list[Kept]:
        """What is kept of each file of a load, file ``i``'s rows being ``table``'s ``starts[i]:starts[i + 1]``.

        Every file's keys at once: the (file, key) pairs of the load sorted together and made
        unique, then cut at the files' bounds.
        """
        files = len(starts) - 1
        owner = np.repeat(np.arange(files, dtype=np.int64), np.diff(starts))
        owners, keys = [], []
        for name in ("uuid_key", "msg_key"):
            column = table.column(name)
            named = mask(pc.is_valid(column))
            keys.append(pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(np.int64)[named])
            owners.append(owner[named])
        owned, key = np.concatenate(owners), np.concatenate(keys)
        order = np.lexsort((key, owned))
        owned, key = owned[order], key[order]
        fresh = np.ones(len(key), bool)
        fresh[1:] = (key[1:] != key[:-1]) | (owned[1:] != owned[:-1])
        owned, key = owned[fresh], key[fresh]
        bounds = np.searchsorted(owned, np.arange(files + 1))
        ts = table.column("ts_us")
        timed = mask(pc.is_valid(ts))
        low = np.full(files, np.iinfo(np.int64).max, np.int64)
        np.minimum.at(low, owner[timed], pc.fill_null(ts, 0).to_numpy(zero_copy_only=False)[timed])
        has = np.bincount(owner[timed], minlength=files) > 0
        return [cls(key[bounds[i]:bounds[i + 1]], int(low[i]) if has[i] else None) for i in range(files)]

    def joined(self, other: Kept) -> Kept:
        """This and ``other`` (the lines a file grew by) together."""
        firsts = [f for f in (self.first, other.first) if f is not None]
        return Kept(np.union1d(self.keys, other.keys), min(firsts) if firsts else None)

    def to_doc(self) -> dict[str, JSON]:
        """As the JSON values a resume point's carry holds (the keys as base64 of little-endian int64)."""
        return {"keys": base64.b64encode(self.keys.astype("<i8").tobytes()).decode("ascii"), "first": self.first}

    @classmethod
    def from_doc(cls, doc: JSON) -> Kept | None:
        """What :meth:`to_doc` wrote; ``None`` when ``doc`` holds none (the file is scanned instead)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("keys"), str):
            return None
        first = doc.get("first")
        if not (first is None or (isinstance(first, int) and not isinstance(first, bool))):
            return None
        try:
            raw = base64.b64decode(str(doc["keys"]), validate=True)
        except ValueError:
            return None
        if len(raw) % 8:
            return None
        return cls(np.frombuffer(raw, "<i8").astype(np.int64), first)


def _tail_rows(w: Whole, grown: Sequence[Grown], at: Mapping[int, int]) -> np.ndarray:
    """Which rows of the scan are lines a file grew by: that file's number, else -1."""
    owner = np.full(w.table.num_rows, -1, np.int64)
    line = w.table.column("line").to_numpy()
    for g in grown:
        k = at[g.file]
        a, b = int(w.starts[k]), int(w.starts[k + 1])
        owner[a:b] = np.where(line[a:b] > g.lines, g.file, -1)
    return owner


def _shared(w: Whole, owner: np.ndarray, kept: Mapping[int, Kept]) -> bool:
    """Whether a key of a grown file's new line is a key of any line outside that file's new lines."""
    t = w.table
    keys = np.concatenate([pc.fill_null(t.column(c), 0).to_numpy(zero_copy_only=False)
                           for c in ("uuid_key", "msg_key")])
    named = np.concatenate([mask(pc.is_valid(t.column(c))) for c in ("uuid_key", "msg_key")])
    groups = np.concatenate([owner, owner])
    new = named & (groups >= 0)
    if not new.any():
        return False
    outside = np.concatenate([keys[named & (groups < 0)], *(k.keys for k in kept.values())])
    if np.isin(keys[new], outside).any():
        return True
    # a key of two files' new lines: each file's keys once, then any key twice
    pairs = np.unique(np.stack([keys[new], groups[new]]), axis=1)
    return bool(len(pairs[0]) != len(np.unique(pairs[0])))


def _order(files: int, w: Whole, at: Mapping[int, int], rows: np.ndarray, kept: Mapping[int, Kept]) -> list[int]:
    """The home's files in the order their earliest timed line gives (untimed last, then load order).

    A scanned file's earliest among ``rows``; another's as its last read kept it.
    """
    ts = w.table.column("ts_us").to_numpy(zero_copy_only=False)
    timed = rows & mask(pc.is_valid(w.table.column("ts_us")))
    earliest: list[int | None] = [kept[i].first if i in kept else None for i in range(files)]
    for i, k in at.items():
        a, b = int(w.starts[k]), int(w.starts[k + 1])
        here = timed[a:b]
        earliest[i] = int(ts[a:b][here].min()) if here.any() else None
    return sorted(range(files), key=lambda i: (earliest[i] is None, earliest[i] or 0, i))


def _links(files: Sequence[SessionFile], w: Whole, owner: np.ndarray) -> bool:
    """Whether a new line names (its result's ``agentId``) a subagent of the home whose parent call is sought."""
    agents = w.table.column("result_agent_id")
    new = np.flatnonzero(mask(pc.is_valid(agents)) & (owner >= 0))
    if not len(new):
        return False
    sought = {(f.session, f.agent) for f in files if f.agent is not None and f.spawned_by is None}
    named = agents.take(pa.array(new, pa.int64())).to_pylist()
    return any((files[int(owner[r])].session, agent) in sought for r, agent in zip(new.tolist(), named, strict=True))


def _alone(w: Whole, k: int, g: Grown, lost: np.ndarray) -> Grown:
    """``g`` (file ``k`` of the scan) with what the checks within its file found; ``lost``: the scan's marks."""
    one = w.one(k)
    a = int(w.starts[k])
    new = one.table.column("line").to_numpy() > g.lines
    before = int(np.count_nonzero(~new))  # a file's rows are in line order: the earlier lines first
    if (abandoned(w.one(k, upto=before)) != lost[a:a + before]).any():
        return g
    messages = Messages.of(one)
    m = messages.m
    on_new = new[messages.index]
    boundary = (mask(pc.equal(m.column("type"), "system")) & mask(pc.equal(m.column("subtype"), "compact_boundary"))
                & ~on_new)
    if boundary.any():  # the last earlier boundary takes the first summary line after it
        last = int(np.flatnonzero(boundary)[-1])
        summary = true(m.column("is_compact_summary"))
        if not (summary[last + 1:] & ~on_new[last + 1:]).any() and (summary & on_new).any():
            return g
    return Grown(g.file, g.lines, g.end, g.size, True, lost[a + before:a + len(new)], titles(one, messages)[0])


def independent(files: Sequence[SessionFile], w: Whole, scanned: Sequence[int], grown: Sequence[Grown],
                kept: Mapping[int, Kept]) -> list[Grown] | None:
    """The grown files, each with whether it can be read on alone; ``None``: the home must be read whole.

    Args:
        files: the home's files, in load order.
        w: a lean scan of some of them as they are now: the grown ones, and any not in ``kept``.
        scanned: the index in ``files`` of each file of ``w``.
        grown: the files that grew (their ``alone`` and ``lost`` not yet known).
        kept: what the last read kept of each file not scanned.
    """
    at = {i: k for k, i in enumerate(scanned)}
    owner = _tail_rows(w, grown, at)
    if _shared(w, owner, kept) or _links(files, w, owner):
        return None
    everything = np.ones(w.table.num_rows, bool)
    if _order(len(files), w, at, owner < 0, kept) != _order(len(files), w, at, everything, kept):
        return None
    lost = abandoned(w)
    return [_alone(w, at[g.file], g, lost) for g in grown]
