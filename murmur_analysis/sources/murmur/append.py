"""Reading a murmur record on from where an earlier read stopped: only the appended lines.

murmur only appends to a record (and replaces it whole only by a rename). A read of a whole
record that ends at a line break leaves a *resume point* (:func:`resume_point`,
:func:`anchor`): how many lines, messages and text characters it held, the side of its last
message and whether that last run of one side holds results the pairing walk left with no call
(:func:`run_loose`), and the file's identity with checksums of its first and last bytes
(:mod:`murmur_analysis.core.identity`). When the file is found
grown (:func:`~murmur_analysis.core.identity.classify` says ``grew``), :func:`read_tail` decodes only
the bytes after the point, by the same native scan, into a conversation of the appended
messages whose line numbers go on from the point's (positions, counts and characters are
continued by the consumer, from the same point).

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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...core.files import open_regular
from ...core.handoff import Conversation
from ...core.identity import classify, known_file, probe, same_file, stat_fields
from ..base import Diagnostics
from .engine import ints, strings
from .record import LineKind, decide, parse, scan_records, skipped_detail, unreadable

__all__ = ["START", "Tail", "anchor", "appendable", "cut", "identity_at", "joined", "read_range", "read_tail",
           "resume_point", "run_loose"]


def _runs(scanned: dict[str, Any]) -> tuple[str | None, int, int]:
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


def _loose_since(scanned: dict[str, Any], row: int) -> bool:
    """Whether a result at or after message row ``row`` was left with no call by the scan's pairing walk."""
    n = scanned["pairs"]
    if not n:
        return False
    loose = pc.and_(pc.is_in(strings(scanned, "pair_status", n), _LOOSE),
                    pc.greater_equal(ints(scanned, "pair_result_seq", n), row))
    return bool(pc.any(loose).as_py())


def _calls_before(scanned: dict[str, Any], row: int) -> bool:
    """Whether a message row before ``row`` holds a tool call."""
    rows = np.frombuffer(scanned["ev_row"], np.int64)
    calls = np.frombuffer(scanned["ev_call"], np.uint8)
    return bool(((rows < row) & (calls == 1)).any())


def resume_point(scanned: dict[str, Any]) -> dict[str, Any] | None:
    """What a read of the whole scanned record must hand over to be continued, or ``None``.

    Args:
        scanned: one record's result of :func:`~.record.scan_records`.
    """
    if scanned["error"] is not None:
        return None
    side, start, _ = _runs(scanned)
    return {
        "messages": scanned["rows"],
        "lines": scanned["lines"],
        "chars": int(np.frombuffer(scanned["text_chars"], np.int64).sum()),
        "side": side,
        "run_loose": side is not None and _loose_since(scanned, start),
    }


def run_loose(point: dict[str, Any]) -> bool:
    """Whether the last run of one side before ``point`` may hold results the walk left with no call.

    A later call of that same run would answer such a result (a run's calls open before its
    results), and the run's calls come before its unanswered results, so what follows the
    point cannot be walked on its own if it goes on that run with calls. Read on from an
    earlier point, a part is walked alone: its results that answer calls before it count here
    too (the answer errs towards a whole read, never a wrong row). A point without the field
    (an earlier version's) says only whether the run had tool events, and is read as "it may".
    """
    return bool(point.get("run_loose", point.get("run_events", True)))


def _identity(fingerprint: Any) -> dict[str, Any] | None:
    """The record's own identity in the source's fingerprint (``[[[path, identity]], settled, traces]``)."""
    try:
        identity = fingerprint[0][0][1]
    except (TypeError, IndexError, KeyError):
        return None
    return identity if isinstance(identity, dict) else None


def appendable(source: Any, unit: dict[str, Any] | None, fingerprint: Any) -> dict[str, Any] | None:
    """The resume point to read a record on from, if its earlier read left one and its traces are unchanged.

    Args:
        source: the source that found the record now.
        unit: what the earlier export recorded of it (``fingerprint``, ``resume``).
        fingerprint: the source's fingerprint of it now.
    """
    from .source import MurmurSource

    if not isinstance(source, MurmurSource) or not unit or not isinstance(fingerprint, list):
        return None
    point, old = unit.get("resume"), unit.get("fingerprint")
    if not isinstance(point, dict) or not isinstance(old, list) or len(old) != 3 or len(fingerprint) != 3:
        return None
    return point if old[2] == fingerprint[2] else None  # a changed trace may join any record


def anchor(point: dict[str, Any] | None, path: str | None, fingerprint: Any) -> dict[str, Any] | None:
    """``point`` tied to the file it was read from, or ``None`` when it cannot be continued.

    The file must still be the one of the fingerprint (taken before the read: same inode,
    size and times, so the read saw exactly those bytes) and end at a line break.
    """
    identity = _identity(fingerprint)
    if point is None or identity is None or path is None:
        return None
    try:
        with open_regular(Path(path)) as f:
            st = os.fstat(f.fileno())
            at = identity_at(f.fileno(), st.st_size) if same_file(identity, st) else None
    except OSError:
        return None
    return {**point, **at} if at is not None else None


