"""Parquet export: every table as a hive-partitioned dataset, switched in whole, kept up to date.

Each table is ``<out>/<table>/source=<source>/part-<batch>.parquet`` (a table with no
``source`` column: ``<out>/<table>/part-<batch>.parquet``), zstd level 1. DuckDB, Dask, Spark
and pyarrow read each table folder as it is; :func:`murmur_analysis.read_parquet` reads the folder back into a
corpus with the declared types.

- **Atomic**: an export is written whole into a staging folder and switched in with one
  rename (see :mod:`murmur_analysis.export.layout`); a killed export leaves the previous one
  whole. ``<out>/_manifest.json`` names every file of the current export.
- **Exact**: the switched-in export holds only what this run read; nothing of an earlier one
  is left beside it.
- **Incremental**: the export records what it read (``state.json``, see
  :mod:`murmur_analysis.export.state`); the next export into the same folder reads again only
  the conversations whose input changed, replaces their rows, and keeps every other file; of
  a file that grew, only the appended bytes, where its source can read on from a point
  (:class:`~murmur_analysis.sources.resume.Resumable`; :mod:`murmur_analysis.export.incremental`).
- **Streaming**: rows are written a batch of conversations at a time, as they are decoded; a
  long file of such a source a range of bytes at a time (:mod:`murmur_analysis.export.ranges`).

Every file carries ``murmur_analysis`` key-value metadata: the table, the schema version and
the price data version (``null`` while no prices are applied).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.pricing import Pricer, Prices
from ..loading.plan import LoadPlan, Progress, cyclic_gc_paused
from ..tables.schema import SCHEMA_VERSION
from .incremental import ExportRun
from .integrity import drop_damaged, note_stamps
from .layout import Output
from .state import ExportState
from .writer import BatchWriter, package_version

__all__ = ["ExportResult", "export", "write_parquet"]

#: Bytes of input the sources may decode ahead of the batch being written (memory stays flat
#: as the number of conversations grows).
READ_AHEAD = 16 << 20
#: A record longer than this is written a range of about this many bytes at a time.
RANGE_BYTES = 4 << 20


@dataclass
class ExportResult:
    """What an export wrote.

    Attributes:
        out: the output folder.
        generation: the export's generation number.
        rows: rows of each table in the export.
        conversations_read: conversations decoded by this run.
        conversations_kept: conversations whose rows were kept from the previous export.
        conversations_appended: conversations whose records grew and of which only the appended
            lines were read (their earlier rows kept).
        files_written: Parquet files this run wrote.
        files_kept: Parquet files carried over from the previous export unchanged.
        damaged: files of the previous export that were not as it wrote them, each with what
            was wrong; their conversations were read again from the input.
    """

    out: Path
    generation: int
    rows: dict[str, int] = field(default_factory=dict)
    conversations_read: int = 0
    conversations_kept: int = 0
    conversations_appended: int = 0
    files_written: int = 0
    files_kept: int = 0
    damaged: list[tuple[str, str]] = field(default_factory=list)

    def paths(self) -> dict[str, Path]:
        """The dataset folder of each table."""
        return {name: self.out / name for name in self.rows}


def export(
    *paths: str | os.PathLike[str],
    out: str | os.PathLike[str],
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    incremental: bool = True,
    prices: Prices | None = None,
    batch_conversations: int = 64,
    batch_rows: int = 8_192,
    compression: str = "zstd",
    compression_level: int | None = 1,
    text: bool = True,
) -> ExportResult:
    """Load ``paths`` and export every table under ``out``, a batch of conversations at a time.

    Args:
        *paths: files or folders of any registered source.
        out: the output folder (created): a new or empty folder, or one an earlier export
            wrote. Only ``out/.export``, ``out/_manifest.json`` and the tables' links are
            written; nothing outside ``out``, and nothing the export did not write is deleted
            (see :mod:`murmur_analysis.export.layout`).
        source: force this source for every path instead of detecting.
        options: per-source options by source name.
        progress: called as work advances (see :data:`~murmur_analysis.loading.plan.Progress`).
        incremental: keep the rows of conversations whose input is unchanged since the
            previous export into ``out``; ``False`` reads everything again.
        prices: the user's own prices over genai-prices' table, as for
            :func:`~murmur_analysis.load`; the price data's version is stamped in every file and
            the manifest, and a change of it reads everything again.
        batch_conversations: the most conversations per file.
        batch_rows: message rows after which a batch is written. Smaller batches make more
            files; a changed conversation rewrites the files of its batch only.
        compression: Parquet codec.
        compression_level: codec level.
        text: fill the text columns; ``False`` leaves them null (a change of it reads
            everything again).

    Returns:
        What was written.

    Raises:
        ExportError: ``out`` cannot be written; it is not empty and holds no export; it is,
            holds or lies inside an input; or another export into it is running.
        NoSourceError: a path no source recognises.
        FileNotFoundError: a path that does not exist.
    """
    pricer = Pricer(prices)
    with Output(out, paths) as output, cyclic_gc_paused():
        current = output.current()
        made = {"package_version": package_version(), "schema_version": SCHEMA_VERSION,
                "price_data_version": pricer.version, "text": text}
        before = (current.manifest() or {}) if current is not None else {}
        if any(before.get(k) != v for k, v in made.items()):
            incremental = False  # rows made another way are all made again
        previous = ExportState.from_doc(current.state() if current and incremental else None)
        damaged = drop_damaged(previous, current) if current is not None else []
        with output.staging() as staged:
            plan = LoadPlan(paths, source, options, progress, text)
            plan.read_ahead = READ_AHEAD
            run = ExportRun(plan, BatchWriter(staged, compression, compression_level, pricer.version), previous,
                            current, staged.path, pricer, batch_conversations, batch_rows, RANGE_BYTES, text)
            for event in plan.events(run.wanted, run.skip, run.earlier):
                run.add(event)
            run.finish(incremental)
            writer = run.writer
            writer.complete(current if incremental else None)
            manifest = {**writer.manifest(current.name if current else None), "text": text}
            staged.write(manifest, writer.state.to_doc())
            final = output.switch(staged, list(manifest["tables"]))
        note_stamps(final, _files(manifest))
    return ExportResult(
        out=output.root,
        generation=final.number,
        rows={name: entry["rows"] for name, entry in manifest["tables"].items()},
        conversations_read=run.read,
        conversations_kept=len(run.keep) - len(run.appended),
        conversations_appended=len(run.appended),
        files_written=writer.written,
        files_kept=writer.kept,
        damaged=damaged,
    )


def write_parquet(
    tables: Mapping[str, pa.Table],
    out: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    compression_level: int | None = 1,
    price_data_version: str | None = None,
) -> dict[str, Path]:
    """Write loaded ``tables`` under ``out`` as one new export, switched in whole.

    What ``out`` held before is replaced (the state is not incremental: the tables did not
    come with what they were read from).

    Args:
        tables: Arrow tables by name (``corpus.tables``).
        out: the output folder; created if missing.
        compression: Parquet codec.
        compression_level: codec level (zstd 1 writes fast and reads fast).
        price_data_version: stamped in every file and the manifest.

    Returns:
        The dataset folder of each table.

    Raises:
        ExportError: ``out`` cannot be written, is not empty and holds no export, or another
            export into it is running.
    """
    with Output(out) as output:
        current = output.current()
        with output.staging() as staged:
            writer = BatchWriter(staged, compression, compression_level, price_data_version)
            writer.write(tables, None)
            writer.complete(None)
            manifest = writer.manifest(current.name if current else None)
            staged.write(manifest, ExportState().to_doc())
            final = output.switch(staged, list(manifest["tables"]))
        note_stamps(final, _files(manifest))
    return {name: output.root / name for name in manifest["tables"]}


def _files(manifest: Mapping[str, Any]) -> list[str]:
    """The path of every file a manifest names."""
    return [f["path"] for entry in manifest["tables"].values() for f in entry["files"]]
