from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import settings

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

# Timing is not a property: no per-example deadline (CI machines are shared and slow).
settings.register_profile("murmur-analysis", deadline=None, print_blob=True)
settings.load_profile("murmur-analysis")


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """Upstream data files (brazen golden files, murmur and litany doc examples), kept verbatim."""
    return HERE / "fixtures" / "upstream"


@pytest.fixture(scope="session")
def samples() -> Path:
    return REPO / "data" / "samples"
