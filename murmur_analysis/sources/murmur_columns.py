"""The murmur source's column path: message lines decoded straight to column values.

A long record is read this way by ``ma.load``: the common line shapes (text and ``tool_call``
blocks; a tool message of text blocks that names its call) become one row of
:class:`~murmur_analysis.sources.base.EntryColumns` values without any entry or block object;
every other line is decoded as an :class:`~murmur_analysis.model.Entry` and its values read
off it. ``tests/test_murmur_columns.py`` holds the two paths to equal tables.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..assembly import ToolEvent, input_size, tool_events
from ..model import Entry, block_kind, text_chars, uuid7_ms
from .base import Conversation, EntryColumns
from .murmur_join import Join

__all__ = ["Row", "chunk", "entry_columns", "fast_columns"]

TITLE_CHARS = 80

#: One entry's values in :class:`EntryColumns` field order (tool events aside).
Row = tuple[Any, ...]


def fast_columns(
    line: dict[str, Any], position: int, conv: Conversation, join: Join | None
) -> tuple[Row, list[ToolEvent]] | None:
    """One message line's column values and tool events, when it has one of the common shapes.

    The shapes are those :func:`murmur._blocks` builds directly (a ``{"text","type"}`` text block, a
    four-key ``tool_call`` block with an input) and a tool message whose body is text blocks
    and which names its call. Returns ``None`` for any other line (nothing is claimed).
    """
    content = line.get("content")
    if type(content) is not list:
        return None
    role: str = line["role"]
    chars = 0
    events: list[ToolEvent] = []
    if role == "tool":
        call_id = line.get("tool_call_id")
        if type(call_id) is not str:
            return None
        for block in content:
            if type(block) is dict and len(block) == 2 and block.get("type") == "text":
                text = block.get("text")
                if type(text) is str:
                    chars += len(text)
                    continue
            return None
        raw_error = line.get("is_error")
        is_error = raw_error if type(raw_error) is bool else None
        kinds = ["tool_result"]
        events.append(("result", "client", call_id, is_error, chars))
    else:
        kinds = []
        title = conv.title is None and role == "user"
        for block in content:
            if type(block) is dict:
                kind = block.get("type")
                if kind == "text" and len(block) == 2:
                    text = block.get("text")
                    if type(text) is str:
                        kinds.append("text")
                        chars += len(text)
                        if title and text.strip():
                            conv.title = text.strip().splitlines()[0][:TITLE_CHARS]
                            title = False
                        continue
                elif kind == "tool_call" and len(block) == 4:
                    call_id, name, args = block.get("id"), block.get("name"), block.get("input")
                    if type(call_id) is str and type(name) is str and args is not None:
                        kinds.append("tool_use")
                        events.append(("call", "client", call_id, name, None, input_size(args)))
                        continue
            return None
    msg_id = line.get("id")
    if type(msg_id) is not str:
        msg_id = None
    ms = uuid7_ms(msg_id) if msg_id is not None else None
    usage = model = None
    if join is not None:
        found = join.claim(position, msg_id, role, ms)
        if found is not None:
            usage, model = found.usage, found.model
    source_id = line.get("source_id")
    return (
        position,
        msg_id,
        role,
        None,
        model,
        None if ms is None else ms * 1000,
        len(kinds) if role != "tool" else 1,
        chars,
        usage,
        None,
        None,
        source_id if type(source_id) is str else None,
        kinds,
    ), events


def entry_columns(entry: Entry) -> tuple[Row, list[ToolEvent]]:
    """An entry's column values and tool events (the general path, for every other line shape)."""
    at = entry.created_at
    row: Row = (
        entry.position,
        entry.id,
        entry.side,
        entry.origin,
        entry.model,
        None if at is None else round(at.timestamp() * 1_000_000),
        len(entry.blocks),
        text_chars(entry.blocks),
        entry.usage,
        entry.status,
        entry.error,
        entry.source_id,
        [block_kind(b) for b in entry.blocks],
    )
    return row, tool_events(entry, keep_inputs=False)


def chunk(rows: list[Row], events: list[tuple[int, list[ToolEvent]]]) -> EntryColumns:
    """Rows (in :class:`EntryColumns` field order) turned into one chunk of columns."""
    names = [f.name for f in dataclasses.fields(EntryColumns) if f.name != "tool_events"]
    columns = {name: list(values) for name, values in zip(names, zip(*rows, strict=True), strict=True)}
    return EntryColumns(**columns, tool_events=events)
