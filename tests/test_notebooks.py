"""Every notebook runs top to bottom on the bundled samples from any folder, takes its data, murmur
sessions and prices from one parameter cell, and is committed without outputs."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from codex_home import shell_outcomes
from murmur_home import T0, ev, inference, msg, record, text, trace
from nbclient import NotebookClient

import murmur_analysis as ma

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
# What the tests ask the kernel after a notebook ran (the notebooks themselves echo no corpus).
PROBE = ('print(f"conversations={len(corpus.conversation_ids())} usage={len(corpus.usage)} "\n'
         '      f"cost={float(corpus.usage[\'cost_usd\'].astype(\'float64\').sum()):.9f}")')


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
    assert len(tagged) == 1
    for assignment in ("DATA = ma.data_paths()", "SESSIONS = ma.session_paths()", "PRICES = ma.prices_path()"):
        assert assignment in tagged[0].source
        assigning = [c for c in nb.cells if c.cell_type == "code" and assignment.split("=")[0] in c.source]
        assert assigning == tagged
    loads = [c.source for c in nb.cells if c.cell_type == "code" and "ma.load(" in c.source]
    assert len(loads) == 1 and '{"murmur": {"sessions": ' in loads[0] and "prices=PRICES" in loads[0]
    assert not any("../" in c.source or "cwd" in c.source for c in nb.cells if c.cell_type == "code")


def _run(path: Path, folder: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(folder)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert errors == []
    return nb


def _text(nb: nbformat.NotebookNode, cells: slice = slice(None)) -> str:
    data = [o.get("data", {}) for c in nb.cells[cells] if c.cell_type == "code" for o in c.outputs]
    texts = [o.get("text", "") for c in nb.cells[cells] if c.cell_type == "code" for o in c.outputs]
    return "\n".join(texts + [d.get("text/plain", "") + d.get("text/html", "") for d in data])


_ON_SAMPLES: dict[Path, nbformat.NotebookNode] = {}


def _on_samples(path: Path, folder: Path) -> nbformat.NotebookNode:
    """``path`` run on the bundled samples (the variables unset) from ``folder``, once per test run."""
    if path not in _ON_SAMPLES:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("MPLBACKEND", "Agg")
            for variable in ("MURMUR_ANALYSIS_DATA", "MURMUR_ANALYSIS_SESSIONS", "MURMUR_ANALYSIS_PRICES"):
                patch.delenv(variable, raising=False)
            _ON_SAMPLES[path] = _run(path, folder)
    return _ON_SAMPLES[path]


def _alts(nb: nbformat.NotebookNode) -> list[str]:
    return [o.metadata["image/png"]["alt"] for c in nb.cells for o in c.get("outputs", [])
            if "image/png" in o.get("data", {})]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_the_samples_from_another_folder(path: Path, tmp_path: Path) -> None:
    nb = _on_samples(path, tmp_path)
    assert "conversations=27 " in _text(nb)  # every sample conversation
    assert "<Corpus" not in _text(nb, slice(0, -1))  # no cell echoes the corpus
    assert all(alt.strip() for alt in _alts(nb))


@pytest.mark.slow
def test_a_month_with_unpriced_responses_is_drawn_as_a_lower_bound(samples: Path, tmp_path: Path) -> None:
    nb = _on_samples(NOTEBOOKS[1], tmp_path)
    [alt] = [a for a in _alts(nb) if a.startswith("Bars of cost in US dollars per month")]
    monthly = ma.metrics.cost(ma.load(samples), by="source", freq="MS", tz="UTC")
    bounded = monthly[(monthly["unpriced_responses"] > 0) & monthly["cost_usd"].notna()]
    assert len(bounded) >= 2  # the samples have such months
    for row in monthly[monthly["cost_usd"].notna()].itertuples():
        said = f"{row.source} at least ${row.cost_usd:,.4f} ({row.unpriced_responses} of {row.responses} responses"
        assert (said in alt) == (row.unpriced_responses > 0), (row.period, row.source, alt)
    assert "a hatched bar is a lower bound" in alt


@pytest.mark.slow
def test_a_compaction_is_labelled_with_the_numbers_its_line_draws(samples: Path, tmp_path: Path) -> None:
    nb = _on_samples(NOTEBOOKS[4], tmp_path)
    [alt] = [a for a in _alts(nb) if a.startswith("Small multiples")]
    corpus = ma.load(samples)
    growth = corpus.growth
    titles = corpus.conversations.set_index(["source", "conversation_id"])["title"]
    compactions = growth[growth["event"] == "compaction"]
    assert len(compactions) == 2  # murmur's and Claude Code's samples each compact once
    table = next(o["data"]["text/html"] for c in nb.cells for o in c.get("outputs", [])
                 if "context_dropped_tokens" in o.get("data", {}).get("text/html", ""))
    assert "compacted_tokens" not in table
    for compaction in compactions.itertuples():
        line = growth[(growth["conversation_id"] == compaction.conversation_id) & (growth["event"] != "compaction")
                      & growth["context_tokens"].notna()].sort_values("position")
        panel = f"{compaction.source} · {titles[(compaction.source, compaction.conversation_id)]}: "
        assert panel in alt, (panel, alt)
        said = re.search(r"a compaction after message (\d+) \(context ([\d,]+) → ([\d,]+) \(−([\d,]+) tokens\)\)",
                         alt[alt.index(panel):].split("; ")[0])
        assert said, alt
        position, before, after, drop = (int(g.replace(",", "")) for g in said.groups())
        assert position == compaction.position
        shown = line.set_index("position")["context_tokens"]
        assert before == shown[shown.index <= position].iloc[-1]  # the line's value at the compaction
        assert after == shown[shown.index > position][lambda v, b=before: v != b].iloc[0]  # where the line drops to
        assert drop == before - after
        assert (before, after) != (compaction.tokens_before, compaction.tokens_after)  # not the runtime's estimate
        assert f">{drop:,}<" in table  # the table gives the same number


@pytest.mark.slow
def test_the_environment_variable_points_a_notebook_at_other_data(samples: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", os.pathsep.join([str(samples / "flexigpt"), str(samples / "dispatch")]))
    nb = _run(NOTEBOOKS[3], tmp_path)
    assert "conversations=9 " in _text(nb)  # 4 FlexiGPT + 5 dispatch


def _home_and_work(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A murmur home of records only, the session work dir whose trace holds its usage, and a price file."""
    home, work = tmp_path / "home", tmp_path / "work"
    record(home, "bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 21, text("answer"))])
    trace(work / "ses_1", [
        ev("session_start", T0, capsule_name="bot", model="gpt-4.1"),
        ev("task_start", T0 + 1, task_id="A", context_id="ctx"),
        inference(T0 + 20, "A", 0, input_tokens_actual=1_900_000, output_tokens_actual=22_000),
        ev("task_end", T0 + 500, task_id="A", exit_status="ok"),
        ev("session_end", T0 + 900, exit_status="ok"),
    ])
    prices = tmp_path / "prices.csv"
    prices.write_text("model,input_mtok,output_mtok\ngpt-4.1,1,2\n", encoding="utf-8")
    return home, work, prices


@pytest.mark.slow
def test_the_parameter_cell_takes_murmur_sessions_and_prices_from_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, prices = _home_and_work(tmp_path)
    expected = ma.load(home, options={"murmur": {"sessions": [str(work)]}}, prices=str(prices)).usage
    assert len(expected) == 1 and expected["cost_usd"].iloc[0] == pytest.approx(1.9 + 0.044)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", str(home))
    monkeypatch.delenv("MURMUR_ANALYSIS_SESSIONS", raising=False)
    monkeypatch.delenv("MURMUR_ANALYSIS_PRICES", raising=False)
    assert "usage=0 cost=0.000000000" in _text(_run(NOTEBOOKS[3], tmp_path))  # the records alone hold no usage
    monkeypatch.setenv("MURMUR_ANALYSIS_SESSIONS", str(work))
    monkeypatch.setenv("MURMUR_ANALYSIS_PRICES", str(prices))
    assert f"usage=1 cost={1.9 + 0.044:.9f}" in _text(_run(NOTEBOOKS[3], tmp_path))


def _report_module() -> Any:
    spec = importlib.util.spec_from_file_location("report", REPO / "notebooks" / "report.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_reports_join_the_sessions_and_prices_they_are_given(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    home, work, prices = _home_and_work(tmp_path)
    for variable in ("MURMUR_ANALYSIS_DATA", "MURMUR_ANALYSIS_SESSIONS", "MURMUR_ANALYSIS_PRICES"):
        monkeypatch.delenv(variable, raising=False)
    out = tmp_path / "report"
    index = _report_module().build([str(home)], out, [NOTEBOOKS[0]], sessions=[str(work)], prices=str(prices))
    page = (out / "00_explore.html").read_text(encoding="utf-8")
    assert "gpt-4.1" in page and "in 1,900,000" in page and "1.9440" in page  # the trace's model, tokens, the price
    assert "session traces" not in page and "<Corpus" not in page
    listed = index.read_text(encoding="utf-8")
    assert str(work.resolve()) in listed and str(prices.resolve()) in listed
    assert "MURMUR_ANALYSIS_SESSIONS" not in os.environ  # the kernel's environment, not this process's


@pytest.mark.slow
def test_calls_of_unknown_outcome_are_drawn_apart_and_left_out_of_the_rate(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex outputs with no exit code: neither ok nor error in the figures."""
    shell_outcomes(tmp_path / "codex" / "sessions" / "2026" / "01" / "02",
                   ["Exit code: 1\nOutput:\nno", "Exit code: 0\nOutput:\nyes", "plain", "more"])
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", str(tmp_path / "codex"))
    nb = _run(NOTEBOOKS[2], tmp_path)
    alts = _alts(nb)
    assert any("codex · shell: 4 calls, 1 errors, 2 of unknown outcome, 0 unanswered" in a for a in alts), alts
    assert any("codex · shell: 50% (1 of 2)" in a for a in alts), alts
