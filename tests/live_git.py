"""Commit to an existing bare repository one file at a time, as a running litany agent does."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from build_litany import IDENT, git_env


def git(git_dir: Path, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), *args], input=stdin, capture_output=True,
                          env=env or git_env(), check=True)
    return done.stdout.decode().strip()


def commit_file(git_dir: Path, branch: str, path: str, content: bytes, when: int) -> str:
    """Add ``path`` with ``content`` on top of ``branch`` and move the branch (compare-and-swap)."""
    ref = f"refs/heads/{branch}"
    head = git(git_dir, "rev-parse", "--verify", ref)
    blob = git(git_dir, "hash-object", "-w", "--stdin", stdin=content)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**git_env(), "GIT_INDEX_FILE": os.path.join(tmp, "index")}
        git(git_dir, "read-tree", head, env=env)
        git(git_dir, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", env=env)
        tree = git(git_dir, "write-tree", env=env)
    name, _, mail = IDENT.partition(" <")
    stamp = f"{when} +0000"
    env = {**git_env(), "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": mail.rstrip(">"),
           "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": mail.rstrip(">"),
           "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    sha = git(git_dir, "commit-tree", tree, "-p", head, "-m", f"add {path}", env=env)
    git(git_dir, "update-ref", ref, sha, head)
    return sha
