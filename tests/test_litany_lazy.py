"""A litany branch is handed over before it is read: an unchanged branch is not read on re-export."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litany_git import T0, Branch, RepoBuilder, blocks, j, tree
from live_git import commit_file

import murmur_analysis as ma
from murmur_analysis.corpus import read_parquet
from murmur_analysis.errors import GitError
from murmur_analysis.export import export
from murmur_analysis.sources import Diagnostics
from murmur_analysis.sources.litany import replay as replay_module
from murmur_analysis.sources.litany import source as source_module
from murmur_analysis.sources.litany.git import GitRepo
from murmur_analysis.sources.litany.gitlog import BranchLog

USE = {"type": "tool_use", "id": "t1", "name": "sh", "input": {"cmd": "ls"}}


def workspace(root: Path) -> Path:
    repo = RepoBuilder(root / "repo.git")
    a, b = Branch(repo, "a"), Branch(repo, "b")
    a.put(tree(("001-operator.md", "go a"), ("002-claude-fable-5.json", blocks(USE))))
    b.put(tree(("001-operator.md", "go b")))
    b.put(tree(("002-claude-fable-5.json", j({"content": [{"type": "text", "text": "done"}]}))))
    repo.finish()
    return root


class Reads:
    """Counts the branches replayed and the blobs parsed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.replays = 0
        self.parses = 0
        real_replay, real_parse = source_module._replay, replay_module.parse_body

        def replay(*args: Any, **kwargs: Any) -> Any:
            self.replays += 1
            return real_replay(*args, **kwargs)

        def parse(*args: Any, **kwargs: Any) -> Any:
            self.parses += 1
            return real_parse(*args, **kwargs)

        monkeypatch.setattr(source_module, "_replay", replay)
        monkeypatch.setattr(replay_module, "parse_body", parse)

    def take(self) -> tuple[int, int]:
        seen, self.replays, self.parses = (self.replays, self.parses), 0, 0
        return seen


def test_an_unchanged_branch_is_not_read_again_on_re_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = workspace(tmp_path / "ws")
    out = tmp_path / "out"
    reads = Reads(monkeypatch)
    first = export(ws, out=out)
    assert first.conversations_read == 2 and reads.take() == (2, 4)
    again = export(ws, out=out)
    assert (again.conversations_read, again.conversations_kept) == (0, 2)
    assert reads.take() == (0, 0)  # neither branch walked, read nor parsed
    commit_file(ws / "repo.git", "agents/b", "messages/003-operator.md", b"more", T0 + 600)
    third = export(ws, out=out)
    assert (third.conversations_read, third.conversations_kept) == (1, 1)
    assert reads.take() == (1, 3)  # b alone: its three blobs, none of a's
    exported = read_parquet(out).tables
    loaded = ma.load(ws).tables
    keys = {"messages": ["conversation_id", "seq"], "growth": ["conversation_id", "position"],
            "orphans": ["conversation_id", "tool_use_id"], "conversations": ["conversation_id"]}
    for name, key in keys.items():
        pd.testing.assert_frame_equal(exported[name].to_pandas().sort_values(key).reset_index(drop=True),
                                      loaded[name].to_pandas().sort_values(key).reset_index(drop=True))


def test_a_conversation_is_handed_over_unread_and_its_fingerprint_reads_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = workspace(tmp_path / "ws")
    reads = Reads(monkeypatch)
    source = source_module.LitanySource()
    convs = list(source.open(ws, Diagnostics("litany")))
    fingerprints = [source.fingerprint(c) for c in convs]
    assert [c.conversation_id for c in convs] == ["a", "b"] and all(fingerprints)
    assert [(c.part, c.key[2]) for c in convs] == [("a", "a"), ("b", "b")]  # type: ignore[index]
    assert reads.take() == (0, 0)
    entries = list(convs[1].entries)
    assert [e.id for e in entries] == ["001-operator.md", "002-claude-fable-5.json"]
    assert reads.take() == (1, 2)
    assert source.fingerprint(convs[1]) == fingerprints[1]


