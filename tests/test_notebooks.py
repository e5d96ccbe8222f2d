"""Every notebook runs top to bottom on the bundled samples from any folder, takes its data from
one parameter cell, and is committed without outputs."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_the_five_notebooks_are_there() -> None:
    assert [p.stem for p in NOTEBOOKS] == [
        "00_explore", "01_token_usage_and_cost", "02_tool_errors", "03_orphan_drops", "04_conversation_growth"
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_takes_its_data_from_one_parameter_cell(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "DATA = ma.data_paths()" in tagged[0].source
    assigning = [c for c in nb.cells if c.cell_type == "code" and "DATA =" in c.source]
    assert assigning == tagged
    assert not any("../" in c.source or "cwd" in c.source for c in nb.cells if c.cell_type == "code")


def _run(path: Path, folder: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    return nb


def _text(nb: nbformat.NotebookNode) -> str:
    return "\n".join(o.get("data", {}).get("text/plain", "") for c in nb.cells if c.cell_type == "code"
                     for o in c.outputs)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_the_samples_from_another_folder(path: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("MURMUR_ANALYSIS_DATA", raising=False)
    nb = _run(path, tmp_path)
    assert "conversations=17" in _text(nb)  # every sample conversation
    images = [o for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert all(o.metadata["image/png"]["alt"].strip() for o in images)


@pytest.mark.slow
def test_the_environment_variable_points_a_notebook_at_other_data(samples: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", os.pathsep.join([str(samples / "flexigpt"), str(samples / "dispatch")]))
    nb = _run(NOTEBOOKS[3], tmp_path)
    assert "conversations=9" in _text(nb)  # 4 FlexiGPT + 5 dispatch
