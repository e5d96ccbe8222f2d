"""Hostile file systems for tests: folders nobody may list, even root, and a real ``chmod 000`` run as nobody."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

__all__ = ["as_nobody", "deny", "deny_open", "shared_tmp"]


def _under(path: Any, folder: str) -> bool:
    try:
        text = os.fsdecode(os.fspath(path)) if not isinstance(path, int) else ""
    except TypeError:
        return False
    full = os.path.abspath(text)
    return full == folder or full.startswith(folder + os.sep)


def deny(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Make ``folder`` behave as a folder at mode 000 does for an unprivileged user, even for root.

    Listing it, and looking at or opening anything inside it, fail with ``PermissionError``;
    the folder itself can still be looked at (its parent is readable).
    """
    target = os.path.abspath(folder)

    def denied(name: str, inside_only: bool) -> Callable[..., Any]:
        real = getattr(os, name)

        def fake(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            hit = _under(path, target) and not (inside_only and os.path.abspath(os.fsdecode(path)) == target)
            if hit:
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real(path, *args, **kwargs)

        return fake

    monkeypatch.setattr(os, "scandir", denied("scandir", False))
    monkeypatch.setattr(os, "listdir", denied("listdir", False))
    monkeypatch.setattr(os, "stat", denied("stat", True))
    monkeypatch.setattr(os, "lstat", denied("lstat", True))
    monkeypatch.setattr(os, "open", denied("open", True))


def deny_open(monkeypatch: pytest.MonkeyPatch, file: Path) -> None:
    """Make ``file`` behave as a file at mode 000 does for an unprivileged user, even for root.

    It can be looked at, not opened.
    """
    target = os.path.abspath(file)
    real = os.open

    def fake(path: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(path, int) and os.path.abspath(os.fsdecode(os.fspath(path))) == target:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake)


@contextmanager
def shared_tmp() -> Iterator[Path]:
    """A temporary folder every user may enter (pytest's own is private to its user)."""
    root = Path(tempfile.mkdtemp(prefix="ma-hostile-"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        for folder, dirs, _ in os.walk(root):
            for d in dirs:
                os.chmod(os.path.join(folder, d), 0o755)
        shutil.rmtree(root, ignore_errors=True)


def as_nobody(work: Callable[[], Any]) -> Any:
    """Run ``work`` in a forked child with the permissions of an unprivileged user; its JSON result.

    Run as root, the child drops to ``nobody`` (root reads a folder at mode 000; nobody does
    not); run as another user, it runs as that user. An exception in the child fails the test.
    """
    # The work runs once here first, for the modules it imports late: the child, as nobody,
    # may not be allowed to read the interpreter's own library (under /root on some machines).
    # Its result here is not used (this process may read what nobody may not).
    with contextlib.suppress(Exception):
        work()

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        code = 0
        try:
            if os.getuid() == 0:
                nobody = pwd.getpwnam("nobody")
                os.setgroups([])
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
            out = json.dumps({"ok": work()})
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            out = json.dumps({"error": f"{type(err).__name__}: {err}"})
            code = 1
        with os.fdopen(write, "w") as fh:
            fh.write(out)
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    result = json.loads(data)
    assert "error" not in result, result.get("error")
    return result["ok"]
