"""Reading an export back: the current generation, resolved once, with the declared types."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ExportError
from ..tables.schema import SCHEMA_VERSION, TABLES, schema
from .layout import FORMAT, MANIFEST, Generation, Output
from .owned import safe_relative

__all__ = ["read_tables"]

#: How many times a read starts over when another export replaced the one being read.
_ATTEMPTS = 3
_AGAIN = "export again: the next export writes a damaged file again from the input"


class _Replaced(Exception):
    """The generation being read was replaced (and removed) by another export meanwhile."""


def _read_file(output: Output, generation: Generation, f: Mapping[str, Any]) -> pa.Table:
    relative = safe_relative(f.get("path"))
    if relative is None:
        raise ExportError(f"the manifest of {output.root} names a file outside its export: {f.get('path')!r}",
                          hint=_AGAIN)
    path = generation.path / relative
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ExportError(f"{path} of the export in {output.root} is not a regular file", hint=_AGAIN)
        if isinstance(f.get("bytes"), int) and st.st_size != f["bytes"]:
            raise ExportError(f"{path} of the export in {output.root} is damaged: it has {st.st_size} bytes, "
                              f"not {f['bytes']}", hint=_AGAIN)
        return pq.read_table(path)
    except FileNotFoundError as err:
        current = output.current()
        if current is None or current.number != generation.number:
            raise _Replaced from err
        raise ExportError(f"{path} of the export in {output.root} is gone", hint=_AGAIN) from err
    except (OSError, pa.ArrowException) as err:
        raise ExportError(f"{path} of the export in {output.root} cannot be read: {err}", hint=_AGAIN) from err


def _read_table(output: Output, generation: Generation, name: str, entry: Mapping[str, Any]) -> pa.Table:
    declared = schema(name) if name in TABLES else None
    parts: list[pa.Table] = []
    files = entry.get("files", []) if isinstance(entry, Mapping) else None
    if not isinstance(files, list) or not all(isinstance(f, Mapping) for f in files):
        raise ExportError(f"the manifest of {output.root} is damaged (table {name})", hint=_AGAIN)
    for f in files:
        data = _read_file(output, generation, f)
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
    try:
        data = pa.concat_tables([p.select(list(columns)) for p in parts], promote_options="default") if parts else empty
        data = data.select(list(columns))
        return data.cast(declared) if declared is not None else data
    except (ValueError, KeyError, pa.ArrowException) as err:
        raise ExportError(f"the {name} table of the export in {output.root} does not have the declared columns: "
                          f"{err}", hint="export again with incremental=False",
                          cli_hint="export again with --full") from err


def read_tables(out: str | os.PathLike[str]) -> dict[str, pa.Table]:
    """Read an export's tables back with the declared types (:func:`murmur_analysis.read_parquet` wraps them).

    The export's current generation is resolved once, so an export switched in meanwhile is
    not mixed in; if that export removed the generation being read, the read starts over on
    the new one.

    Raises:
        ExportError: ``out`` holds no export of this package, an export of another schema
            version, or a damaged one (the message names the file, the hint what to do).
    """
    output = Output(out)
    for _ in range(_ATTEMPTS):
        generation = output.current()
        manifest = generation.manifest() if generation is not None else None
        if generation is None or manifest is None or manifest.get("format") != FORMAT:
            where = f" (its {generation.path / MANIFEST} is not a readable manifest)" if generation else ""
            raise ExportError(f"{output.root} holds no murmur-analysis export{where}",
                              hint="write one with ma.export_parquet(SRC, out=DIR)",
                              cli_hint="write one with: murmur-analysis export SRC --out DIR")
        version = manifest.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ExportError(f"the export in {output.root} has tables of schema version {version}; this "
                              f"murmur-analysis reads version {SCHEMA_VERSION}",
                              hint="export again with incremental=False to write it in this version",
                              cli_hint="export again with --full to write it in this version")
        tables_doc = manifest.get("tables")
        if not isinstance(tables_doc, Mapping):
            raise ExportError(f"the manifest of {output.root} is damaged", hint=_AGAIN)
        try:
            tables = {name: _read_table(output, generation, name, entry) for name, entry in tables_doc.items()}
        except _Replaced:
            continue
        return tables
    raise ExportError(f"the export in {output.root} was replaced {_ATTEMPTS} times while it was read",
                      hint="read it again once the exports into it have finished")
