"""The same loaders on Dask: conversations batched into tasks, one Dask DataFrame per table.

Sources are opened in the client, which lists the conversations (for murmur, a listing and the
session traces; the records themselves are not read there), through the same discovery as
``ma.load``. The conversations are then cut into tasks of ``conversations_per_task`` each (a
home of 100,000 small records is not 100,000 tasks); each task decodes its conversations and
turns them into rows with the very frame builder ``ma.load`` uses, so a table's partitions are
exactly what ``ma.load`` would build for those conversations. It runs on any Dask scheduler,
a ``distributed`` cluster of worker processes included.

Requires the ``dask`` extra (``pip install murmur-analysis[dask]``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any

import pandas as pd
import pyarrow as pa

from ..core.handoff import TableRows
from ..core.pricing import Prices, price_tables
from ..sources.base import Diagnostics, ReadContext, Source
from ..tables.frames import FrameBuilder, to_pandas
from ..tables.schema import TABLES, schema
from .discovery import Discovery, PathArg, checked_options, printable

__all__ = ["load_dask"]


def _tables(jobs: list[tuple[Source, Hashable, str]], prices: Prices | None, text: bool) -> dict[str, pa.Table]:
    """Decode some conversations, build their rows under the ids the listing gave them, price them (a task)."""
    builder = FrameBuilder(text=text)
    for source, key, conversation_id in jobs:
        diagnostics = Diagnostics(source.name)
        conv = replace(source.reopen(key, diagnostics), conversation_id=conversation_id)
        builder.add(printable(conv))
        builder.add_diagnostics(diagnostics.rows)
    return price_tables(builder.finish(), prices)


def _frame(tables: dict[str, pa.Table], name: str) -> pd.DataFrame:
    return to_pandas(tables[name])


def load_dask(
    *paths: PathArg,
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    prices: Prices | None = None,
    conversations_per_task: int = 64,
    text: bool = True,
) -> dict[str, Any]:
    """Every table as a Dask DataFrame, one partition per task of ``conversations_per_task`` conversations.

    Args:
        *paths: files or folders of any registered source (as for ``ma.load``).
        source: read only this source's data (as for ``ma.load``).
        options: per-source options by source name (as for ``ma.load``).
        prices: user prices (as for ``ma.load``).
        conversations_per_task: how many conversations one task decodes (at least 1).
        text: fill the text columns (as for ``ma.load``).

    Returns:
        ``{table name: dask.dataframe.DataFrame}`` for every table of ``docs/tables.md``;
        ``diagnostics`` also holds what the client met while listing. A litany workspace is
        walked once to list its branches and again, per branch, by the tasks.

    Raises:
        NoSourceError: a path no source recognises.
        UnknownSourceError: a key of ``options`` names no registered source.
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
    options = checked_options(options)
    jobs: list[tuple[Source, Hashable, str]] = []
    listing = FrameBuilder()
    discovery = Discovery(source, options)
    for src, target in discovery.targets(paths):
        diagnostics = Diagnostics(src.name)
        # lazy: the conversation is decoded by its task
        for conv in src.open(target, diagnostics, ReadContext(text=text)):
            if isinstance(conv, TableRows):  # rows no conversation holds: read by the listing
                if discovery.admit_rows(src.name, conv):
                    listing.add_rows(conv, src.name)
            elif (admitted := discovery.admit(conv, diagnostics)) is not None:
                jobs.append((src, admitted.key, admitted.conversation_id))
        listing.add_diagnostics(discovery.fresh(diagnostics.rows))
    listing.add_diagnostics(discovery.fresh(discovery.rows))
    listed = listing.finish()
    batches = [jobs[i:i + conversations_per_task] for i in range(0, len(jobs), conversations_per_task)]
    tasks = [delayed(_tables)(batch, prices, text) for batch in batches]
    frames: dict[str, Any] = {}
    for name in TABLES:
        meta = to_pandas(schema(name).empty_table())
        parts = [delayed(_frame)(t, name) for t in tasks]
        if name == "diagnostics" or listed[name].num_rows:
            parts.append(delayed(to_pandas)(listed[name]))
        if parts:
            frames[name] = dd.from_delayed(parts, meta=meta, verify_meta=False)
        else:
            frames[name] = dd.from_pandas(meta, npartitions=1)  # type: ignore[no-untyped-call]
    # A fact the listing met can be met again when a task decodes its conversation, and each
    # task names the unpriced models it met.
    frames["diagnostics"] = frames["diagnostics"].drop_duplicates()
    return frames
