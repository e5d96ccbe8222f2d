"""With no path, a load reads every registered runtime's default home that exists here."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import murmur_analysis as ma
from murmur_analysis.sources import BUILTIN, default_paths, plugins, registry
from murmur_analysis.ui.cli import main

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


def _homes(monkeypatch: pytest.MonkeyPatch, **homes: list[Path]) -> None:
    """Give each named source these default homes, and every other source none.

    A built-in's default homes are its layout module's (asked without importing the source); a plugin's its class's.
    """
    for name, builtin in BUILTIN.items():
        found = homes.get(name, [])
        monkeypatch.setattr(importlib.import_module(builtin.layout), "default_homes", lambda found=found: list(found),
                            raising=False)
    for name, cls in plugins().items():
        found = homes.get(name, [])
        monkeypatch.setattr(cls, "default_homes", classmethod(lambda _cls, found=found: list(found)))


def test_a_built_in_source_answers_what_its_layout_does(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Detection asks a built-in's layout module; the source itself gives the same answers."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(SAMPLES / "claude_code"))
    monkeypatch.setenv("CODEX_HOME", str(SAMPLES / "codex"))
    (tmp_path / "notes.txt").write_text("nothing of any runtime")
    samples = [sample for sample in sorted(SAMPLES.iterdir()) if sample.is_dir()]
    paths = [SAMPLES, tmp_path, tmp_path / "notes.txt", *(p for s in samples for p in (s, *sorted(s.iterdir())))]
    for name, builtin in BUILTIN.items():
        layout = importlib.import_module(builtin.layout)
        source = registry()[name]()
        assert source.default_homes() == getattr(layout, "default_homes", list)(), name
        assert [source.guess_can_open(p) for p in paths] == [layout.guess_can_open(p) for p in paths], name
        assert any(layout.guess_can_open(p) for p in paths), f"{name} claims no sample"


def test_no_path_loads_every_default_home_found(monkeypatch: pytest.MonkeyPatch) -> None:
    _homes(monkeypatch, murmur=[SAMPLES / "murmur"], flexigpt=[SAMPLES / "flexigpt"])
    assert default_paths() == [SAMPLES / "murmur", SAMPLES / "flexigpt"]
    assert default_paths("flexigpt") == [SAMPLES / "flexigpt"]
    corpus = ma.load()
    given = ma.load(SAMPLES / "murmur", SAMPLES / "flexigpt")
    assert corpus.conversations.equals(given.conversations)
    assert set(corpus.conversations["source"]) == {"murmur", "flexigpt"}
    only = ma.load(source="flexigpt")
    assert set(only.conversations["source"]) == {"flexigpt"}


def test_no_path_and_no_home_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _homes(monkeypatch)
    with pytest.raises(ma.NoSourceError, match="no path given") as err:
        ma.load()
    assert "CLAUDE_CONFIG_DIR" in str(err.value.hint)
    assert main(["report", "daily", "-q"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and "no path given" in out.err and "give SRC" in out.err


def test_report_daily_with_no_path_prints_the_homes_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _homes(monkeypatch, flexigpt=[SAMPLES / "flexigpt"])
    assert main(["report", "daily", "-q", "--json"]) == 0
    bare = capsys.readouterr().out
    assert main(["report", "daily", "-q", "--json", str(SAMPLES / "flexigpt")]) == 0
    assert bare == capsys.readouterr().out and bare.strip()


def test_report_daily_with_no_argument_reads_claude_and_codex_homes_as_ccusage_finds_them(tmp_path: Path) -> None:
    """A home laid out like ``~/.claude`` and ``~/.codex``: no argument, every default home read."""
    import os
    import shutil
    import subprocess
    import sys

    home = tmp_path / "home"
    shutil.copytree(SAMPLES / "claude_code", home / ".claude")
    shutil.copytree(SAMPLES / "codex", home / ".codex")
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME")}
    env["HOME"] = str(home)
    cli = [sys.executable, "-m", "murmur_analysis.ui.cli"]
    bare = subprocess.run([*cli, "report", "daily", "-q", "--json"], env=env, capture_output=True, text=True,
                          check=True)
    given = subprocess.run([*cli, "report", "daily", "-q", "--json", str(home / ".claude"), str(home / ".codex")],
                           env=env, capture_output=True, text=True, check=True)
    assert bare.stdout == given.stdout and '"responses"' in bare.stdout
    summary = subprocess.run([*cli, "summary", "-q"], env=env, capture_output=True, text=True, check=True).stdout
    assert "claude_code" in summary and "codex" in summary
    # CLAUDE_CONFIG_DIR replaces the defaults, as in ccusage; CODEX_HOME likewise
    only = {**env, "CLAUDE_CONFIG_DIR": str(home / ".claude" / "projects"), "CODEX_HOME": str(tmp_path / "none")}
    alone = subprocess.run([*cli, "summary", "-q"], env=only, capture_output=True, text=True, check=True).stdout
    assert "claude_code" in alone and "codex" not in alone


def test_a_plugins_default_home_is_read_with_no_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin's default homes are its class's, found beside the built-ins' (which come from their layouts)."""
    from murmur_analysis_example_plugin import SAMPLE

    _homes(monkeypatch, plaintext=[SAMPLE], flexigpt=[SAMPLES / "flexigpt"])
    assert default_paths() == [SAMPLES / "flexigpt", SAMPLE]
    assert default_paths("plaintext") == [SAMPLE]
    assert set(ma.load().conversations["source"]) == {"flexigpt", "plaintext"}
