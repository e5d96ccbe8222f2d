"""Run one measured callable in a fresh process: wall time, peak memory, a timeout.

A *target* is ``"module:function"`` naming a function in ``benchmarks/`` (``scenarios`` by
default). Called with keyword arguments, it does its setup (imports, warm-up) and returns the
zero-argument callable to time; that callable returns a small JSON-able summary (row counts),
so every tool is seen to have done the work. Each repetition is a new interpreter, and the peak
resident set (``VmHWM``) is reset once the setup is done, so it belongs to the measured call
alone (imports and the interpreter included); the wall time is the best of the runs. A call
that runs a process of its own (a whole-process scenario: a fresh interpreter, ccusage) has
the peak of the largest such process where that is larger.

Run as a script, this module is the child side: ``measure.py --child TARGET KWARGS_FILE OUT``
(the keyword arguments go through a JSON file: a list of 2,000 paths is too long for argv).
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
#: A key of a call's summary holding the peak (MiB) of a process it ran, taken as that process's
#: peak even where an earlier process of the setup was larger (the setup's processes count for
#: nothing, but the system's tally of waited-for children keeps only their largest).
PEAK_KEY = "_process_peak_mb"


@dataclass
class Measurement:
    """What the runs of one target measured.

    Attributes:
        wall_s: the best wall time of the timed call (setup excluded), or ``None`` on failure.
        walls: every run's wall time.
        peak_mb: the largest peak resident set over the runs (whole process, MiB).
        base_mb: resident set after setup, before the timed call (interpreter and imports).
        setup_s: the setup time of the fastest run (imports, warm-up).
        summary: what the timed call returned (row counts).
        error: why the target failed, when it did (``timeout``, an exception's last line).
    """

    wall_s: float | None = None
    walls: list[float] = field(default_factory=list)
    peak_mb: float | None = None
    base_mb: float | None = None
    setup_s: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.wall_s is not None and self.error is None


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _children_mb() -> float:
    """The largest peak resident set of the child processes waited for so far (Linux: KiB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _reset_peak() -> None:
    """Start the peak resident set (``VmHWM``) again from the current one (Linux ``clear_refs``)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # elsewhere the peak includes the setup; the run's notes say so


def _resolve(target: str) -> Callable[..., Callable[[], Any]]:
    module, _, name = target.partition(":")
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    func: Callable[..., Callable[[], Any]] = getattr(importlib.import_module(module), name)
    return func


def child(target: str, kwargs_file: str, out: str) -> int:
    """The child side: set up, time one call, write the result as JSON to ``out``."""
    result: dict[str, Any] = {}
    try:
        kwargs = json.loads(Path(kwargs_file).read_text())
        t0 = time.perf_counter()
        call = _resolve(target)(**kwargs)
        result["setup_s"] = time.perf_counter() - t0
        _reset_peak()  # the peak is the measured call's: setup (building inputs) is not counted
        result["base_mb"] = _status_mb("VmRSS")
        children = _children_mb()
        t0 = time.perf_counter()
        summary = call()
        result["wall_s"] = time.perf_counter() - t0
        largest = _children_mb()
        if largest > children:  # the call ran a process larger than any before it
            result["children_mb"] = largest
        if isinstance(summary, dict) and PEAK_KEY in summary:  # the peak of the process the call ran, as it saw it
            result["children_mb"] = max(result.get("children_mb", 0.0), float(summary.pop(PEAK_KEY)))
        result["summary"] = summary if isinstance(summary, dict) else {"result": repr(summary)[:200]}
    except Exception as err:  # noqa: BLE001 - any failure of a measured tool is a result, not a crash
        result["error"] = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
        result["traceback"] = traceback.format_exc()[-2000:]
    result["peak_mb"] = max(_status_mb("VmHWM"), result.get("children_mb", 0.0))
    Path(out).write_text(json.dumps(result, default=str))
    return 0


def measure(target: str, kwargs: dict[str, Any] | None = None, *, repeat: int = 3, timeout: float = 900.0,
            python: str = sys.executable, env: dict[str, str] | None = None) -> Measurement:
    """Run ``target(**kwargs)()`` ``repeat`` times, each in a fresh interpreter.

    Args:
        target: ``"module:function"`` in ``benchmarks/``.
        kwargs: JSON-able keyword arguments for the target.
        repeat: how many fresh-process runs; the best wall time is kept.
        timeout: seconds before a run is killed (reported as ``timeout``).
        python: the interpreter to run.
        env: the environment of the child (the current one by default).

    Returns:
        The measurement; a failed or timed-out run stops the repetitions and sets ``error``.
    """
    m = Measurement()
    best: dict[str, Any] | None = None
    payload = json.dumps(kwargs or {})
    for _ in range(max(1, repeat)):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "result.json")
            args = os.path.join(tmp, "kwargs.json")
            Path(args).write_text(payload)
            cmd = [python, str(Path(__file__).resolve()), "--child", target, args, out]
            try:
                proc = subprocess.run(cmd, timeout=timeout, capture_output=True, text=True, env=env)
            except subprocess.TimeoutExpired:
                m.error = f"timeout after {timeout:.0f} s"
                break
            except OSError as err:
                m.error = f"could not start: {err}"
                break
            if not os.path.exists(out):
                tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
                m.error = f"child died (exit {proc.returncode}): {tail[0][:200]}"
                break
            result = json.loads(Path(out).read_text())
        if "error" in result:
            m.error = result["error"]
            m.summary = {"traceback": result.get("traceback", "")}
            break
        m.walls.append(result["wall_s"])
        m.peak_mb = max(m.peak_mb or 0.0, result["peak_mb"])
        if best is None or result["wall_s"] < best["wall_s"]:
            best = result
    if best is not None:
        m.wall_s = best["wall_s"]
        m.base_mb = best["base_mb"]
        m.setup_s = best["setup_s"]
        m.summary = best.get("summary", {})
    return m


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.exit(child(sys.argv[2], sys.argv[3], sys.argv[4]))
    print("usage: measure.py --child MODULE:FUNCTION KWARGS_FILE OUT", file=sys.stderr)
    sys.exit(2)
