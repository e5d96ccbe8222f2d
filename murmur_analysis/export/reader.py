"""Reading an export back: the current generation, resolved once, with the declared types."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ExportError
from ..schema import TABLES, schema
from .layout import Generation, Output
from .writer import FORMAT

__all__ = ["read_parquet"]


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
