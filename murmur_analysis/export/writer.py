"""Writing one export generation: batches of rows as Parquet files, the manifest and the state."""

from __future__ import annotations

import functools
import os
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..core.version import __version__
from ..errors import ExportError
from ..tables.frames import to_pandas
from ..tables.schema import SCHEMA_VERSION, TABLES, schema
from .integrity import integrity
from .layout import FORMAT, Generation
from .state import ExportState

__all__ = ["FORMAT", "METADATA_KEY", "BatchWriter", "Rows", "Units", "package_version", "units_of"]

#: The key of the file metadata this package writes.
METADATA_KEY = b"murmur_analysis"
ROW_GROUP_ROWS = 131_072


def package_version() -> str:
    """This package's version."""
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
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        return bool(pq.read_schema(path).names == columns)
    except (OSError, pa.ArrowException):
        return False


#: Each table's units in the order of its rows, with how many rows each has there.
Units = dict[str, list[tuple[str, int]]]


@dataclass
class Rows:
    """Rows of some conversations of one source, in every table, in the order of ``units``."""

    source: str | None
    tables: dict[str, pa.Table]
    units: Units

    def rows(self) -> int:
        """The most rows any table holds."""
        return max((t.num_rows for t in self.tables.values()), default=0)

    def merge(self, other: Rows) -> None:
        """Append ``other``'s rows (of the same source) after these."""
        for name, table in other.tables.items():
            mine = self.tables.get(name)
            self.tables[name] = table if mine is None else pa.concat_tables([mine, table.cast(mine.schema)])
            self.units[name] = [*self.units.get(name, []), *other.units.get(name, [])]


def units_of(held: list[str], counts: dict[str, dict[str, int]]) -> Units:
    """The per-table unit lists of conversations ``held`` in this order, given each one's row counts."""
    out: Units = {}
    for unit in held:
        for table, n in counts[unit].items():
            if n:
                out.setdefault(table, []).append((unit, n))
    return out


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
        #: What is recorded of each file of this generation (see :mod:`~murmur_analysis.export.integrity`).
        self.integrity: dict[str, dict[str, Any]] = {}

    def _stamp(self, table: str) -> dict[bytes, bytes]:
        doc = {"format": FORMAT, "table": table, "schema_version": SCHEMA_VERSION,
               "price_data_version": self.price_data_version}
        return {METADATA_KEY: orjson.dumps(doc)}

    def _place(self, table: str, source: str | None, relative: str, rows: int) -> None:
        self.files.setdefault(table, []).append({"path": relative, "source": source, "rows": rows})

    def write(self, tables: Mapping[str, pa.Table], units: Units | None) -> list[str]:
        """Write one batch (every table's rows of it); ``units`` ``None`` marks rows of no conversation.

        Returns:
            The paths of the files written.
        """
        self._serial += 1
        batch = f"{self.staged.number:06d}-{self._serial:05d}"
        written: list[str] = []
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
                self._place(table, value, relative, part.num_rows)
                owners = None if units is None else [list(u) for u in units.get(table, [])]
                self.state.files[relative] = {"table": table, "source": value, "units": owners or [],
                                              "whole": units is None, **self.integrity[relative]}
                written.append(relative)
        return written

    def rewrite(self, table: str, data: pa.Table, relative: str) -> None:
        """Write a file of this export again, with as many rows (some of them changed)."""
        self._write_file(table, data, relative)
        if relative in self.state.files:
            self.state.files[relative].update(self.integrity[relative])

    def discard(self, relatives: list[str]) -> None:
        """Take files written by this export back out of it."""
        gone = set(relatives)
        for relative in relatives:
            (self.staged.path / relative).unlink(missing_ok=True)
            self.state.files.pop(relative, None)
            self.integrity.pop(relative, None)
        for table, files in self.files.items():
            self.files[table] = [f for f in files if f["path"] not in gone]

    def _write_file(self, table: str, data: pa.Table, relative: str) -> None:
        """Write one file (whole in memory first, so its checksum is taken of the bytes written)."""
        path = self.staged.path / relative
        data = data.replace_schema_metadata({**_pandas_metadata(data.schema), **self._stamp(table)})
        sink = pa.BufferOutputStream()
        try:
            pq.write_table(data, sink, compression=self.compression, compression_level=self.level,
                           row_group_size=ROW_GROUP_ROWS)
            body = memoryview(sink.getvalue())
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(body)
            self.integrity[relative] = integrity(body)
        except (OSError, pa.ArrowException) as err:
            why = err.strerror if isinstance(err, OSError) and err.strerror else err
            raise ExportError(f"could not write {path}: {why}",
                              hint="the previous export is left as it was; free space or inodes and export again"
                              ) from err
        self.written += 1
        hook = os.environ.get("MURMUR_ANALYSIS_EXPORT_FILE_HOOK")
        if hook:  # a test's hook: a pause after each file, so a kill can land between files
            time.sleep(float(hook))

    def carry(self, previous: ExportState, prev_gen: Generation, keep: Callable[[str], set[str]]) -> list[Rows]:
        """Bring over the previous export's files whose conversations all keep their rows there.

        Args:
            previous: the previous export's state.
            prev_gen: its generation.
            keep: the conversations whose rows of a table are kept.

        Returns:
            The kept rows of the files that lost some conversations, to be written again
            (alone, or with other rows of their source).
        """
        partial: list[Rows] = []
        for relative, entry in previous.files.items():
            if entry.get("whole"):
                continue
            table = entry["table"]
            wanted = keep(table)
            kept = [(u, n) for u, n in entry["units"] if u in wanted]
            if not kept:
                continue
            if len(kept) == len(entry["units"]):
                self.staged.carry(relative, prev_gen)
                self._place(table, entry["source"], relative, sum(n for _, n in kept))
                self.state.files[relative] = entry
                self.integrity[relative] = {k: entry[k] for k in ("bytes", "blake2b") if k in entry}
                self.kept += 1
                continue
            try:
                old = pq.ParquetFile(prev_gen.path / relative).read()
            except (OSError, pa.ArrowException) as err:
                raise ExportError(f"could not read {prev_gen.path / relative} of the previous export: {err}",
                                  hint="export again with incremental=False",
                                  cli_hint="export again with --full") from err
            part = pa.concat_tables([old.slice(o, n) for o, n in previous.ranges(entry, wanted)])
            if entry["source"] is not None:
                part = part.add_column(0, "source", pa.array([entry["source"]] * part.num_rows, pa.string()))
            partial.append(Rows(entry["source"], {table: part}, {table: kept}))
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
                body = (self.staged.path / relative).read_bytes()  # a file of no rows: a few hundred bytes
                self.integrity[relative] = integrity(body)
            else:
                empty = schema(name).empty_table() if name in TABLES else pa.table(
                    {c: pa.array([], pa.null()) for c in columns})
                self._write_file(name, empty, relative)
            self._place(name, None, relative, 0)

    def manifest(self, replaces: str | None) -> dict[str, Any]:
        """The manifest of the staged generation."""
        def described(f: dict[str, Any]) -> dict[str, Any]:
            known = self.integrity.get(f["path"], {})
            return {**f, **{k: known[k] for k in ("bytes", "blake2b") if k in known}}

        tables = {
            name: {"rows": sum(f["rows"] for f in files),
                   "files": sorted((described(f) for f in files), key=lambda f: f["path"]),
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
