"""The source registry: built-ins and plugins found the same way, detection, source=, broken plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import murmur_analysis as ma
from murmur_analysis.errors import NoSourceError, UnknownSourceError
from murmur_analysis.sources import BUILTIN, PluginWarning, detect, get_source, plugins, registry

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "data" / "samples"


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """The registry and the plugins are cached per process: found again around tests that change what is installed."""
    registry.cache_clear()
    plugins.cache_clear()
    yield
    registry.cache_clear()
    plugins.cache_clear()


def fake_distribution(root: Path, name: str, entry_points: str) -> None:
    """An installed distribution as importlib.metadata finds it on sys.path: a .dist-info folder."""
    info = root / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[murmur_analysis.sources]\n{entry_points}\n")


def test_sources_lists_built_ins_and_the_installed_plugin() -> None:
    listed = ma.list_sources()
    assert {"flexigpt", "dispatch"} <= set(listed)
    assert "plaintext" in listed, "the example plugin is not installed: pip install -e tests/plugins/<plugin>"
    assert all(isinstance(d, str) and d for d in listed.values())
    assert list(listed)[: len([n for n in BUILTIN if n in listed])] == [n for n in BUILTIN if n in listed]


def test_the_plugin_is_detected_and_loads_like_a_built_in(tmp_path: Path) -> None:
    from murmur_analysis_example_plugin import SAMPLE

    assert detect(SAMPLE).name == "plaintext"
    corpus = ma.load(SAMPLE)
    assert set(corpus.conversations["source"]) == {"plaintext"}
    assert len(corpus.messages) == 13 and len(corpus.tool_calls) == 4 and len(corpus.orphans) == 1
    assert corpus.diagnostics[["kind", "line"]].values.tolist() == [["not_a_message", 5]]


def test_a_broken_plugin_is_a_warning_not_a_failed_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    fake_distribution(tmp_path, "broken_plugins", "\n".join([
        "missing_attr = murmur_analysis_example_plugin:NoSuchSource",
        "missing_module = no_such_module_for_murmur_analysis:Source",
        "not_a_source = murmur_analysis.core.model:Text",
        "flexigpt = murmur_analysis_example_plugin:PlaintextSource",
    ]))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(PluginWarning) as caught:
        found = registry()
    messages = [str(w.message) for w in caught]
    assert len(messages) == 4
    for name in ("missing_attr", "missing_module", "not_a_source"):
        assert any(f"'{name}'" in m and "could not be loaded" in m for m in messages), name
    assert any("'flexigpt'" in m and "shadows" in m for m in messages)
    assert found["flexigpt"].__module__ == "murmur_analysis.sources.flexigpt.source"
    assert not {"missing_attr", "missing_module", "not_a_source"} & set(found)
    assert {"flexigpt", "dispatch", "plaintext"} <= set(found)

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    code = "import murmur_analysis as ma; print(sorted(ma.list_sources()))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "plaintext" in run.stdout and "PluginWarning" in run.stderr


def test_a_working_plugin_from_any_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_registry: None
) -> None:
    fake_distribution(tmp_path, "another_plugin", "transcripts = murmur_analysis_example_plugin:PlaintextSource")
    monkeypatch.syspath_prepend(str(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PluginWarning)
        found = registry()
    assert found["transcripts"] is found["plaintext"]


def test_source_forces_one_and_unknown_names_are_refused(tmp_path: Path) -> None:
    flexi = SAMPLES / "flexigpt"
    assert ma.load(flexi, source="flexigpt").tables["conversations"].num_rows == 4
    with pytest.raises(UnknownSourceError) as err:
        ma.load(flexi, source="nonesuch")
    assert "flexigpt" in (err.value.hint or "")
    with pytest.raises(UnknownSourceError):
        get_source("nonesuch")
    (tmp_path / "readme.txt").write_text("nothing here")
    with pytest.raises(NoSourceError):
        ma.load(tmp_path)


def test_detection_picks_each_sample() -> None:
    assert detect(SAMPLES / "flexigpt").name == "flexigpt"
    assert detect(SAMPLES / "dispatch").name == "dispatch"
    for name in ("murmur", "litany"):
        if (SAMPLES / name).exists() and name in registry():
            assert detect(SAMPLES / name).name == name


def test_all_samples_load_at_once_into_one_corpus() -> None:
    corpus = ma.load(SAMPLES)
    expected = {name for name in BUILTIN if (SAMPLES / name).exists() and name in registry()}
    assert {"flexigpt", "dispatch"} <= expected
    assert set(corpus.conversations["source"]) == expected
    assert set(corpus.messages["source"]) == expected
    by_source = corpus.conversations.groupby("source").size().to_dict()
    assert by_source["flexigpt"] == 4 and by_source["dispatch"] == 5
    assert corpus.messages.groupby("source").size().to_dict()["flexigpt"] == 16
    assert corpus.tables["memory"].num_rows == 3


def test_the_sources_subpackage_is_not_shadowed() -> None:
    # `ma.sources()` used to be a function of the package, hiding the subpackage of that name.
    code = ("import murmur_analysis.sources, murmur_analysis as ma; "
            "print(sorted(murmur_analysis.sources.registry()) == sorted(ma.list_sources()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize("name", ["claude_code", "codex", "flexigpt", "murmur"])
def test_a_load_imports_only_the_sources_that_claim_its_paths(name: str) -> None:
    """Detection asks each built-in's layout module: the readers of the runtimes not found are never imported."""
    code = ("import json, sys, murmur_analysis as ma; ma.load(sys.argv[1]); "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('murmur_analysis.sources.') "
            "and m.endswith('.source'))))")
    out = subprocess.run([sys.executable, "-c", code, str(SAMPLES / name)], capture_output=True, text=True,
                         check=True).stdout
    assert json.loads(out) == [f"murmur_analysis.sources.{name}.source"]
