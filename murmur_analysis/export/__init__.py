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
  a murmur record that grew, only the appended bytes (:mod:`murmur_analysis.export.resume`).
- **Streaming**: rows are written a batch of conversations at a time, as they are decoded; a
  long murmur record a range of bytes at a time (:mod:`murmur_analysis.export.ranges`).

Every file carries ``murmur_analysis`` key-value metadata: the table, the schema version and
the price data version (``null`` while no prices are applied).
"""

from __future__ import annotations

import os
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.handoff import Conversation
from ..core.identity import changed_since
from ..core.pricing import Pricer, Prices, price_tables
from ..load.discovery import printable
from ..load.plan import LoadPlan, Progress, cyclic_gc_paused
from ..sources.base import Diagnostics, Source
from ..sources.murmur.append import anchor, appendable, read_tail
from ..tables.schema import SCHEMA_VERSION
from .integrity import drop_damaged, note_stamps
from .layout import Output
from .ranges import export_ranges
from .resume import Appended, appended_to_previous
from .state import ExportState, as_json, unit_id
from .writer import BatchWriter, Rows, package_version, units_of

__all__ = ["ExportResult", "export", "write_parquet"]

#: How long before an export starts a file's change still counts as "during" it (the kernel's
#: file times are taken from a clock that may lag by a tick).
_RACY_NS = 1_000_000_000
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
        progress: called as work advances (see :data:`~murmur_analysis.load.plan.Progress`).
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
    price_version = pricer.version
    with Output(out, paths) as output, cyclic_gc_paused():
        current = output.current()
        made = {"package_version": package_version(), "schema_version": SCHEMA_VERSION,
                "price_data_version": price_version, "text": text}
        before = (current.manifest() or {}) if current is not None else {}
        if any(before.get(k) != v for k, v in made.items()):
            incremental = False  # rows made another way are all made again
        previous = ExportState.from_doc(current.state() if current and incremental else None)
        damaged = drop_damaged(previous, current) if current is not None else []
        with output.staging() as staged:
            writer = BatchWriter(staged, compression, compression_level, price_version)
            plan = LoadPlan(paths, source, options, progress, text)
            plan.read_ahead = READ_AHEAD
            keep: set[str] = set()
            seen: set[str] = set()
            fingerprints: dict[Hashable, Any] = {}  # by key: the event's conversation may be a copy
            counts: dict[str, dict[str, int]] = {}
            held: list[str] = []
            read = 0
            held_source: str | None = None
            started_ns = time.time_ns() - _RACY_NS
            # What a source was told it need not read (``Source.skip``), by the conversation's key.
            decided: dict[Any, tuple[str, Any, Appended | None]] = {}
            named: set[tuple[str, str]] = set()
            files_found: set[tuple[int, int]] = set()
            appended: dict[str, Appended] = {}

            def flush() -> None:
                nonlocal held
                if held:
                    # Costs are filled per batch; unpriced models are reported once, over the whole export.
                    tables = price_tables(plan.builder.finish(), pricer, diagnose=False)
                    writer.write(tables, units_of(held, counts))
                plan.builder, held = plan.new_builder(), []

            def racy(fp: Any) -> Any:
                # An input modified during this run may be read in either state: read it again next time.
                return None if changed_since(fp, started_ns) else fp

            def rows_of(conv: Conversation, diags: Diagnostics) -> dict[str, pa.Table]:
                builder = plan.new_builder()
                builder.add(printable(conv))
                builder.add_diagnostics(diags.rows)
                return price_tables(builder.finish(), pricer, diagnose=False)

            def skip(src: Source, conv: Conversation) -> bool:
                name = (conv.source, conv.conversation_id)
                if name in named:  # a second conversation of this id is renamed when admitted
                    return False
                named.add(name)
                try:
                    st = os.stat(conv.path or "")
                    found = (st.st_dev, st.st_ino)
                except OSError:
                    found = None
                if found is None or found in files_found:  # reached twice: the load reads it once
                    return False
                files_found.add(found)
                unit = unit_id(conv)
                fp = as_json(src.fingerprint(conv))
                if previous.unchanged(unit, fp):
                    decided[conv.key] = ("keep", fp, None)
                    return True
                grown = _appended(src, conv, unit, fp) if current is not None else None
                if grown is not None:
                    decided[conv.key] = ("append", racy(fp), grown)
                    return True
                # A long record is written a range at a time, here, before its source would read it whole.
                done, point = export_ranges(src, conv, unit, writer, rows_of, staged.path, RANGE_BYTES)
                if done:
                    decided[conv.key] = ("ranges", racy(fp), Appended({}, point=point))
                    return True
                return False

            def _appended(src: Source, conv: Conversation, unit: str, fp: Any) -> Appended | None:
                point = appendable(src, previous.units.get(unit), fp)
                if point is None or current is None:
                    return None
                diags = Diagnostics(src.name)
                tail = read_tail(src, conv, point, diags, staged.path)
                if tail is None:
                    return None
                try:
                    return appended_to_previous(tail, point, rows_of(tail.conversation, diags), previous, current,
                                                unit)
                except (OSError, pa.ArrowException):  # the earlier rows cannot be read: read it whole
                    return None

            def wanted(src: Source, conv: Conversation) -> bool:
                nonlocal read
                unit = unit_id(conv)
                decision, fp, grown = decided.pop(conv.key, None) or ("read", None, None)
                if decision == "read":
                    fp = as_json(src.fingerprint(conv))
                    if unit not in seen and previous.unchanged(unit, fp):
                        decision = "keep"
                if decision != "read":  # not read by its source: its rows are written or kept already
                    if unit not in seen:
                        seen.add(unit)
                        if decision == "ranges":
                            read += 1
                        else:
                            keep.add(unit)
                            writer.state.units[unit] = dict(previous.units[unit])
                        if grown is not None:
                            writer.state.units[unit] = {"fingerprint": fp, "resume": grown.point}
                        if decision == "append" and grown is not None:
                            appended[unit] = grown
                    return False
                fingerprints[conv.key] = racy(fp)
                if held and conv.source != held_source:
                    flush()  # a batch holds one source's conversations: flushed before this one's rows
                return True

            for event in plan.events(wanted, skip):
                conv = event.conversation
                if event.kind == "conversation" and conv is not None:
                    read += 1
                    plan.builder.add_diagnostics(event.diagnostics)
                    unit = first = unit_id(conv)
                    n = 1
                    while unit in seen:  # the same conversation reached twice: both rows kept apart
                        n += 1
                        unit = f"{first}\x1f{n}"
                    seen.add(unit)
                    fp = fingerprints.pop(conv.key, None)
                    counts[unit] = {**event.rows, "diagnostics": len(event.diagnostics)}
                    point = conv.extra.get("resume")
                    writer.state.units[unit] = {"fingerprint": fp, "resume": anchor(point, conv.path, fp)}
                    held.append(unit)
                    held_source = conv.source
                    if len(held) >= batch_conversations or plan.builder.builders["messages"].num_rows >= batch_rows:
                        flush()
                elif event.kind == "target":
                    rest = plan.new_builder()
                    rest.add_diagnostics(event.diagnostics)
                    writer.write({"diagnostics": rest.finish()["diagnostics"], **event.extra_tables}, None)
            # The last batch goes out with the kept rows of the previous files that lost a
            # conversation, where they fit: a small change rewrites few files.
            found = plan.new_builder()
            found.add_diagnostics(plan.discovery_rows())
            if found.builders["diagnostics"].num_rows:
                writer.write({"diagnostics": found.finish()["diagnostics"]}, None)
            pending = None
            if held:
                pending = Rows(held_source, price_tables(plan.builder.finish(), pricer, diagnose=False),
                               units_of(held, counts))
            plan.builder = plan.new_builder()
            if current is not None and incremental:
                def kept(table: str) -> set[str]:
                    return keep - {u for u, g in appended.items() if table in g.replaced}

                for rows_ in writer.carry(previous, current, kept):
                    fits = pending is not None and pending.rows() + rows_.rows() <= 2 * batch_rows
                    if pending is not None and fits and pending.source == rows_.source:
                        pending.merge(rows_)
                    else:
                        writer.write(rows_.tables, rows_.units)
            for unit, grown in appended.items():
                rows_ = Rows(unit.split("\x1f", 1)[0], grown.tables,
                             {t: [(unit, d.num_rows)] for t, d in grown.tables.items() if d.num_rows})
                if pending is not None and pending.source == rows_.source:
                    pending.merge(rows_)  # after the rows kept of it, if any: each one's rows in order
                else:
                    if pending is not None:
                        writer.write(pending.tables, pending.units)
                    pending = rows_
            if pending is not None:
                writer.write(pending.tables, pending.units)
            unpriced = plan.new_builder()
            unpriced.add_diagnostics(pricer.diagnose(writer.staged_rows("usage", ["model", "provider"])))
            if unpriced.builders["diagnostics"].num_rows:
                writer.write({"diagnostics": unpriced.finish()["diagnostics"]}, None)
            writer.complete(current if incremental else None)
            manifest = {**writer.manifest(current.name if current else None), "text": text}
            staged.write(manifest, writer.state.to_doc())
            final = output.switch(staged, list(manifest["tables"]))
        note_stamps(final, _files(manifest))
    return ExportResult(
        out=output.root,
        generation=final.number,
        rows={name: entry["rows"] for name, entry in manifest["tables"].items()},
        conversations_read=read,
        conversations_kept=len(keep) - len(appended),
        conversations_appended=len(appended),
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
