"""The command line run on a pseudo-terminal, as a person at a terminal runs it."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import sys
import termios

CLI = [sys.executable, "-m", "murmur_analysis.cli"]


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
