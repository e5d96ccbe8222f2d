"""Parquet export: every table as a hive-partitioned dataset, switched in whole, kept up to date.

Each table is ``<out>/<table>/source=<source>/part-<batch>.parquet`` (a table with no
``source`` column: ``<out>/<table>/part-<batch>.parquet``), zstd level 1. DuckDB, Dask, Spark
and pyarrow read each table folder as it is; :func:`read_parquet` reads the folder back into a
corpus with the declared types.

- **Atomic**: an export is written whole into a staging folder and switched in with one
  rename (see :mod:`murmur_analysis.export.layout`); a killed export leaves the previous one
  whole. ``<out>/manifest.json`` names every file of the current export.
- **Exact**: the switched-in export holds only what this run read; nothing of an earlier one
  is left beside it.
- **Incremental**: the export records what it read (``state.json``, see
  :mod:`murmur_analysis.export.state`); the next export into the same folder reads again only
  the conversations whose input changed, replaces their rows, and keeps every other file.
- **Streaming**: rows are written a batch of conversations at a time, as they are decoded.

Every file carries ``murmur_analysis`` key-value metadata: the table, the schema version and
the price data version (``null`` while no prices are applied).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ExportError
from ..frames import FrameBuilder, TableBuilder, to_pandas
from ..identity import changed_since
from ..load_plan import LoadPlan, Progress, cyclic_gc_paused
from ..schema import SCHEMA_VERSION, TABLES, schema
from ..sources.base import Conversation, Source
from .layout import Generation, Output
from .state import ExportState, unit_id

__all__ = ["ExportResult", "export", "read_parquet", "write_parquet"]

#: The key of the file metadata this package writes.
METADATA_KEY = b"murmur_analysis"
FORMAT = "murmur-analysis-parquet"
ROW_GROUP_ROWS = 131_072
#: How long before an export starts a file's change still counts as "during" it (the kernel's
#: file times are taken from a clock that may lag by a tick).
_RACY_NS = 1_000_000_000


@dataclass
class ExportResult:
    """What an export wrote.

    Attributes:
        out: the output folder.
        generation: the export's generation number.
        rows: rows of each table in the export.
        conversations_read: conversations decoded by this run.
        conversations_kept: conversations whose rows were kept from the previous export.
        files_written: Parquet files this run wrote.
        files_kept: Parquet files carried over from the previous export unchanged.
    """

    out: Path
    generation: int
    rows: dict[str, int] = field(default_factory=dict)
    conversations_read: int = 0
    conversations_kept: int = 0
    files_written: int = 0
    files_kept: int = 0

    def paths(self) -> dict[str, Path]:
        """The dataset folder of each table."""
        return {name: self.out / name for name in self.rows}


@functools.cache
def _pandas_metadata(schema_: pa.Schema) -> dict[bytes, bytes]:
    """The key-value metadata pandas reads its dtypes from, for a file of ``schema_`` (Arrow-backed).

    With it, a plain ``pd.read_parquet`` of a table folder gives the declared types (nullable
    counters stay integers, ``sealed`` stays boolean) instead of floats and objects.
    """
    frame = to_pandas(schema_.empty_table())
    meta = pa.Schema.from_pandas(frame, preserve_index=False).metadata or {}
    return {k: v for k, v in meta.items() if k == b"pandas"}


def _has_columns(path: Path, columns: list[str]) -> bool:
    try:
        return bool(pq.read_schema(path).names == columns)
    except (OSError, pa.ArrowException):
        return False


@dataclass
class _Rows:
    """Rows of some conversations of one source, in every table, in the order of ``units``."""

    source: str | None
    tables: dict[str, pa.Table]
    units: list[str]

    def rows(self) -> int:
        return max((t.num_rows for t in self.tables.values()), default=0)

    def merge(self, other: _Rows) -> None:
        for name, table in other.tables.items():
            mine = self.tables.get(name)
            self.tables[name] = table if mine is None else pa.concat_tables([mine, table.cast(mine.schema)])
        self.units += other.units


class _Writer:
    """Writes batches of rows into a staging generation and keeps the manifest and state."""

    def __init__(self, staged: Generation, compression: str, level: int | None, price_data_version: str | None):
        self.staged = staged
        self.compression = compression
        self.level = level
        self.price_data_version = price_data_version
        self.state = ExportState()
        self.files: dict[str, list[dict[str, Any]]] = {}
        self.columns: dict[str, list[str]] = {}
        self.written = 0
        self.kept = 0
        self._serial = 0

    def _stamp(self, table: str) -> dict[bytes, bytes]:
        doc = {"format": FORMAT, "table": table, "schema_version": SCHEMA_VERSION,
               "price_data_version": self.price_data_version}
        return {METADATA_KEY: orjson.dumps(doc)}

    def _place(self, table: str, source: str | None, relative: str, rows: int) -> None:
        self.files.setdefault(table, []).append({"path": relative, "source": source, "rows": rows})

    def write(self, tables: Mapping[str, pa.Table], units: list[str] | None) -> str:
        """Write one batch (every table's rows of it); ``units`` ``None`` marks a whole batch."""
        self._serial += 1
        batch = f"{self.staged.number:06d}-{self._serial:05d}"
        files: dict[str, list[str]] = {}
        source_of: str | None = None
        for table, data in tables.items():
            self.columns.setdefault(table, data.column_names)
            if data.num_rows == 0:
                continue
            if "source" in data.column_names:
                values = pc.unique(data["source"]).to_pylist()
                parts = [(v, data.filter(pc.equal(data["source"], v)).drop_columns(["source"])) for v in values]
            else:
                parts = [(None, data)]
            for value, part in parts:
                if value is None and "source" in data.column_names:
                    raise ExportError(f"{table} holds rows with no source")
                folder = f"{table}/source={value}" if value is not None else table
                relative = f"{folder}/part-{batch}.parquet"
                self._write_file(table, part, relative)
                files.setdefault(table, []).append(relative)
                self._place(table, value, relative, part.num_rows)
                source_of = value if value is not None else source_of
        self.state.batches[batch] = {"source": source_of, "units": units or [], "files": files, "whole": units is None}
        for unit in units or ():
            self.state.units[unit]["batch"] = batch
        return batch

    def _write_file(self, table: str, data: pa.Table, relative: str) -> None:
        path = self.staged.path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        data = data.replace_schema_metadata({**_pandas_metadata(data.schema), **self._stamp(table)})
        try:
            pq.write_table(data, path, compression=self.compression, compression_level=self.level,
                           row_group_size=ROW_GROUP_ROWS)
        except (OSError, pa.ArrowException) as err:
            raise ExportError(f"could not write {path}: {err}") from err
        self.written += 1
        hook = os.environ.get("MURMUR_ANALYSIS_EXPORT_FILE_HOOK")
        if hook:  # a test's hook: a pause after each file, so a kill can land between files
            time.sleep(float(hook))

    def carry(self, previous: ExportState, prev_gen: Generation, keep: set[str]) -> list[_Rows]:
        """Bring over the previous export's batches whose conversations all kept their rows.

        Returns the kept rows of the batches that lost some conversations, to be written again
        (alone, or with other rows of their source).
        """
        partial: list[_Rows] = []
        for batch, entry in previous.batches.items():
            if entry.get("whole"):
                continue
            kept = [u for u in entry["units"] if u in keep]
            if not kept:
                continue
            for u in kept:
                self.state.units[u] = dict(previous.units[u])
            if len(kept) == len(entry["units"]):
                for table, paths in entry["files"].items():
                    for relative in paths:
                        self.staged.carry(relative, prev_gen)
                        self._place(table, entry["source"], relative,
                                    sum(previous.units[u]["rows"].get(table, 0) for u in kept))
                        self.kept += 1
                self.state.batches[batch] = entry
                continue
            tables: dict[str, pa.Table] = {}
            for table, ranges in previous.slices(batch, set(kept)).items():
                if not ranges:
                    continue
                old = pq.ParquetFile(prev_gen.path / entry["files"][table][0]).read()
                part = pa.concat_tables([old.slice(o, n) for o, n in ranges])
                tables[table] = part.add_column(0, "source", pa.array([entry["source"]] * part.num_rows, pa.string()))
            partial.append(_Rows(entry["source"], tables, kept))
        return partial

    def complete(self, previous: Generation | None) -> None:
        """Give every declared table a folder: an empty one holds a zero-row file of its schema.

        The previous export's zero-row file of a table is kept when it is of the same columns.
        """
        for name in TABLES:
            self.columns.setdefault(name, schema(name).names)
        for name, columns in self.columns.items():
            if self.files.get(name):
                continue
            relative = f"{name}/part-empty.parquet"
            if previous is not None and _has_columns(previous.path / relative, columns):
                self.staged.carry(relative, previous)
                self.kept += 1
            else:
                empty = schema(name).empty_table() if name in TABLES else pa.table(
                    {c: pa.array([], pa.null()) for c in columns})
                self._write_file(name, empty, relative)
            self._place(name, None, relative, 0)

    def manifest(self, replaces: str | None) -> dict[str, Any]:
        """The manifest of the staged generation."""
        tables = {
            name: {"rows": sum(f["rows"] for f in files), "files": sorted(files, key=lambda f: f["path"]),
                   "columns": self.columns.get(name, [])}
            for name, files in sorted(self.files.items())
        }
        return {
            "format": FORMAT,
            "package_version": _package_version(),
            "generation": self.staged.number,
            "replaces": replaces,
            "written_at": datetime.now(UTC).isoformat(),
            "schema_version": SCHEMA_VERSION,
            "price_data_version": self.price_data_version,
            "tables": tables,
        }


def _package_version() -> str:
    from .. import __version__

    return __version__


def export(
    *paths: str | os.PathLike[str],
    out: str | os.PathLike[str],
    source: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
    incremental: bool = True,
    price_data_version: str | None = None,
    batch_conversations: int = 64,
    batch_rows: int = 8_192,
    compression: str = "zstd",
    compression_level: int | None = 1,
) -> ExportResult:
    """Load ``paths`` and export every table under ``out``, a batch of conversations at a time.

    Args:
        *paths: files or folders of any registered source.
        out: the output folder (created). Only ``out/.export``, ``out/manifest.json`` and the
            tables' links are written; nothing outside ``out``.
        source: force this source for every path instead of detecting.
        options: per-source options by source name.
        progress: called as work advances (see :data:`~murmur_analysis.load_plan.Progress`).
        incremental: keep the rows of conversations whose input is unchanged since the
            previous export into ``out``; ``False`` reads everything again.
        price_data_version: the version of the price data costs were computed with, stamped in
            every file and the manifest (``None``: no prices applied).
        batch_conversations: the most conversations per file.
        batch_rows: message rows after which a batch is written. Smaller batches make more
            files; a changed conversation rewrites the files of its batch only.
        compression: Parquet codec.
        compression_level: codec level.

    Returns:
        What was written.

    Raises:
        ExportError: ``out`` cannot be written, or another export into it is running.
        NoSourceError: a path no source recognises.
        FileNotFoundError: a path that does not exist.
    """
    with Output(out) as output, cyclic_gc_paused():
        current = output.current()
        made = {"package_version": _package_version(), "schema_version": SCHEMA_VERSION,
                "price_data_version": price_data_version}
        before = (current.manifest() or {}) if current is not None else {}
        if any(before.get(k) != v for k, v in made.items()):
            incremental = False  # rows made another way are all made again
        previous = ExportState.from_doc(current.state() if current and incremental else None)
        staged = output.stage()
        writer = _Writer(staged, compression, compression_level, price_data_version)
        plan = LoadPlan(paths, source, options, progress)
        keep: set[str] = set()
        seen: set[str] = set()
        fingerprints: dict[int, Any] = {}
        held: list[str] = []
        read = 0

        held_source: str | None = None

        def flush() -> None:
            nonlocal held
            if held:
                writer.write(plan.builder.finish(), held)
            plan.builder, held = FrameBuilder(), []

        started_ns = time.time_ns() - _RACY_NS

        def wanted(src: Source, conv: Conversation) -> bool:
            unit = unit_id(conv)
            fp = orjson.loads(orjson.dumps(src.fingerprint(conv)))  # as the state file holds it
            if unit not in seen and previous.unchanged(unit, fp):
                keep.add(unit)
                seen.add(unit)
                return False
            # An input modified during this run may be read in either state: read it again next time.
            fingerprints[id(conv)] = None if changed_since(fp, started_ns) else fp
            if held and conv.source != held_source:
                flush()  # a batch holds one source's conversations: flushed before this one's rows
            return True

        for event in plan.events(wanted):
            conv = event.conversation
            if event.kind == "conversation" and conv is not None:
                read += 1
                plan.builder.add_diagnostics(event.diagnostics)
                unit = unit_id(conv)
                n = 1
                while unit in seen:  # the same conversation reached twice: both rows kept apart
                    n += 1
                    unit = f"{unit_id(conv)}\x1f{n}"
                seen.add(unit)
                rows = {**event.rows, "diagnostics": len(event.diagnostics)}
                writer.state.units[unit] = {"fingerprint": fingerprints.pop(id(conv), None), "rows": rows}
                held.append(unit)
                held_source = conv.source
                if len(held) >= batch_conversations or plan.builder.builders["messages"].num_rows >= batch_rows:
                    flush()
            elif event.kind == "target":
                diagnostics = TableBuilder("diagnostics")
                for d in event.diagnostics:
                    diagnostics.append((d.source, d.path, d.line, d.kind, d.detail))
                writer.write({"diagnostics": diagnostics.finish(), **event.extra_tables}, None)
        # The last batch goes out with the kept rows of the previous batches that lost a
        # conversation, where they fit: a small change rewrites few files.
        pending = _Rows(held_source, plan.builder.finish(), held) if held else None
        plan.builder = FrameBuilder()
        partial = writer.carry(previous, current, keep) if current is not None and incremental else []
        for rows_ in partial:
            fits = pending is not None and pending.rows() + rows_.rows() <= 2 * batch_rows
            if pending is not None and fits and pending.source == rows_.source:
                pending.merge(rows_)
            else:
                writer.write(rows_.tables, rows_.units)
        if pending is not None:
            writer.write(pending.tables, pending.units)
        writer.complete(current if incremental else None)
        manifest = writer.manifest(current.name if current else None)
        staged.write(manifest, writer.state.to_doc())
        final = output.switch(staged, list(manifest["tables"]))
    return ExportResult(
        out=output.root,
        generation=final.number,
        rows={name: entry["rows"] for name, entry in manifest["tables"].items()},
        conversations_read=read,
        conversations_kept=len(keep),
        files_written=writer.written,
        files_kept=writer.kept,
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
        ExportError: ``out`` cannot be written, or another export into it is running.
    """
    with Output(out) as output:
        current = output.current()
        staged = output.stage()
        writer = _Writer(staged, compression, compression_level, price_data_version)
        writer.write(tables, None)
        writer.complete(None)
        manifest = writer.manifest(current.name if current else None)
        staged.write(manifest, ExportState().to_doc())
        output.switch(staged, list(manifest["tables"]))
    return {name: output.root / name for name in manifest["tables"]}


def _read_table(generation: Generation, name: str, entry: Mapping[str, Any]) -> pa.Table:
    declared = schema(name) if name in TABLES else None
    parts: list[pa.Table] = []
    for f in entry.get("files", []):
        data = pq.read_table(generation.path / f["path"])
        if f.get("source") is not None:
            data = data.append_column("source", pa.array([f["source"]] * data.num_rows, pa.string()))
        parts.append(data.replace_schema_metadata(None))
    columns: Sequence[str] = entry.get("columns") or (declared.names if declared is not None else [])
    if declared is not None:
        empty = declared.empty_table()
    elif parts:
        empty = parts[0].schema.empty_table()
    else:
        return pa.table({c: pa.array([], pa.null()) for c in columns})
    data = pa.concat_tables([p.select(list(columns)) for p in parts], promote_options="default") if parts else empty
    data = data.select(list(columns))
    return data.cast(declared) if declared is not None else data


def read_parquet(out: str | os.PathLike[str]) -> Any:
    """Read an export back into a :class:`~murmur_analysis.corpus.Corpus` with the declared types.

    The export's current generation is resolved once, so an export switched in meanwhile is
    not mixed in. The corpus has every table but no conversation handles (the sources are
    not read).

    Raises:
        ExportError: ``out`` holds no export of this package.
    """
    from ..corpus import Corpus

    output = Output(out)
    generation = output.current()
    manifest = generation.manifest() if generation is not None else None
    if generation is None or manifest is None or manifest.get("format") != FORMAT:
        raise ExportError(f"{output.root} holds no murmur-analysis export", hint="write one with export(..., out=)")
    tables = {name: _read_table(generation, name, entry) for name, entry in manifest["tables"].items()}
    return Corpus(tables, {})
