"""Loading: paths in, a :class:`Corpus` of tables out.

``load`` finds the source of each path (or takes the one forced with ``source=``), decodes its
conversations one at a time and feeds them through the assembly core into the frame builder.
A folder no source claims is searched one level down, so a folder holding several runtimes'
data loads them all at once.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from .assembly import Assembled, ToolCall, assemble, pair_tools, transcript
from .cursor import Page, entries_page
from .errors import NoSourceError, SourceError, UnknownConversationError, UnknownSourceError, UnknownTableError
from .frames import FrameBuilder, to_pandas
from .model import Entry, Message, sorted_entries
from .pricing import Prices, price_data_version, price_tables
from .sources import Diagnostics, detect, get_source, registry
from .sources.base import Conversation, EntryColumns, Source

__all__ = ["ConversationHandle", "Corpus", "Progress", "load"]

#: A progress callback: ``(event, detail)`` with event ``"source"`` (a path and the source
#: that opened it), ``"entries"`` (a long conversation's entries read so far, every 65,536) or
#: ``"conversation"`` (a conversation id, once decoded), then ``"read"`` (the path it was read
#: from, when it has one).
Progress = Callable[[str, str], None]

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
class ConversationHandle:
    """One conversation of a corpus, decoded again on demand from its source.

    Every source's conversation pages through the same cursor core and assembles through the
    same assembly core.
    """

    source: str
    conversation_id: str
    _source: Source
    _key: Hashable
    _cached: Conversation | None = None

    def _conversation(self) -> Conversation:
        if self._cached is None:
            self._cached = self._source.reopen(self._key, Diagnostics(self.source))
        return self._cached

    @property
    def entries(self) -> list[Entry]:
        """The conversation's entries, oldest first."""
        conv = self._conversation()
        if not isinstance(conv.entries, list) or not conv.extra.get("_sorted"):
            conv.entries = list(sorted_entries(conv.entries))
            conv.extra["_sorted"] = True
        assert isinstance(conv.entries, list)
        return conv.entries

    def read_messages(self, cursor: str | None = None, limit: int = 100) -> Page:
        """A page of this conversation, newest first, exactly as murmur pages a record.

        Raises:
            ReadMessagesError: ``invalid-cursor`` for a cursor this conversation did not mint.
        """
        return entries_page(self.entries, cursor, limit)

    def assemble(self) -> Assembled:
        """The wire history litany would assemble from this conversation."""
        return assemble(self.entries)

    def transcript(self) -> list[Message]:
        """The unfiltered transcript (orphans kept)."""
        return transcript(self.entries)

    def tool_calls(self) -> list[ToolCall]:
        """Every call with its result, and every result with no call."""
        return pair_tools(self.entries)


class Corpus:
    """Everything loaded: tables as Arrow and pandas, and a handle per conversation.

    Attributes:
        tables: every table as ``pa.Table`` by name.
        price_data_version: the price data the cost columns were computed from
            (:func:`murmur_analysis.pricing.price_data_version`).
    """

    def __init__(
        self,
        tables: dict[str, pa.Table],
        handles: dict[tuple[str, str], ConversationHandle],
        price_data_version: str | None = None,
    ) -> None:
        self.tables = tables
        self.price_data_version = price_data_version
        self._handles = handles
        self._by_id: dict[str, list[ConversationHandle]] = {}
        for (_, cid), handle in handles.items():
            self._by_id.setdefault(cid, []).append(handle)
        self._frames: dict[str, pd.DataFrame] = {}

    def frame(self, name: str) -> pd.DataFrame:
        """The table ``name`` as a pandas frame with Arrow-backed dtypes (cached).

        Raises:
            UnknownTableError: no table has that name; the message lists the names.
        """
        if name not in self.tables:
            raise UnknownTableError(f"no table {name!r}; tables: {', '.join(self.tables)}")
        if name not in self._frames:
            self._frames[name] = to_pandas(self.tables[name])
        return self._frames[name]

    @property
    def messages(self) -> pd.DataFrame:
        """One row per message (entry), oldest first within a conversation."""
        return self.frame("messages")

    @property
    def tool_calls(self) -> pd.DataFrame:
        """One row per tool call, or per result with no call."""
        return self.frame("tool_calls")

    @property
    def usage(self) -> pd.DataFrame:
        """One row per model response that reported usage."""
        return self.frame("usage")

    @property
    def orphans(self) -> pd.DataFrame:
        """One row per orphan result, found by assembly or recorded by the runtime."""
        return self.frame("orphans")

    @property
    def growth(self) -> pd.DataFrame:
        """One row per commit, step, message or compaction: the conversation's size."""
        return self.frame("growth")

    @property
    def steps(self) -> pd.DataFrame:
        """One row per litany step record."""
        return self.frame("steps")

    @property
    def conversations(self) -> pd.DataFrame:
        """One row per conversation."""
        return self.frame("conversations")

    @property
    def diagnostics(self) -> pd.DataFrame:
        """One row per thing that could not be read."""
        return self.frame("diagnostics")

    def conversation(self, conversation_id: str, source: str | None = None) -> ConversationHandle:
        """The handle of one conversation.

        Args:
            conversation_id: its id (the ``conversation_id`` column).
            source: the source, needed only when two sources use the same id.

        Raises:
            UnknownConversationError: no such conversation, or the id is ambiguous.
        """
        matches = [h for h in self._by_id.get(conversation_id, ()) if source in (None, h.source)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UnknownConversationError(f"no conversation {conversation_id!r} in this corpus")
        raise UnknownConversationError(
            f"{conversation_id!r} names a conversation in several sources; pass source=",
            hint=", ".join(h.source for h in matches),
        )

    def conversation_ids(self) -> list[tuple[str, str]]:
        """Every ``(source, conversation_id)`` in load order."""
        return list(self._handles)

    def to_parquet(self, out: str | os.PathLike[str], **kwargs: Any) -> Any:
        """Write every table as a hive-partitioned Parquet dataset under ``out``."""
        from .export import write_parquet

        return write_parquet(self.tables, out, **kwargs)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v.num_rows}" for k, v in self.tables.items())
        return f"<Corpus {sizes}>"


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
def _cyclic_gc_paused() -> Iterator[None]:
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


