"""Reading while agents write: loads, walks and exports see whole lines and commits, each once.

A writer thread appends messages to murmur records, each line written in two chunks with a
pause between them (a reader can meet the first half alone), and commits messages to litany
branches one at a time. Meanwhile the test loads, walks records and exports, and checks each
result against what the writer had finished before the read started and by the time it ended.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from litany_git import T0 as T0_GIT
from litany_git import Branch, RepoBuilder, tree
from live_git import commit_file
from murmur_lines import id_at, line, message, write_record

import murmur_analysis as ma
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export

RECORDS = 3
BRANCHES = ("a", "b")


class Writer(threading.Thread):
    """Appends and commits until stopped; ``done`` holds what is complete, under ``lock``."""

    def __init__(self, home: Path, ws: Path) -> None:
        super().__init__(daemon=True)
        self.home, self.ws = home, ws
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.lines: dict[str, list[str]] = {f"r{r}": [] for r in range(RECORDS)}  # complete ids, in order
        self.commits: dict[str, int] = dict.fromkeys(BRANCHES, 1)  # messages on each branch
        self.error: BaseException | None = None

    def record(self, name: str) -> Path:
        return self.home / "conversations" / "bot" / name / "conversation.jsonl"

    def snapshot(self) -> tuple[dict[str, list[str]], dict[str, int]]:
        with self.lock:
            return {k: list(v) for k, v in self.lines.items()}, dict(self.commits)

    def run(self) -> None:
        try:
            n = 0
            while not self.stop.is_set():
                n += 1
                name = f"r{n % RECORDS}"
                text = line(message(1000 + n, "user" if n % 2 else "assistant", text="x" * (n % 50))) + "\n"
                cut = len(text) // 2
                with self.record(name).open("a", encoding="utf-8") as f:
                    f.write(text[:cut])
                    f.flush()
                    time.sleep(0.002)  # half a line on disk
                    f.write(text[cut:])
                with self.lock:
                    self.lines[name].append(id_at(1000 + n))
                if n % 4 == 0:
                    branch = BRANCHES[(n // 4) % len(BRANCHES)]
                    k = self.commits[branch] + 1
                    commit_file(self.ws / "repo.git", f"agents/{branch}", f"messages/{k:03d}-operator.md",
                                f"message {k}".encode(), T0_GIT + 60 * n)
                    with self.lock:
                        self.commits[branch] = k
        except BaseException as err:  # noqa: BLE001 - reported by the test
            self.error = err


@pytest.fixture
def live(tmp_path: Path) -> Writer:
    home = tmp_path / "home"
    for r in range(RECORDS):
        write_record(home / "conversations" / "bot" / f"r{r}" / "conversation.jsonl", [])
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    for b in BRANCHES:
        Branch(repo, b).put(tree(("001-operator.md", f"go {b}")))
    repo.finish()
    return Writer(home, ws)


def check_tables(tables: dict[str, pa.Table], before: tuple[dict[str, list[str]], dict[str, int]],
                 after: tuple[dict[str, list[str]], dict[str, int]]) -> None:
    """Every line complete before the read is there once; nothing else but later complete lines."""
    messages = tables["messages"].to_pylist()
    for r in range(RECORDS):
        name = f"r{r}"
        ids = [m["message_id"] for m in messages if m["source"] == "murmur" and m["conversation_id"] == f"bot/{name}"]
        assert len(ids) == len(set(ids)), "a line read twice"
        assert ids == after[0][name][: len(ids)], "not a prefix of the complete lines, in order"
        assert len(ids) >= len(before[0][name]), "a line complete before the read is missing"
    for b in BRANCHES:
        seqs = [m["seq"] for m in messages if m["source"] == "litany" and m["conversation_id"].endswith(b)]
        assert len(seqs) == len(set(seqs))
        assert before[1][b] <= len(seqs) <= after[1][b]


@pytest.mark.slow
def test_loads_walks_and_exports_during_writes(live: Writer, tmp_path: Path) -> None:
    out = tmp_path / "out"
    live.start()
    checked: Counter[str] = Counter()
    deadline = time.monotonic() + 6
    try:
        while time.monotonic() < deadline:
            before = live.snapshot()
            walked = {name: [m.id for m in ma.walk(live.record(name), limit=7)] for name in before[0]}
            loaded = ma.load(live.home, live.ws).tables
            result = export(live.home, live.ws, out=out, batch_conversations=2)
            after = live.snapshot()
            for name, ids in walked.items():
                assert len(ids) == len(set(ids)), "a walk returned a message twice"
                assert set(before[0][name]) <= set(ids) <= set(after[0][name])
            check_tables(loaded, before, after)
            exported = read_parquet(out).tables
            check_tables(exported, before, after)
            folder = ds.dataset(out / "messages", partitioning="hive").to_table()
            assert folder.num_rows == exported["messages"].num_rows == result.rows["messages"]
            checked["rounds"] += 1
            checked["kept"] += result.conversations_kept
    finally:
        live.stop.set()
        live.join()
    assert live.error is None, live.error
    assert checked["rounds"] >= 3
    final = live.snapshot()
    export(live.home, live.ws, out=out)
    done = read_parquet(out).tables
    check_tables(done, final, final)
    fresh = ma.load(live.home, live.ws).tables
    for name in ("messages", "growth", "conversations"):
        assert sorted(map(str, done[name].to_pylist())) == sorted(map(str, fresh[name].to_pylist())), name