@dataclass
class Tail:
    """The appended messages of a record, read on from a resume point.

    Attributes:
        conversation: the appended messages as a conversation (positions from 0, line numbers
            going on from the point's).
        point: the resume point after them (``None``: the next read is whole).
        first_side: the side of the first appended message (``None`` when none was appended).
        first_run_calls: whether the run of that side it begins has tool calls.
    """

    conversation: Conversation
    point: dict[str, Any] | None
    first_side: str | None
    first_run_calls: bool


#: The point before a record's first byte.
START: dict[str, Any] = {"messages": 0, "lines": 0, "chars": 0, "side": None, "run_loose": False}


def joined(source: Any, conv: Conversation) -> bool:
    """Whether ``conv`` must be read whole, in one pass: it is no murmur record, or one joined to session traces."""
    from .source import MurmurSource

    if not isinstance(source, MurmurSource) or not isinstance(conv.key, tuple) or len(conv.key) != 3:
        return True
    index = source._index
    return index is None or bool(index.for_record(conv.key[1], conv.key[2]))


def read_range(source: Any, conv: Conversation, fd: int, start: int, end: int, point: dict[str, Any],
               diagnostics: Diagnostics, scratch: Path) -> Tail | None:
    """Decode the bytes ``start:end`` of ``conv``'s record (open as ``fd``), after ``point``; ``None``: read it whole.

    ``start`` is where a line begins, and ``point`` describes what comes before it (:data:`START`
    before the first byte). The tail's point counts what it read; it has no identity (see
    :func:`identity_at`).
    """
    from .source import _Record

    assert isinstance(conv.key, tuple) and len(conv.key) == 3
    path, record, context = conv.key
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
        scanned = scan_records([name], source.text)[0]
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
    if scanned["error"] is not None or (start and scanned["header"] is not None):
        return None
    lines = point["lines"]
    scanned["diagnostics"] = [(n + lines, code) for n, code in scanned["diagnostics"]]
    scanned["line"] = (np.frombuffer(scanned["line"], np.int64) + lines).tobytes()  # the record's line numbers
    if unreadable([skipped_detail(n, c) for n, c in scanned["diagnostics"]], source._settled(Path(path))):
        return None
    read = source._conversation(_Record(Path(path), record, context), source._index, diagnostics, scanned)
    extra = {k: v for k, v in conv.extra.items() if k != "resume"}
    tail = replace(read, conversation_id=conv.conversation_id, extra=extra)
    side, begins, ends = _runs(scanned)
    here = resume_point(scanned)
    assert here is not None
    combined = side == point["side"] and begins == 0  # the bytes are one run, going on the point's
    new = {
        "messages": point["messages"] + here["messages"],
        "lines": lines + here["lines"],
        "chars": point["chars"] + here["chars"],
        "side": side if side is not None else point["side"],
        "run_loose": here["run_loose"] or (combined and run_loose(point)) if side is not None
        else run_loose(point),
    }
    first_side = strings(scanned, "role")[0].as_py() if scanned["rows"] else None
    return Tail(tail, new, first_side, _calls_before(scanned, ends))


def identity_at(fd: int, size: int) -> dict[str, Any] | None:
    """A resume point's identity fields at ``size`` of the file open as ``fd``, if it ends there at a line break."""
    st = os.fstat(fd)
    if st.st_size != size or (size and os.pread(fd, 1, size - 1) != b"\n"):
        return None
    head, tail = probe(fd, size)
    return {**stat_fields(st), "head": head.hex(), "tail": tail.hex()}


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


def read_tail(source: Any, conv: Conversation, point: dict[str, Any], diagnostics: Diagnostics,
              scratch: Path) -> Tail | None:
    """Decode what was appended to ``conv``'s record since ``point``; ``None``: read it whole.

    Args:
        source: the :class:`~.source.MurmurSource` that found ``conv`` (its traces are loaded).
        conv: the record's conversation as the source found it (not read).
        point: the resume point an earlier read left (:func:`anchor`).
        diagnostics: where the appended lines' problems are reported.
        scratch: a folder for the appended bytes while they are scanned.
    """
    if joined(source, conv):
        return None
    assert isinstance(conv.key, tuple)
    known = known_file(point)
    if known is None:
        return None
    try:
        with open_regular(Path(conv.key[0])) as f:
            fd = f.fileno()
            st = os.fstat(fd)
            if classify(known, fd, st) != "grew":
                return None
            tail = read_range(source, conv, fd, known.size, st.st_size, point, diagnostics, scratch)
            if tail is not None and tail.point is not None:
                at = identity_at(fd, st.st_size)
                tail.point = {**tail.point, **at} if at is not None else None
    except OSError:
        return None
    return tail
