"""Where the native engine's Rust crates come from, decided when it is built.

Debian's packaged crates (``/usr/share/cargo/registry``, from ``librust-*-dev``) where every
crate the engine needs is installed there, built offline; crates.io otherwise (a Mac, a
machine with rustup and network). ``MURMUR_ANALYSIS_CRATES=debian`` or ``=crates-io`` forces
one. ``setup.py`` passes the choice to cargo as ``--config`` arguments, and the serde_json
oracle of the tests builds with the same ones.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

DEBIAN_REGISTRY = Path("/usr/share/cargo/registry")

#: The crates the engine builds against, with the Debian package of each.
ENGINE_CRATES = {
    "serde_json": "librust-serde-json-dev",
    "serde_derive": "librust-serde-derive-dev",
    "pyo3": "librust-pyo3-dev",
    "rayon": "librust-rayon-dev",
    "memchr": "librust-memchr-dev",
    "bumpalo": "librust-bumpalo-dev",
    "libc": "librust-libc-dev",
}

#: The Debian packages that build everything offline: cargo and the crates' packages.
APT_PACKAGES = ["cargo", *dict.fromkeys(ENGINE_CRATES.values())]

#: What to run on Debian or Ubuntu to build everything offline.
APT_INSTALL = "apt-get install " + " ".join(APT_PACKAGES)


def debian_has(crates: dict[str, str] = ENGINE_CRATES) -> bool:
    """Whether Debian's registry holds every one of ``crates``."""
    return all(any(DEBIAN_REGISTRY.glob(f"{name}-[0-9]*")) for name in crates)


def uses_debian(crates: dict[str, str] = ENGINE_CRATES) -> bool:
    """Whether the build takes its crates from Debian's registry (else from crates.io).

    Raises:
        SystemExit: ``MURMUR_ANALYSIS_CRATES`` holds something else than ``debian`` or ``crates-io``.
    """
    choice = os.environ.get("MURMUR_ANALYSIS_CRATES", "auto")
    if choice not in ("auto", "debian", "crates-io"):
        raise SystemExit(f"MURMUR_ANALYSIS_CRATES={choice!r}: use 'debian', 'crates-io' or leave it unset")
    return choice == "debian" or (choice == "auto" and debian_has(crates))


def cargo_config(crates: dict[str, str] = ENGINE_CRATES) -> list[str]:
    """The ``--config`` arguments that tell cargo where the crates come from (none: crates.io, its default)."""
    if not uses_debian(crates):
        return []
    return [
        '--config=source.crates-io.replace-with="debian"',
        f'--config=source.debian.directory="{DEBIAN_REGISTRY}"',
        "--config=net.offline=true",
    ]


def find_cargo() -> str | None:
    """``cargo`` on ``PATH``, or where rustup puts it."""
    found = shutil.which("cargo")
    if found:
        return found
    home = Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo")) / "bin" / "cargo"
    return str(home) if home.is_file() else None


def missing_cargo_message() -> str:
    """What to do when there is no cargo: one line, the command to run."""
    return (
        "murmur-analysis builds a Rust extension and needs cargo, which is not installed. "
        f"On Debian or Ubuntu run: sudo {APT_INSTALL} (or `sudo make native-deps`); "
        "elsewhere install Rust (https://rustup.rs), then install again."
    )


if __name__ == "__main__":
    # `python3 native/crates.py packages`: the Debian packages the build needs, for the Makefile
    # and CI; `python3 native/crates.py crates`: the crate names, to look for in the registry.
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "packages":
        sys.stdout.write(" ".join(APT_PACKAGES) + "\n")
    elif what == "crates":
        sys.stdout.write(" ".join(ENGINE_CRATES) + "\n")
    else:
        raise SystemExit("usage: python3 native/crates.py packages|crates")
