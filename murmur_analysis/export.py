"""Parquet export: every table as one hive-partitioned dataset, readable by DuckDB, Dask or Spark.

Layout: ``<out>/<table>/source=<source>/part-0.parquet`` (``diagnostics`` too), zstd level 1,
128k-row row groups. Each run replaces the partitions it writes, so exporting the same input
twice leaves one copy, never two.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

from .errors import ExportError

__all__ = ["write_parquet"]

ROW_GROUP_ROWS = 131_072


def write_parquet(
    tables: dict[str, pa.Table],
    out: str | os.PathLike[str],
    *,
    compression: str = "zstd",
    compression_level: int | None = 1,
    partition_by: tuple[str, ...] = ("source",),
) -> dict[str, Path]:
    """Write ``tables`` under ``out``, one dataset per table, partitioned by ``partition_by``.

    Args:
        tables: Arrow tables by name (``corpus.tables``).
        out: the output folder; created if missing. Nothing is written outside it.
        compression: Parquet codec.
        compression_level: codec level (zstd 1 writes fast and reads fast).
        partition_by: hive partition columns present in a table.

    Returns:
        The dataset folder of each table.

    Raises:
        ExportError: ``out`` exists and is not a folder, or a write failed.
    """
    root = Path(os.fspath(out)).expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise ExportError(f"{root} exists and is not a folder")
    written: dict[str, Path] = {}
    for name, table in tables.items():
        target = (root / name).resolve()
        if root not in target.parents:
            raise ExportError(f"table name {name!r} would write outside {root}")
        parts = [c for c in partition_by if c in table.column_names]
        fmt = ds.ParquetFileFormat()
        options = fmt.make_write_options(compression=compression, compression_level=compression_level)
        try:
            ds.write_dataset(
                table,
                target,
                format=fmt,
                file_options=options,
                partitioning=parts or None,
                partitioning_flavor="hive" if parts else None,
                existing_data_behavior="delete_matching",
                basename_template="part-{i}.parquet",
                max_rows_per_group=ROW_GROUP_ROWS,
                min_rows_per_group=min(ROW_GROUP_ROWS, max(table.num_rows, 1)),
            )
        except (OSError, pa.ArrowException) as err:
            raise ExportError(f"could not write {name} under {target}: {err}") from err
        written[name] = target
    return written
