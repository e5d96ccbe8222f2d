"""Loading: paths in, a :class:`Corpus` of tables out.

``load`` finds the sources of each path (or takes the one forced with ``source=``), decodes their
conversations one at a time and feeds them through the assembly core into the frame builder.
Every source that claims a path reads it, and a folder is searched one level down for the
sources that did not, so a folder holding several runtimes' data loads them all at once. A
conversation reached twice (two paths, a parent and its child, a link) loads once
(:class:`Discovery`).
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from .assembly import Assembled, ToolCall, assemble, pair_tools, transcript
from .cursor import Page, entries_page
from .diagnostics import Diagnostic
from .errors import NoSourceError, SourceError, UnknownConversationError, UnknownSourceError, UnknownTableError
from .frames import FrameBuilder, to_pandas
from .model import Entry, Message, sorted_entries
from .pricing import Prices, price_data_version, price_tables
from .sources import Diagnostics, claimants, detect, get_source, registry
from .sources.base import Conversation, EntryColumns, Source
from .sources.files import check_file, display, file_kind, identity, is_dir, listing, raw_name

__all__ = ["ConversationHandle", "Corpus", "Discovery", "PathArg", "Progress", "load", "printable"]

#: A path given to a loader: text, or bytes for a name that is not UTF-8 (kept losslessly).
PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]

#: A progress callback: ``(event, detail)`` with event ``"source"`` (a path and the source
#: that opened it), ``"entries"`` (a long conversation's entries read so far, every 65,536) or
#: ``"conversation"`` (a conversation id, once decoded), then ``"read"`` (the path it was read
#: from, when it has one).
Progress = Callable[[str, str], None]

_PROGRESS_EVERY = 65_536
#: The diagnostics kind of a conversation (or a path) met a second time in one load.
REACHED_TWICE = "reached_twice"


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
        matches = [h for h in self._by_id.get(display(conversation_id), ()) if source in (None, h.source)]
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


class _Targets:
    """Which source reads which path: one instance per source for the whole load."""

    def __init__(self, options: Mapping[str, Mapping[str, Any]]) -> None:
        self.options = options
        self._made: dict[str, Source] = {}

    def source(self, name: str) -> Source:
        if name not in self._made:
            self._made[name] = get_source(name, **self.options.get(name, {}))
        return self._made[name]

    def all(self) -> list[Source]:
        return [self.source(name) for name in registry()]

    def of(self, path: Path, forced: str | None, diags: Diagnostics) -> list[tuple[Source, Path]]:
        """Every ``(source, path)`` to open for one path given to :func:`load`.

        Each source that claims ``path`` reads it; a folder is also searched one level down
        for the sources that did not claim it, so sources side by side all load. A folder
        that cannot be listed is a diagnostics row.

        Raises:
            NoSourceError: nothing at or directly inside a readable ``path`` is recognised.
        """
        if forced is not None:
            return [(self.source(forced), path)]
        sources = self.all()
        found = [(src, path) for src in claimants(path, sources)]
        if is_dir(path):
            rest = [src for src in sources if all(src is not s for s, _ in found)]
            before = len(diags.rows)
            entries = listing(path, diags)
            if len(diags.rows) > before and not found:
                return []  # the folder could not be listed: reported, nothing to read
            for entry in entries:
                if not entry.name.startswith("."):
                    child = Path(entry.path)
                    found += [(src, child) for src in claimants(child, rest)]
        if not found:
            if is_dir(path):
                raise NoSourceError(f"no source recognises {path} or anything directly inside it",
                                    hint="pass source= to force one; ma.sources() lists them")
            raise NoSourceError(f"no source recognises {path}",
                                hint="pass source= to force one; ma.sources() lists them")
        return found


def _identity(conv: Conversation) -> Hashable | None:
    """What makes two conversations the same data: the file or folder read, and the part of it."""
    if conv.path is None:
        return None
    found = identity(conv.path)
    return None if found is None else (conv.source, *found, conv.part)


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
    *paths: PathArg,
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | bool | None = None,
    prices: Prices | None = None,
) -> Corpus:
    """Load conversations from any number of paths into one corpus.

    Args:
        *paths: files or folders of any registered source (``~`` is expanded); bytes are taken
            as the file system's own name (a name that is not UTF-8).
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
        NoSourceError: a readable path no source recognises (a folder that cannot be listed
            is a diagnostics row instead).
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


