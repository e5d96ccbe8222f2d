"""The native engine's own Rust unit tests (``cargo test`` in ``native/``), run as part of the suite.

They check what Python cannot reach: the block reader's hand-over of a line cut at a block's
end, the text columns' gather in any order, the sorted serialization of a tool input, Codex's
line rules. They build with the crates the engine's build chooses (``native/crates.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from serde_oracle_client import crates

NATIVE = Path(__file__).resolve().parent.parent / "native"
TARGET = NATIVE.parent / "build" / "native-tests"


def test_the_engine_s_rust_unit_tests_pass() -> None:
    cargo = crates.find_cargo()
    assert cargo is not None, crates.missing_cargo_message()
    proc = subprocess.run(
        [cargo, "test", "--release", "--target-dir", str(TARGET), *crates.cargo_config()],
        cwd=NATIVE, capture_output=True, text=True, check=False, env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    passed = sum(int(n) for n in re.findall(r"test result: ok\. (\d+) passed", proc.stdout))
    declared = sum(p.read_text().count("#[test]") for p in NATIVE.rglob("src/**/*.rs"))
    assert passed == declared > 0, proc.stdout[-4000:]  # every declared test ran
