"""Reading a murmur record on from where an earlier read stopped: only the appended lines.

murmur only appends to a record (and replaces it whole only by a rename), so the murmur source
is :class:`~murmur_analysis.sources.resume.Resumable`. A read of a whole record leaves a
:class:`~murmur_analysis.core.handoff.ResumePoint` (:func:`resume_point`): how many lines,
messages and text characters it held, the side of its last message and whether that last run
of one side holds results the pairing walk left with no call. The bytes after a point are
decoded by the same native scan (:func:`scan_range`), into a conversation of the appended
messages whose line numbers go on from the point's (positions, counts and characters are
continued by the consumer, from the same point), and :func:`tail_of` gives the point after them.

No tail is read, and the record must be read whole, when:

* the file was replaced, rewritten or shrank, or the point is unknown;
* the record is joined to session traces (the join's state spans the whole record);
* the appended bytes' first line is one that only line 1 can be (the ``murmur.record``
  header): read alone it would be taken for the header;
* a line of the appended bytes is not UTF-8 (murmur then reads nothing of the record).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.handoff import Conversation, ResumePoint
from ..resume import Tail
from .engine import ints, strings
from .record import LineKind, decide, parse, scan_records

if TYPE_CHECKING:
    from ...engine._native import Scanned

__all__ = ["cut", "resume_point", "scan_range", "tail_of", "traces_unchanged"]


def _runs(scanned: Scanned) -> tuple[str | None, int, int]:
    """The side of the last message, where its run begins, and where the first run ends."""
    n = scanned["rows"]
    if not n:
        return None, 0, 0
    roles = strings(scanned, "role").to_pylist()
    side = roles[-1]
    start = n - 1
    while start > 0 and roles[start - 1] == side:
        start -= 1
    end = 1
    while end < n and roles[end] == roles[0]:
        end += 1
    return side, start, end


_LOOSE = pa.array(["orphan_result", "duplicate_result"])


def _loose_since(scanned: Scanned, row: int) -> bool:
    """Whether a result at or after message row ``row`` was left with no call by the scan's pairing walk."""
    n = scanned["pairs"]
    if not n:
        return False
    loose = pc.and_(pc.is_in(strings(scanned, "pair_status", n), _LOOSE),
                    pc.greater_equal(ints(scanned, "pair_result_seq", n), row))
    return bool(pc.any(loose).as_py())


def _calls_before(scanned: Scanned, row: int) -> bool:
    """Whether a message row before ``row`` holds a tool call."""
    rows = np.frombuffer(scanned["ev_row"], np.int64)
    calls = np.frombuffer(scanned["ev_call"], np.uint8)
    return bool(((rows < row) & (calls == 1)).any())


def resume_point(scanned: Scanned) -> ResumePoint | None:
    """Where a read of the whole scanned record stopped (not yet tied to the file), or ``None``.

    Args:
        scanned: one record's result of :func:`~.record.scan_records`.
    """
    if scanned["error"] is not None:
        return None
    side, start, _ = _runs(scanned)
    return ResumePoint(
        messages=scanned["rows"],
        lines=scanned["lines"],
        chars=int(np.frombuffer(scanned["text_chars"], np.int64).sum()),
        side=side,
        run_loose=side is not None and _loose_since(scanned, start),
    )


def traces_unchanged(before: Any, now: Any) -> bool:
    """Whether two fingerprints of a record (``[[[path, identity]], settled, traces]``) name the same traces.

    A changed trace may join any record, so a record is read on from a point only while they are.
    """
    if not isinstance(before, list) or not isinstance(now, list) or len(before) != 3 or len(now) != 3:
        return False
    return bool(before[2] == now[2])


def scan_range(
    fd: int, start: int, end: int, point: ResumePoint, text: bool, scratch: Path
) -> Scanned | None:
    """The native scan of the bytes ``start:end`` of a record open as ``fd``, after ``point``; ``None``: not alone.

    ``start`` is where a line begins. The scan's line numbers go on from the point's. ``None``
    when the bytes cannot be read, when their first line is one only line 1 can be (the
    ``murmur.record`` header: read alone it would be taken for one), or when the scan fails.
    """
    try:
        data = os.pread(fd, end - start, start)
    except OSError:
        return None
    if len(data) != end - start:
        return None
    first = data.split(b"\n", 1)[0].removesuffix(b"\r")
    if start and decide(first, True) == LineKind.HEADER:
        return None
    out, name = tempfile.mkstemp(dir=scratch, suffix=".jsonl")
    try:
        with os.fdopen(out, "wb") as f:
            f.write(data)
        del data
        scanned = scan_records([name], text)[0]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
    if scanned["error"] is not None or (start and scanned["header"] is not None):
        return None
    lines = point.lines
    scanned["diagnostics"] = [(n + lines, code) for n, code in scanned["diagnostics"]]
    scanned["line"] = (np.frombuffer(scanned["line"], np.int64) + lines).tobytes()  # the record's line numbers
    return scanned


def tail_of(read: Conversation, scanned: Scanned, point: ResumePoint) -> Tail:
    """The :class:`~murmur_analysis.sources.resume.Tail` of the messages ``scanned`` after ``point``.

    ``read`` is the conversation the source made of them.
    """
    side, begins, ends = _runs(scanned)
    here = resume_point(scanned)
    assert here is not None
    combined = side == point.side and begins == 0  # the bytes are one run, going on the point's
    new = ResumePoint(
        messages=point.messages + here.messages,
        lines=point.lines + here.lines,
        chars=point.chars + here.chars,
        side=side if side is not None else point.side,
        run_loose=(here.run_loose or (combined and point.run_loose)) if side is not None else point.run_loose,
    )
    first_side = strings(scanned, "role")[0].as_py() if scanned["rows"] else None
    return Tail(read, new, first_side, _calls_before(scanned, ends))


def cut(fd: int, target: int, end: int, window: int) -> int | None:
    """A line start after ``target`` (before ``end``), where a new run of one side begins if one is near.

    A range that starts where a new run begins starts a run of its own, and its pairing walk
    goes on from the ranges before it whatever they hold. One is looked for in the ``window``
    bytes after the first line start; without one, the range starts at that line, inside a run
    (walked on exactly unless that run has both a result the walk left with no call before the
    cut and calls after it: :func:`run_loose`). So a range is never much longer than asked, even
    in a record that is one run of one side.

    Returns:
        The offset, or ``None`` when no line starts between ``target`` and ``end``.
    """
    first = _next_line(fd, target, end)
    if first is None:
        return None
    data = os.pread(fd, min(window, end - first), first)
    at = 0
    previous: str | None = None
    while (nl := data.find(b"\n", at)) >= 0:
        line = data[at:nl].removesuffix(b"\r")
        if decide(line) == LineKind.MESSAGE:
            role = parse(line)["role"]
            if previous is not None and role != previous:
                return first + at
            previous = role
        at = nl + 1
    return first


def _next_line(fd: int, offset: int, end: int, step: int = 64 << 10) -> int | None:
    """Where the first line after ``offset`` begins (before ``end``), or ``None``."""
    while offset < end:
        data = os.pread(fd, min(step, end - offset), offset)
        if not data:
            return None
        nl = data.find(b"\n")
        if nl >= 0:
            return offset + nl + 1 if offset + nl + 1 < end else None
        offset += len(data)
    return None
