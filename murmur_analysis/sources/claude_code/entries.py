"""A Claude Code file's message lines as :class:`~murmur_analysis.core.model.Entry` values (the paging view).

The tables come from the engine's columns; a conversation handle pages entries. The lines the
engine kept as messages (by line number) are decoded again here, each into its Anthropic blocks
(``anthropic`` wire dialect: ``text``, ``thinking``, ``tool_use``, ``tool_result``, ...; unknown
kinds kept whole), by the rules the engine read them by, with the id, side, model, time and
usage of its row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from ...core.handoff import EntryColumns
from ...core.model import Entry, Text, Usage
from ...core.wire import blocks_from_wire
from ..lines import BLOCK_DIALECTS, file_bytes

__all__ = ["entries"]


def _blocks(line: dict[str, Any]) -> tuple[Any, ...]:
    message = line.get("message")
    body = message if isinstance(message, dict) else line
    content = body.get("content")
    if isinstance(content, str):
        return (Text(content),)
    return blocks_from_wire(content, BLOCK_DIALECTS["claude_code"]) if isinstance(content, list) else ()


def _parsed(line: bytes) -> Any:
    """A line the engine read, as Python values: by orjson, else (an integer past 64 bits) by ``json``."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def entries(path: Path, lines: pa.Array, columns: EntryColumns,
            usages: Sequence[Usage | None] | None) -> Iterator[Entry]:
    """The entries of the message lines ``lines`` (1-based) of ``path``, one per line, in order.

    Their id, side, origin, model, time and status are ``columns``'; nothing is read until the
    entries are.
    """
    data = file_bytes(path)
    if isinstance(data, str):  # gone since the load: no entries
        return
    raw = data.split(b"\n")
    ids, sides, models = columns.id.to_pylist(), columns.side.to_pylist(), columns.model.to_pylist()
    origins, statuses = columns.origin.to_pylist(), columns.status.to_pylist()
    times: list[datetime | None] = columns.created_at.to_pylist()
    for i, n in enumerate(lines.to_pylist()):
        try:
            line = _parsed(raw[n - 1])
        except (IndexError, ValueError):
            continue
        yield Entry(position=i, side=sides[i], blocks=_blocks(line), id=ids[i], origin=origins[i], model=models[i],
                    created_at=times[i], usage=usages[i] if usages else None, raw=line, status=statuses[i])
