"""Which grown session files of a home can be read on from where an earlier read stopped.

A Claude Code home is counted as a whole (:mod:`.usage`): a response written into several files
counts once, in the file whose first line is earliest, with each counter's largest value over
its lines; a subagent's spawning call is found in its parent's lines. So what a file grew by
may change the rows of other files, and of its own earlier lines. It is read on, alone, only
where it cannot; this module tells, from one lean scan of the home as it is now
(:func:`~murmur_analysis.sources.lines.scan_lines` without texts), before any file is read:

* **Across files** (:func:`independent`): no line a file grew by shares a ``uuid`` (a copy) or a
  ``message.id`` (a response, or its replay) with any line outside what that file grew by;
  none names, by ``toolUseResult.agentId``, a subagent whose file is in the home and whose
  spawning call its ``.meta.json`` does not give; and the files' order by their earliest line
  (which decides whose a shared response is) is what it was. Otherwise the home is read whole.
* **Within the file** (:class:`Grown`): the earlier lines keep their status (a rewind's
  abandoned branch is decided over the whole file, so a prompt in the new lines may abandon
  earlier ones), and no earlier compaction boundary waits for its summary line. Otherwise that
  file alone is read whole. Its title is read over the whole file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .layout import SessionFile
from .pieces import Messages, abandoned, titles
from .whole import Whole, mask, true

__all__ = ["Grown", "independent"]


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


def _tail_rows(w: Whole, grown: Sequence[Grown]) -> np.ndarray:
    """Which rows of the home are lines a file grew by: each file's own number, else -1."""
    owner = np.full(w.table.num_rows, -1, np.int64)
    line = w.table.column("line").to_numpy()
    for g in grown:
        a, b = int(w.starts[g.file]), int(w.starts[g.file + 1])
        owner[a:b] = np.where(line[a:b] > g.lines, g.file, -1)
    return owner


def _shared(column: pa.ChunkedArray, owner: np.ndarray) -> bool:
    """Whether a value of ``column`` on a grown file's new line is on any line outside that file's new lines."""
    encoded = pc.dictionary_encode(column.combine_chunks())
    code = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    named = code >= 0
    new = named & (owner >= 0)
    if not new.any():
        return False
    width = np.int64(owner.max() + 2)
    # each value's groups: -1 for a line not grown by, else the file it was grown by
    groups = np.unique(code[named] * width + (owner[named] + 1))
    values, counts = np.unique(groups // width, return_counts=True)
    return bool(np.isin(code[new], values[counts > 1]).any())


def _order(w: Whole, rows: np.ndarray) -> list[int]:
    """The files in the order their earliest timed line among ``rows`` gives (untimed last, then load order)."""
    ts = w.table.column("ts_us").to_numpy(zero_copy_only=False)
    timed = rows & mask(pc.is_valid(w.table.column("ts_us")))
    earliest: list[int | None] = []
    for i in range(w.files):
        a, b = int(w.starts[i]), int(w.starts[i + 1])
        here = timed[a:b]
        earliest.append(int(ts[a:b][here].min()) if here.any() else None)
    return sorted(range(w.files), key=lambda i: (earliest[i] is None, earliest[i] or 0, i))


def _links(files: Sequence[SessionFile], w: Whole, owner: np.ndarray) -> bool:
    """Whether a new line names (its result's ``agentId``) a subagent of the home whose parent call is sought."""
    agents = w.table.column("result_agent_id")
    new = np.flatnonzero(mask(pc.is_valid(agents)) & (owner >= 0))
    if not len(new):
        return False
    sought = {(f.session, f.agent) for f in files if f.agent is not None and f.spawned_by is None}
    named = agents.take(pa.array(new, pa.int64())).to_pylist()
    return any((files[int(owner[r])].session, agent) in sought for r, agent in zip(new.tolist(), named, strict=True))


def _alone(w: Whole, g: Grown, lost: np.ndarray) -> Grown:
    """``g`` with what the checks within its file found (see the module doc); ``lost``: the home's marks."""
    one = _file(w, g.file)
    a = int(w.starts[g.file])
    new = one.table.column("line").to_numpy() > g.lines
    before = int(np.count_nonzero(~new))  # a file's rows are in line order: the earlier lines first
    if (abandoned(_file(w, g.file, upto=before)) != lost[a:a + before]).any():
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


def _file(w: Whole, i: int, upto: int | None = None) -> Whole:
    """File ``i`` of ``w`` as a home of one file (its first ``upto`` rows)."""
    a, b = int(w.starts[i]), int(w.starts[i + 1])
    n = b - a if upto is None else upto
    events = w.events.slice(int(w.event_starts[i]), int(w.event_starts[i + 1] - w.event_starts[i]))
    rows = events.column("row").to_numpy() - a
    keep = rows < n
    events = events.filter(pa.array(keep)).set_column(0, "row", pa.array(rows[keep], pa.int64()))
    return Whole(w.table.slice(a, n), np.array([0, n], np.int64), w.kinds.slice(a, n), events,
                 np.array([0, events.num_rows], np.int64))


def independent(files: Sequence[SessionFile], w: Whole, grown: Sequence[Grown]) -> list[Grown] | None:
    """The grown files, each with whether it can be read on alone; ``None``: the home must be read whole.

    Args:
        files: the home's files, in load order.
        w: a lean scan of every one of them as they are now.
        grown: the files that grew (their ``alone`` and ``lost`` not yet known).
    """
    owner = _tail_rows(w, grown)
    t = w.table
    if _shared(t.column("uuid"), owner) or _shared(t.column("msg_id"), owner) or _links(files, w, owner):
        return None
    if _order(w, owner < 0) != _order(w, np.ones(t.num_rows, bool)):
        return None
    lost = abandoned(w)
    return [_alone(w, g, lost) for g in grown]
