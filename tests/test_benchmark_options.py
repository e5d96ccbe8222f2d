"""The benchmark scripts' ``--only`` names what exists: commas split, an unknown name refused."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _generate() -> object:
    sys.path.insert(0, str(BENCH))
    try:
        import generate
    finally:
        sys.path.remove(str(BENCH))
    return generate


def test_the_datasets_named_are_the_datasets_written(tmp_path: Path) -> None:
    generate = _generate()
    written = generate.datasets(generate.paths("tiny", tmp_path), generate.SCALES["tiny"], 1)  # type: ignore[attr-defined]
    assert tuple(written) == generate.DATASETS  # type: ignore[attr-defined]


@pytest.mark.parametrize("script", ["generate.py", "run.py"])
def test_an_unknown_name_is_refused_not_ignored(script: str) -> None:
    done = subprocess.run([sys.executable, str(BENCH / script), "--scale", "tiny", "--only", "litany,nope"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "nope" in done.stderr and "litany" in done.stderr  # the known names are listed


def test_commas_and_repeats_both_name_datasets() -> None:
    keys = _generate().keys_option(("a", "b", "c"), "dataset")  # type: ignore[attr-defined]
    assert keys("a, c") == ["a", "c"]
    with pytest.raises(argparse.ArgumentTypeError, match="no dataset x"):
        keys("a,x")
    with pytest.raises(argparse.ArgumentTypeError, match="no dataset"):
        keys(" , ")
