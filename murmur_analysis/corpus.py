"""Loading: paths in, a :class:`Corpus` of tables out.

``load`` runs the one load plan (:mod:`murmur_analysis.loading.plan`): it finds the sources of
each path (or takes the one forced with ``source=``), decodes their conversations one at a time
and feeds them through the assembly core into the frame builder, then prices the usage.
Every source that claims a path reads it, and a folder is searched one level down for the
sources that did not, so a folder holding several runtimes' data loads them all at once. A
conversation reached twice (two paths, a parent and its child, a link) loads once
(:class:`~murmur_analysis.loading.discovery.Discovery`).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .algorithms.assembly import Assembled, assemble, transcript
from .algorithms.cursor import Page, entries_page
from .algorithms.pairing import ToolCall, pair_tools
from .core.files import display
from .core.model import Entry, Message, sorted_entries
from .core.pricing import Prices, price_data_version, price_tables
from .errors import QueryError, UnknownConversationError, UnknownTableError
from .loading.discovery import PathArg
from .loading.plan import LoadPlan, Progress, cyclic_gc_paused, merge_extra
from .sources import Diagnostics
from .sources.base import Source
from .tables.frames import to_pandas

if TYPE_CHECKING:
    import pandas as pd  # a frame is built on demand (to_pandas imports pandas then)

__all__ = ["ConversationHandle", "Corpus", "Progress", "load", "read_parquet"]

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
    _entries: list[Entry] | None = None

    @property
    def entries(self) -> list[Entry]:
        """The conversation's entries, oldest first (decoded again once, then kept)."""
        if self._entries is None:
            self._entries = self.read_entries()
        return self._entries

    def read_entries(self) -> list[Entry]:
        """The conversation's entries, oldest first: the ones kept, else decoded again and not kept.

        What a pass over many conversations reads (the explorer's search), so that it holds
        none of them once it has moved on.
        """
        if self._entries is not None:
            return self._entries
        return list(sorted_entries(self._source.reopen(self._key, Diagnostics(self.source)).entries))

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
            (:func:`murmur_analysis.core.pricing.price_data_version`).
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

    def conversation(self, conversation_id: str | tuple[str, str], source: str | None = None) -> ConversationHandle:
        """The handle of one conversation.

        Args:
            conversation_id: its id (the ``conversation_id`` column), or a ``(source,
                conversation_id)`` pair as :meth:`conversation_ids` lists them.
            source: the source, needed only when two sources use the same id.

        Raises:
            UnknownConversationError: no such conversation, or the id is ambiguous.
            TypeError: ``conversation_id`` is neither a string nor a ``(source, id)`` pair of strings.
        """
        if isinstance(conversation_id, tuple):
            if len(conversation_id) != 2 or not all(isinstance(v, str) for v in conversation_id):
                raise TypeError(f"a conversation is named by its id or a (source, conversation_id) pair of strings, "
                                f"not {conversation_id!r}")
            if source is not None and source != conversation_id[0]:
                raise UnknownConversationError(f"{conversation_id!r} is a {conversation_id[0]} conversation, "
                                               f"not one of source={source!r}")
            source, conversation_id = conversation_id
        if not isinstance(conversation_id, str):
            raise TypeError(f"a conversation is named by its id (a string) or a (source, conversation_id) pair, "
                            f"not {type(conversation_id).__name__}")
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

    def sql(self, query: str) -> pd.DataFrame:
        """Run a DuckDB SQL query over the corpus's tables; the result as a frame with Arrow-backed dtypes.

        Every table of :attr:`tables` is a view of its name (``messages``, ``tool_calls``,
        ``usage``, ``conversations``, ...), read in place by DuckDB: nothing is copied. It works
        alike on a corpus loaded from sources and on an export read back
        (:func:`~murmur_analysis.read_parquet`). Times are UTC (the session's ``TimeZone``), and
        the result's types are DuckDB's: ``sum`` of an ``int64`` column is a ``HUGEINT``
        (``decimal128(38, 0)``), ``count`` an ``int64``, a difference of times an ``INTERVAL``
        (``date_diff('ms', called_at, result_at)`` gives milliseconds). A name repeated in the
        result is made ``name_1``, ``name_2``, ... as DuckDB's own frames name them.
        :meth:`sql_arrow` gives the result as a ``pa.Table``.

        Args:
            query: the SQL (DuckDB's dialect); several statements run in turn, the last one's
                result is returned.

        Returns:
            The result; a statement with no result (``create``, ``set``) gives an empty frame.

        Raises:
            QueryError: DuckDB refused the query (its message; the hint names the tables).

        Example:
            >>> corpus.sql("select source, count(*) as calls from tool_calls group by source")  # doctest: +SKIP
            >>> corpus.sql("select tool_name, median(date_diff('ms', called_at, result_at)) as p50_ms "
            ...            "from tool_calls group by tool_name")  # doctest: +SKIP
        """
        return to_pandas(self.sql_arrow(query))

    def sql_arrow(self, query: str) -> pa.Table:
        """Like :meth:`sql`, the result as a ``pa.Table`` (DuckDB's types, times in UTC).

        Raises:
            QueryError: DuckDB refused the query.
        """
        import duckdb  # not needed to load a corpus: imported on first use

        with duckdb.connect() as con:
            con.execute("SET TimeZone = 'UTC'")  # timestamps come back as timestamp[us, UTC], days cut in UTC
            con.execute("SET python_enable_replacements = false")  # names are the tables', never Python variables
            for name, table in self.tables.items():
                con.register(name, table)
            try:
                relation = con.sql(query)
                result = None if relation is None else relation.to_arrow_table()
            except duckdb.InterruptException:
                raise KeyboardInterrupt from None
            except duckdb.Error as err:
                message, _, excerpt = str(err).partition("\nLINE ")
                raise QueryError(" ".join(line.strip() for line in message.splitlines() if line.strip()),
                                 hint=f"the tables: {', '.join(self.tables)}",
                                 excerpt="LINE " + excerpt if excerpt else None) from err
        return pa.table({}) if result is None else _unique_names(result)

    def to_parquet(self, out: str | os.PathLike[str], **kwargs: Any) -> Any:
        """Write every table as a hive-partitioned Parquet dataset under ``out``, replacing what it held whole.

        The same layout as :func:`murmur_analysis.export.export` (which writes as it loads and
        reads only what changed since its last export); see
        :func:`murmur_analysis.export.write_parquet` for ``kwargs``.
        """
        from .export import write_parquet

        kwargs.setdefault("price_data_version", self.price_data_version)
        return write_parquet(self.tables, out, **kwargs)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}={v.num_rows}" for k, v in self.tables.items())
        return f"<Corpus {sizes}>"


