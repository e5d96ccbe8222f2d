"""Reading a murmur record on from where an earlier read stopped: only the appended lines.

murmur only appends to a record (and replaces it whole only by a rename), so the murmur source
is :class:`~murmur_analysis.sources.resume.Resumable`. A read of a whole record leaves a
:class:`~murmur_analysis.core.handoff.ResumePoint` (:func:`resume_point`): how many lines,
messages and text characters it held, and the state its pairing walk (the scan's) saved. The
bytes after a point are decoded by the same native scan (:func:`scan_range`), into a
conversation of the appended messages whose line numbers go on from the point's (positions,
counts and characters are continued by the consumer, from the same point); :func:`tail_of`
walks their tool events on from the point's walk state and gives the point after them.

No tail is read, and the record must be read whole, when:

* the file was replaced, rewritten or shrank, or the point is unknown;
* the record is joined to session traces (the join's state spans the whole record);
* the appended bytes' first line is one that only line 1 can be (the ``murmur.record``
  header): read alone it would be taken for the header;
* a line of the appended bytes is not UTF-8 (murmur then reads nothing of the record);
* the walk resumed over the appended tool events is not exact (``Pairer::exact`` in
  ``native/src/pair.rs``).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...algorithms.pairing import MessageRuns
from ...core.handoff import Conversation, ResumePoint
from ..resume import Tail, next_line, read_exactly, resumed, scratch_copy
from .engine import tool_events
from .record import LineKind, decide, parse, scan_records

if TYPE_CHECKING:
    from .engine import RecordScan

__all__ = ["cut", "resume_point", "scan_range", "tail_of", "traces_unchanged"]


def _counts(scanned: RecordScan) -> tuple[int, int, int]:
    """The messages, lines and text characters a scan read."""
    return scanned.rows, scanned.lines, scanned.text_chars()


def resume_point(scanned: RecordScan) -> ResumePoint | None:
    """Where a read of the whole scanned record stopped (not yet tied to the file), or ``None``.

    Args:
        scanned: one record's result of :func:`~.record.scan_records`.
    """
    if scanned.error is not None:
        return None
    messages, lines, chars = _counts(scanned)
    return ResumePoint(messages=messages, lines=lines, chars=chars, walk=scanned.pair_state)


def traces_unchanged(before: Any, now: Any) -> bool:
    """Whether two fingerprints of a record (``[[[path, identity]], settled, traces]``) name the same traces.

    A changed trace may join any record, so a record is read on from a point only while they are.
    """
    if not isinstance(before, list) or not isinstance(now, list) or len(before) != 3 or len(now) != 3:
        return False
    return bool(before[2] == now[2])


def scan_range(
    fd: int, start: int, end: int, point: ResumePoint, text: bool, scratch: Path
) -> RecordScan | None:
    """The native scan of the bytes ``start:end`` of a record open as ``fd``, after ``point``; ``None``: not alone.

    ``start`` is where a line begins. The scan's line numbers go on from the point's. ``None``
    when the bytes cannot be read, when their first line is one only line 1 can be (the
    ``murmur.record`` header: read alone it would be taken for one), or when the scan fails.
    """
    data = read_exactly(fd, start, end)
    if data is None:
        return None
    first = data.split(b"\n", 1)[0].removesuffix(b"\r")
    if start and decide(first, True) == LineKind.HEADER:
        return None
    with scratch_copy(data, scratch) as name:
        del data
        scanned = scan_records([str(name)], text)[0]
    if scanned.error is not None or (start and scanned.header is not None):
        return None
    return scanned.shifted(point.lines)  # the record's line numbers


def tail_of(read: Conversation, scanned: RecordScan, point: ResumePoint) -> Tail | None:
    """The :class:`~murmur_analysis.sources.resume.Tail` of the messages ``scanned`` after ``point``, if exact.

    ``read`` is the conversation the source made of them. Their tool events are walked on from
    the point's walk state (taken over); ``None`` when that walk is not exact.
    """
    walk = resumed(point)
    events = tool_events(scanned)
    messages = walk.runs.of_sides(scanned.column("role"))
    walk.feed_columns(events.row, messages[events.row].tolist(), events)
    paired = walk.pairing()
    if not walk.exact:
        return None
    assert read.summary is not None
    messages_read, lines, chars = _counts(scanned)
    new = ResumePoint(messages=point.messages + messages_read, lines=point.lines + lines, chars=point.chars + chars,
                      walk=walk.save())
    return Tail(replace(read, summary=replace(read.summary, paired=paired)), new, walk.answered)


def cut(fd: int, target: int, end: int, window: int) -> int | None:
    """A line start after ``target`` (before ``end``), where a new run of one side begins if one is near.

    A range that starts where a new run begins (:class:`~murmur_analysis.algorithms.pairing.MessageRuns`)
    starts a run of its own, and its pairing walk goes on from the ranges before it whatever
    they hold. One is looked for in the ``window`` bytes after the first line start; without
    one, the range starts at that line, inside a run (walked on exactly unless the walk says
    otherwise, see ``Pairer::exact`` in ``native/src/pair.rs``: e.g. that run has both a result
    the walk left with no call before the cut and calls after it). So a range is never much
    longer than asked, even in a record that is one run of one side.

    Returns:
        The offset, or ``None`` when no line starts between ``target`` and ``end``.
    """
    first = next_line(fd, target, end)
    if first is None:
        return None
    data = os.pread(fd, min(window, end - first), first)
    at = 0
    runs = MessageRuns()
    while (nl := data.find(b"\n", at)) >= 0:
        line = data[at:nl].removesuffix(b"\r")
        if decide(line) == LineKind.MESSAGE and runs.next(parse(line)["role"]) > 0:
            return first + at
        at = nl + 1
    return first
