"""A rollout's messages as entries with their blocks: what a conversation handle pages and assembles.

A load reads the engine's columns (:mod:`.decode`); a handle (``corpus.conversation(id)``)
needs each message's blocks, so :meth:`CodexSource.reopen` has the engine read the lines the
load kept as messages once more (``_native.codex_blocks``), by the rules its ``codex`` format
reads their rows by (``native/src/formats/codex.rs``: what an item holds is written there
alone). Each block it hands over becomes its class here: ``text`` a :class:`Text`, ``image`` an
:class:`Image` (its ``image_url``), ``thinking`` a :class:`Thinking`, ``redacted_thinking`` a
:class:`RedactedThinking`, ``tool_use`` a :class:`ToolUse` (a function call's ``arguments``
read as JSON where serde_json reads them, a freeform ``input``, a shell call's ``action``),
``tool_result`` a :class:`ToolResult` of its texts with the error flag its output says, and
anything else an :class:`Unknown` holding the item or part whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.model import Block, Entry, Image, RedactedThinking, Text, Thinking, ToolResult, ToolUse, Unknown
from ..lines import file_bytes

__all__ = ["entries"]


def _block(part: tuple[Any, ...]) -> Block:
    kind = part[0]
    if kind == "text":
        return Text(part[1])
    if kind == "image":
        return Image(part[1])
    if kind == "thinking":
        return Thinking(part[1])
    if kind == "redacted_thinking":
        return RedactedThinking(part[1])
    if kind == "tool_use":
        return ToolUse(part[1], part[2] or "", part[3])
    if kind == "tool_result":
        return ToolResult(part[1], tuple(Text(t) for t in part[2]), part[3])
    return Unknown(part[1])


def entries(path: Path, lines: Sequence[int], sides: Sequence[str], models: Sequence[str | None],
            created: Sequence[datetime | None]) -> list[Entry]:
    """The entries of the message lines ``lines`` (1-based, ascending) of ``path``, positions from 0.

    A file that cannot be read again (gone, or no longer decompressing) gives no entries.
    """
    from ...engine import _native

    data = file_bytes(path)
    if isinstance(data, str):
        return []
    split = data.split(b"\n")
    blocks = _native.codex_blocks([split[n - 1] if n <= len(split) else b"" for n in lines])
    return [Entry(position, side, tuple(_block(p) for p in found) if found is not None else (Unknown(None),),
                  model=model, created_at=at)
            for position, (found, side, model, at) in enumerate(zip(blocks, sides, models, created, strict=True))]