def _unique_names(table: pa.Table) -> pa.Table:
    """``table`` with a repeated column name made ``name_1``, ``name_2``, ... (as DuckDB's own frames name them)."""
    names: list[str] = []
    for name in table.column_names:
        unique, n = name, 0
        while unique in names:
            n += 1
            unique = f"{name}_{n}"
        names.append(unique)
    return table if names == table.column_names else table.rename_columns(names)


def load(
    *paths: PathArg,
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | bool | None = None,
    prices: Prices | None = None,
    text: bool = True,
) -> Corpus:
    """Load conversations from any number of paths into one corpus.

    Args:
        *paths: files or folders of any registered source (``~`` is expanded; bytes for a
            name that is not UTF-8). With none, every default home found on this machine
            (``~/.claude``, ``~/.codex``, or what ``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME``
            name; only ``source``'s when given), as ccusage reads with no argument.
        source: read only this source's data: what it recognises at or directly inside each
            path (its part of a folder of several runtimes), and a path where it recognises
            nothing as its own (forced).
        options: per-source options by source name, e.g.
            ``{"murmur": {"sessions": ["~/work"]}}``.
        progress: ``True`` for a progress bar (on stderr, or in a notebook), or a callback
            called as work advances (see :data:`Progress`).
        prices: the user's own prices, a mapping or a CSV path, over genai-prices' table
            (:mod:`murmur_analysis.core.pricing`).
        text: fill the text columns (``messages.text`` and ``reasoning_text``,
            ``tool_calls.input`` and ``result_text``, ``growth.summary``); ``False`` leaves them
            null, with the same schema, for a lean load.

    Returns:
        The corpus: every table, and a handle per conversation.

    Raises:
        NoSourceError: a readable path no source recognises (a folder that cannot be listed
            is a diagnostics row instead), or no path was given and no default home exists.
        UnknownSourceError: ``source`` or a key of ``options`` names no registered source.
        SourceError: ``source`` was forced and found nothing in a path.
        PriceError: ``prices`` cannot be read.
        FileNotFoundError: a path that does not exist.

    Example:
        >>> corpus = load("data/samples/murmur")  # doctest: +SKIP
        >>> corpus.messages.groupby("role").size()  # doctest: +SKIP
    """
    if not paths:
        from .sources import default_paths

        paths = tuple(default_paths(source))
    bar = None
    if progress is True:
        from .loading.progress import ProgressBar

        progress = bar = ProgressBar(paths, source=source, options=options)
    try:
        with cyclic_gc_paused():  # the price data's objects too: genai-prices builds thousands of them
            corpus = _load(paths, source, options, progress or None, text)
            corpus.tables = price_tables(corpus.tables, prices)
    finally:
        if bar is not None:
            bar.close()
    corpus.price_data_version = price_data_version(prices)
    return corpus


def _load(
    paths: tuple[PathArg, ...],
    source: str | None,
    options: Mapping[str, Mapping[str, Any]] | None,
    progress: Progress | None,
    text: bool = True,
) -> Corpus:
    plan = LoadPlan(paths, source, options, progress, text)
    handles: dict[tuple[str, str], ConversationHandle] = {}
    extra: dict[str, pa.Table] = {}
    for event in plan.events():
        conv = event.conversation
        if conv is not None and event.conversation_id is not None:
            if event.kind == "conversation" and not event.rows.get("conversations"):
                continue  # handed over unread, then found unreadable: no rows, no handle
            handles[(conv.source, display(event.conversation_id))] = ConversationHandle(
                conv.source, event.conversation_id, event.source, conv.key
            )
            continue
        plan.builder.add_diagnostics(event.all_diagnostics)
        merge_extra(extra, event.extra_tables)
    plan.builder.add_diagnostics(plan.discovery_rows())
    tables = plan.builder.finish()
    merge_extra(tables, extra)
    return Corpus(tables, handles)


def read_parquet(out: str | os.PathLike[str]) -> Corpus:
    """Read an export back into a :class:`Corpus` with the declared types.

    The export's current generation is resolved once, so an export switched in meanwhile is
    not mixed in; if that export removed the generation being read, the read starts over on
    the new one. The corpus has every table but no conversation handles (the sources are not read).

    Raises:
        ExportError: ``out`` holds no export of this package, an export of another schema
            version, or a damaged one (the message names the file, the hint what to do).
    """
    from .export.reader import read_tables

    return Corpus(read_tables(out), {})
