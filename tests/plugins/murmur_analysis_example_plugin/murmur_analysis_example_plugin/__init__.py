"""An example source plugin: plain-text chat transcripts, one ``*.chat.txt`` file per conversation.

A transcript is lines of ``<role>: <text>``; a line starting with whitespace continues the
message before it; blank lines are ignored. Any other line is reported as a diagnostic. A
tool call is written ``assistant: -> <call_id> <tool> <json input>`` and its result
``tool: <- <call_id> [error] <text>``.

The package registers itself under the ``murmur_analysis.sources`` entry-point group, which is
all a plugin needs: ``ma.list_sources()`` lists it and ``ma.load`` detects its files. A runtime
appends to its transcripts, so the source mixes in ``AppendOnlyLines``: an incremental export
reads only the lines appended since the last one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from murmur_analysis.core.handoff import Conversation, Summary
from murmur_analysis.core.model import Block, Entry, Text, ToolResult, ToolUse
from murmur_analysis.sources.base import READ_ALL, Diagnostics, ReadContext, Source
from murmur_analysis.sources.resume import AppendOnlyLines

__all__ = ["SAMPLE", "PlaintextSource"]

#: The plugin's own sample transcripts.
SAMPLE = Path(__file__).resolve().parent / "sample"
SUFFIX = ".chat.txt"
_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*): ?(.*)$")
_CALL = re.compile(r"^-> (\S+) (\S+) (.*)$")
_RESULT = re.compile(r"^<- (\S+) (error )?(.*)$")


def _blocks(role: str, text: str) -> tuple[Block, ...]:
    call = _CALL.match(text) if role == "assistant" else None
    if call:
        try:
            args: Any = json.loads(call.group(3))
        except json.JSONDecodeError:
            args = call.group(3)
        return (ToolUse(call.group(1), call.group(2), args),)
    result = _RESULT.match(text) if role == "tool" else None
    if result:
        return (ToolResult(result.group(1), (Text(result.group(3)),), result.group(2) is not None),)
    return (Text(text),)


class PlaintextSource(AppendOnlyLines, Source):
    """Plain-text chat transcripts (``*.chat.txt``)."""

    name: ClassVar[str] = "plaintext"
    description: ClassVar[str] = "plain-text chat transcripts (*.chat.txt), an example plugin"

    def guess_can_open(self, path: Path) -> bool:
        """A ``*.chat.txt`` file, or a folder holding one."""
        if path.is_file():
            return path.name.endswith(SUFFIX)
        return path.is_dir() and any(p.name.endswith(SUFFIX) for p in path.iterdir() if p.is_file())

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every transcript under ``path``."""
        files = [path] if path.is_file() else sorted(p for p in path.rglob(f"*{SUFFIX}") if p.is_file())
        for file in files:
            yield self._read(file, diagnostics)

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Read the transcript ``key`` again."""
        return self._read(Path(str(key)), diagnostics)

    def _read(self, file: Path, diagnostics: Diagnostics) -> Conversation:
        conv_id = file.name[: -len(SUFFIX)]
        try:
            data = file.read_bytes()
        except OSError as err:
            diagnostics.report(file, "unreadable", f"could not read the transcript: {err}")
            data = b""
        entries = _entries(data, 1, file, diagnostics) or []
        return Conversation(self.name, conv_id, entries, key=str(file), path=str(file),
                            summary=Summary(title=conv_id.replace("-", " ")),
                            resume=self.whole_point(entries, data.count(b"\n")))

    def decode_lines(self, conv: Conversation, data: bytes, first_line: int,
                     diagnostics: Diagnostics) -> list[Entry] | None:
        """Appended lines alone; not when one continues the message before them."""
        return _entries(data, first_line, Path(str(conv.path)), diagnostics, alone=True)


def _entries(data: bytes, first_line: int, file: Path, diagnostics: Diagnostics,
             alone: bool = False) -> list[Entry] | None:
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as err:
        diagnostics.report(file, "unreadable", f"could not read the transcript: {err}")
        return None
    turns: list[tuple[str, str]] = []
    for number, raw in enumerate(lines, first_line):
        line = raw.removesuffix("\r")
        if not line.strip():
            continue
        if line[0].isspace() and alone and not turns:
            return None  # it would continue a message of the lines before
        if line[0].isspace() and turns:
            role, text = turns[-1]
            turns[-1] = (role, f"{text}\n{line.strip()}")
            continue
        m = _LINE.match(line)
        if m is None:
            diagnostics.report(file, "not_a_message", f"line {number} is not '<role>: <text>'", line=number)
            continue
        turns.append((m.group(1), m.group(2)))
    return [Entry(i, role, _blocks(role, text)) for i, (role, text) in enumerate(turns)]
