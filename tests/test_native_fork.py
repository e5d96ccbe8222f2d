"""The native engine keeps no threads between calls, so a process forked after a load can load too.

Python's ``multiprocessing`` (fork start method), Dask's fork workers and a test that drops its
privileges all fork a process that has already loaded; a global thread pool whose threads the
child lacks would make the child's first parallel call wait forever.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from murmur_home import T0, msg, record, text

import murmur_analysis as ma


def test_a_process_forked_after_a_load_loads_and_pages(tmp_path: Path) -> None:
    h = tmp_path / "h"
    for ctx, n in (("a", 40), ("b", 30)):
        lines = [msg("user" if i % 2 == 0 else "assistant", T0 + i, text(f"m{i}"), n=i) for i in range(n)]
        record(h, "bot", ctx, lines)
    parent = ma.load(h)  # the engine's parallel scan has run in this process
    pid = os.fork()
    if pid == 0:  # the child: exits 0 only if it loaded the same rows
        signal.alarm(60)  # a hang fails the test instead of blocking it
        try:
            ok = len(ma.load(h).messages) == len(parent.messages) == 70
            first = next(h.rglob("conversation.jsonl"))
            ok = ok and ma.read_messages(first, limit=5).total > 0
        except BaseException:  # noqa: BLE001 - the exit code carries the outcome
            ok = False
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, f"child status {status}"
