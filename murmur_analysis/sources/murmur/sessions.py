"""Where murmur sessions keep their traces: the ``trace.jsonl`` files a path or a home names.

Sessions do not live under ``~/.murmur``: a session workdir is
``<manifest-dir>/workdir/<session-id>`` or, with ``mur run --workdir W``,
``W/.murmur/<session-id>`` (murmur docs, ``reference/workdir.md``). :func:`trace_files` resolves
any of those shapes; :func:`discover` finds the ones that sit under a murmur home.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...core.files import check_file, entry_is_dir, is_dir, listing
from ..base import Diagnostics

__all__ = ["TRACE_NAME", "discover", "trace_files"]

TRACE_NAME = "trace.jsonl"


def _children(path: Path, diagnostics: Diagnostics | None) -> list[Path]:
    if not is_dir(path):
        return []
    return [Path(e.path) for e in listing(path, diagnostics) if entry_is_dir(e)]


def trace_files(path: Path, diagnostics: Diagnostics | None = None) -> list[Path]:
    """The ``trace.jsonl`` files a sessions path names.

    ``path`` may be a ``trace.jsonl``; a session workdir (holding ``trace.jsonl``); a folder of
    session workdirs (``<manifest-dir>/workdir/`` or ``<workdir>/.murmur/``); or a folder
    holding one of those as ``workdir/`` or ``.murmur/`` (a manifest directory, or a
    ``--workdir``). Folders that cannot be listed and traces that are not regular files are
    reported to ``diagnostics``.
    """
    if not is_dir(path):
        return [path] if check_file(path, diagnostics) else []
    if os.path.lexists(path / TRACE_NAME):
        return [path / TRACE_NAME] if check_file(path / TRACE_NAME, diagnostics) else []
    found: list[Path] = []
    for root in (path, path / ".murmur", path / "workdir"):
        for child in _children(root, diagnostics):
            trace = child / TRACE_NAME
            if check_file(trace, diagnostics):
                found.append(trace)
    return found


def discover(home: Path, diagnostics: Diagnostics | None = None) -> list[Path]:
    """Traces that sit under a murmur home.

    * ``formations/<formation>/<member>/.murmur/<session>/trace.jsonl``: murmur launches each
      formation member with its working directory under the home, so their sessions live there;
    * ``sessions/<entry>``: each entry resolved as :func:`trace_files` does (this toolkit's
      place to drop or link session workdirs next to the records they belong to).
    """
    found: list[Path] = []
    for formation in _children(home / "formations", diagnostics):
        for member in _children(formation, diagnostics):
            found.extend(trace_files(member / ".murmur", diagnostics))
    sessions = home / "sessions"
    if is_dir(sessions):
        for entry in listing(sessions, diagnostics):
            found.extend(trace_files(Path(entry.path), diagnostics))
    return found
