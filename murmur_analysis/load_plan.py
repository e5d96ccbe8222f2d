"""The one load plan: paths in, conversations through the frame builder, one event at a time.

:func:`~murmur_analysis.corpus.load` runs the plan to its end and keeps every table;
:func:`iter_batches` and the Parquet export run the same plan and take the builder's rows
every few conversations, so memory holds one batch, never the whole corpus.

The plan finds the source of each path (or takes the one forced with ``source=``); a folder no
source claims is searched one level down. Each conversation's rows go through
:class:`~murmur_analysis.frames.FrameBuilder`; the diagnostics its decoding reported are told
apart from those of the source as a whole (discovery, retention), so a consumer can keep them
with the conversation.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .diagnostics import Diagnostic
from .errors import NoSourceError
from .frames import FrameBuilder
from .model import Entry
from .schema import TABLES
from .sources import Diagnostics, detect, get_source
from .sources.base import Conversation, EntryColumns, Source

__all__ = ["Batch", "LoadEvent", "LoadPlan", "Progress", "iter_batches"]

#: A progress callback: ``(event, detail)`` with event ``"source"`` (a path and the source
#: that opened it), ``"entries"`` (a long conversation's entries read so far, every 65,536) or
#: ``"conversation"`` (a conversation id, once decoded).
Progress = Callable[[str, str], None]

#: Whether a conversation's rows are wanted; ``False`` skips it before its entries are read.
Keep = Callable[[Source, Conversation], bool]

_PROGRESS_EVERY = 65_536


def _reporting_columns(
    chunks: Iterable[EntryColumns], label: str, progress: Progress
) -> Iterator[EntryColumns]:
    done = 0
    for chunk in chunks:
        done += len(chunk)
        progress("entries", f"{label}: {done:,} entries")
        yield chunk


def _reporting_entries(entries: Iterable[Entry], label: str, progress: Progress) -> Iterator[Entry]:
    for done, entry in enumerate(entries, start=1):
        if done % _PROGRESS_EVERY == 0:
            progress("entries", f"{label}: {done:,} entries")
        yield entry


@dataclass
class LoadEvent:
    """One step of the plan.

    Attributes:
        kind: ``"conversation"`` (its rows were added to the builder), ``"skipped"`` (the
            ``keep`` callback declined it; nothing of it was read beyond what the source's
            discovery reads) or ``"target"`` (a path's source finished).
        source: the source reading.
        target: the path it was reading.
        conversation: the conversation, for ``conversation`` and ``skipped``.
        rows: rows the conversation added to each table (``conversation`` only).
        diagnostics: for ``conversation``, the rows its decoding reported (not yet in the
            builder); for ``target``, the source's rows that belong to no conversation.
        all_diagnostics: for ``target``, every row of that path in the order reported.
        extra_tables: for ``target``, the source's own tables (``Source.extra_tables``).
    """

    kind: str
    source: Source
    target: Path
    conversation: Conversation | None = None
    rows: dict[str, int] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    all_diagnostics: list[Diagnostic] = field(default_factory=list)
    extra_tables: Mapping[str, pa.Table] = field(default_factory=dict)


def _targets(
    path: Path, source: str | None, options: Mapping[str, Mapping[str, Any]]
) -> Iterator[tuple[Source, Path]]:
    if source is not None:
        yield get_source(source, **options.get(source, {})), path
        return
    try:
        yield detect(path, options), path
        return
    except NoSourceError:
        if not path.is_dir():
            raise
    found = False
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        try:
            yield detect(child, options), child
            found = True
        except NoSourceError:
            continue
    if not found:
        raise NoSourceError(f"no source recognises {path} or anything directly inside it",
                            hint="pass source= to force one; ma.sources() lists them")


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
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        source: str | None = None,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        progress: Progress | None = None,
    ) -> None:
        self.paths = [Path(os.path.expanduser(os.fspath(p))) for p in paths]
        self.source = source
        self.options = options or {}
        self.progress = progress
        self.builder = FrameBuilder()

    def _counts(self) -> dict[str, int]:
        return {name: b.num_rows for name, b in self.builder.builders.items()}

    def events(self, keep: Keep | None = None) -> Iterator[LoadEvent]:
        """Run the plan, yielding after each conversation and after each path's source.

        Args:
            keep: called before a conversation's entries are read; ``False`` skips it.

        Raises:
            NoSourceError: a path no source recognises.
            UnknownSourceError: ``source`` names no registered source.
            FileNotFoundError: a path that does not exist.
        """
        progress = self.progress
        for path in self.paths:
            if not path.exists():
                raise FileNotFoundError(f"no such file or folder: {path}")
            for src, target in _targets(path, self.source, self.options):
                if progress:
                    progress("source", f"{src.name}: {target}")
                diags = Diagnostics(src.name)
                owned: list[tuple[int, int]] = []  # spans of diags.rows a conversation reported
                for conv in src.open(target, diags):
                    if keep is not None and not keep(src, conv):
                        yield LoadEvent("skipped", src, target, conv)
                        continue
                    if progress:
                        label = f"{conv.source}: {conv.conversation_id}"
                        if conv.columns is not None:
                            conv.columns = _reporting_columns(conv.columns, label, progress)
                        elif not isinstance(conv.entries, list):
                            conv.entries = _reporting_entries(conv.entries, label, progress)
                    before = self._counts()
                    mark = len(diags.rows)
                    self.builder.add(conv)
                    after = self._counts()
                    owned.append((mark, len(diags.rows)))
                    yield LoadEvent(
                        "conversation", src, target, conv,
                        rows={name: after[name] - before[name] for name in TABLES},
                        diagnostics=diags.rows[mark:],
                    )
                    if progress:
                        progress("conversation", f"{conv.source}: {conv.conversation_id}")
                taken = {i for start, end in owned for i in range(start, end)}
                yield LoadEvent(
                    "target", src, target,
                    diagnostics=[d for i, d in enumerate(diags.rows) if i not in taken],
                    all_diagnostics=diags.rows,
                    extra_tables=src.extra_tables(),
                )


@dataclass
class Batch:
    """Some conversations' rows, in every table.

    Attributes:
        tables: every declared table (and a source's own tables when a path ends in the batch).
        conversations: ``(source, conversation_id)`` of the conversations whose rows it holds.
    """

    tables: dict[str, pa.Table]
    conversations: list[tuple[str, str]]


def iter_batches(
    *paths: str | os.PathLike[str],
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    batch_conversations: int = 256,
    batch_rows: int = 262_144,
) -> Iterator[Batch]:
    """Load ``paths`` as :func:`~murmur_analysis.corpus.load` does, a batch of conversations at a time.

    Memory holds one batch: a batch ends after ``batch_conversations`` conversations, or once
    it holds ``batch_rows`` message rows, or when a path's source finishes (its diagnostics and
    own tables come with the last batch of that path). Concatenating every batch's tables gives
    the tables ``load`` gives.

    Args:
        *paths: files or folders of any registered source.
        source: force this source for every path instead of detecting.
        options: per-source options by source name.
        progress: called as work advances (see :data:`Progress`).
        batch_conversations: the most conversations in a batch.
        batch_rows: message rows after which a batch ends.

    Yields:
        One :class:`Batch` at a time.
    """
    plan = LoadPlan(paths, source, options, progress)
    held: list[tuple[str, str]] = []
    with cyclic_gc_paused():
        for event in plan.events():
            if event.kind == "target":
                plan.builder.add_diagnostics(event.all_diagnostics)
                tables = plan.builder.finish()
                tables.update(event.extra_tables)
                yield Batch(tables, held)
                plan.builder, held = FrameBuilder(), []
                continue
            assert event.conversation is not None
            held.append((event.conversation.source, event.conversation.conversation_id))
            if len(held) >= batch_conversations or plan.builder.builders["messages"].num_rows >= batch_rows:
                # The conversation's diagnostics stay with the path's last batch, as load orders them.
                yield Batch(plan.builder.finish(), held)
                plan.builder, held = FrameBuilder(), []
