"""Build of the native decode engine; everything else is declared in pyproject.toml.

The crates come from Debian's registry where they are installed, else from crates.io
(``native/crates.py`` decides, so the tests' serde_json oracle builds the same way).
"""

import importlib.util
import os
import sys
from pathlib import Path

from setuptools import setup

_spec = importlib.util.spec_from_file_location("crates", Path(__file__).parent / "native" / "crates.py")
assert _spec is not None and _spec.loader is not None
crates = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(crates)

if crates.find_cargo() is None and not os.environ.get("MURMUR_ANALYSIS_SKIP_CARGO_CHECK"):
    sys.exit(crates.missing_cargo_message())  # before setuptools-rust, whose advice is rustup's alone

from setuptools_rust import Binding, RustExtension  # noqa: E402

setup(
    rust_extensions=[
        RustExtension(
            "murmur_analysis.engine._native",
            path="native/Cargo.toml",
            binding=Binding.PyO3,
            debug=False,  # always a release build, editable installs included
            cargo_manifest_args=crates.cargo_config(),
        )
    ],
)
