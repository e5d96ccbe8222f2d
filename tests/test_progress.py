"""The progress bar sizes what the load reads; folder chains deeper than Python's recursion limit load."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_home import msg, record
from terminal import on_a_terminal

import murmur_analysis as ma
from murmur_analysis.loading.progress import ProgressBar
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.dispatch import layout

CLI = [sys.executable, "-m", "murmur_analysis.ui.cli"]
SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"
DEPTH = 1_100  # deeper than Python's default recursion limit (1,000)
SESSION = {"id": "deep-session", "history": [{"role": "user", "content": "hello"},
                                              {"role": "assistant", "content": "hi"}]}


def chain(top: Path, depth: int = DEPTH) -> Path:
    """``depth`` nested one-letter folders under ``top``, made one at a time; the bottom one."""
    bottom = top
    for _ in range(depth):
        bottom = bottom / "d"
        bottom.mkdir()
    return bottom


def remove(top: Path) -> None:
    """Remove a tree bottom up without recursion (``shutil.rmtree`` recurses once per level)."""
    folders = []
    for folder, _dirs, names in _walk(top):
        for name in names:
            os.unlink(os.path.join(folder, name))
        folders.append(folder)
    for folder in reversed(folders):
        os.rmdir(folder)


def _walk(top: Path) -> Iterator[tuple[str, list[str], list[str]]]:
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            entries = list(it)
        dirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        yield folder, dirs, [e.name for e in entries if e.name not in dirs]
        stack.extend(os.path.join(folder, d) for d in dirs)


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    """A dispatch folder whose only session lies at the bottom of a 1,100-deep chain, beside other files."""
    top = tmp_path / "deep"
    (top / ".dispatch").mkdir(parents=True)
    bottom = chain(top / ".dispatch")
    (bottom / "s.session.json").write_text(json.dumps(SESSION))
    (bottom / "notes.txt").write_text("not dispatch's\n" * 100)
    (bottom / "data.bin").write_bytes(os.urandom(4096))
    assert len(os.fspath(bottom)) < 4000  # within PATH_MAX: every call takes the whole path
    yield top
    remove(top)


def test_a_session_at_the_bottom_of_a_chain_1100_folders_deep_loads(deep: Path) -> None:
    for progress in (None, True):
        corpus = ma.load(deep, progress=progress)
        assert corpus.conversations[["source", "conversation_id"]].values.tolist() == [["dispatch", "s"]]
        assert corpus.messages["text"].tolist() == ["hello", "hi"]
        assert corpus.diagnostics.empty


def test_the_cli_on_a_chain_1100_folders_deep_gives_no_traceback(deep: Path) -> None:
    done = subprocess.run([*CLI, "summary", str(deep)], capture_output=True, text=True)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "dispatch" in done.stdout and "diagnostics: 0 row(s)" in done.stdout
    code, screen = on_a_terminal(["summary", str(deep)])
    assert code == 0 and "Traceback" not in screen and "RecursionError" not in screen, screen
    assert "100%" in screen  # the bar was drawn, and filled


def test_the_bar_counts_the_bytes_the_load_reads_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path / "mixed"
    dispatch = root / "sessions"
    dispatch.mkdir(parents=True)
    (dispatch / "a.session.json").write_text(json.dumps(SESSION))
    (dispatch / "b.session.json").write_text(json.dumps({**SESSION, "id": "b"}))
    (dispatch / "big.bin").write_bytes(b"\0" * (1 << 20))  # in a folder the dispatch walk enters, read by none
    (root / "unrelated.log").write_bytes(b"x" * (1 << 20))  # beside the sources, read by none
    record(root / "home", "bot", "ctx-1", [msg("user", 1_767_225_600_000), msg("assistant", 1_767_225_601_000)])
    shutil.copytree(SAMPLES / "flexigpt", root / "flexigpt")

    bar = ProgressBar([root])
    read: set[str] = set()

    def progress(event: str, detail: str) -> None:
        if event == "read":
            read.add(detail)  # the inputs the load read its conversations from
        bar(event, detail)

    try:
        corpus = ma.load(root, progress=progress)
        assert set(corpus.conversations["source"]) == {"dispatch", "murmur", "flexigpt"}
        assert set(corpus.conversations["path"]) <= read
        expected = sum(os.path.getsize(p) for p in read)
        assert 0 < expected < 1 << 20
        assert bar.total == expected  # what the load read, not the megabytes beside it
        assert bar.done == expected  # each input counted once, as its conversation was built
    finally:
        bar.close()
    assert bar.done == bar.total


def test_a_bar_not_shown_sizes_nothing_beforehand(tmp_path: Path) -> None:
    (tmp_path / "a.session.json").write_text(json.dumps(SESSION))
    bar = ProgressBar([tmp_path], disable=True)
    assert bar.total == 0
    ma.load(tmp_path, progress=bar)
    bar.close()


_NAMES = st.sampled_from(["a", "b", "c", ".d", "node_modules", "x.session.json", "1-ab.json", "s.sqlite", "n.txt"])


@settings(max_examples=40)
@given(st.lists(st.lists(_NAMES, min_size=1, max_size=5), min_size=1, max_size=12))
def test_the_dispatch_walk_is_depth_first_in_name_order(tmp_path_factory: pytest.TempPathFactory,
                                                        paths: list[list[str]]) -> None:
    root = tmp_path_factory.mktemp("walk")
    files: set[Path] = set()
    for parts in paths:
        *folders, name = parts
        where = root.joinpath(*folders)
        try:
            where.mkdir(parents=True, exist_ok=True)
            (where / name).write_text("{}")
        except OSError:
            continue  # a file where a folder is wanted, or the other way round
        files.add(where / name)
    diagnostics = Diagnostics("dispatch")
    found = list(layout.files(root, diagnostics))
    claimed = [f for f in files if not set(f.relative_to(root).parts[:-1]) & layout.SKIP_DIRS
               and not any(p.endswith(layout.SESSION_SUFFIX) for p in f.relative_to(root).parts[:-1])
               and (layout.claims_name(f.name) or layout.run_id(f.name) or f.name.endswith(layout.DB_SUFFIXES))]
    # Depth first with each folder's entries in name order: the order of the paths' parts.
    assert found == sorted(claimed, key=lambda f: f.relative_to(root).parts)