class Discovery:
    """What one load reads, found once for every loader (:func:`load`, ``load_dask``).

    It resolves each path to the sources that read it (:class:`_Targets`), opens each
    ``(source, path)`` once, and admits each conversation once however many paths or links
    lead to it; what it met is in :attr:`rows` (folders that could not be listed, data reached
    twice).

    Attributes:
        rows: diagnostics the discovery itself reported (source ``load``).
    """

    def __init__(self, source: str | None, options: Mapping[str, Mapping[str, Any]]) -> None:
        self._forced = source
        self._targets = _Targets(options)
        self._loader = Diagnostics("load")
        self.rows = self._loader.rows
        self._opened: dict[Hashable, str] = {}  # (source, identity of a path opened) -> the path
        self._seen: dict[Hashable, str] = {}  # identity of each conversation admitted -> where read
        self._taken: dict[tuple[str, str], Hashable] = {}  # (source, id) -> the identity holding it
        self._reported: set[Diagnostic] = set()

    def targets(self, paths: Iterable[PathArg]) -> Iterator[tuple[Source, Path]]:
        """Every ``(source, path)`` to open, each once.

        Raises:
            FileNotFoundError: a path that does not exist.
            NoSourceError: a readable path nothing recognises.
        """
        for raw in paths:
            path = Path(os.path.expanduser(os.fsdecode(raw)))  # bytes: a name that is not UTF-8
            if not os.path.lexists(path):
                raise FileNotFoundError(f"no such file or folder: {path}")
            if self._forced is None and file_kind(path) in ("link loop", "dangling link"):
                check_file(path, self._loader)  # reported: a link that leads nowhere
                continue
            for src, target in self._targets.of(path, self._forced, self._loader):
                where = identity(target)
                key = None if where is None else (src.name, *where)
                if key is not None and key in self._opened:
                    self._loader.report(target, REACHED_TWICE,
                                        f"{src.name} already read this as {self._opened[key]}; read once")
                    continue
                if key is not None:
                    self._opened[key] = os.fspath(target)
                yield src, target

    def fresh(self, rows: Iterable[Diagnostic]) -> list[Diagnostic]:
        """``rows`` less those already reported in this load (a file read again through another path)."""
        out = []
        for row in rows:
            if row not in self._reported:
                self._reported.add(row)
                out.append(row)
        return out

    def admit(self, conv: Conversation, diags: Diagnostics) -> bool:
        """Whether to load ``conv``: not if it was reached before (then reported and marked skipped).

        An admitted conversation gets an id no other of its source holds in this load.
        """
        ident = _identity(conv)
        if ident is not None and ident in self._seen:
            conv.skipped = True
            diags.report(conv.path or "", REACHED_TWICE,
                         f"conversation {conv.conversation_id} was reached twice (first as {self._seen[ident]}); "
                         "loaded once")
            return False
        if ident is not None:
            self._seen[ident] = conv.path or ""
        _unique_id(conv, ident, self._taken, diags)
        return True


def _load(
    paths: tuple[PathArg, ...],
    source: str | None,
    options: Mapping[str, Mapping[str, Any]],
    progress: Progress | None,
) -> Corpus:
    builder = FrameBuilder()
    handles: dict[tuple[str, str], ConversationHandle] = {}
    extra: dict[str, list[pa.Table]] = {}
    discovery = Discovery(source, options)
    for src, target in discovery.targets(paths):
        if progress:
            progress("source", f"{src.name}: {target}")
        diags = Diagnostics(src.name)
        found = 0
        for conv in src.open(target, diags):
            if not discovery.admit(conv, diags):
                continue
            if progress:
                label = f"{conv.source}: {conv.conversation_id}"
                if conv.columns is not None:
                    conv.columns = _reporting_columns(conv.columns, label, progress)
                elif not isinstance(conv.entries, list):
                    conv.entries = _reporting_entries(conv.entries, label, progress)
            found += 1
            key = (conv.source, conv.conversation_id)
            handles[(conv.source, display(conv.conversation_id))] = ConversationHandle(
                conv.source, conv.conversation_id, src, conv.key
            )
            builder.add(printable(conv))
            if progress:
                progress("conversation", f"{key[0]}: {key[1]}")
                if conv.path:
                    progress("read", conv.path)
        if source is not None and not found and not diags.rows:
            raise _nothing_found(source, target, options)
        builder.add_diagnostics(discovery.fresh(diags.rows))
        for name, table in src.extra_tables().items():
            extra.setdefault(name, []).append(table)
    builder.add_diagnostics(discovery.fresh(discovery.rows))
    tables = builder.finish()
    for name, parts in extra.items():
        if name in tables:  # rows of a core table that belong to no conversation (a session's usage)
            parts = [tables[name], *parts]
        tables[name] = pa.concat_tables(parts, promote_options="default")
    return Corpus(tables, handles)


def _unique_id(
    conv: Conversation, ident: Hashable | None, taken: dict[tuple[str, str], Hashable], diags: Diagnostics
) -> None:
    """Give ``conv`` an id no other conversation of its source holds in this corpus.

    Two different files may carry the same id (two homes with a record of the same name, two
    session files of one name): both load, the later one's id qualified with ``#2``, ``#3``, ...
    """
    key = (conv.source, conv.conversation_id)
    if key not in taken:
        taken[key] = ident
        return
    n = 2
    while (conv.source, f"{conv.conversation_id}#{n}") in taken:
        n += 1
    new = f"{conv.conversation_id}#{n}"
    diags.report(conv.path or "", "duplicate_id",
                 f"conversation id {conv.conversation_id} is already held by another file; this one loads as {new}")
    conv.conversation_id = new
    taken[(conv.source, new)] = ident


def printable(conv: Conversation) -> Conversation:
    r"""``conv`` with names Arrow can hold: undecodable bytes of file names shown as ``\xNN``.

    The exact bytes go to ``conversations.conversation_id_bytes`` and ``conversations.path_bytes``.
    """
    raw_id, raw_path = raw_name(conv.conversation_id), raw_name(conv.path)
    if raw_id is None and raw_path is None and all(raw_name(st.agent_id) is None for st in conv.steps):
        return conv
    conv.extra["conversation_id_bytes"], conv.extra["path_bytes"] = raw_id, raw_path
    conv.conversation_id = display(conv.conversation_id)
    conv.path = display(conv.path) if conv.path is not None else None
    conv.steps = [replace(st, agent_id=display(st.agent_id)) for st in conv.steps]
    return conv
