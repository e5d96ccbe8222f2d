from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def fixtures() -> Path:
    """Upstream data files (brazen golden files, murmur and litany doc examples), kept verbatim."""
    return HERE / "fixtures" / "upstream"


@pytest.fixture(scope="session")
def samples() -> Path:
    return REPO / "data" / "samples"