def load(
    *paths: str | os.PathLike[str],
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | bool | None = None,
    prices: Prices | None = None,
) -> Corpus:
    """Load conversations from any number of paths into one corpus.

    Args:
        *paths: files or folders of any registered source (``~`` is expanded).
        source: force this source for every path instead of detecting.
        options: per-source options by source name, e.g.
            ``{"murmur": {"sessions": ["~/work"]}}``.
        progress: called as work advances (see :data:`Progress`); ``True`` shows a progress
            bar (in a notebook, the notebook's bar) on stderr.
        prices: user prices that override or extend genai-prices' table, as a mapping
            ``{model: {"input_mtok": 3, "output_mtok": 15, ...}}`` or a CSV path
            (:data:`murmur_analysis.pricing.Prices`).

    Returns:
        The corpus: every table, and a handle per conversation.

    Raises:
        NoSourceError: a path no source recognises.
        UnknownSourceError: ``source`` or a key of ``options`` names no registered source.
        SourceError: ``source`` was forced and found nothing in a path.
        PriceError: ``prices`` cannot be read.
        FileNotFoundError: a path that does not exist.

    Example:
        >>> corpus = load("data/samples/murmur")  # doctest: +SKIP
        >>> corpus.messages.groupby("role").size()  # doctest: +SKIP
    """
    options = checked_options(options)
    bar = None
    if progress is True:
        from .progress import ProgressBar

        progress = bar = ProgressBar(paths)
    try:
        with _cyclic_gc_paused():
            corpus = _load(paths, source, options, progress or None)
    finally:
        if bar is not None:
            bar.close()
    corpus.tables = price_tables(corpus.tables, prices)
    corpus.price_data_version = price_data_version(prices)
    return corpus


def checked_options(options: Mapping[str, Mapping[str, Any]] | None) -> Mapping[str, Mapping[str, Any]]:
    """``options`` (or ``{}``) once every key names a registered source.

    Raises:
        UnknownSourceError: a key names no registered source (a misspelling is never ignored).
    """
    unknown = sorted(set(options or {}) - set(registry()))
    if unknown:
        raise UnknownSourceError(f"options name no registered source: {', '.join(map(repr, unknown))}",
                                 hint=f"registered sources: {', '.join(registry())}")
    return options or {}


def _nothing_found(source: str, path: Path, options: Mapping[str, Mapping[str, Any]]) -> SourceError:
    try:
        looks = f"it looks like a {detect(path, options).name} source"
    except NoSourceError:
        looks = "no source recognises it"
    return SourceError(f"source={source!r} found no conversations in {path}: {looks}",
                       hint="drop source= to detect the source, or point at the right folder")


def _load(
    paths: tuple[str | os.PathLike[str], ...],
    source: str | None,
    options: Mapping[str, Mapping[str, Any]],
    progress: Progress | None,
) -> Corpus:
    builder = FrameBuilder()
    handles: dict[tuple[str, str], ConversationHandle] = {}
    extra: dict[str, list[pa.Table]] = {}
    for raw in paths:
        path = Path(os.path.expanduser(os.fspath(raw)))
        if not path.exists():
            raise FileNotFoundError(f"no such file or folder: {path}")
        for src, target in _targets(path, source, options):
            if progress:
                progress("source", f"{src.name}: {target}")
            diags = Diagnostics(src.name)
            found = 0
            for conv in src.open(target, diags):
                found += 1
                if progress:
                    label = f"{conv.source}: {conv.conversation_id}"
                    if conv.columns is not None:
                        conv.columns = _reporting_columns(conv.columns, label, progress)
                    elif not isinstance(conv.entries, list):
                        conv.entries = _reporting_entries(conv.entries, label, progress)
                builder.add(conv)
                handles[(conv.source, conv.conversation_id)] = ConversationHandle(
                    conv.source, conv.conversation_id, src, conv.key
                )
                if progress:
                    progress("conversation", f"{conv.source}: {conv.conversation_id}")
                    if conv.path:
                        progress("read", conv.path)
            if source is not None and not found and not diags.rows:
                raise _nothing_found(source, target, options)
            builder.add_diagnostics(diags.rows)
            for name, table in src.extra_tables().items():
                extra.setdefault(name, []).append(table)
    tables = builder.finish()
    for name, parts in extra.items():
        if name in tables:  # rows of a core table that belong to no conversation (a session's usage)
            parts = [tables[name], *parts]
        tables[name] = pa.concat_tables(parts, promote_options="default")
    return Corpus(tables, handles)
