"""Paths as people type them: ``~`` is expanded by every function that takes a path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

import murmur_analysis as ma
from murmur_analysis.sources.flexigpt.source import FlexiGPTSource

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "data" / "samples"
RECORD = "rec/conversations/support-bot/ctx-refund/conversation.jsonl"
BRANCH = "agents/20260420T080000Z-0d0c5173"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder (``HOME``) holding a copy of each sample: a murmur record folder and its session
    work dirs apart, a litany workspace, a FlexiGPT store and a prices file."""
    home = tmp_path / "home"
    shutil.copytree(SAMPLES / "murmur" / "conversations", home / "rec" / "conversations", symlinks=True)
    shutil.copytree(SAMPLES / "murmur" / "sessions", home / "work", symlinks=True)
    shutil.copytree(SAMPLES / "litany" / "docs-site", home / "lit", symlinks=True)
    shutil.copytree(SAMPLES / "flexigpt", home / "flex", symlinks=True)
    model = ma.load(home / "rec", options={"murmur": {"sessions": [home / "work"]}}).usage["model"].dropna().iloc[0]
    (home / "prices.csv").write_text(f"model,input_mtok,output_mtok\n{model},1.5,7\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    assert Path("~").expanduser() == home
    return home


def _tables(corpus: ma.Corpus) -> dict[str, Any]:
    return {name: t.to_pylist() for name, t in corpus.tables.items()}


def _page(page: ma.Page) -> tuple[Any, ...]:
    return tuple(m.id for m in page.messages), page.next_cursor, page.total


# Each entry point, called once with ``~`` and once with the home spelled out: (the call, what to compare).
CASES: dict[str, Callable[[str], Any]] = {
    "read_messages": lambda h: _page(ma.read_messages(f"{h}/{RECORD}", limit=2)),
    "walk": lambda h: [m.id for m in ma.walk(f"{h}/{RECORD}", limit=2)],
    "RecordReader.read_messages": lambda h: _page(ma.RecordReader(index=None).read_messages(f"{h}/{RECORD}")),
    "RecordReader.messages": lambda h: ma.RecordReader(index=None).messages(f"{h}/{RECORD}"),
    "load": lambda h: _tables(ma.load(f"{h}/rec")),
    "load sessions": lambda h: ma.load(f"{h}/rec", options={"murmur": {"sessions": [f"{h}/work"]}}).usage.to_dict(),
    "load prices": lambda h: ma.load(f"{h}/rec", options={"murmur": {"sessions": f"{h}/work"}},
                                     prices=f"{h}/prices.csv").usage["cost_usd"].tolist(),
    "iter_batches": lambda h: [b.tables["messages"].num_rows for b in ma.iter_batches(f"{h}/rec")],
    "assemble_commit": lambda h: ma.assemble_commit(f"{h}/lit", BRANCH).messages,
    "flexigpt list_conversations": lambda h: FlexiGPTSource().list_conversations(f"{h}/flex", limit=5),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_path_given_with_a_tilde_reads_what_the_spelled_out_path_reads(home: Path, name: str) -> None:
    typed, spelled = CASES[name]("~"), CASES[name](str(home))
    assert typed == spelled
    assert spelled not in (None, [], {}, ((), None, 0))  # the spelled-out path found something


def test_export_read_parquet_and_to_parquet_take_a_tilde(home: Path) -> None:
    ma.export_parquet("~/rec", out="~/out")
    assert (home / "out" / "_manifest.json").is_file() and not Path("~").exists()
    assert _tables(ma.read_parquet("~/out")) == _tables(ma.read_parquet(home / "out"))
    corpus = ma.load("~/rec")
    corpus.to_parquet("~/copy")
    assert _tables(ma.read_parquet(home / "copy")) == _tables(corpus)
    with pytest.raises(ma.ExportError, match="is the input"):  # the overlap check sees through ~ too
        ma.export_parquet("~/rec", out="~/rec")


def test_data_paths_expand_the_variable(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MURMUR_ANALYSIS_DATA", os.pathsep.join(["~/rec", "~/lit"]))
    assert ma.data_paths() == [str(home / "rec"), str(home / "lit")]


def test_a_missing_record_is_an_empty_page(tmp_path: Path) -> None:
    page = ma.read_messages(tmp_path / "no" / "conversation.jsonl")
    assert (page.messages, page.next_cursor, page.total, page.reports) == ((), None, 0, ())


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", *args], capture_output=True, text=True,
                          env=env, check=False)


@pytest.mark.parametrize("json", [False, True])
def test_page_says_on_stderr_that_no_record_is_there_and_prints_the_empty_page(home: Path, json: bool) -> None:
    flags = ["--json"] if json else []
    (home / "empty.jsonl").write_bytes(b"")
    missing = _cli(home, "page", "~/missing/conversation.jsonl", *flags)
    empty = _cli(home, "page", "~/empty.jsonl", *flags)  # a record that holds no message
    assert missing.returncode == 0 and empty.returncode == 0
    assert missing.stdout == empty.stdout  # the empty page murmur serves for either
    assert missing.stderr == (f"murmur-analysis: no record at {home}/missing/conversation.jsonl "
                              "(an empty page, as murmur serves it)\n")
    assert empty.stderr == ""
    if json:
        assert orjson.loads(missing.stdout) == {"messages": [], "next_cursor": None, "total": 0}


def test_page_takes_a_tilde(home: Path) -> None:
    typed, spelled = _cli(home, "page", f"~/{RECORD}", "--json"), _cli(home, "page", f"{home}/{RECORD}", "--json")
    assert typed.returncode == 0 and typed.stderr == spelled.stderr and "no record" not in typed.stderr
    assert typed.stdout == spelled.stdout and orjson.loads(typed.stdout)["total"] > 0