def test_a_load_that_reports_progress_keeps_what_each_branch_returns(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    seen: list[tuple[str, str]] = []
    quiet, told = ma.load(ws), ma.load(ws, progress=lambda kind, what: seen.append((kind, what)))
    assert ("conversation", "litany: b") in seen
    for name in ("growth", "usage", "orphans", "steps", "conversations"):
        assert told.tables[name].equals(quiet.tables[name]), name
    assert list(told.growth["event"]) == ["commit"] * 3  # the branches' own rows, not one per message


def test_a_load_starts_git_once_per_batch_of_branches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = RepoBuilder(tmp_path / "ws" / "repo.git")
    for agent in "abcdefg":
        Branch(repo, agent).put(tree(("001-operator.md", f"go {agent}")))
    repo.finish()
    reads: list[int] = []
    real = GitRepo.read
    monkeypatch.setattr(GitRepo, "read", lambda self, names: reads.append(1) or real(self, names))
    corpus = ma.load(tmp_path / "ws")
    assert len(corpus.conversations) == 7 and len(corpus.messages) == 7
    assert len(reads) == 4  # a; b, c; d, e, f; g: each batch reads ahead twice as far as the one before


def test_each_batch_is_walked_once_and_a_history_walked_before_is_not_listed_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = RepoBuilder(tmp_path / "ws" / "repo.git")
    p = Branch(repo, "p")
    p.put(tree(("001-operator.md", "go")))
    fork = p.put(tree(("002-claude-fable-5.json", blocks(USE))))
    p.put(tree(("003-operator.md", "parent goes on")))
    child = Branch(repo, "p-c", start=T0 + 10_000, parent=fork)
    child.put(tree(("003-operator.md", "child goes on")))
    for agent in "qr":
        Branch(repo, agent).put(tree(("001-operator.md", f"go {agent}")))
    repo.finish()
    walks: list[tuple[int, int]] = []  # commits listed, heads known
    threads: set[str] = set()
    real = GitRepo.walk_columns

    def walk(self: GitRepo, heads: Any, paths: Any = (), known: Any = ()) -> Any:
        found = real(self, list(heads), paths, known)
        walks.append((len(list(found.shas)), len(list(known))))
        threads.add(threading.current_thread().name.rpartition("_")[0])
        return found

    monkeypatch.setattr(GitRepo, "walk_columns", walk)
    corpus = ma.load(tmp_path / "ws")
    # p; then p-c and q, p's history known; then r: the six commits are each listed once
    assert walks == [(3, 0), (2, 1), (1, 0)]
    assert threads == {"litany-walk"}  # one after another, beside the load
    by = corpus.conversations.set_index("conversation_id")
    assert by["messages"].to_dict() == {"p": 3, "p-c": 3, "q": 1, "r": 1}
    assert corpus.growth.groupby("conversation_id").size().to_dict() == {"p": 3, "p-c": 3, "q": 1, "r": 1}
    mine = corpus.messages.query("conversation_id == 'p-c'")
    assert list(mine["message_id"]) == ["001-operator.md", "002-claude-fable-5.json", "003-operator.md"]
    assert (mine["text"].iloc[0], mine["text"].iloc[-1]) == ("go", "child goes on")


# Each agent: the agent it forks from (an index among those before it, or None: a root), the
# commit of that agent's it starts from, whether its id extends the parent's (litany's naming,
# so the parent's walk is known to its own), and its commits (True: a transcript change).
agents_strategy = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 7)), st.integers(0, 3), st.booleans(),
              st.lists(st.booleans(), min_size=1, max_size=4)),
    min_size=1, max_size=8)


