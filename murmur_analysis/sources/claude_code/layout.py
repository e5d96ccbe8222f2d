"""Where Claude Code keeps its sessions, and which files of a home are which.

A Claude Code config dir (``~/.claude``, ``~/.config/claude``, or each entry of
``CLAUDE_CONFIG_DIR``) holds ``projects/<project>/``, one folder per working directory, and in it:

* ``<session>.jsonl``: a main session (its id is the file's stem);
* ``<session>/subagents/agent-<id>.jsonl``: a subagent's transcript, with
  ``agent-<id>.meta.json`` beside it naming the spawning call (``toolUseId``);
* ``<session>/subagents/workflows/<wf>/agent-<id>.jsonl``: a workflow's agents (the
  ``journal.jsonl`` beside them is no transcript and is not read);
* ``agent-<id>.jsonl`` directly in the project folder: the older, flat subagent layout.

``projects/`` is searched recursively for ``*.jsonl``, in name order.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from ...core.diagnostics import Diagnostics
from ...core.files import check_file, entry_is_dir, is_dir, listing, open_regular
from ...core.paths import user_path

__all__ = ["PROJECTS", "SessionFile", "default_homes", "files_under", "guess_can_open", "looks_like_claude",
           "projects_of"]

PROJECTS = "projects"
SUBAGENTS = "subagents"
_PEEK = 1 << 20
_SCAN_DIRS = 64
#: The ``type`` of a Claude Code line (``formats-agents.md`` A.1).
_TYPES = frozenset({
    "user", "assistant", "system", "summary", "ai-title", "custom-title", "last-prompt", "mode",
    "file-history-snapshot", "queue-operation", "attachment", "progress", "agent-setting", "pr-link",
})


@dataclass(frozen=True, slots=True)
class SessionFile:
    """One transcript file of a home.

    Attributes:
        path: the file.
        session: the session it belongs to: its own stem (a main session), the folder holding
            its ``subagents/`` (a subagent), or ``None`` (a flat ``agent-*.jsonl``: its lines say).
        agent: the subagent's id (``agent-<id>.jsonl``), or ``None`` for a main session.
        name: the subagent's path below ``subagents/`` without ``.jsonl`` (``agent-x``,
            ``workflows/w1/agent-y``), or its stem for a flat one.
        spawned_by: the spawning call's id from ``agent-<id>.meta.json`` (``toolUseId``), if any.
    """

    path: Path
    session: str | None
    agent: str | None
    name: str
    spawned_by: str | None = None


def default_homes(environ: dict[str, str] | None = None) -> list[Path]:
    """The Claude Code config dirs to read when no path is given, as ccusage finds them.

    ``CLAUDE_CONFIG_DIR``, when set, is split on ``,``; each entry, trimmed and ``~``-expanded,
    is a config dir or its ``projects/`` dir, and no default is added. Otherwise
    ``$XDG_CONFIG_HOME/claude`` (default ``~/.config/claude``) and ``~/.claude``. Only dirs that
    have a ``projects/`` folder are kept, each once, in that order.
    """
    env = os.environ if environ is None else environ
    given = env.get("CLAUDE_CONFIG_DIR")
    if given is not None and given.strip():
        candidates = [user_path(p.strip()) for p in given.split(",") if p.strip()]
    else:
        xdg = env.get("XDG_CONFIG_HOME") or "~/.config"
        candidates = [user_path(xdg) / "claude", user_path("~/.claude")]
    homes: list[Path] = []
    for c in candidates:
        home = c.parent if c.name == PROJECTS and not is_dir(c / PROJECTS) else c
        if is_dir(home / PROJECTS) and home not in homes:
            homes.append(home)
    return homes


def _first_object(path: Path) -> dict[str, object] | None:
    """The first line of ``path`` that is a JSON object (within the first MiB), or ``None``."""
    with open_regular(path) as fh:
        budget = _PEEK
        while budget > 0 and (line := fh.readline(budget)):  # a line at a time: most files' first decides
            budget -= len(line)
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut by the budget is not one
            return value if isinstance(value, dict) else None
    return None


def looks_like_claude(path: Path) -> bool:
    """Whether a ``.jsonl`` file's first object line is a Claude Code line (never raises).

    A Claude Code line has a known ``type`` and either a ``sessionId`` or a ``uuid``/``leafUuid``,
    and no ``payload`` (Codex's envelope).
    """
    if path.suffix != ".jsonl":
        return False
    try:
        first = _first_object(path)
    except OSError:
        return False
    if first is None or "payload" in first or first.get("type") not in _TYPES:
        return False
    return any(k in first for k in ("sessionId", "uuid", "leafUuid"))


def _holds_sessions(folder: Path) -> bool:
    """Whether a folder holds a ``.jsonl`` that looks like Claude Code (the first few looked at)."""
    names = [e for e in listing(folder, None) if e.name.endswith(".jsonl")][:_SCAN_DIRS]
    return any(looks_like_claude(Path(e.path)) for e in names)


def projects_of(path: Path) -> Path | None:
    """The folder to search for transcripts, if ``path`` looks like Claude Code's.

    A config dir (it has ``projects/``), a ``projects/`` dir, or a project dir: each claimed
    when a project folder under it holds a session that looks like Claude Code.
    """
    if not is_dir(path):
        return None
    root = path / PROJECTS if is_dir(path / PROJECTS) else path
    if _holds_sessions(root):
        return root
    for entry in listing(root, None)[:_SCAN_DIRS * 4]:
        if entry_is_dir(entry) and _holds_sessions(Path(entry.path)):
            return root
    return None


def guess_can_open(path: Path) -> bool:
    """A config dir, a ``projects/`` dir or a project dir holding sessions, or a session ``.jsonl``."""
    if path.is_dir():
        return projects_of(path) is not None
    return looks_like_claude(path)


def _meta_call(path: Path) -> str | None:
    """``toolUseId`` of a subagent's ``agent-<id>.meta.json``, if it has one."""
    meta = path.with_name(path.name[: -len(".jsonl")] + ".meta.json")
    try:
        with open_regular(meta) as fh:
            value = orjson.loads(fh.read(_PEEK))
    except (OSError, orjson.JSONDecodeError):
        return None
    call = value.get("toolUseId") if isinstance(value, dict) else None
    return call if isinstance(call, str) else None


def classify(path: Path) -> SessionFile:
    """What a transcript file is, from where it stands."""
    stem = path.name[: -len(".jsonl")]
    parts = path.parts
    if SUBAGENTS in parts[:-1]:
        at = len(parts) - 1 - parts[:-1][::-1].index(SUBAGENTS) - 1  # the last subagents/ folder
        session = parts[at - 1] if at >= 1 else None
        name = "/".join((*parts[at + 1:-1], stem))
        agent = stem[len("agent-"):] if stem.startswith("agent-") else stem
        return SessionFile(path, session, agent, name, _meta_call(path))
    if stem.startswith("agent-"):
        return SessionFile(path, None, stem[len("agent-"):], stem)
    return SessionFile(path, stem, None, stem)


def _walk(folder: Path, diagnostics: Diagnostics) -> Iterator[Path]:
    """Every ``*.jsonl`` below ``folder``, in name order, depth first (no ``workflows/**/journal.jsonl``)."""
    for entry in listing(folder, diagnostics):
        path = Path(entry.path)
        if entry_is_dir(entry):
            if not entry.is_symlink():
                yield from _walk(path, diagnostics)
        elif entry.name.endswith(".jsonl"):
            if entry.name == "journal.jsonl" and "workflows" in path.parts:
                continue
            if check_file(path, diagnostics):
                yield path


def files_under(path: Path, diagnostics: Diagnostics) -> list[SessionFile]:
    """Every transcript under ``path``: a home, ``projects/``, a project, or one session file.

    A session file given alone is read with its own subagents (``<session>/subagents/``).
    """
    if not is_dir(path):
        if not check_file(path, diagnostics, missing_ok=False):
            return []
        found = [path]
        subagents = path.with_name(path.name[: -len(".jsonl")]) / SUBAGENTS
        if path.suffix == ".jsonl" and is_dir(subagents):
            found += list(_walk(subagents, diagnostics))
        return [classify(p) for p in found]
    root = path / PROJECTS if is_dir(path / PROJECTS) else path
    return [classify(p) for p in _walk(root, diagnostics)]
