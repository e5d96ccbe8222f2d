"""The command line ends quietly when its reader goes away (``| head -1``) or Ctrl-C stops it:
the documented exit status, no traceback."""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from murmur_home import T0, header, msg, record, text

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141  # as README.md's "Exit status" says


def _quiet(stderr: str) -> None:
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "KeyboardInterrupt" not in stderr
    assert "Exception ignored" not in stderr, stderr


def _env(unbuffered: bool = False) -> dict[str, str]:
    """The environment with stdout buffered as usual for a pipe, or written through (``PYTHONUNBUFFERED``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    return {**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env


@pytest.mark.parametrize(("args", "unbuffered"), [
    (["diagnostics", "{samples}"], False),  # the output waits in the buffer: the pipe breaks at the last flush
    (["diagnostics", "{samples}"], True),  # the pipe breaks at the first print
    (["report", "daily", "{samples}", "--csv"], False),
    (["--help"], False),  # argparse prints, then exits
], ids=["diagnostics", "diagnostics-unbuffered", "report-csv", "help"])
def test_a_reader_gone_before_the_output_is_written_ends_quietly_with_141(samples: Path, args: list[str],
                                                                            unbuffered: bool) -> None:
    read, write = os.pipe()
    os.close(read)  # nobody will ever read: the first write of the output fails with EPIPE
    try:
        done = subprocess.run([*CLI, *(a.format(samples=samples) for a in args)], stdout=write,
                              stderr=subprocess.PIPE, text=True, env=_env(unbuffered))
    finally:
        os.close(write)
    _quiet(done.stderr)
    assert done.stderr == "" and done.returncode == EXIT_BROKEN_PIPE


def test_a_reader_that_stops_after_one_line_ends_quietly_with_141(tmp_path: Path) -> None:
    """A page far bigger than a pipe holds: the pipe breaks while the page is being written."""
    messages = [msg("user" if i % 2 == 0 else "assistant", T0 + i * 1000, text(f"{i} " + "x" * 20_000), n=i)
                for i in range(100)]
    path = record(tmp_path, "bot", "ctx", [header(), *messages])
    for _ in range(3):
        with subprocess.Popen([*CLI, "page", str(path), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=_env()) as proc:  # its pipes closed at the end
            assert proc.stdout is not None and proc.stderr is not None
            assert proc.stdout.readline().strip() == "{"
            proc.stdout.close()
            stderr = proc.stderr.read()
            _quiet(stderr)
            assert stderr == "" and proc.wait() == EXIT_BROKEN_PIPE


def test_ctrl_c_during_a_load_exits_130_without_a_traceback(tmp_path: Path) -> None:
    for r in range(1500):
        record(tmp_path, f"bot{r % 10}", f"ctx-{r}",
               [header(), *(msg("user" if i % 2 == 0 else "assistant", T0 + i * 1000, n=i) for i in range(100))])
    terminal, stderr = os.openpty()  # stderr a terminal, so the progress bar says when the load has begun
    fcntl.ioctl(stderr, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    proc = subprocess.Popen([*CLI, "summary", str(tmp_path)], stdout=subprocess.PIPE, stderr=stderr, env=_env())
    os.close(stderr)
    screen = os.read(terminal, 65536)  # the bar's first drawing: the command is loading
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # the command has closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    os.close(terminal)
    said = screen.decode(errors="replace")
    _quiet(said)
    assert proc.returncode == EXIT_INTERRUPTED, said
    assert said.rstrip().endswith("murmur-analysis: interrupted") and out == b""  # stopped before any output


@pytest.mark.parametrize("run_as", [["-m", "probe"], ["probe.py"]])
def test_ctrl_c_inside_code_made_from_a_string_still_exits_130(tmp_path: Path, run_as: list[str]) -> None:
    """A Ctrl-C that lands while a dataclass or named tuple is being made (``exec`` of a string,
    say during a lazy import) leaves CPython's mark of an unhandled interrupt: the command clears
    it once handled, else ``python -m`` would die by SIGINT (status -2) instead of exiting 130."""
    (tmp_path / "probe.py").write_text(
        "import sys\n"
        "from murmur_analysis.ui import cli\n"
        "def interrupted(argv):\n"
        "    exec('raise KeyboardInterrupt')\n"
        "cli._run = interrupted\n"
        "if __name__ == '__main__':\n"
        "    sys.exit(cli.main([]))\n")
    done = subprocess.run([sys.executable, *run_as], cwd=tmp_path, capture_output=True, text=True, env=_env(),
                          timeout=120)
    _quiet(done.stderr)
    assert (done.returncode, done.stderr) == (EXIT_INTERRUPTED, "murmur-analysis: interrupted\n")