@given(agents_strategy)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_branches_walked_in_batches_have_the_history_each_alone_has(
        tmp_path_factory: pytest.TempPathFactory, agents: list[tuple[int | None, int, bool, list[bool]]]) -> None:
    ws = tmp_path_factory.mktemp("ws")
    repo = RepoBuilder(ws / "repo.git")
    ids: list[str] = []
    marks: list[list[int]] = []
    for n, (parent, at, named, commits) in enumerate(agents):
        if parent is None or not ids:
            agent, start = f"r{n}", None
        else:
            k = parent % len(ids)
            agent, start = (f"{ids[k]}-{n}" if named else f"x{n}"), marks[k][at % len(marks[k])]
        branch = Branch(repo, agent, start=T0 + 1_000 * n, parent=start)
        for c, change in enumerate(commits):
            branch.put(tree((f"{n:02d}{c}-operator.md", f"{agent} {c}")) if change else {"work/n.txt": f"{n} {c}"})
        ids.append(agent)
        marks.append(branch.marks)
    repo.finish()
    workspace = source_module._Workspace.open("git", ws / "repo.git", None, Diagnostics("litany"), None)
    assert workspace is not None
    for agent in workspace.wanted:  # as a load reads them: handed over and read in ref order
        list(workspace.conversation(agent).entries)
    git = GitRepo(ws / "repo.git")
    for agent, (_ref, head) in workspace.wanted.items():
        walked, alone = workspace.log(agent), BranchLog.of_commits(git.log(head))
        assert walked.shas == alone.shas, agent
        assert walked.seconds.tolist() == alone.seconds.tolist()
        assert walked.changes == {i: tuple(ch for ch in c if ch.path.startswith("messages/"))
                                  for i, c in alone.changes.items() if any(ch.path.startswith("messages/") for ch in c)}
    listed = [sha for walk in workspace._walks for sha in walk.shas]
    forks_named = all(p is None or named for p, _, named, _ in agents)
    if forks_named:  # every shared history follows litany's naming: no commit is listed twice
        assert len(listed) == len(set(listed))


def test_a_batch_read_ahead_for_branches_then_left_unread_is_thrown_away_unparsed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    for agent in "abcdefg":
        Branch(repo, agent).put(tree(("001-operator.md", f"go {agent}"),
                                     ("002-claude-fable-5.json", j({"content": [{"type": "text", "text": agent}]}))))
    repo.finish()
    out = tmp_path / "out"
    assert export(ws, out=out).conversations_read == 7
    for agent in "bce":
        commit_file(ws / "repo.git", f"agents/{agent}", "messages/003-operator.md", f"more {agent}".encode(), T0 + 600)
    dropped: list[list[str]] = []
    real_drop = source_module._Fetch.drop
    monkeypatch.setattr(source_module._Fetch, "drop", lambda self: dropped.append(self.agents) or real_drop(self))
    reads = Reads(monkeypatch)
    again = export(ws, out=out)
    assert (again.conversations_read, again.conversations_kept) == (3, 4)
    # c reads d ahead, and the batch after d (e, f, g) is read while c is; d is kept unread, so
    # e is read alone and that batch is thrown away: f's and g's blobs were never parsed.
    assert dropped == [["e", "f", "g"]]
    assert reads.take() == (3, 3 + 3 + 2 + 3)  # b, c and e replayed; the blobs of b, c, d (read ahead) and e
    exported = read_parquet(out).tables
    loaded = ma.load(ws).tables
    for name, key in {"messages": ["conversation_id", "seq"], "growth": ["conversation_id", "position"]}.items():
        pd.testing.assert_frame_equal(exported[name].to_pandas().sort_values(key).reset_index(drop=True),
                                      loaded[name].to_pandas().sort_values(key).reset_index(drop=True))


def test_reads_of_one_repository_from_two_threads_take_turns(tmp_path: Path) -> None:
    import threading

    repo = RepoBuilder(tmp_path / "repo.git")
    for agent in "ab":
        Branch(repo, agent).put(tree(*((f"{n:03d}-operator.md", f"{agent} says {n}") for n in range(1, 40))))
    repo.finish()
    git = GitRepo(tmp_path / "repo.git")
    wanted = {agent: [f"agents/{agent}:messages/{n:03d}-operator.md" for n in range(1, 40)] for agent in "ab"}
    seen: dict[str, list[bool]] = {"a": [], "b": []}

    def read(agent: str) -> None:
        for _ in range(30):
            try:
                found = git.read(wanted[agent])
            except (GitError, ValueError):  # answers mixed up between the threads: git's replies misread
                seen[agent].append(False)
                continue
            seen[agent].append(all(found[name] == f"{agent} says {int(name[-15:-12])}".encode()
                                   for name in wanted[agent]))

    threads = [threading.Thread(target=read, args=(agent,), daemon=True) for agent in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    hung = any(t.is_alive() for t in threads)
    if not hung:
        git.close()
    assert not hung, "a read waited forever for answers the other thread took"
    assert seen == {"a": [True] * 30, "b": [True] * 30}
