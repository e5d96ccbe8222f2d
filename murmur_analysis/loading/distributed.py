"""The same load plan on Dask: the plan says what to read, the tasks decode it, a Dask DataFrame per table.

The client runs ``ma.load``'s own load plan (:class:`~murmur_analysis.loading.plan.LoadPlan`) with
every conversation handed over unread, as the progress bar counts a load: the plan decides which
sources read which paths, which conversations load (each once, however it is reached) and under
which ids, and it reads what belongs to no conversation (rows of a source's own tables, such as
dispatch's ``memory``, and what discovery met). For murmur that is a listing and the session
traces; the records themselves are not read there. The plan's conversations of each path are then
cut into tasks of ``conversations_per_task`` each, in the plan's order (a home of 100,000 small
records is not 100,000 tasks); a task decodes its conversations again from their keys
(``Source.reopen``, as a corpus's conversation handles do) and turns them into rows with the very
frame builder ``ma.load`` uses. A table's partitions are the tasks' in the plan's order, then the
rows no conversation holds, so each table, computed, is ``ma.load``'s row for row and in the same
order; ``diagnostics`` is put together by one last task, in the order ``ma.load`` reports.
It runs on any Dask scheduler, a ``distributed`` cluster of worker processes included.

Requires the ``dask`` extra (``pip install murmur-analysis[dask]``).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import pyarrow as pa

from ..core.diagnostics import Diagnostic
from ..core.handoff import Conversation
from ..core.pricing import Pricer, Prices, price_tables
from ..errors import SourceError
from ..sources.base import Diagnostics, Source
from ..tables.columns import TableBuilder
from ..tables.frames import FrameBuilder, to_pandas
from ..tables.schema import TABLES, schema
from .discovery import PathArg, printable
from .plan import LoadPlan, merge_extra

__all__ = ["load_dask"]


@dataclass(frozen=True)
class _Reported:
    """What the plan reported of one path, and how many tasks decode its conversations.

    Attributes:
        rows: every diagnostics row of the path the plan reported, in order (``all_diagnostics``).
        reported_at: when each of ``rows`` was reported (``LoadEvent.reported_at``).
        read_when_found: for each conversation, whether its source, told it need not, would have
            read it while finding it (it asked ``ReadContext.skip``): its rows then come before its
            admission's, as they do when it is read where it is found.
        tasks: how many tasks decode the path's conversations (the next ones, in order).
    """

    rows: list[Diagnostic]
    reported_at: list[int]
    read_when_found: list[bool]
    tasks: int


@dataclass(frozen=True)
class _Path:
    """What the plan found in one path.

    Attributes:
        source: the source that read the path, as its ``open`` left it (murmur: this home's traces).
        conversations: each conversation's key and its id as it loads (lossless), in the plan's order.
        reported: what the plan reported of the path (its ``tasks`` still 0).
    """

    source: Source
    conversations: list[tuple[Hashable, str]]
    reported: _Reported

    def batches(self, size: int) -> list[list[tuple[Hashable, str]]]:
        """The conversations cut into tasks of ``size`` each, in order."""
        return [self.conversations[i:i + size] for i in range(0, len(self.conversations), size)]


@dataclass(frozen=True)
class _Decoded:
    """What a task made of its conversations.

    Attributes:
        tables: every table the frame builder built, costs filled; ``diagnostics`` holds the
            builder's own rows only (a response's bad counters).
        reported: what each conversation's decoding reported, in the task's order.
    """

    tables: dict[str, pa.Table]
    reported: list[list[Diagnostic]]


def _never(_source: Source, _conv: Conversation) -> bool:
    return False


def _listing(plan: LoadPlan) -> tuple[list[_Path], dict[str, pa.Table]]:
    """Every path the plan reads with its conversations, and the rows no conversation holds, by table."""
    paths: list[_Path] = []
    extra: dict[str, pa.Table] = {}
    found: list[tuple[Hashable, str]] = []
    asked: set[Hashable] = set()  # keys of the conversations a source asked whether it may skip

    def skip(_source: Source, conv: Conversation) -> bool:
        asked.add(conv.key)
        return True

    for event in plan.events(keep=_never, skip=skip):
        if event.kind == "skipped":
            assert event.conversation is not None and event.conversation_id is not None
            found.append((event.conversation.key, event.conversation_id))
            continue
        reported = _Reported(event.all_diagnostics, event.reported_at, [key in asked for key, _ in found], 0)
        # A source keeps what its open read for its reopen; the next path's open replaces it.
        paths.append(_Path(copy.copy(event.source), found, reported))
        merge_extra(extra, event.extra_tables)
        found = []
        asked.clear()
    return paths, extra


def _decode(
    source: Source, conversations: Sequence[tuple[Hashable, str]], text: bool, pricer: Pricer, names: Sequence[str]
) -> _Decoded:
    """Decode some conversations of one path, their rows under the ids the plan gave them (a task).

    Raises:
        SourceError: the source gave rows of a table of its own that it did not name while listing.
    """
    builder = FrameBuilder(text=text)
    reported = []
    for key, conversation_id in conversations:
        diagnostics = Diagnostics(source.name)
        conv = replace(source.reopen(key, diagnostics), conversation_id=conversation_id)
        builder.add(printable(conv))
        reported.append(diagnostics.rows)
    tables = builder.finish()
    unnamed = sorted(set(tables) - set(names))
    if unnamed:
        raise SourceError(
            f"the {source.name} source gave rows of {', '.join(map(repr, unnamed))}, a table of its own it did not "
            "name while listing, so load_dask has no frame for it (ma.load has)",
            hint="a source names a table of its own by yielding TableRows(table, (), path) beside its conversations")
    return _Decoded(price_tables(tables, pricer, diagnose=False), reported)


def _frame(decoded: _Decoded, name: str) -> pd.DataFrame:
    table = decoded.tables.get(name)
    return to_pandas(table if table is not None else schema(name).empty_table())


def _in_report_order(path: _Reported, decoded: Iterable[list[Diagnostic]]) -> Iterator[Diagnostic]:
    """The path's rows as ``ma.load`` reports them: each conversation's own where it would have been read."""
    listed = list(zip(path.reported_at, path.rows, strict=True))
    i = 0
    for n, (own, when_found) in enumerate(zip(decoded, path.read_when_found, strict=True), start=1):
        # Before the n-th conversation's admission (2n - 1) when it is read while found, else after.
        while i < len(listed) and listed[i][0] < (2 * n - 1 if when_found else 2 * n):
            yield listed[i][1]
            i += 1
        yield from own
    yield from (row for _, row in listed[i:])


def _rows_table(rows: Iterable[Diagnostic]) -> pa.Table:
    builder = TableBuilder("diagnostics")
    for row in rows:
        builder.add(row)
    return builder.finish()


def _diagnostics(
    paths: list[_Reported], discovered: list[Diagnostic], listed_usage: pa.Table, pricer: Pricer, *decoded: _Decoded
) -> pd.DataFrame:
    """Every diagnostics row, in ``ma.load``'s order (the last task).

    Path by path: the frame builder's own rows of its conversations, then what was reported of
    the path, each conversation's rows where it would have been read (a row reported before in
    the load left out); then what discovery met; then one row per unpriced model.
    """
    seen: set[Diagnostic] = set()

    def fresh(rows: Iterable[Diagnostic]) -> Iterator[Diagnostic]:
        for row in rows:
            if row not in seen:
                seen.add(row)
                yield row

    parts: list[pa.Table] = []
    done = iter(decoded)
    for path in paths:
        mine = [next(done) for _ in range(path.tasks)]
        parts += [d.tables["diagnostics"] for d in mine]
        parts.append(_rows_table(fresh(_in_report_order(path, (own for d in mine for own in d.reported)))))
    parts.append(_rows_table(fresh(discovered)))
    models = [t.select(["model", "provider"]) for t in (listed_usage, *(d.tables["usage"] for d in decoded))]
    parts.append(_rows_table(pricer.diagnose(pa.concat_tables(models))))
    return to_pandas(pa.concat_tables(parts))


def load_dask(
    *paths: PathArg,
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    prices: Prices | None = None,
    conversations_per_task: int = 64,
    text: bool = True,
) -> dict[str, Any]:
    """Every table ``ma.load`` gives, as a Dask DataFrame: the load plan's conversations decoded by tasks.

    The load plan runs here, every conversation handed over unread (see the module doc); the
    conversations of each path are decoded by tasks of ``conversations_per_task`` each. The
    tables share their tasks: compute them together (``dask.compute(*frames.values())``) to
    decode each conversation once.

    Args:
        *paths: files or folders of any registered source (as for ``ma.load``).
        source: read only this source's data (as for ``ma.load``).
        options: per-source options by source name (as for ``ma.load``).
        prices: user prices (as for ``ma.load``).
        conversations_per_task: how many conversations one task decodes (at least 1); a task
            holds conversations of one path.
        text: fill the text columns (as for ``ma.load``).

    Returns:
        ``{table name: dask.dataframe.DataFrame}`` for every table ``ma.load`` gives for the
        same arguments, with its schema: the tables of ``docs/tables.md``, and each table of a
        source's own that its source names while listing (dispatch's ``dispatch_sessions`` and
        ``memory``). Computed, each is ``ma.load``'s table row for row, in the same order: one
        partition per task, in the plan's order, then one of the rows no conversation holds;
        ``diagnostics`` is one partition. A litany workspace is walked once to list its
        branches and again, per branch, by the tasks.

    Raises:
        NoSourceError: a path no source recognises.
        UnknownSourceError: ``source`` or a key of ``options`` names no registered source.
        SourceError: ``source`` was forced and found nothing in a path; when computed, a source
            gave rows of a table of its own that it did not name while listing.
        PriceError: ``prices`` cannot be read.
        ValueError: ``conversations_per_task`` is below 1.
        FileNotFoundError: a path that does not exist.

    Example:
        >>> frames = load_dask("~/.murmur")  # doctest: +SKIP
        >>> frames["tool_calls"].groupby("tool_name").status.value_counts().compute()  # doctest: +SKIP
    """
    import dask.dataframe as dd
    from dask.delayed import delayed

    if conversations_per_task < 1:
        raise ValueError(f"conversations_per_task must be at least 1, not {conversations_per_task}")
    pricer = Pricer(prices)
    plan = LoadPlan(paths, source, options, text=text)
    found, extra = _listing(plan)
    discovered = plan.discovery_rows()
    listed = FrameBuilder(text=text).finish()
    merge_extra(listed, extra)
    listed = price_tables(listed, pricer, diagnose=False)
    names = [*TABLES, *(name for name in listed if name not in TABLES)]
    # Each source and the prices go to a worker once, not once per task.
    shipped = delayed(pricer, name=f"prices-{uuid.uuid4().hex}")
    tasks: list[Any] = []
    reported: list[_Reported] = []
    for path in found:
        src = delayed(path.source, name=f"source-{uuid.uuid4().hex}")
        batches = path.batches(conversations_per_task)
        tasks += [delayed(_decode)(src, batch, text, shipped, names) for batch in batches]
        reported.append(replace(path.reported, tasks=len(batches)))
    frames: dict[str, Any] = {}
    for name in names:
        meta = to_pandas(schema(name).empty_table())
        if name == "diagnostics":
            parts = [delayed(_diagnostics)(reported, discovered, listed["usage"], shipped, *tasks)]
        else:
            parts = [delayed(_frame)(t, name) for t in tasks]
            if listed[name].num_rows:
                parts.append(delayed(to_pandas)(listed[name]))
        if parts:
            frames[name] = dd.from_delayed(parts, meta=meta, verify_meta=False)
        else:
            frames[name] = dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
    return frames
