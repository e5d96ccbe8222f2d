"""Where litany workspaces are: a workspace, a workspaces root, or any repository with agent branches."""

from __future__ import annotations

import os
from pathlib import Path

from ...core.files import check_file, is_dir, listing, open_regular
from ..base import Diagnostics

__all__ = ["find_git_dir", "find_workspaces", "guess_can_open", "is_git_dir", "shallow_boundary"]


def is_git_dir(path: Path) -> bool:
    """Whether ``path`` looks like a git directory (``HEAD`` file, ``objects/`` and ``refs/``)."""
    return os.path.isfile(path / "HEAD") and os.path.isdir(path / "objects") and os.path.isdir(path / "refs")


def find_git_dir(path: Path) -> Path | None:
    """The git directory of a bare repository, a workspace (``repo.git/``) or a work tree."""
    for candidate in (path / "repo.git", path, path / ".git"):
        if os.path.isdir(candidate) and is_git_dir(candidate):
            return candidate
    return None


def shallow_boundary(git_dir: Path) -> frozenset[str]:
    """The boundary commits of a shallow clone (``<git_dir>/shallow``); empty for a whole history."""
    try:
        with open_regular(git_dir / "shallow") as fh:
            return frozenset(line.strip().decode("ascii", "replace") for line in fh if line.strip())
    except OSError:
        return frozenset()


def _has_agents(git_dir: Path) -> bool:
    if (git_dir / "refs" / "heads" / "agents").is_dir():
        return True
    try:
        with open_regular(git_dir / "packed-refs") as fh:
            return any(b" refs/heads/agents/" in line for line in fh)
    except OSError:
        return False


def _not_a_repository(repo: Path, diagnostics: Diagnostics | None) -> None:
    """Report why a workspace's ``repo.git`` is not read: it cannot be listed, or is no repository."""
    if diagnostics is None:
        return
    before = len(diagnostics.rows)
    if not listing(repo, diagnostics) and len(diagnostics.rows) > before:
        return  # reported as a folder that cannot be listed
    if os.path.lexists(repo / "HEAD") and not check_file(repo / "HEAD", diagnostics):
        return  # reported: HEAD is a FIFO, a folder, a broken link...
    diagnostics.report(repo, "not_a_repository", "the workspace's repo.git is not a git repository "
                       "(it needs a HEAD file, objects/ and refs/); skipped")


def find_workspaces(
    path: Path, limit: int | None = None, diagnostics: Diagnostics | None = None
) -> list[tuple[Path, Path | None]]:
    """``(git_dir, steps_dir)`` of each workspace at or directly under ``path``.

    A folder that cannot be listed is reported to ``diagnostics`` when it is given.
    """
    git_dir = find_git_dir(path)
    if git_dir is None and is_dir(path / "repo.git"):
        _not_a_repository(path / "repo.git", diagnostics)
        return []
    if git_dir is not None:
        if git_dir.name == "repo.git" and is_dir(git_dir.parent / "steps"):
            return [(git_dir, git_dir.parent / "steps")]
        return [(git_dir, None)] if git_dir.name == "repo.git" or _has_agents(git_dir) else []
    base = path / "workspaces" if is_dir(path / "workspaces") else path
    found: list[tuple[Path, Path | None]] = []
    if not is_dir(base):
        return found
    for entry in listing(base, diagnostics):
        child = Path(entry.path)
        repo = child / "repo.git"
        if entry.name.startswith(".") or not is_dir(repo):
            continue
        if not is_git_dir(repo):
            _not_a_repository(repo, diagnostics)
            continue
        found.append((repo, child / "steps" if is_dir(child / "steps") else None))
        if limit is not None and len(found) >= limit:
            break
    return found


def guess_can_open(path: Path) -> bool:
    """Whether ``path`` is a workspace, a workspaces root, or a repo with ``agents/*`` branches.

    A workspace whose ``repo.git`` cannot be read is claimed too, so that it is reported.
    """
    return bool(find_workspaces(path, limit=1)) or is_dir(path / "repo.git")
