"""Where murmur keeps its records: a ``conversation.jsonl`` per context, in a folder per conversation."""

from __future__ import annotations

import os
from pathlib import Path

from ...core.diagnostics import Diagnostics
from ...core.files import entry_is_dir, is_dir, listing

__all__ = ["CONVERSATIONS", "RECORD_NAME", "guess_can_open", "holds_record", "visible_dirs"]

#: A context's record.
RECORD_NAME = "conversation.jsonl"
#: The folder of a murmur home that holds its conversations.
CONVERSATIONS = "conversations"
#: How many folders a guess looks into, at each level, before it gives up.
_GUESS_DIRS = 64


def visible_dirs(path: Path, diagnostics: Diagnostics | None = None) -> list[Path]:
    """The folders directly inside ``path`` (links followed), hidden ones left out; links last.

    Links come after real folders, so that data reached both ways is named by its real folder.
    """
    found = [e for e in listing(path, diagnostics) if not e.name.startswith(".") and entry_is_dir(e)]
    return [Path(e.path) for e in sorted(found, key=lambda e: e.is_symlink())]


def holds_record(folder: Path) -> bool:
    """Whether a ``conversation.jsonl`` of any kind stands in ``folder`` (never raises)."""
    return os.path.lexists(folder / RECORD_NAME)


def guess_can_open(path: Path) -> bool:
    """A ``conversation.jsonl``, or a folder holding records at one of murmur's depths."""
    if not is_dir(path):
        return path.name == RECORD_NAME and os.path.lexists(path)
    if holds_record(path) or is_dir(path / CONVERSATIONS):
        return True
    for n, child in enumerate(visible_dirs(path)):
        if n >= _GUESS_DIRS:
            break
        if holds_record(child):
            return True
        if path.name == CONVERSATIONS and any(holds_record(g) for g in visible_dirs(child)[:_GUESS_DIRS]):
            return True
    return False
