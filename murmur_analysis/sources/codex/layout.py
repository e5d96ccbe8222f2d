"""Where Codex CLI keeps its rollouts, and which files under a path are rollouts.

A Codex home is ``$CODEX_HOME``, else ``~/.codex``. Active rollouts live under ``sessions/``
(``YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``, or flat in early versions) and archived
ones under ``archived_sessions/``; both are read. A rollout may be zstd-compressed
(``rollout-….jsonl.zst``): where the plain ``.jsonl`` stands beside it the plain one wins, as in
Codex; a compressed one alone is read (decompressed in memory by the line reader).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...core.diagnostics import Diagnostics
from ...core.files import NotRegularFile, is_dir, open_regular

__all__ = ["ARCHIVED", "SESSIONS", "Found", "default_homes", "discover", "guess_can_open", "holds_rollouts",
           "is_rollout_file"]

#: The folders of a Codex home that hold rollouts: active, then archived.
SESSIONS, ARCHIVED = "sessions", "archived_sessions"
_ROLLOUT = re.compile(r"^rollout-.*\.jsonl(\.zst)?$")
_PEEK = 4096
#: How many folder entries a guess looks at before it gives up.
_GUESS_BUDGET = 256


@dataclass(frozen=True, slots=True)
class Found:
    """One rollout file found under a path.

    Attributes:
        path: the file.
        archived: whether it is under ``archived_sessions/``.
    """

    path: Path
    archived: bool


def default_homes() -> list[Path]:
    """The Codex homes of this user that exist: ``$CODEX_HOME``, else ``~/.codex``."""
    env = os.environ.get("CODEX_HOME")
    home = Path(env).expanduser() if env else Path.home() / ".codex"
    return [home] if is_dir(home) else []


def _named_rollout(name: str) -> bool:
    return _ROLLOUT.match(name) is not None


def is_rollout_file(path: Path) -> bool:
    """A ``rollout-….jsonl`` whose first line reads as Codex's, or any ``rollout-….jsonl.zst``.

    A file named as a rollout that cannot be read is claimed, so that its diagnostics row says why.
    """
    if not _named_rollout(path.name):
        return False
    if path.name.endswith(".zst"):
        return True
    try:
        with open_regular(path) as fh:
            head = fh.read(_PEEK)
    except NotRegularFile:
        return False
    except OSError:
        return True
    first = head.split(b"\n", 1)[0].lstrip()
    return first.startswith(b"{") and (b"session_meta" in first or (b'"id"' in first and b'"timestamp"' in first))


def holds_rollouts(folder: Path) -> bool:
    """Whether a walk of ``folder`` meets a file named ``rollout-*.jsonl[.zst]`` within a few hundred entries."""
    seen = 0
    stack = [folder]
    while stack and seen < _GUESS_BUDGET:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if _named_rollout(entry.name):
                return True
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(Path(entry.path))
            except OSError:
                continue
    return False


def guess_can_open(path: Path) -> bool:
    """A Codex home (rollouts under ``sessions/`` or ``archived_sessions/``), a tree of rollouts, or a rollout."""
    if not path.is_dir():
        return is_rollout_file(path)
    if any((path / d).is_dir() and holds_rollouts(path / d) for d in (SESSIONS, ARCHIVED)):
        return True
    return bool({SESSIONS, ARCHIVED} & set(path.parts)) and holds_rollouts(path)


def _walk(root: Path, archived: bool, diagnostics: Diagnostics) -> list[Found]:
    found: list[Found] = []

    def unlistable(err: OSError) -> None:
        diagnostics.report(err.filename or str(root), "unreadable", f"folder could not be listed: {err.strerror}")

    for folder, dirs, files in os.walk(root, onerror=unlistable):
        dirs.sort()
        for name in sorted(files):
            if _named_rollout(name):
                path = Path(folder) / name
                found.append(Found(path, archived or ARCHIVED in path.relative_to(root).parts))
    return found


def discover(path: Path, diagnostics: Diagnostics) -> list[Found]:
    """Every rollout under ``path`` (a home, a ``sessions/`` tree, any folder, or one file), in path order.

    A home's ``sessions/`` is listed before its ``archived_sessions/``. A compressed rollout whose
    plain twin is found too is left to it.
    """
    if not is_dir(path):
        found = [Found(path, ARCHIVED in path.parts)]
    else:
        roots = [(path / SESSIONS, False), (path / ARCHIVED, True)]
        present = [(r, a) for r, a in roots if is_dir(r)]
        if present:
            found = [f for r, a in present for f in _walk(r, a, diagnostics)]
        else:
            found = _walk(path, ARCHIVED in path.parts, diagnostics)
    plain = {f.path for f in found if not f.path.name.endswith(".zst")}
    out: list[Found] = []
    for f in found:
        if f.path.name.endswith(".zst") and f.path.with_suffix("") in plain:
            continue
        out.append(f)
    return out
