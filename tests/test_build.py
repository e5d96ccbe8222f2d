"""Setting up on a new machine: where the engine's crates come from, and what a machine without cargo is told."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _crates(monkeypatch: pytest.MonkeyPatch, registry: Path) -> Any:
    spec = importlib.util.spec_from_file_location("crates_under_test", REPO / "native" / "crates.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "DEBIAN_REGISTRY", registry)
    return module


def _registry(tmp_path: Path, crates: list[str]) -> Path:
    registry = tmp_path / "registry"
    for name in crates:
        (registry / f"{name}-1.0.0").mkdir(parents=True)
    return registry


def test_debians_crates_are_used_where_every_one_is_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MURMUR_ANALYSIS_CRATES", raising=False)
    crates = _crates(monkeypatch, tmp_path / "registry")
    _registry(tmp_path, list(crates.ENGINE_CRATES))
    assert "bumpalo" in crates.ENGINE_CRATES  # the line's arena (native/src/json.rs)
    args = crates.cargo_config()
    assert '--config=source.crates-io.replace-with="debian"' in args and "--config=net.offline=true" in args
    assert f'--config=source.debian.directory="{tmp_path / "registry"}"' in args


def test_crates_io_is_used_where_debians_crates_are_not_all_there(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MURMUR_ANALYSIS_CRATES", raising=False)
    crates = _crates(monkeypatch, _registry(tmp_path, ["serde_json", "pyo3"]))  # a Mac has none at all
    assert crates.cargo_config() == []
    monkeypatch.setenv("MURMUR_ANALYSIS_CRATES", "debian")
    assert crates.cargo_config() != []
    monkeypatch.setenv("MURMUR_ANALYSIS_CRATES", "crates-io")
    assert crates.cargo_config() == []
    monkeypatch.setenv("MURMUR_ANALYSIS_CRATES", "vendored")
    with pytest.raises(SystemExit, match="MURMUR_ANALYSIS_CRATES"):
        crates.cargo_config()


def _no_cargo_path(tmp_path: Path, tools: list[str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        found = next(p for p in ("/usr/bin", "/bin") if (Path(p) / tool).exists())
        (bin_dir / tool).symlink_to(Path(found) / tool)
    return {"PATH": str(bin_dir), "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}


def test_building_without_cargo_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    env = _no_cargo_path(tmp_path, [])
    proc = subprocess.run([sys.executable, "setup.py", "--version"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert "needs cargo" in proc.stderr and "apt-get install cargo librust-serde-json-dev" in proc.stderr
    assert "rustup.rs" in proc.stderr and "Traceback" not in proc.stderr


def test_make_without_cargo_and_not_root_stops_at_once_with_the_command(tmp_path: Path) -> None:
    env = _no_cargo_path(tmp_path, ["sh", "ls", "id", "make", "python3"])
    proc = subprocess.run(["make", "--no-print-directory", "native-deps", "ROOT=", "HAVE_APT=yes"], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "error: cargo is not installed. Run: sudo apt-get install cargo librust-serde-json-dev" in proc.stderr
    proc = subprocess.run(["make", "--no-print-directory", "native-deps", "ROOT=", "HAVE_APT="], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "https://rustup.rs" in proc.stderr


def test_the_repository_forces_no_crate_source_on_every_machine() -> None:
    assert not (REPO / ".cargo" / "config.toml").exists()
    tracked = subprocess.run(["git", "ls-files", "native"], cwd=REPO, capture_output=True, text=True).stdout.split()
    assert "native/Cargo.lock" not in tracked  # a lock of one source's checksums refuses the other's
    assert os.path.isfile(REPO / "setup.py")
