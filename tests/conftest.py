from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

# Persisted record indexes go to a folder of this test run, never the user's cache.
os.environ["MURMUR_ANALYSIS_CACHE"] = tempfile.mkdtemp(prefix="murmur-analysis-cache-")
# The command line fits its tables to COLUMNS: a test that wants a width sets it. (readline, which
# pytest loads, puts COLUMNS=80 in the process environment behind os.environ's back; children inherit it.)
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)
    os.unsetenv(_name)

# Timing is not a property: no per-example deadline (CI machines are shared and slow).
settings.register_profile("murmur-analysis", deadline=None, print_blob=True)
# `make fuzz`: many more examples for every property and fuzz test (HYPOTHESIS_PROFILE=fuzz).
settings.register_profile("fuzz", parent=settings.get_profile("murmur-analysis"), max_examples=5_000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "murmur-analysis"))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """Upstream data files (brazen golden files, murmur and litany doc examples), kept verbatim."""
    return HERE / "fixtures" / "upstream"


@pytest.fixture(scope="session")
def samples() -> Path:
    return REPO / "data" / "samples"


@pytest.fixture(scope="session")
def serde_oracle() -> Iterator[object]:
    """The serde_json oracle (tests/serde_oracle), built once per session; a missing toolchain fails."""
    from serde_oracle_client import Oracle, build

    try:
        binary = build()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    oracle = Oracle(binary)
    yield oracle
    oracle.close()


@pytest.fixture(scope="module")
def corpus(samples: Path) -> Any:
    """The bundled samples, loaded once per module."""
    import murmur_analysis as ma

    return ma.load(samples)
