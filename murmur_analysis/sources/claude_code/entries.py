"""A Claude Code file's message lines as :class:`~murmur_analysis.core.model.Entry` values (the paging view).

The tables come from the engine's columns; a conversation handle pages entries. The lines the
engine kept as messages (by line number) are decoded again here, each into its Anthropic blocks
(``brazen`` wire dialect: ``text``, ``thinking``, ``tool_use``, ``tool_result``, ...; unknown kinds
kept whole), with the id, side, model, time and usage of its row.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.files import open_regular
from ...core.model import Entry, Text, Usage
from ...core.wire import blocks_from_wire

__all__ = ["entries"]


def _blocks(line: dict[str, Any]) -> tuple[Any, ...]:
    message = line.get("message")
    body = message if isinstance(message, dict) else line
    content = body.get("content")
    if isinstance(content, str):
        return (Text(content),)
    return blocks_from_wire(content, "brazen") if isinstance(content, list) else ()


def entries(path: Path, lines: Sequence[int], ids: Sequence[str | None], sides: Sequence[str],
            models: Sequence[str | None], times: Sequence[datetime | None],
            usages: Sequence[Usage | None] | None) -> Iterator[Entry]:
    """The entries of the message lines ``lines`` (1-based) of ``path``, one per line, in order."""
    try:
        with open_regular(path) as fh:
            raw = fh.read().split(b"\n")
    except OSError:
        return
    for i, n in enumerate(lines):
        try:
            line = json.loads(raw[n - 1])
        except (IndexError, ValueError):
            continue
        yield Entry(position=i, side=sides[i], blocks=_blocks(line), id=ids[i], model=models[i],
                    created_at=times[i], usage=usages[i] if usages else None, raw=line)
