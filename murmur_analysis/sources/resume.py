"""Reading on from a point: a capability a source declares, and the exporter asks for by name of protocol only.

A runtime that only appends to a conversation's file (murmur's records, any append-only JSONL)
can have a grown file read from where an earlier read stopped. A source says it can by
implementing :class:`Resumable`; the exporter never names a source, it asks the protocol:

* after a whole read, the conversation's :attr:`~murmur_analysis.core.handoff.Conversation.resume`
  holds the :class:`ResumePoint` the read stopped at, and :func:`anchor` ties it to the file
  (the file must still be the one the fingerprint saw, and end at a line break);
* when the file is found grown, :func:`read_on` decodes the bytes after the point through the
  source's :meth:`Resumable.read_range` into a :class:`Tail`;
* a long file is read a range at a time with the same :meth:`Resumable.read_range`, cut where
  the source's :meth:`Resumable.cut` says.

The point's counts are what the rows after it go on from: message positions, growth counts and
characters; and the state the pairing walk saved
(:data:`~murmur_analysis.algorithms.pairing.PairState`): the tail's pairing is the same walk,
resumed from it over the tail's tool events, so its rows are the rows a walk of the whole file
makes after the earlier ones, and it names the earlier calls its results answer
(:attr:`Tail.answered`). Where the resumed walk is not exact (``Pairer::exact`` in
``native/src/pair.rs``), the bytes are not read on their own.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..algorithms.pairing import Pairer
from ..core.blocks import text_chars
from ..core.diagnostics import Diagnostics
from ..core.files import open_regular
from ..core.handoff import Conversation, EntryColumns, ResumePoint, Summary
from ..core.identity import Known, Verdict, classify, probe, same_file, stat_fields
from ..core.model import Entry, sorted_entries
from ..core.values import JSON
from .base import Source

__all__ = [
    "START",
    "Resumable",
    "ResumePoint",
    "Tail",
    "anchor",
    "appendable",
    "file_of",
    "grew",
    "identity_at",
    "read_exactly",
    "read_on",
    "resumed",
    "scratch_copy",
    "verdict",
    "walked",
]

#: The point before a file's first byte.
START = ResumePoint()


@dataclass
class Tail:
    """The messages of a file after a resume point.

    Attributes:
        conversation: those messages as a conversation (positions from 0, line numbers going
            on from the point's). Its pairing (``summary.paired``) is the walk resumed from
            the point's state: the rows a walk of the whole file makes after the earlier rows,
            then one row per result that answers an earlier call.
        point: the resume point after them, not yet tied to the file (``None``: the next read
            is whole).
        answered: the earlier ``tool_calls`` row (of the conversation) each of those last
            ``len(answered)`` rows of the pairing answers.
        reported: responses before the point that no usage row before it reported on, and
            that a usage row after it does (its ``seq`` names the earlier message): the
            earlier rows counted them in ``conversations.unreported_responses``.
        retitled: the conversation's title (``conversation.summary.title``) is the whole
            conversation's, as the source read it over the whole file, not the tail's own
            (which would name the conversation only where the earlier rows named none).
    """

    conversation: Conversation
    point: ResumePoint | None
    answered: list[int]
    reported: int = 0
    retitled: bool = False


def resumed(point: ResumePoint) -> Pairer:
    """The pairing walk going on from ``point``'s state (taking it over), texts kept, inputs not."""
    return Pairer(keep_inputs=False, state=point.walk)


def walked(chunk: EntryColumns, point: ResumePoint | None) -> Pairer:
    """The pairing walk over a source's own chunk of messages, from ``point``'s state (else from the start).

    A source whose reads leave resume points pairs its rows itself, as the frame builder would
    (:meth:`~murmur_analysis.algorithms.pairing.Pairer.feed_chunk`): the point keeps the state.
    """
    walk = resumed(point) if point is not None else Pairer(keep_inputs=False)
    walk.feed_chunk(chunk)
    return walk


@runtime_checkable
class Resumable(Protocol):
    """A source whose conversations' files can be read on from a :class:`ResumePoint`.

    Its whole reads set :attr:`Conversation.resume`; :func:`read_on` and the export of long
    files use the two methods below. :class:`~murmur_analysis.sources.jsonl.AppendOnlyJsonl`
    implements them for any source whose conversation is one append-only JSONL file.
    """

    def resumable(self, conv: Conversation, before: JSON, now: JSON) -> bool:
        """Whether ``conv``, fingerprinted ``before`` by an earlier read and ``now``, may be read on.

        False when what the rows depend on besides the file itself changed (murmur: a session
        trace joined to the record), or when the conversation is not one file read alone.
        ``before`` is ``None`` when asked for a read of ranges within one export.
        """
        ...

    def read_range(self, conv: Conversation, fd: int, start: int, end: int, point: ResumePoint,
                   diagnostics: Diagnostics, text: bool, scratch: Path) -> Tail | None:
        """Decode the bytes ``start:end`` of ``conv``'s file (open as ``fd``), after ``point``.

        ``start`` is where a line begins and ``point`` counts what comes before it (:data:`START`
        before the first byte). ``scratch`` is a folder for temporary files. ``None``: the
        bytes cannot be read on their own (the file must be read whole).
        """
        ...

    def cut(self, fd: int, target: int, end: int, window: int) -> int | None:
        """A line start after ``target`` (before ``end``) to begin a range at; ``None``: none."""
        ...

    def read_whole(self, conv: Conversation, diagnostics: Diagnostics, text: bool) -> Conversation:
        """``conv`` read whole, as :meth:`Source.open` reads it, after the source was told it need not.

        The exporter asks for it where reading on or by ranges turned out not to be exact.
        """
        ...


def file_of(fingerprint: JSON, path: str) -> Mapping[str, JSON] | None:
    """The identity a fingerprint holds for ``path`` (a ``[path, identity]`` pair anywhere in it)."""

    def pairs(value: JSON) -> Iterator[Mapping[str, JSON]]:
        if isinstance(value, list):
            if len(value) == 2 and value[0] == path and isinstance(value[1], dict):
                yield value[1]
            for item in value:
                yield from pairs(item)

    return next(pairs(fingerprint), None)


def appendable(source: object, conv: Conversation, unit: Mapping[str, JSON] | None, now: JSON) -> ResumePoint | None:
    """The point to read ``conv`` on from, if ``source`` can and an earlier export left one.

    Args:
        source: the source that found ``conv`` now.
        conv: the conversation as found (not read).
        unit: what the earlier export recorded of it (``fingerprint``, ``resume``).
        now: the source's fingerprint of it now.
    """
    if not isinstance(source, Resumable) or not unit:
        return None
    point = ResumePoint.from_doc(unit.get("resume"))
    if point is None or point.at is None or not source.resumable(conv, unit.get("fingerprint"), now):
        return None
    return point


def anchor(point: ResumePoint | None, path: str | None, fingerprint: JSON) -> ResumePoint | None:
    """``point`` tied to the file it was read from, or ``None`` when it cannot be read on from.

    The file must still be the one of the fingerprint (taken before the read: same inode, size
    and times, so the read saw exactly those bytes) and end at a line break.
    """
    identity = file_of(fingerprint, path) if path is not None else None
    if point is None or identity is None or path is None:
        return None
    try:
        with open_regular(Path(path)) as f:
            st = os.fstat(f.fileno())
            at = identity_at(f.fileno(), st.st_size) if same_file(identity, st) else None
    except OSError:
        return None
    return replace(point, at=at) if at is not None else None


def identity_at(fd: int, size: int) -> Known | None:
    """The identity of the file open as ``fd`` at ``size``, if it ends there at a line break."""
    st = os.fstat(fd)
    if st.st_size != size or (size and os.pread(fd, 1, size - 1) != b"\n"):
        return None
    head, tail = probe(fd, size)
    return Known(**stat_fields(st), head=head, tail=tail)


def verdict(point: ResumePoint, path: str | os.PathLike[str]) -> Verdict:
    """Whether the file at ``path`` is the point's file as it was, grown since, or another.

    Cheap: its status and two checksums. ``replaced`` when the point is tied to no file or the
    file cannot be opened.
    """
    if point.at is None:
        return "replaced"
    try:
        with open_regular(Path(path)) as f:
            return classify(point.at, f.fileno(), os.fstat(f.fileno()))
    except OSError:
        return "replaced"


def grew(point: ResumePoint, path: str) -> bool:
    """Whether the file at ``path`` is the point's file, grown since (:func:`verdict`)."""
    return verdict(point, path) == "grew"


def read_on(source: Resumable, conv: Conversation, point: ResumePoint, diagnostics: Diagnostics, text: bool,
            scratch: Path) -> Tail | None:
    """Decode what was appended to ``conv``'s file since ``point``; ``None``: read it whole.

    The file must be the point's, grown (:func:`~murmur_analysis.core.identity.classify`); the
    tail's point is tied to the file as it is now.
    """
    if point.at is None or conv.path is None:
        return None
    try:
        with open_regular(Path(conv.path)) as f:
            fd = f.fileno()
            st = os.fstat(fd)
            if classify(point.at, fd, st) != "grew":
                return None
            tail = source.read_range(conv, fd, point.at.size, st.st_size, point, diagnostics, text, scratch)
            if tail is not None and tail.point is not None:
                at = identity_at(fd, st.st_size)
                tail.point = replace(tail.point, at=at) if at is not None else None
    except OSError:
        return None
    return tail



class AppendOnlyLines:
    """:class:`Resumable` for a source whose conversation is one file of lines that is only appended to.

    Any line-delimited source (JSONL above all) gets reading on from a point, and exports of
    long files by ranges, by mixing this in before :class:`~murmur_analysis.sources.base.Source`
    and giving two things:

    * :meth:`decode_lines`: the entries of some of the file's lines, read alone;
    * on each whole read, the conversation's ``resume`` point: :meth:`whole_point`.

    The counts a point carries are worked out from the entries with the rules the tables are
    built by (the pairing walk, whose saved state the point holds, and
    :func:`~murmur_analysis.core.blocks.text_chars`), so the rows read on equal a whole read's.
    """

    def decode_lines(self, conv: Conversation, data: bytes, first_line: int,
                     diagnostics: Diagnostics) -> list[Entry] | None:
        """The entries of ``data``, whole lines of ``conv``'s file from line ``first_line`` (1-based) on.

        Positions start at 0. ``None`` when the lines cannot be read apart from the lines
        before them (say, the first continues a message begun before).
        """
        raise NotImplementedError

    @staticmethod
    def whole_point(entries: Sequence[Entry], lines: int) -> ResumePoint:
        """The point after a whole read of ``lines`` lines that gave ``entries``."""
        walk = resumed(START)
        for entry in sorted_entries(entries):
            walk.feed(entry)
        walk.finish_columns()
        return ResumePoint(messages=len(entries), lines=lines, chars=sum(text_chars(e.blocks) for e in entries),
                           walk=walk.save())

    def resumable(self, conv: Conversation, before: JSON, now: JSON) -> bool:
        """A conversation read from its own file, whose fingerprint names nothing else that changed."""
        if conv.path is None:
            return False
        return before is None or _without(before, conv.path) == _without(now, conv.path)

    def read_range(self, conv: Conversation, fd: int, start: int, end: int, point: ResumePoint,
                   diagnostics: Diagnostics, text: bool, scratch: Path) -> Tail | None:
        """The entries of the bytes ``start:end`` (:meth:`decode_lines`), after ``point``."""
        data = read_exactly(fd, start, end)
        if data is None:
            return None
        entries = self.decode_lines(conv, data, point.lines + 1, diagnostics)
        if entries is None:
            return None
        lines = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        walk = resumed(point)
        for entry in sorted_entries(entries):
            walk.feed(entry)
        paired = walk.pairing()
        if not walk.exact:
            return None
        new = ResumePoint(messages=point.messages + len(entries), lines=point.lines + lines,
                          chars=point.chars + sum(text_chars(e.blocks) for e in entries), walk=walk.save())
        # What is known of the conversation before reading it stays (its title); nothing it learned by reading.
        known = Summary(title=conv.summary.title if conv.summary is not None else None, paired=paired)
        read = replace(conv, entries=entries, resume=None, summary=known, columns=None)
        return Tail(read, new, walk.answered)

    def cut(self, fd: int, target: int, end: int, window: int) -> int | None:
        """The first line start after ``target`` (before ``end``)."""
        return next_line(fd, target, end)

    def read_whole(self, conv: Conversation, diagnostics: Diagnostics, text: bool) -> Conversation:
        """``conv`` read again whole (``Source.reopen``)."""
        assert isinstance(self, Source), "AppendOnlyLines is mixed into a Source"
        return self.reopen(conv.key, diagnostics)


def read_exactly(fd: int, start: int, end: int) -> bytes | None:
    """The bytes ``start:end`` of the file open as ``fd``; ``None`` when they cannot all be read."""
    try:
        data = os.pread(fd, end - start, start)
    except OSError:
        return None
    return data if len(data) == end - start else None


@contextlib.contextmanager
def scratch_copy(data: bytes, scratch: Path) -> Iterator[Path]:
    """A file in ``scratch`` holding ``data``, removed afterwards.

    A range read by a scanner of files then ends where the range does, however the original
    grows meanwhile.
    """
    out, name = tempfile.mkstemp(dir=scratch, suffix=".jsonl")
    try:
        with os.fdopen(out, "wb") as f:
            f.write(data)
        del data  # the caller may drop its copy while the file is read
        yield Path(name)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def next_line(fd: int, offset: int, end: int, step: int = 64 << 10) -> int | None:
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


def _without(fingerprint: JSON, path: str) -> JSON:
    """``fingerprint`` with the identity of ``path`` left out (what else the rows depend on)."""
    if isinstance(fingerprint, list):
        if len(fingerprint) == 2 and fingerprint[0] == path and isinstance(fingerprint[1], dict):
            return None
        return [_without(item, path) for item in fingerprint]
    return fingerprint
