"""Writing one export generation: batches of rows as Parquet files, the manifest and the state."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ExportError
from ..frames import to_pandas
from ..schema import SCHEMA_VERSION, TABLES, schema
from .layout import Generation
from .state import ExportState

__all__ = ["FORMAT", "METADATA_KEY", "BatchWriter", "Rows", "package_version"]

#: The key of the file metadata this package writes.
METADATA_KEY = b"murmur_analysis"
FORMAT = "murmur-analysis-parquet"
ROW_GROUP_ROWS = 131_072


def package_version() -> str:
    """This package's version."""
    from .. import __version__

    return __version__


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
class Rows:
    """Rows of some conversations of one source, in every table, in the order of ``units``."""

    source: str | None
    tables: dict[str, pa.Table]
    units: list[str]

    def rows(self) -> int:
        """The most rows any table holds."""
        return max((t.num_rows for t in self.tables.values()), default=0)

    def merge(self, other: Rows) -> None:
        """Append ``other``'s rows (of the same source) after these."""
        for name, table in other.tables.items():
            mine = self.tables.get(name)
            self.tables[name] = table if mine is None else pa.concat_tables([mine, table.cast(mine.schema)])
        self.units += other.units


class BatchWriter:
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

    def carry(self, previous: ExportState, prev_gen: Generation, keep: set[str]) -> list[Rows]:
        """Bring over the previous export's batches whose conversations all kept their rows.

        Returns the kept rows of the batches that lost some conversations, to be written again
        (alone, or with other rows of their source).
        """
        partial: list[Rows] = []
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
            partial.append(Rows(entry["source"], tables, kept))
        return partial

    def staged_rows(self, table: str, columns: list[str]) -> pa.Table:
        """``columns`` of every row of ``table`` written or carried into this export so far."""
        parts = [pq.read_table(self.staged.path / f["path"], columns=columns) for f in self.files.get(table, [])]
        return pa.concat_tables(parts) if parts else schema(table).empty_table().select(columns)

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
            "package_version": package_version(),
            "generation": self.staged.number,
            "replaces": replaces,
            "written_at": datetime.now(UTC).isoformat(),
            "schema_version": SCHEMA_VERSION,
            "price_data_version": self.price_data_version,
            "tables": tables,
        }
