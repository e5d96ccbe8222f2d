"""The litany reader's columnar pieces: the walk as columns, a branch through it, the history's
timeline, one cat-file process per repository, and the lean file read the step records use."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from litany_git import T0, Branch, RepoBuilder, blocks, j, tree

from murmur_analysis.algorithms.history import Appended, Event, Reset, Timeline, replay
from murmur_analysis.core.files import read_regular, read_regular_files
from murmur_analysis.core.model import Entry, Usage
from murmur_analysis.core.wire import blocks_from_wire
from murmur_analysis.errors import GitError
from murmur_analysis.sources import Diagnostics
from murmur_analysis.sources.litany.git import GitRepo
from murmur_analysis.sources.litany.gitlog import BranchLog, Change, LogParser, parse_log

USE = {"type": "tool_use", "id": "t1", "name": "sh", "input": {"cmd": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}]}
ORPHAN = {"type": "tool_result", "tool_use_id": "nope", "content": [{"type": "text", "text": "?"}]}


def forked(root: Path) -> Path:
    repo = RepoBuilder(root / "repo.git")
    p = Branch(repo, "p")
    p.put(tree(("001-op.md", "go"), ("002-m.json", blocks(USE))))
    fork = p.put(tree(("003-tool.json", blocks(RESULT))))
    p.put({"src/a.py": "a"})
    p.put(tree(("004-op.md", "parent goes on")))
    c = Branch(repo, "p-c", start=T0 + 10_000, parent=fork)
    c.put({"name": "child\n", "src/b.py": "b"})
    c.put(tree(("004-tool.json", j({"content": [ORPHAN]}))))
    repo.finish()
    return root / "repo.git"


def test_a_branch_through_the_walk_is_the_branch_its_own_log_gives(tmp_path: Path) -> None:
    repo = GitRepo(forked(tmp_path))
    heads = repo.refs()
    walk = repo.walk_columns(heads.values(), ["messages/"])
    assert len(walk.shas) == len(set(walk.shas)) == 6  # each commit once, the shared ones too
    assert {c.sha: c for c in walk.commits()} == repo.walk(heads.values(), ["messages/"])
    for head in heads.values():
        alone = repo.log(head)
        branch = BranchLog.of_walk(walk, head)
        assert branch.shas == [c.sha for c in alone]
        assert branch.seconds.tolist() == [int(c.time.timestamp()) for c in alone]  # type: ignore[union-attr]
        assert [branch.at(i) for i in range(len(branch))] == [c.at for c in alone]
        assert branch.changes == {i: tuple(ch for ch in c.changes if ch.path.startswith("messages/"))
                                  for i, c in enumerate(alone) if any(ch.path.startswith("messages/")
                                                                      for ch in c.changes)}
        assert BranchLog.of_commits(alone).shas == branch.shas
        stamps = branch.timestamps()
        assert stamps.type == pa.timestamp("us", tz="UTC") and stamps.to_pylist() == [c.at for c in alone]


def test_a_walk_after_another_lists_none_of_its_history_and_a_branch_follows_through_both(tmp_path: Path) -> None:
    repo = GitRepo(forked(tmp_path))
    heads = repo.refs()
    parent, child = heads["refs/heads/agents/p"], heads["refs/heads/agents/p-c"]
    first = repo.walk_columns([parent], ["messages/"])
    second = repo.walk_columns([child], ["messages/"], known=[parent])
    assert (len(first.shas), len(second.shas)) == (4, 2)  # the child's own two commits: nothing shared again
    joined = first.extended(second)
    again = repo.walk_columns([child], ["messages/"])  # walked without the parent's: the shared commits too
    assert len(again.shas) == 4 and first.extended(again).shas == joined.shas  # each commit once
    whole = repo.walk_columns(heads.values(), ["messages/"])
    assert sorted(joined.shas) == sorted(whole.shas)
    for walk in (joined, first.extended(again)):
        for head in (parent, child):
            mine, theirs = BranchLog.of_walk(walk, head), BranchLog.of_walk(whole, head)
            assert (mine.shas, mine.seconds.tolist(), mine.changes) == (theirs.shas, theirs.seconds.tolist(),
                                                                        theirs.changes)
    with pytest.raises(GitError, match="not in the walk"):
        BranchLog.of_walk(second, child)  # alone, the second walk stops where the parent's history begins
    assert first.extended(first) is first


def test_a_commit_time_no_timestamp_holds_is_null_in_every_column() -> None:
    sha, other = "a" * 40, "b" * 40
    out = f"commit {sha} 99999999999999 \0commit {other} 1700000000 {sha}\0".encode()
    commits = parse_log(out)
    branch = BranchLog.of_commits(list(reversed(commits)))
    assert branch.unheld == {1: 99999999999999}
    assert branch.at(1) is None and branch.at(0) == commits[1].at
    assert branch.timestamps().to_pylist() == [commits[1].at, None]


def test_the_timeline_spreads_each_state_over_the_points_that_leave_it_alone() -> None:
    a = Entry(position=1, side="assistant", blocks=blocks_from_wire([USE]), usage=Usage(input_total_tokens=90,
                                                                                      output_tokens=7))
    b = Entry(position=2, side="tool", blocks=blocks_from_wire([RESULT]))
    c = Entry(position=3, side="tool", blocks=blocks_from_wire([ORPHAN]))
    events: dict[int, Event] = {2: Appended((a,)), 3: Appended((b,)), 6: Appended((c,)), 8: Reset((a, c))}
    points = 10
    every = list(replay(events.get(i, Appended(())) for i in range(points)))  # one event per point
    timeline = Timeline(list(replay(events.values())), list(events), points)
    assert [timeline.state(i) for i in range(points)] == every
    messages, chars, context, orphans = timeline.columns()
    assert messages.to_pylist() == [s.messages for s in every] == [0, 0, 1, 2, 2, 2, 3, 3, 2, 2]
    assert chars.to_pylist() == [s.chars for s in every]
    assert context.to_pylist() == [s.context_tokens for s in every] == [None, None, *[97] * 8]
    assert orphans.to_pylist() == [s.orphans for s in every] == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert Timeline([], [], 3).columns()[0].to_pylist() == [0, 0, 0]
    assert [len(c) for c in Timeline([], [], 0).columns()] == [0, 0, 0, 0]


def test_every_read_of_a_repository_goes_through_one_cat_file_process(tmp_path: Path) -> None:
    repo = GitRepo(forked(tmp_path))
    log = repo.log(repo.refs()["refs/heads/agents/p"])
    blobs = {ch.blob: ch.path for c in log for ch in c.changes if ch.status != "D"}
    first = repo.read(list(blobs)[:2])
    process = repo._batch
    assert process is not None and all(first.values())
    second = repo.read([*list(blobs)[2:], "0" * 40, f"{log[-1].sha}:name"])
    assert repo._batch is process  # the same process answered the second batch
    assert second["0" * 40] is None and second[f"{log[-1].sha}:name"] is None  # missing: None, the batch goes on
    assert repo.read([f"{log[-1].sha}:messages/001-op.md"]) == {f"{log[-1].sha}:messages/001-op.md": b"go"}
    assert repo.blob_reads == len(blobs) + 1
    repo.close()
    assert repo._batch is None and process._proc.poll() is not None  # stopped, and waited for
    assert repo.read([f"{log[-1].sha}:messages/001-op.md"])  # a later read starts another
    repo.close()


def test_read_regular_reads_a_file_and_reports_what_it_cannot(tmp_path: Path) -> None:
    diags = Diagnostics("litany")
    (tmp_path / "f").write_bytes(b"x" * 70_000)
    assert read_regular(tmp_path / "f", diags) == b"x" * 70_000
    assert read_regular(tmp_path / "absent", diags, missing_ok=True) is None and not diags.rows
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    os.mkfifo(tmp_path / "fifo")
    for name in ("absent", "dangling", "fifo"):
        assert read_regular(tmp_path / name, diags, missing_ok=True) is None
    assert [os.path.basename(d.path) for d in diags.rows] == ["dangling", "fifo"]  # the FIFO was never waited on
    assert read_regular(tmp_path / "absent", diags) is None and len(diags.rows) == 3


def test_many_files_read_at_once_are_read_and_reported_as_one_at_a_time(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 70_000)
    (tmp_path / "big").write_bytes(bytes(range(256)) * 9_000)  # over 2 MB, every byte value
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    os.symlink(tmp_path / "f", tmp_path / "link")
    os.mkfifo(tmp_path / "fifo")
    names = ["f", "absent", "big", "dangling", "empty", "fifo", "folder", "loop", "link", "f"]
    paths = [tmp_path / n for n in names]
    for missing_ok in (False, True):
        one, many = Diagnostics("litany"), Diagnostics("litany")
        expected = [read_regular(p, one, missing_ok=missing_ok) for p in paths]
        assert read_regular_files(paths, many, missing_ok=missing_ok) == expected
        assert expected[0] == b"x" * 70_000 and expected[2] == bytes(range(256)) * 9_000 and expected[4] == b""
        assert [(d.path, d.kind, d.detail) for d in many.rows] == [(d.path, d.kind, d.detail) for d in one.rows]
        assert {os.path.basename(d.path) for d in many.rows} >= {"dangling", "fifo", "folder", "loop"}
    each = [Diagnostics("litany") for _ in paths]  # one per path: each path's problem goes to its own
    read_regular_files(paths, each)
    assert [[os.path.basename(d.path) for d in r.rows] for r in each] == [[] if n in ("f", "big", "empty", "link")
                                                                          else [n] for n in names]


@pytest.mark.parametrize("extra", [0, 30])
def test_a_branch_load_builds_its_growth_as_columns(tmp_path: Path, extra: int) -> None:
    import murmur_analysis as ma

    repo = RepoBuilder(tmp_path / "repo.git")
    a = Branch(repo, "a")
    a.put(tree(("001-op.md", "go"), ("002-m.json", blocks(USE))))
    for i in range(extra):
        a.put({"work/counter.txt": f"{i}\n"})
    a.put(tree(("003-tool.json", blocks(ORPHAN))))
    repo.finish()
    growth = ma.load(tmp_path / "repo.git").tables["growth"]
    assert growth["position"].to_pylist() == list(range(extra + 2))
    assert growth["messages"].to_pylist() == [2] * (extra + 1) + [3]
    assert growth["orphans"].to_pylist() == [0] * (extra + 1) + [1]
    assert growth["event"].to_pylist() == ["commit"] * (extra + 2)
    assert growth["at"].to_pylist()[-1].timestamp() == T0 + 60 * (extra + 2)


hexes = st.text("0123456789abcdef", min_size=1, max_size=12)
changes = st.tuples(st.sampled_from(["100644", "100755", "120000", "160000"]), hexes,
                    st.sampled_from(["A", "M", "D", "T", "R100"]),
                    st.binary(min_size=1, max_size=12).filter(lambda b: b"\0" not in b))
commits = st.lists(st.tuples(hexes, st.integers(0, 10**25), st.lists(hexes, max_size=3), st.lists(changes, max_size=3)),
                   max_size=12)


@given(commits, st.lists(st.integers(1, 64), min_size=1, max_size=8), st.booleans())
@settings(max_examples=200, deadline=None)
def test_the_log_parser_reads_what_git_writes_in_any_pieces(log: list[Any], cuts: list[int], newline: bool) -> None:
    out = b""
    for sha, time, parents, changed in log:
        out += f"commit {sha} {time} {' '.join(parents)}".encode() + b"\0"
        for mode, blob, status, path in changed:
            raw = f":000000 {mode} {'0' * 40} {blob} {status}".encode()
            out += (b"\n" if newline else b"") + raw + b"\0" + path + b"\0"
    parser = LogParser()
    at, k = 0, 0
    while at < len(out):
        parser.feed(out[at : at + cuts[k % len(cuts)]])
        at, k = at + cuts[k % len(cuts)], k + 1
    walk = parser.finish_walk()
    assert walk.shas == [sha for sha, *_ in log]
    assert walk.times == [time for _, time, _, _ in log]
    assert walk.parents == [tuple(parents) for _, _, parents, _ in log]
    assert walk.changes == {i: tuple(Change(path.decode("utf-8", "surrogateescape"), mode, blob, status[0])
                                     for mode, blob, status, path in changed)
                            for i, (*_, changed) in enumerate(log) if changed}


@given(st.binary(max_size=200), st.integers(1, 50))
@settings(max_examples=300, deadline=None)
def test_the_log_parser_refuses_any_other_bytes_with_a_git_error(data: bytes, size: int) -> None:
    parser = LogParser()
    try:
        for i in range(0, len(data), size):
            parser.feed(data[i : i + size])
        parser.finish_walk()
    except GitError:
        pass


def test_the_log_parser_refuses_what_git_log_does_not_write() -> None:
    from murmur_analysis.errors import GitError

    raw = f":000000 100644 {'0' * 40} {'1' * 40} A".encode()
    head = f"commit {'a' * 40} 1700000000 ".encode()
    with pytest.raises(GitError, match="unexpected git log output"):
        parse_log(raw + b"\0messages/001-op.md\0" + head + b"\0")  # a change before any commit
    with pytest.raises(GitError, match="ended inside a change"):
        parse_log(head + b"\0\n" + raw + b"\0")  # a change with no path
    with pytest.raises(GitError, match="unexpected git log header"):
        parse_log(f"commit {'a' * 40} soon \0".encode())
    with pytest.raises(GitError, match="unexpected git log output"):
        parse_log(head + b"\0something else\0")
    pieces = parse_log(head + b"\0\n" + raw + b"\0:odd name\0")  # a path may look like a change
    assert [ch.path for c in pieces for ch in c.changes] == [":odd name"]
