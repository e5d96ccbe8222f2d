"""Where FlexiGPT keeps its conversations: store folders, month partitions and file names."""

from __future__ import annotations

import re
from pathlib import Path

from ...core.files import NotRegularFile, is_dir, open_regular

__all__ = ["FILE", "PARTITION", "STORE_DIRS", "guess_can_open"]

#: The store folder names: the current one first, then the seed era's.
STORE_DIRS = ("conversations_v1", "conversationsv1")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
#: A conversation file's name, ``<uuid>_<title>.json``: its first group is the conversation's id.
FILE = re.compile(rf"^({_UUID})(?:_.*)?\.json$")
#: A month partition's folder name (``YYYYMM``).
PARTITION = re.compile(r"^[0-9]{6}$")
_PEEK = 4096


def guess_can_open(path: Path) -> bool:
    """A store folder, a folder holding one, a month partition, or a ``<uuid>_<title>.json``."""
    if not is_dir(path):
        return FILE.match(path.name) is not None and _peek(path)
    if path.name in STORE_DIRS:
        return True
    if any(is_dir(path / d) for d in STORE_DIRS):
        return True
    return PARTITION.match(path.name) is not None and path.parent.name in STORE_DIRS


def _peek(path: Path) -> bool:
    try:
        with open_regular(path) as fh:
            head = fh.read(_PEEK)
    except NotRegularFile:  # claimed where a store keeps conversations, so that it is reported
        return path.parent.name in STORE_DIRS or PARTITION.match(path.parent.name) is not None
    except OSError:
        return True  # named as a conversation file and unreadable: claimed, so that it is reported
    return head.lstrip().startswith(b"{") and (b'"messages"' in head or b'"createdAt"' in head)
