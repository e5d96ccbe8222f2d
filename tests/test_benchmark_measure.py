"""The benchmark harness measures what it says: a whole-process scenario's peak is its process's."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"

PROBE = '''
import subprocess, sys

def child_of(mb):
    def run():
        subprocess.run([sys.executable, "-c", f"b = b'x' * ({mb} << 20)"], check=True)
        return {"mb": mb}
    return run

def alone(mb):
    def run():
        return {"mb": 0}
    return run

def after_a_larger_one(mb):
    import os
    subprocess.run([sys.executable, "-c", "b = b'x' * (400 << 20)"], check=True)  # setup: not counted
    def run():
        proc = subprocess.Popen([sys.executable, "-c", f"b = b'x' * ({mb} << 20)"])
        _, _, usage = os.wait4(proc.pid, 0)
        return {"mb": mb, "_process_peak_mb": usage.ru_maxrss / 1024}
    return run
'''


def _measure() -> ModuleType:
    spec = importlib.util.spec_from_file_location("murmur_bench_measure", BENCH / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_a_call_that_runs_a_process_has_that_process_peak(tmp_path: Path) -> None:
    (tmp_path / "peakprobe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    measure = _measure().measure
    spawned = measure("peakprobe:child_of", {"mb": 300}, repeat=1, python=sys.executable, env=env)
    alone = measure("peakprobe:alone", {"mb": 300}, repeat=1, python=sys.executable, env=env)
    assert spawned.error is None and alone.error is None
    assert spawned.peak_mb is not None and spawned.peak_mb >= 300  # the child's 300 MiB, not the parent's
    assert alone.peak_mb is not None and alone.peak_mb < 200  # the measuring interpreter alone


def test_a_call_reports_its_own_process_peak_after_a_larger_setup_process(tmp_path: Path) -> None:
    (tmp_path / "peakprobe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    m = _measure().measure("peakprobe:after_a_larger_one", {"mb": 200}, repeat=1, python=sys.executable, env=env)
    assert m.error is None and m.peak_mb is not None
    assert 200 <= m.peak_mb < 380  # its own process's 200 MiB: neither the setup's 400 nor the parent's alone
    assert m.summary == {"mb": 200}  # the peak is taken out of what the call returned
