"""A rollout's messages as entries with their blocks: what a conversation handle pages and assembles.

A load reads the engine's columns (:mod:`.decode`); a handle (``corpus.conversation(id)``)
needs each message's blocks, so :meth:`CodexSource.reopen` decodes the lines the load kept as
messages once more, one conversation at a time, into the same kinds the engine lists:

* ``message`` content: ``input_text``/``output_text`` -> ``Text``, ``input_image`` -> ``Image``
  (its ``image_url``), anything else kept whole (``Unknown``);
* ``reasoning``: one ``Thinking`` per summary or content part (``RedactedThinking`` for an
  encrypted one with none);
* ``function_call`` / ``custom_tool_call`` / a ``local_shell_call`` with a ``call_id``:
  ``ToolUse`` (the parsed ``arguments``, else the string; the freeform ``input``; the
  ``action``); their outputs: ``ToolResult`` with the output text and the engine's inferred
  error flag;
* ``compacted``: its ``message`` as ``Text``; any other item kept whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ...core.files import open_regular
from ...core.model import Block, Entry, Image, RedactedThinking, Text, Thinking, ToolResult, ToolUse, Unknown

__all__ = ["entries"]

_TEXTS = ("input_text", "output_text", "text")


def _content(items: object) -> tuple[Block, ...]:
    if isinstance(items, str):
        return (Text(items),)
    if not isinstance(items, list):
        return ()
    out: list[Block] = []
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind in _TEXTS and isinstance(item.get("text", ""), str):
            out.append(Text(item.get("text", "")))
        elif kind == "input_image":
            out.append(Image(item.get("image_url")))
        else:
            out.append(Unknown(item))
    return tuple(out)


def _reasoning(p: dict[str, Any]) -> tuple[Block, ...]:
    lists = [value for value in (p.get("summary"), p.get("content")) if isinstance(value, list)]
    parts = [part.get("text", "") for items in lists for part in items
             if isinstance(part, dict) and part.get("type") in ("summary_text", "reasoning_text", "text")]
    if parts:
        return tuple(Thinking(t if isinstance(t, str) else "") for t in parts)
    encrypted = p.get("encrypted_content")
    return (RedactedThinking(encrypted),) if isinstance(encrypted, str) else ()


def _call(p: dict[str, Any], kind: str) -> tuple[Block, ...]:
    cid = p.get("call_id")
    if not isinstance(cid, str):
        return (Unknown(p),)
    if kind == "function_call":
        raw = p.get("arguments")
        try:
            value: object = orjson.loads(raw) if isinstance(raw, str) else raw
        except orjson.JSONDecodeError:
            value = raw
        return (ToolUse(cid, str(p.get("name") or ""), value),)
    if kind == "custom_tool_call":
        return (ToolUse(cid, str(p.get("name") or ""), p.get("input")),)
    return (ToolUse(cid, str(p.get("name") or "local_shell"), p.get("action")),)


def _output(p: dict[str, Any], is_error: bool | None) -> tuple[Block, ...]:
    cid = p.get("call_id")
    if not isinstance(cid, str):
        return (Unknown(p),)
    body = p.get("output")
    if isinstance(body, dict):
        body = body.get("content")
    content = tuple(b for b in _content(body) if isinstance(b, Text))
    return (ToolResult(cid, content, is_error),)


def _blocks(line: dict[str, Any], is_error: bool | None) -> tuple[Block, ...]:
    kind = line.get("type")
    p = line.get("payload", line) if "payload" in line else line
    if kind == "compacted":
        message = p.get("message") if isinstance(p, dict) else None
        return (Text(message),) if isinstance(message, str) else ()
    if not isinstance(p, dict):
        return (Unknown(p),)
    item = p.get("type")
    if item == "message":
        return _content(p.get("content"))
    if item == "reasoning":
        return _reasoning(p)
    if item in ("function_call", "custom_tool_call", "local_shell_call"):
        return _call(p, str(item))
    if item in ("function_call_output", "custom_tool_call_output"):
        return _output(p, is_error)
    return (Unknown(p),)


def entries(path: Path, lines: Sequence[int], sides: Sequence[str], models: Sequence[str | None],
            created: Sequence[datetime | None], errors: Sequence[bool | None]) -> list[Entry]:
    """The entries of the message lines ``lines`` (1-based, ascending) of ``path``, positions from 0."""
    with open_regular(path) as fh:
        data = fh.read().split(b"\n")
    out: list[Entry] = []
    for position, (n, side, model, at, error) in enumerate(zip(lines, sides, models, created, errors, strict=True)):
        try:
            line = orjson.loads(data[n - 1])
        except orjson.JSONDecodeError:  # a line serde_json reads and orjson does not (a huge integer)
            line = None
        blocks = _blocks(line, error) if isinstance(line, dict) else (Unknown(None),)
        out.append(Entry(position, side, blocks, model=model, created_at=at))
    return out
