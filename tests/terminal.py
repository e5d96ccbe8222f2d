"""The command line run as a person runs it: in a subprocess, or on a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]


def on_a_terminal(args: list[str], columns: int = 120) -> tuple[int, str]:
    """Run ``murmur-analysis ARGS`` with stdout and stderr a terminal ``columns`` wide; its status and screen."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdout and stderr are the terminal
        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
        os.execv(sys.executable, [*CLI, *args])
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


def run(*args: str | Path, code: int = 0, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``murmur-analysis ARGS`` piped (``columns``: as ``COLUMNS``); assert its exit status is ``code``."""
    env = None if columns is None else {**os.environ, "COLUMNS": str(columns)}  # conftest: no COLUMNS else
    done = subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, env=env)
    assert done.returncode == code, done.stderr
    return done
