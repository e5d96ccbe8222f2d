"""One export run, split by what it decides of each conversation: keep, read on, read whole, write.

The load plan yields; this run decides. For each conversation it is asked twice:

* before its source reads it (:meth:`ExportRun.skip`, the source's ``ReadContext.skip``): a
  cheap decision only, from the fingerprint and the file's status. Nothing is read or written
  here, so no source ever calls into writing;
* when the source yields it (:meth:`ExportRun.wanted`): the decision is carried out:
  - **keep**: its input is unchanged, its rows of the previous export are kept;
  - **read on**: its file grew and its source is
    :class:`~murmur_analysis.sources.resume.Resumable`: only the appended bytes are read
    (:func:`~murmur_analysis.sources.resume.read_on`) and their rows continued from the earlier
    ones (:mod:`.resume`);
  - **ranges**: a long file of a resumable source is written a range at a time (:mod:`.ranges`);
  - **read whole**: its source reads it, and the plan hands its rows over
    (:meth:`ExportRun.add`). Where reading on or by ranges cannot be done exactly, the run
    reads the conversation whole itself (``Resumable.read_whole``).
* **write**: rows are written a batch of conversations at a time (:meth:`ExportRun.flush`), and
  at the end the kept and appended rows (:meth:`ExportRun.finish`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pyarrow as pa

from ..core.diagnostics import Diagnostic, Diagnostics
from ..core.handoff import Conversation
from ..core.identity import changed_since
from ..core.pricing import Pricer, price_tables
from ..core.values import JSON
from ..loading.discovery import printable
from ..loading.plan import LoadEvent, LoadPlan
from ..sources.base import Earlier, Source
from ..sources.resume import Resumable, anchor, appendable, grew, read_on
from .layout import Generation
from .ranges import export_ranges
from .resume import GrownRows, appended_to_previous
from .state import ExportState, as_json, unit_id
from .writer import BatchWriter, Rows, units_of

__all__ = ["ExportRun"]

#: How long before an export starts a file's change still counts as "during" it (the kernel's
#: file times are taken from a clock that may lag by a tick).
_RACY_NS = 1_000_000_000

Decision = Literal["keep", "append", "ranges", "read"]


@dataclass
class _Decided:
    """What was decided of a conversation before its source read it."""

    decision: Decision
    fingerprint: JSON  # what the state records (``None`` when the input changed during the run)
    grown: GrownRows | None = None
    found: JSON = None  # the fingerprint as found, which reading on is judged by


@dataclass
class ExportRun:
    """The decisions and the rows of one export into a staging folder.

    Attributes:
        plan: the load plan whose events the run consumes.
        writer: where the batches are written.
        previous: what the previous export recorded (empty when not incremental).
        current: the previous export's generation, if any.
        scratch: a folder for temporary files.
        pricer: prices for the costs of every batch.
        batch_conversations: the most conversations per file.
        batch_rows: message rows after which a batch is written.
        range_bytes: a file longer than this is written a range of about this many bytes at a time.
        text: whether the text columns are filled.
    """

    plan: LoadPlan
    writer: BatchWriter
    previous: ExportState
    current: Generation | None
    scratch: Path
    pricer: Pricer
    batch_conversations: int
    batch_rows: int
    range_bytes: int
    text: bool
    keep: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    appended: dict[str, GrownRows] = field(default_factory=dict)
    read: int = 0
    _fingerprints: dict[Hashable, JSON] = field(default_factory=dict)  # by key: the event's conversation may be a copy
    _counts: dict[str, dict[str, int]] = field(default_factory=dict)
    _held: list[str] = field(default_factory=list)
    _held_source: str | None = None
    _started_ns: int = field(default_factory=lambda: time.time_ns() - _RACY_NS)
    _decided: dict[Hashable, _Decided] = field(default_factory=dict)
    _named: set[tuple[str, str]] = field(default_factory=set)
    _files_found: set[tuple[int, int]] = field(default_factory=set)
    _own_reads: dict[Hashable, list[Diagnostic]] = field(default_factory=dict)

    # ------------------------------------------------------------------------------ decide

    def skip(self, src: Source, conv: Conversation) -> bool:
        """Whether ``src`` need not read ``conv``: its rows are kept, or read on, or written by ranges here."""
        name = (conv.source, conv.conversation_id)
        if name in self._named:  # a second conversation of this id is renamed when admitted
            return False
        self._named.add(name)
        try:
            st = os.stat(conv.path or "")
            found = (st.st_dev, st.st_ino)
        except OSError:
            found = None
        if found is None or found in self._files_found:  # reached twice: the load reads it once
            return False
        self._files_found.add(found)
        decided = self._decide(src, conv)
        if decided.decision == "read":
            return False
        self._decided[conv.key] = decided
        return True

    def earlier(self, src: Source, conv: Conversation) -> Earlier | None:
        """What the previous export recorded of ``conv`` (``ReadContext.earlier``): its fingerprint and resume point."""
        unit = self.previous.units.get(unit_id(conv)) if self.current is not None else None
        if not unit:
            return None
        return Earlier(unit.get("fingerprint"), unit.get("resume"))

    def _decide(self, src: Source, conv: Conversation) -> _Decided:
        unit = unit_id(conv)
        fp = as_json(src.fingerprint(conv))
        if self.previous.unchanged(unit, fp):
            return _Decided("keep", fp)
        if not isinstance(src, Resumable):
            return _Decided("read", fp)
        point = appendable(src, conv, self.previous.units.get(unit), fp) if self.current is not None else None
        if point is not None and conv.path is not None and grew(point, conv.path):
            return _Decided("append", self._racy(fp), found=fp)
        if conv.path is not None and _size(conv.path) > self.range_bytes and src.resumable(conv, None, None):
            return _Decided("ranges", self._racy(fp))
        return _Decided("read", fp)

    def _racy(self, fp: JSON) -> JSON:
        """``fp``, or ``None`` when its input changed during this run (it may be read in either state)."""
        return None if changed_since(fp, self._started_ns) else fp

    # ---------------------------------------------------------------- keep, read on, ranges

    def wanted(self, src: Source, conv: Conversation) -> bool | Conversation:
        """Carry out what was decided of ``conv``: ``False`` when its rows are kept or written here.

        ``True`` lets the plan hand its rows over as its source read them; a conversation is
        one this run read whole itself, where reading on or by ranges could not be done exactly.
        """
        unit = unit_id(conv)
        decided = self._decided.pop(conv.key, None)
        asked = decided is not None  # its source did not read it
        if decided is None:
            # A source that does not ask (``ReadContext.skip``) is decided for here: what it read is
            # used where reading on or by ranges cannot be done.
            decided = self._decide(src, conv) if unit not in self.seen else _Decided("read", None)
        if decided.decision == "read":
            return self._read_whole(src, conv, decided.fingerprint)
        if unit in self.seen:
            return False
        if decided.decision == "keep":
            self.seen.add(unit)
            self.keep.add(unit)
            self.writer.state.units[unit] = dict(self.previous.units[unit])
            return False
        assert isinstance(src, Resumable)
        if decided.decision == "append":
            grown = self._read_on(src, conv, unit, decided.found)
            if grown is None:
                return self._reread(src, conv, decided.fingerprint) if asked else self._read_whole(src, conv, None)
            self.seen.add(unit)
            self.keep.add(unit)
            self.appended[unit] = grown
        else:
            done, point = export_ranges(src, conv, unit, self.writer, self._rows_of, self.scratch,
                                        self.range_bytes, self.text)
            if not done:
                return self._reread(src, conv, decided.fingerprint) if asked else self._read_whole(src, conv, None)
            self.seen.add(unit)
            self.read += 1
            grown = GrownRows({}, point=point)
        self.writer.state.units[unit] = {"fingerprint": decided.fingerprint,
                                         "resume": grown.point.to_doc() if grown.point else None}
        return False

    def _read_on(self, src: Resumable, conv: Conversation, unit: str, fp: JSON) -> GrownRows | None:
        point = appendable(src, conv, self.previous.units.get(unit), fp)
        if point is None or self.current is None:
            return None
        diags = Diagnostics(conv.source)
        tail = read_on(src, conv, point, diags, self.text, self.scratch)
        if tail is None:
            return None
        try:
            return appended_to_previous(tail, point, self._rows_of(tail.conversation, diags), self.previous,
                                        self.current, unit)
        except (OSError, pa.ArrowException):  # the earlier rows cannot be read: read it whole
            return None

    def _rows_of(self, conv: Conversation, diags: Diagnostics) -> dict[str, pa.Table]:
        """The priced rows of ``conv`` alone, with the diagnostics its reading reported."""
        builder = self.plan.new_builder()
        builder.add(printable(conv))
        builder.add_diagnostics(diags.rows)
        return price_tables(builder.finish(), self.pricer, diagnose=False)

    def _reread(self, src: Resumable, conv: Conversation, fp: JSON) -> Conversation:
        """``conv`` read whole by this run (its source was told it need not read it)."""
        diags = Diagnostics(conv.source)
        whole = src.read_whole(conv, diags, self.text)
        self._own_reads[conv.key] = diags.rows
        assert isinstance(src, Source)
        self._read_whole(src, conv, fp)
        return whole

    def _read_whole(self, src: Source, conv: Conversation, fp: JSON) -> bool:
        fp = as_json(src.fingerprint(conv)) if fp is None else fp
        self._fingerprints[conv.key] = self._racy(fp)
        if self._held and conv.source != self._held_source:
            self.flush()  # a batch holds one source's conversations: flushed before this one's rows
        return True

    # ---------------------------------------------------------------------------- read whole

    def add(self, event: LoadEvent) -> None:
        """Take the plan's event: a conversation read whole joins the batch, a path's rows are written."""
        conv = event.conversation
        if event.kind == "conversation" and conv is not None:
            self.read += 1
            diagnostics = [*event.diagnostics, *self._own_reads.pop(conv.key, [])]
            self.plan.builder.add_diagnostics(diagnostics)
            unit = first = unit_id(conv)
            n = 1
            while unit in self.seen:  # the same conversation reached twice: both rows kept apart
                n += 1
                unit = f"{first}\x1f{n}"
            self.seen.add(unit)
            fp = self._fingerprints.pop(conv.key, None)
            self._counts[unit] = {**event.rows, "diagnostics": len(diagnostics)}
            point = anchor(conv.resume, conv.path, fp)
            self.writer.state.units[unit] = {"fingerprint": fp, "resume": point.to_doc() if point else None}
            self._held.append(unit)
            self._held_source = conv.source
            if (len(self._held) >= self.batch_conversations
                    or self.plan.builder.rows()["messages"] >= self.batch_rows):
                self.flush()
        elif event.kind == "target":
            rest = self.plan.new_builder()
            rest.add_diagnostics(event.diagnostics)
            self.writer.write({"diagnostics": rest.finish()["diagnostics"], **event.extra_tables}, None)

    # --------------------------------------------------------------------------------- write

    def flush(self) -> None:
        """Write the batch held so far."""
        if self._held:
            # Costs are filled per batch; unpriced models are reported once, over the whole export.
            tables = price_tables(self.plan.builder.finish(), self.pricer, diagnose=False)
            self.writer.write(tables, units_of(self._held, self._counts))
        self.plan.builder, self._held = self.plan.new_builder(), []

    def finish(self, incremental: bool) -> None:
        """Write the last batch with the previous export's rows kept and the appended rows, then what is left."""
        found = self.plan.new_builder()
        found.add_diagnostics(self.plan.discovery_rows())
        if found.builders["diagnostics"].num_rows:
            self.writer.write({"diagnostics": found.finish()["diagnostics"]}, None)
        pending = None
        if self._held:
            pending = Rows(self._held_source, price_tables(self.plan.builder.finish(), self.pricer, diagnose=False),
                           units_of(self._held, self._counts))
        self.plan.builder = self.plan.new_builder()
        if self.current is not None and incremental:
            pending = self._carry(self.current, pending)
        for unit, grown in self.appended.items():
            rows = Rows(unit.split("\x1f", 1)[0], grown.tables,
                        {t: [(unit, d.num_rows)] for t, d in grown.tables.items() if d.num_rows})
            if pending is not None and pending.source == rows.source:
                pending.merge(rows)  # after the rows kept of it, if any: each one's rows in order
            else:
                if pending is not None:
                    self.writer.write(pending.tables, pending.units)
                pending = rows
        if pending is not None:
            self.writer.write(pending.tables, pending.units)
        unpriced = self.plan.new_builder()
        unpriced.add_diagnostics(self.pricer.diagnose(self.writer.staged_rows("usage", ["model", "provider"])))
        if unpriced.builders["diagnostics"].num_rows:
            self.writer.write({"diagnostics": unpriced.finish()["diagnostics"]}, None)

    def _carry(self, current: Generation, pending: Rows | None) -> Rows | None:
        """Write the previous export's kept rows, the last batch beside them where it fits (few files rewritten)."""

        def kept(table: str) -> set[str]:
            return self.keep - {u for u, g in self.appended.items() if table in g.replaced}

        for rows in self.writer.carry(self.previous, current, kept):
            fits = pending is not None and pending.rows() + rows.rows() <= 2 * self.batch_rows
            if pending is not None and fits and pending.source == rows.source:
                pending.merge(rows)
            else:
                self.writer.write(rows.tables, rows.units)
        return pending


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1
