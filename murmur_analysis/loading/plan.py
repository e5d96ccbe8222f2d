"""The one load plan: paths in, conversations through the frame builder, one event at a time.

:func:`~murmur_analysis.corpus.load` runs the plan to its end and keeps every table;
:func:`iter_batches` and the Parquet export run the same plan and take the builder's rows
every few conversations, so memory holds one batch, never the whole corpus.

The plan finds the sources of each path through :class:`~murmur_analysis.loading.discovery.Discovery`
(or takes the one forced with ``source=``), which admits each conversation once. Each conversation's rows go through
:class:`~murmur_analysis.tables.frames.FrameBuilder`; the diagnostics its decoding reported are told
apart from those of the source as a whole (discovery, retention), so a consumer can keep them
with the conversation.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.diagnostics import Diagnostic
from ..core.handoff import Conversation, EntryColumns, Reading, Summary, TableRows
from ..core.model import Entry
from ..core.pricing import Pricer, Prices, price_tables
from ..sources import Diagnostics
from ..sources.base import Earlier, ReadContext, Source
from ..tables.frames import FrameBuilder
from .discovery import Discovery, PathArg, checked_options, nothing_found, printable

__all__ = ["Batch", "LoadEvent", "LoadPlan", "Progress", "iter_batches"]

#: A progress callback: ``(event, detail)`` with event ``"source"`` (a path and the source
#: that opened it), ``"entries"`` (a long conversation's entries read so far, every 65,536) or
#: ``"conversation"`` (a conversation id, once decoded), then ``"read"`` (the path it was read
#: from, when it has one).
Progress = Callable[[str, str], None]

#: Whether a conversation's rows are wanted, asked before its entries are read: ``False``
#: skips it, ``True`` reads it as found, and a ``Conversation`` is read in its place (the
#: consumer read it itself, in full, after its source was told it need not).
Keep = Callable[[Source, Conversation], "bool | Conversation"]
#: What a source is told it need not read (``ReadContext.skip``, bound to the source).
Skip = Callable[[Source, Conversation], bool]
#: What the consumer recorded of a conversation at its last read (``ReadContext.earlier``, bound to the source).
Recorded = Callable[[Source, Conversation], Earlier | None]

_PROGRESS_EVERY = 65_536


def _reporting_columns(
    chunks: Iterable[EntryColumns], label: str, progress: Progress
) -> Generator[EntryColumns, None, Summary | None]:
    """``chunks`` as they are read, progress told after each; returns the summary their stream returns."""
    reading = Reading(chunks, None)
    done = 0
    for chunk in reading:
        done += len(chunk)
        progress("entries", f"{label}: {done:,} entries")
        yield chunk
    return reading.summary


def _reporting_entries(
    entries: Iterable[Entry], label: str, progress: Progress
) -> Generator[Entry, None, Summary | None]:
    """``entries`` as they are read, progress told every so often; returns the summary their stream returns."""
    reading = Reading(entries, None)
    for done, entry in enumerate(reading, start=1):
        if done % _PROGRESS_EVERY == 0:
            progress("entries", f"{label}: {done:,} entries")
        yield entry
    return reading.summary


def _reporting(conv: Conversation, progress: Progress) -> Conversation:
    """``conv`` reading its entries or columns through a progress wrapper (a list is read at once)."""
    label = f"{conv.source}: {conv.conversation_id}"
    if conv.columns is not None:
        return replace(conv, columns=_reporting_columns(conv.columns, label, progress))
    if not isinstance(conv.entries, list):
        return replace(conv, entries=_reporting_entries(conv.entries, label, progress))
    return conv


def _row_tables(found: list[TableRows], source: str) -> dict[str, pa.Table]:
    """Rows no conversation holds, as a table per table they name (built as the frame builder builds rows)."""
    builder = FrameBuilder()
    for rows in found:
        builder.add_rows(rows, source)
    named = {rows.table for rows in found}
    return {name: table for name, table in builder.finish().items() if name in named}


@dataclass
class LoadEvent:
    r"""One step of the plan.

    Attributes:
        kind: ``"conversation"`` (its rows were added to the builder), ``"skipped"`` (the
            ``keep`` callback declined it; nothing of it was read beyond what the source's
            discovery reads) or ``"target"`` (a path's source finished).
        source: the source reading.
        target: the path it was reading.
        conversation: the conversation, for ``conversation`` and ``skipped`` (names shown as
            Arrow holds them: undecodable bytes as ``\xNN``).
        conversation_id: the conversation's id as its source gave it (lossless: surrogate
            escapes kept), for ``conversation`` and ``skipped``.
        rows: rows the conversation added to each table, a source's own tables included
            (``conversation`` only).
        diagnostics: for ``conversation``, the rows its decoding reported (not yet in the
            builder); for ``skipped``, the rows its source reported of it while finding it;
            for ``target``, the source's rows that belong to no conversation.
        all_diagnostics: for ``target``, every row of that path in the order reported.
        reported_at: for ``target``, when each row of ``all_diagnostics`` was reported, counted
            in the path's conversations: ``2n - 2`` while its source was finding the n-th one,
            ``2n - 1`` while the n-th was admitted (a ``duplicate_id``), ``2n`` once the n-th
            was handed over (read or skipped). A conversation decoded elsewhere places its rows
            by it.
        extra_tables: for ``target``, the rows of the path no conversation holds (the
            :class:`~murmur_analysis.core.handoff.TableRows` its source yielded), as tables.
    """

    kind: str
    source: Source
    target: Path
    conversation: Conversation | None = None
    conversation_id: str | None = None
    rows: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    all_diagnostics: list[Diagnostic] = field(default_factory=list)
    reported_at: list[int] = field(default_factory=list)
    extra_tables: Mapping[str, pa.Table] = field(default_factory=dict)


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the length of a load.

    A load allocates millions of short-lived containers (parsed lines, rows) and keeps many
    long-lived ones (column chunks); each automatic collection then rescans all of them, which
    costs about a third of a long record's load. Decoded data holds no reference cycles, so
    reference counting frees everything as before; the collector's previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class LoadPlan:
    """Paths to read, and the builder their rows go to.

    A consumer may replace :attr:`builder` between events (after taking its tables) to hold one
    batch of rows at a time.

    Attributes:
        builder: where the next conversation's rows are added.
        discovery: which source reads which path; each conversation admitted once.
        text: whether the text columns are filled (each source is told, as ``ReadContext.text``).

    Raises:
        UnknownSourceError: ``source`` or a key of ``options`` names no registered source.
    """

    def __init__(
        self,
        paths: Iterable[PathArg],
        source: str | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        progress: Progress | None = None,
        text: bool = True,
    ) -> None:
        self.paths = list(paths)
        self.text = text
        self.source = source
        self.options = checked_options(options)
        self.progress = progress
        self.builder = self.new_builder()
        self.discovery = Discovery(source, self.options)
        #: Told to each source (``ReadContext.read_ahead``): a consumer that holds one batch at a
        #: time bounds how much the sources decode ahead of it.
        self.read_ahead: int | None = None

    def context(self, src: Source, skip: Skip | None = None, earlier: Recorded | None = None) -> ReadContext:
        """What ``src.open`` is told: this plan's text choice and read-ahead, ``skip`` and ``earlier`` bound to it."""
        told = (lambda conv: skip(src, conv)) if skip is not None else None
        recorded = (lambda conv: earlier(src, conv)) if earlier is not None else None
        return ReadContext(text=self.text, skip=told, read_ahead=self.read_ahead, earlier=recorded)

    def new_builder(self) -> FrameBuilder:
        """An empty frame builder for this plan (text columns filled or left out as asked)."""
        return FrameBuilder(text=self.text)

    def _counts(self) -> dict[str, int]:
        return self.builder.rows()

    def events(self, keep: Keep | None = None, skip: Skip | None = None,
               earlier: Recorded | None = None) -> Iterator[LoadEvent]:
        """Run the plan, yielding after each conversation and after each path's source.

        Args:
            keep: called before a conversation's entries are read; ``False`` skips it.
            skip: told to each source (``ReadContext.skip``): ``True`` promises that ``keep``
                will skip that conversation, so the source need not read it at all.
            earlier: told to each source (``ReadContext.earlier``): what the consumer recorded
                of a conversation at its last read.

        Raises:
            NoSourceError: a readable path no source recognises.
            SourceError: ``source`` was forced and found nothing in a path.
            FileNotFoundError: a path that does not exist.
        """
        progress, discovery = self.progress, self.discovery
        for src, target in discovery.targets(self.paths):
            ctx = self.context(src, skip, earlier)
            if progress:
                progress("source", f"{src.name}: {target}")
            diags = Diagnostics(src.name)
            owned: set[int] = set()  # indexes of diags.rows a conversation reported
            kept: dict[int, Diagnostic] = {}  # the rows not already reported in this load
            found = 0
            # Rows no conversation holds go out with the path's own event, never with the
            # rows of the conversations being read beside them.
            table_rows: list[TableRows] = []
            since = 0  # rows before it were reported for what came before this conversation
            # How many rows had been reported when each conversation was found, and handed over.
            steps: list[int] = []
            for item in src.open(target, diags, ctx):
                if isinstance(item, TableRows):
                    if discovery.admit_rows(src.name, item):
                        table_rows.append(item)
                    continue
                at = len(diags.rows)
                conv = discovery.admit(item, diags)
                if conv is None:
                    continue
                found += 1
                # What the source reported of this conversation's file while finding it is its own.
                early = [i for i in range(since, len(diags.rows)) if diags.rows[i].path == conv.path]
                owned.update(early)
                since = len(diags.rows)
                steps += (at, since)
                verdict = keep(src, conv) if keep is not None else True
                if verdict is False:
                    mine = self._fresh(diags.rows, early, kept)
                    yield LoadEvent("skipped", src, target, conv, conv.conversation_id, diagnostics=mine)
                    continue
                if isinstance(verdict, Conversation):  # read by the consumer: under the name it was admitted with
                    conv = replace(verdict, conversation_id=conv.conversation_id, path=conv.path)
                lossless = conv.conversation_id
                shown = printable(_reporting(conv, progress) if progress else conv)
                before = self._counts()
                mark = len(diags.rows)
                self.builder.add(shown)
                after = self._counts()
                owned.update(range(mark, len(diags.rows)))
                mine = self._fresh(diags.rows, [*early, *range(mark, len(diags.rows))], kept)
                since = len(diags.rows)
                conv = shown
                yield LoadEvent(
                    "conversation", src, target, conv, lossless,
                    rows={name: after[name] - before.get(name, 0) for name in after},
                    diagnostics=mine,
                )
                if progress:
                    progress("conversation", f"{conv.source}: {conv.conversation_id}")
                    if conv.path:
                        progress("read", conv.path)
            if self.source is not None and not found and not diags.rows:
                raise nothing_found(self.source, target, self.options)
            rest = self._fresh(diags.rows, (i for i in range(len(diags.rows)) if i not in owned), kept)
            order = sorted(kept)
            yield LoadEvent(
                "target", src, target,
                diagnostics=rest,
                all_diagnostics=[kept[i] for i in order],
                reported_at=[bisect.bisect_right(steps, i) for i in order],
                extra_tables=_row_tables(table_rows, src.name),
            )

    def _fresh(self, rows: list[Diagnostic], indexes: Iterable[int], kept: dict[int, Diagnostic]) -> list[Diagnostic]:
        """The rows at ``indexes`` not reported before in this load (noted in ``kept``)."""
        out = []
        for i in indexes:
            if self.discovery.fresh([rows[i]]):
                kept[i] = rows[i]
                out.append(rows[i])
        return out

    def discovery_rows(self) -> list[Diagnostic]:
        """What discovery itself reported (unlistable folders, data reached twice), once; read at the end."""
        return self.discovery.fresh(self.discovery.rows)


