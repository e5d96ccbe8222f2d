"""Helpers that build litany-shaped entries (what a `messages/NNN-<origin>.<ext>` file composes to)."""

from __future__ import annotations

from murmur_analysis.core.model import Block, Entry, Text, ToolResult, ToolUse


def use(call_id: str, name: str = "bash") -> ToolUse:
    return ToolUse(call_id, name, {})


def result(call_id: str, text: str = "ok", is_error: bool = False) -> ToolResult:
    return ToolResult(call_id, (Text(text),), is_error)


def user(seq: int, text: str) -> Entry:
    return Entry(seq, "user", (Text(text),), origin="user")


def model(seq: int, *blocks: Block, origin: str = "claude-fable-5") -> Entry:
    return Entry(seq, "assistant", tuple(blocks), origin=origin, model=origin)


def tool(seq: int, *blocks: Block) -> Entry:
    return Entry(seq, "tool", tuple(blocks), origin="tool")
