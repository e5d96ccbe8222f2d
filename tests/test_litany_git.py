"""The litany source through real git repositories built in tmp_path.

The first group mirrors litany's assembler and pairing tests (src/prompt/dispatch/{assembler,
pairing}/tests.rs) but replays git trees: entries come from `messages/` blobs of a commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from litany_git import T0, Branch, RepoBuilder, blocks, j, tree

import murmur_analysis as ma
from murmur_analysis.algorithms.history import History, State
from murmur_analysis.core.model import Text, ToolResult, ToolUse
from murmur_analysis.sources.litany import replay as litany_module

USE = {"type": "tool_use", "id": "call_1", "name": "bash", "input": {"cmd": "ls"}}
RESULT = {"type": "tool_result", "tool_use_id": "call_1", "content": [{"type": "text", "text": "out"}],
          "is_error": False}


def one_commit(tmp_path: Path, *files: tuple[str, bytes | str]) -> Path:
    repo = RepoBuilder(tmp_path / "repo.git")
    Branch(repo, "a").put(tree(*files))
    repo.finish()
    return tmp_path / "repo.git"


def test_absent_messages_folder_assembles_nothing(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "repo.git")
    Branch(repo, "a").put({"goal.md": "g\n"})
    repo.finish()
    asm = ma.assemble_commit(tmp_path, "agents/a")
    assert asm.messages == [] and asm.dropped_orphans == []


def test_user_text_is_verbatim(tmp_path: Path) -> None:
    body = "list files\n\n  exactly as written  \n"
    git_dir = one_commit(tmp_path, ("001-operator.md", body))
    [msg] = ma.assemble_commit(git_dir, "agents/a").messages
    assert msg.role == "user" and msg.blocks == (Text(body),)


def test_replay_yields_the_alternating_history(tmp_path: Path) -> None:
    git_dir = one_commit(tmp_path, ("001-operator.md", "go"), ("002-claude-fable-5.json", blocks(USE)),
                         ("003-tool.json", blocks(RESULT)))
    msgs = ma.assemble_commit(git_dir, "agents/a").messages
    assert [m.role for m in msgs] == ["user", "assistant", "tool"]
    assert isinstance(msgs[1].blocks[0], ToolUse) and isinstance(msgs[2].blocks[0], ToolResult)
    assert msgs[2].content == [RESULT]


def test_entries_order_by_counter_not_by_name(tmp_path: Path) -> None:
    git_dir = one_commit(tmp_path, ("1000-claude-fable-5.json", blocks({"type": "text", "text": "second"})),
                         ("999-operator.md", "first"))
    msgs = ma.assemble_commit(git_dir, "agents/a").messages
    assert [m.role for m in msgs] == ["user", "assistant"] and msgs[0].blocks == (Text("first"),)


def test_non_conforming_names_contribute_nothing(tmp_path: Path) -> None:
    git_dir = one_commit(tmp_path, ("notes.txt", "x"), ("README.md", "y"), ("x1-a.md", "z"), ("001-op.md", "hi"))
    assert [m.blocks for m in ma.assemble_commit(git_dir, "agents/a").messages] == [(Text("hi"),)]


def test_consecutive_same_side_entries_group(tmp_path: Path) -> None:
    use_b = {"type": "tool_use", "id": "b", "name": "read", "input": {}}
    res = [{"type": "tool_result", "tool_use_id": i, "content": [], "is_error": False} for i in ("call_1", "b")]
    git_dir = one_commit(tmp_path, ("001-op.md", "two"), ("002-m.json", blocks(USE, use_b)),
                         ("003-tool.json", blocks(res[0])), ("004-tool.json", blocks(res[1])))
    msgs = ma.assemble_commit(git_dir, "agents/a").messages
    assert len(msgs) == 3
    assert [b.tool_use_id for b in msgs[2].blocks if isinstance(b, ToolResult)] == ["call_1", "b"]


def test_same_counter_ties_keep_git_tree_order(tmp_path: Path) -> None:
    git_dir = one_commit(tmp_path, ("005-b.md", "second"), ("005-a.md", "first"))
    [msg] = ma.assemble_commit(git_dir, "agents/a").messages
    assert msg.blocks == (Text("first"), Text("second"))


def test_orphan_is_dropped_and_named_and_the_emptied_message_goes(tmp_path: Path) -> None:
    orphan = {"type": "tool_result", "tool_use_id": "call_gone", "content": [], "is_error": False}
    git_dir = one_commit(tmp_path, ("001-op.md", "do two"), ("002-tool.json", blocks(orphan)),
                         ("003-op.md", "still here?"))
    asm = ma.assemble_commit(git_dir, "agents/a")
    assert asm.dropped_orphans == ["call_gone"]
    assert [m.role for m in asm.messages] == ["user"]
    assert asm.messages[0].blocks == (Text("do two"), Text("still here?"))


def test_history_with_no_orphan_is_untouched(tmp_path: Path) -> None:
    git_dir = one_commit(tmp_path, ("001-op.md", "go"), ("002-m.json", blocks(USE)), ("003-tool.json", blocks(RESULT)))
    asm = ma.assemble_commit(git_dir, "agents/a")
    assert asm.dropped_orphans == [] and len(asm.messages) == 3


def history(tmp_path: Path) -> tuple[Path, dict[int, str]]:
    """agents/a: 6 commits; the 4th only touches the worktree, the 5th deletes the model entry."""
    repo = RepoBuilder(tmp_path / "ws" / "repo.git")
    a = Branch(repo, "a")
    a.put({"name": "the planner\n", "goal.md": "g\n"})
    a.put(tree(("001-operator.md", "go")))
    a.put(tree(("002-claude-fable-5.json", j({"content": [USE], "usage": {"input_tokens": 100, "output_tokens": 7,
                                                                           "input_total_tokens": 100}}))))
    a.put(tree(("003-tool.json", blocks(RESULT))) | {"src/x.py": "x = 1\n"})
    a.put({"src/x.py": "x = 2\n"})
    a.put({"messages/002-claude-fable-5.json": None})
    return tmp_path / "ws", repo.finish()


def test_growth_has_one_row_per_commit_with_orphans_at_each(tmp_path: Path) -> None:
    ws, _ = history(tmp_path)
    corpus = ma.load(ws)
    g = corpus.growth
    assert list(g["position"]) == [0, 1, 2, 3, 4, 5]
    assert list(g["messages"]) == [0, 1, 2, 3, 3, 2]
    assert list(g["orphans"]) == [0, 0, 0, 0, 0, 1]
    assert list(g["chars"]) == [0, 2, 2, 5, 5, 5]
    assert list(g["context_tokens"].fillna(-1)) == [-1, -1, 107, 107, 107, -1]
    assert list(g["at"]) == [datetime.fromtimestamp(T0 + 60 * i, UTC) for i in range(1, 7)]
    assert set(g["event"]) == {"commit"} and g["commit"].str.len().eq(40).all()
    conv = corpus.conversations.iloc[0]
    assert conv["title"] == "the planner" and conv["messages"] == 2 and conv["orphans"] == 1
    assert list(corpus.orphans["tool_use_id"]) == ["call_1"]
    assert list(corpus.orphans["found_by"]) == ["assembly"]


def test_created_at_is_the_time_of_the_commit_that_added_the_entry(tmp_path: Path) -> None:
    ws, _ = history(tmp_path)
    m = ma.load(ws).messages
    assert list(m["message_id"]) == ["001-operator.md", "003-tool.json"]
    assert list(m["created_at"]) == [datetime.fromtimestamp(T0 + 120, UTC), datetime.fromtimestamp(T0 + 240, UTC)]
    assert list(m["seq"]) == [1, 3] and list(m["role"]) == ["user", "tool"]


def test_assemble_commit_takes_a_branch_a_sha_and_an_ancestor(tmp_path: Path) -> None:
    ws, shas = history(tmp_path)
    head = ma.assemble_commit(ws, "agents/a")
    assert head.dropped_orphans == ["call_1"]
    three_back = ma.assemble_commit(ws, "agents/a~3")
    assert three_back.dropped_orphans == [] and [m.role for m in three_back.messages] == ["user", "assistant"]
    assert ma.assemble_commit(ws / "repo.git", shas[2]).messages[0].content == [{"type": "text", "text": "go"}]
    assert ma.assemble_commit(ws, shas[4]).messages == ma.assemble_commit(ws, "agents/a~2").messages


@pytest.mark.parametrize("rev", ["agents/nope", "0" * 40, "agents/a~99", "--output=/tmp/x", "", "a\nb"])
def test_a_revision_that_names_no_commit_is_a_git_error(tmp_path: Path, rev: str) -> None:
    ws, _ = history(tmp_path)
    with pytest.raises(ma.GitError):
        ma.assemble_commit(ws, rev)


def test_a_folder_that_is_no_repository_is_a_git_error(tmp_path: Path) -> None:
    with pytest.raises(ma.GitError):
        ma.assemble_commit(tmp_path, "HEAD")


def test_unreadable_blobs_become_diagnostics_and_the_load_goes_on(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "repo.git")
    a = Branch(repo, "a")
    a.put(tree(("001-op.md", "go"), ("002-m.json", b'{"content":[{"type":'), ("003-op.md", b"\xff\xfe"),
               ("004-tool.json", b'{"usage":{}}'), ("005-m.json", b'"text"')))
    a.put(tree(("006-op.md", "still")))
    repo.finish()
    corpus = ma.load(tmp_path / "repo.git")
    d = corpus.diagnostics
    assert list(d["kind"]) == ["bad_entry"] * 4
    assert sorted(p.rsplit(":", 1)[1] for p in d["path"]) == [
        "messages/002-m.json", "messages/003-op.md", "messages/004-tool.json", "messages/005-m.json"]
    assert list(corpus.messages["message_id"]) == ["001-op.md", "006-op.md"]


def test_a_folder_or_link_named_like_an_entry_is_a_diagnostic(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "repo.git")
    Branch(repo, "a").put(tree(("001-op.md", "go"), ("002-dir/x.json", "[]")))
    repo.finish()
    corpus = ma.load(tmp_path / "repo.git")
    assert list(corpus.diagnostics["kind"]) == ["not_a_file"]
    assert list(corpus.messages["message_id"]) == ["001-op.md"]


def test_a_fork_shares_history_and_parses_each_blob_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bytes] = []
    real = litany_module.parse_body
    monkeypatch.setattr(litany_module, "parse_body", lambda data, md: calls.append(data) or real(data, md))
    repo = RepoBuilder(tmp_path / "repo.git")
    parent = Branch(repo, "p")
    parent.put(tree(("001-op.md", "go"), ("002-m.json", blocks(USE))))
    fork = parent.put(tree(("003-tool.json", blocks(RESULT))))
    parent.put(tree(("004-op.md", "parent goes on")))
    child = Branch(repo, "p-c1", start=T0 + 10_000, parent=fork)
    child.put({"name": "child\n"})
    child.put(tree(("004-op.md", "child goes on")))
    repo.finish()
    corpus = ma.load(tmp_path / "repo.git")
    assert len(calls) == 5  # three shared entries and the two different 004 bodies: none parsed twice
    by = corpus.conversations.set_index("conversation_id")
    assert by.loc["p", "messages"] == 4 and by.loc["p-c1", "messages"] == 4
    assert by.loc["p-c1", "title"] == "child" and pd.isna(by.loc["p", "title"])
    assert corpus.growth.groupby("conversation_id").size().to_dict() == {"p": 3, "p-c1": 4}


def worktree_only_history(root: Path, extra_commits: int) -> Path:
    repo = RepoBuilder(root / "repo.git")
    a = Branch(repo, "a")
    a.put(tree(("001-op.md", "go"), ("002-m.json", blocks(USE)), ("003-tool.json", blocks(RESULT))))
    for i in range(extra_commits):
        a.put({"work/counter.txt": f"{i}\n"})
    repo.finish()
    return root / "repo.git"


def test_cost_is_flat_in_history_length_for_unchanged_content(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    parses: list[int] = []
    fed: list[int] = []  # entries the history core took, per call
    real_parse, real_append = litany_module.parse_body, History.append
    monkeypatch.setattr(litany_module, "parse_body", lambda data, md: parses.append(1) or real_parse(data, md))

    def counting_append(self: History, entries: Iterable[ma.Entry]) -> State:
        taken = list(entries)
        fed.append(len(taken))
        return real_append(self, taken)

    monkeypatch.setattr(History, "append", counting_append)
    counts = []
    for n in (10, 100):
        parses.clear()
        fed.clear()
        corpus = ma.load(worktree_only_history(tmp_path / str(n), n))
        assert len(corpus.growth) == n + 1
        counts.append((len(parses), sum(fed)))
    assert counts[0] == counts[1] == (3, 3)


def hostile_repo(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "PWNED"
    repo = RepoBuilder(tmp_path / "evil" / "repo.git")
    Branch(repo, "a").put(tree(("001-op.md", "go"), ("002-m.json", blocks(USE))))
    repo.finish()
    git_dir = tmp_path / "evil" / "repo.git"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {tmp_path}/log\ntouch {marker}\n")
    script.chmod(0o755)
    hooks = git_dir / "hooks"
    hooks.mkdir(exist_ok=True)
    for hook in ("pre-commit", "post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change"):
        (hooks / hook).write_text(script.read_text())
        (hooks / hook).chmod(0o755)
    with open(git_dir / "config", "a") as fh:
        fh.write(
            f"[core]\n\tfsmonitor = {script}\n\tpager = {script}\n\tsshCommand = {script}\n"
            f"\thooksPath = {hooks}\n\teditor = {script}\n\taskPass = {script}\n"
            f"[diff]\n\texternal = {script}\n[diff \"x\"]\n\ttextconv = {script}\n"
            f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {script}\n"
            f"[pager]\n\tlog = {script}\n\tcat-file = {script}\n[alias]\n\tlog = !{script}\n"
            f"[color]\n\tui = always\n[core]\n\tquotePath = true\n"
        )
    (git_dir / "info").mkdir(exist_ok=True)
    (git_dir / "info" / "attributes").write_text("* diff=x\n")
    return git_dir, marker


def test_a_hostile_repository_runs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git_dir, marker = hostile_repo(tmp_path)
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(tmp_path / "evil.sh"))
    monkeypatch.setenv("GIT_PAGER", str(tmp_path / "evil.sh"))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.pager'='{tmp_path / 'evil.sh'}'")
    corpus = ma.load(git_dir.parent)
    assert len(corpus.messages) == 2 and len(corpus.diagnostics) == 0
    assert len(ma.assemble_commit(git_dir, "agents/a~0").messages) == 2
    assert not marker.exists()


def test_a_partial_clone_never_fetches_a_missing_object(tmp_path: Path) -> None:
    import subprocess

    from murmur_analysis.sources.litany.git import safe_env

    git_dir, marker = hostile_repo(tmp_path)
    env = safe_env()
    run = lambda *a, stdin=None: subprocess.run(  # noqa: E731
        ["git", "--git-dir", str(git_dir), *a], input=stdin, capture_output=True, env=env, check=True).stdout
    missing = "1" * 40
    msgs = run("mktree", "--missing", stdin=f"100644 blob {missing}\t001-op.md\n".encode()).decode().strip()
    root = run("mktree", "--missing", stdin=f"040000 tree {msgs}\tmessages\n".encode()).decode().strip()
    env.update(GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@b", GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@b")
    commit = run("commit-tree", root, "-m", "m").decode().strip()
    run("update-ref", "refs/heads/agents/b", commit)
    with open(git_dir / "config", "a") as fh:
        fh.write(f"[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = evil\n"
                 f"[remote \"evil\"]\n\turl = ext::sh -c {tmp_path / 'evil.sh'}\n\tpromisor = true\n"
                 f"[protocol]\n\tallow = always\n")
    marker.unlink(missing_ok=True)  # the set-up above ran the repo's hooks through plain git
    corpus = ma.load(git_dir)
    assert "bad_entry" in set(corpus.diagnostics["kind"])
    assert not marker.exists()


def test_load_takes_a_data_root_a_workspace_a_bare_repo_and_a_work_tree(tmp_path: Path) -> None:
    repo = RepoBuilder(tmp_path / "root" / "workspaces" / "w1" / "repo.git")
    Branch(repo, "a").put(tree(("001-op.md", "go")))
    repo.finish()
    other = RepoBuilder(tmp_path / "wt" / ".git")
    Branch(other, "b").put(tree(("001-op.md", "go")))
    other.finish()
    for path in (tmp_path / "root", tmp_path / "root" / "workspaces", tmp_path / "root" / "workspaces" / "w1",
                 tmp_path / "root" / "workspaces" / "w1" / "repo.git"):
        assert list(ma.load(path).conversations["conversation_id"]) == ["a"], path
    assert list(ma.load(tmp_path / "wt").conversations["conversation_id"]) == ["b"]
    assert ma.assemble_commit(tmp_path / "wt", "agents/b").messages[0].content == [{"type": "text", "text": "go"}]


def plumbing(git_dir: Path) -> Callable[..., bytes]:
    import subprocess

    from murmur_analysis.sources.litany.git import safe_env

    env = safe_env() | {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                        "GIT_COMMITTER_EMAIL": "a@b", "GIT_AUTHOR_DATE": f"{T0 + 99_000} +0000",
                        "GIT_COMMITTER_DATE": f"{T0 + 99_000} +0000"}

    def run(*args: str, stdin: bytes | None = None) -> bytes:
        return subprocess.run(["git", "--git-dir", str(git_dir), *args], input=stdin, capture_output=True, env=env,
                              check=True).stdout

    return run


def forked_and_merged(tmp_path: Path) -> Path:
    """agents/p and its fork agents/p-c, worktree-only commits, a deletion, and a merge of p into p-c."""
    repo = RepoBuilder(tmp_path / "repo.git")
    p = Branch(repo, "p")
    p.put(tree(("001-op.md", "go")) | {"src/a.py": "1"})
    fork = p.put(tree(("002-m.json", blocks(USE)), ("notes.txt", "n")))
    p.put({"src/a.py": "2"})
    p.put(tree(("003-tool.json", blocks(RESULT)), ("004-op.md", "more")))
    c = Branch(repo, "p-c", start=T0 + 10_000, parent=fork)
    c.put(tree(("003-tool.json", blocks(RESULT))))
    c.put({"messages/001-op.md": None, "src/b.py": "b"})
    repo.finish()
    git = plumbing(tmp_path / "repo.git")
    merge = git("commit-tree", "agents/p^{tree}", "-p", "agents/p-c", "-p", "agents/p", "-m", "merge")
    git("update-ref", "refs/heads/agents/p-c", merge.decode().strip())
    return tmp_path / "repo.git"


def test_one_walk_gives_each_branch_the_history_its_own_log_gives(tmp_path: Path) -> None:
    from murmur_analysis.sources.litany.git import GitRepo
    from murmur_analysis.sources.litany.gitlog import first_parent

    repo = GitRepo(forked_and_merged(tmp_path))
    heads = repo.refs()
    everything = repo.walk(heads.values())
    messages = repo.walk(heads.values(), ["messages/"])
    assert len(everything) == len(messages) == 7  # every commit, each once, with or without the path limit
    for head in heads.values():
        alone = repo.log(head)
        assert first_parent(everything, head) == alone
        limited = first_parent(messages, head)
        assert [(c.sha, c.time, c.parents) for c in limited] == [(c.sha, c.time, c.parents) for c in alone]
        assert [c.changes for c in limited] == [
            tuple(ch for ch in c.changes if ch.path.startswith("messages/")) for c in alone]
    assert any(len(c.parents) == 2 and c.changes for c in messages.values())  # the merge, against its first parent


@pytest.mark.parametrize("size", [1, 2, 7, 41, 1 << 20])
def test_the_log_parser_takes_output_in_pieces_of_any_size(tmp_path: Path, size: int) -> None:
    from murmur_analysis.sources.litany.git import GitRepo
    from murmur_analysis.sources.litany.gitlog import LogParser, parse_log

    repo = GitRepo(forked_and_merged(tmp_path))
    out = repo.run("log", "--raw", "-z", "--no-abbrev", "--root", "--diff-merges=first-parent",
                   "--format=tformat:commit %H %ct %P", "--branches")
    parser = LogParser()
    for i in range(0, len(out), size):
        parser.feed(out[i : i + size])
    commits = parser.finish()
    assert commits == parse_log(out) and len(commits) == 7 and sum(len(c.changes) for c in commits) == 14


def test_a_branch_git_cannot_walk_is_reported_and_the_others_load(tmp_path: Path) -> None:
    git_dir = forked_and_merged(tmp_path)
    git = plumbing(git_dir)
    tree_id = git("rev-parse", "agents/p^{tree}").decode().strip()
    body = f"tree {tree_id}\nparent {'1' * 40}\nauthor a <a@b> {T0} +0000\ncommitter a <a@b> {T0} +0000\n\nx\n"
    broken = git("hash-object", "-t", "commit", "-w", "--stdin", stdin=body.encode()).decode().strip()
    git("update-ref", "refs/heads/agents/q", broken)
    corpus = ma.load(git_dir)
    # The branch is handed over before its history is walked; found unreadable then, it adds no row.
    assert list(corpus.conversations["conversation_id"]) == ["p", "p-c"]
    assert list(corpus.diagnostics["kind"]) == ["unreadable_branch"]
    assert corpus.diagnostics["path"].iloc[0].endswith("@refs/heads/agents/q")
    assert corpus.growth.groupby("conversation_id").size().to_dict() == {"p": 4, "p-c": 5}


def test_a_commit_time_no_datetime_holds_is_none_not_a_failed_walk() -> None:
    from murmur_analysis.core.values import datetime_of_seconds
    from murmur_analysis.sources.litany.gitlog import parse_log

    sha = "a" * 40
    commits = parse_log(f"commit {sha} 99999999999999 \0commit {'b' * 40} 1700000000 {sha}\0".encode())
    assert [c.at for c in commits] == [None, datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)]
    assert commits[0].time == datetime_of_seconds(99999999999999)  # kept as written, for its reader to report