@dataclass
class Batch:
    """Some conversations' rows, in every table.

    Attributes:
        tables: every declared table (and a source's own tables when a path ends in the batch).
        conversations: ``(source, conversation_id)`` of the conversations whose rows it holds.
    """

    tables: dict[str, pa.Table]
    conversations: list[tuple[str, str]]


def merge_extra(tables: dict[str, pa.Table], extra: Mapping[str, pa.Table]) -> None:
    """Add a source's own tables to ``tables``; a core table's extra rows (a session's usage) are appended."""
    for name, table in extra.items():
        tables[name] = pa.concat_tables([tables[name], table], promote_options="default") if name in tables else table


def iter_batches(
    *paths: PathArg,
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    prices: Prices | None = None,
    batch_conversations: int = 256,
    batch_rows: int = 262_144,
    text: bool = True,
) -> Iterator[Batch]:
    """Load ``paths`` as :func:`~murmur_analysis.corpus.load` does, a batch of conversations at a time.

    Memory holds one batch: a batch ends after ``batch_conversations`` conversations, or once
    it holds ``batch_rows`` message rows, or when a path's source finishes (its diagnostics and
    own tables come with the last batch of that path). Concatenating every batch's tables gives
    the tables ``load`` gives.

    Args:
        *paths: files or folders of any registered source.
        source: read only this source's data (as for ``ma.load``).
        options: per-source options by source name.
        progress: called as work advances (see :data:`Progress`).
        prices: the user's own prices, as for :func:`~murmur_analysis.load`; each batch's cost
            columns are filled, and the unpriced models are reported once, in the last batch.
        batch_conversations: the most conversations in a batch.
        batch_rows: message rows after which a batch ends.
        text: fill the text columns; ``False`` leaves them null for a lean load.

    Yields:
        One :class:`Batch` at a time.
    """
    plan = LoadPlan(paths, source, options, progress, text)
    pricer = Pricer(prices)
    models: list[pa.Table] = []  # each batch's usage (model, provider), to report unpriced models once

    def priced(tables: dict[str, pa.Table]) -> dict[str, pa.Table]:
        models.append(tables["usage"].select(["model", "provider"]))
        return price_tables(tables, pricer, diagnose=False)

    held: list[tuple[str, str]] = []
    with cyclic_gc_paused():
        for event in plan.events():
            if event.kind == "target":
                plan.builder.add_diagnostics(event.all_diagnostics)
                tables = plan.builder.finish()
                merge_extra(tables, event.extra_tables)
                yield Batch(priced(tables), held)
                plan.builder, held = plan.new_builder(), []
                continue
            assert event.conversation is not None
            held.append((event.conversation.source, event.conversation.conversation_id))
            if len(held) >= batch_conversations or plan.builder.rows()["messages"] >= batch_rows:
                # The conversation's diagnostics stay with the path's last batch, as load orders them.
                yield Batch(priced(plan.builder.finish()), held)
                plan.builder, held = plan.new_builder(), []
        plan.builder.add_diagnostics(plan.discovery_rows())
        if models:
            plan.builder.add_diagnostics(pricer.diagnose(pa.concat_tables(models)))
        if plan.builder.builders["diagnostics"].num_rows:
            yield Batch(plan.builder.finish(), [])
