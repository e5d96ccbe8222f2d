"""Hostile and broken input: unreadable folders, special files, odd names, sources side by side, data reached twice.

Every case loads: what can be read is read, and everything that could not be is a diagnostics
row. Folders nobody may list are simulated for root too (``hostile_fs.deny``), and a real
``chmod 000`` is read as an unprivileged user (``hostile_fs.as_nobody``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hostile_fs import as_nobody, deny, deny_open, shared_tmp
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_lines import message, write_record

import murmur_analysis as ma
from murmur_analysis.sources.litany.git import safe_env

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"
RECORD = "conversation.jsonl"


def finishes(work: Callable[[], Any], seconds: float = 60.0) -> Any:
    """``work()``, failing the test (instead of hanging it) if it does not return in time."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = work()
        except BaseException as err:  # noqa: BLE001 - re-raised below
            box["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the load never returned (it blocked on a special file)"
    if "error" in box:
        raise box["error"]
    return box["value"]


def home(root: Path, contexts: dict[str, int]) -> Path:
    """A murmur home with one record per ``"record/context": messages``."""
    for name, n in contexts.items():
        write_record(root / "conversations" / name / RECORD, [message(i, "user" if i % 2 == 0 else "assistant")
                                                             for i in range(n)])
    return root


def kinds(corpus: ma.Corpus) -> list[str]:
    return sorted(corpus.diagnostics["kind"].tolist())


def rows(corpus: ma.Corpus, kind: str) -> list[str]:
    d = corpus.diagnostics
    return sorted(d[d["kind"] == kind]["path"].tolist())


# -- D3 / D4: folders that cannot be listed ------------------------------------------------------


def test_an_unreadable_context_folder_is_a_row_and_the_rest_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = home(tmp_path / "h", {"bot/ctx-a": 3, "bot/ctx-b": 2, "bot/ctx-c": 4})
    deny(monkeypatch, h / "conversations" / "bot" / "ctx-b")
    corpus = ma.load(h)
    assert sorted(corpus.conversations["conversation_id"]) == ["bot/ctx-a", "bot/ctx-c"]
    assert len(corpus.messages) == 7
    assert rows(corpus, "unreadable_folder") == [str(h / "conversations" / "bot" / "ctx-b")]


def test_an_unreadable_record_folder_is_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = home(tmp_path / "h", {"bot/ctx-a": 3, "other/ctx-b": 2})
    deny(monkeypatch, h / "conversations" / "other")
    corpus = ma.load(h)
    assert corpus.conversations["conversation_id"].tolist() == ["bot/ctx-a"]
    assert rows(corpus, "unreadable_folder") == [str(h / "conversations" / "other")]


def test_a_folder_given_that_cannot_be_listed_is_a_row_not_an_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = home(tmp_path / "h", {"bot/ctx-a": 3})
    deny(monkeypatch, h)
    corpus = ma.load(h)
    assert len(corpus.messages) == 0
    assert rows(corpus, "unreadable_folder") == [str(h)]


def test_chmod_000_folders_of_every_source_are_rows_for_an_unprivileged_user() -> None:
    with shared_tmp() as root:
        h = home(root / "murmur", {"bot/ctx-a": 3, "bot/ctx-b": 2, "locked/ctx-c": 2})
        flexi = root / "flexi"
        shutil.copytree(SAMPLES / "flexigpt", flexi)
        disp = root / "disp"
        shutil.copytree(SAMPLES / "dispatch", disp)
        lit = root / "lit"
        shutil.copytree(SAMPLES / "litany" / "auth-refactor", lit)
        for folder, _, files in os.walk(root):
            os.chmod(folder, 0o755)
            for f in files:
                os.chmod(os.path.join(folder, f), 0o644)
        locked = [h / "conversations" / "bot" / "ctx-b", h / "conversations" / "locked",
                  flexi / "conversations_v1" / "202509", disp / ".dispatch" / "runs",
                  lit / "steps" / "20260421T150000Z-c0ffee00"]
        for folder in locked:
            folder.chmod(0)

        def work() -> Any:
            out = {}
            for name in ("murmur", "flexi", "disp", "lit"):
                corpus = ma.load(root / name)
                out[name] = (len(corpus.messages), rows(corpus, "unreadable_folder"))
            return out

        found = as_nobody(work)
    assert found["murmur"] == [3, sorted(str(p) for p in locked[:2])]
    assert found["flexi"][1] == [str(locked[2])] and found["flexi"][0] > 0
    assert found["disp"][1] == [str(locked[3])] and found["disp"][0] > 0
    assert found["lit"][1] == [str(locked[4])]
    assert found["lit"][0] == len(ma.load(SAMPLES / "litany" / "auth-refactor").messages)


def test_an_unreadable_flexigpt_month_is_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SAMPLES / "flexigpt", tmp_path / "f")
    whole = ma.load(tmp_path / "f")
    month = tmp_path / "f" / "conversations_v1" / "202509"
    deny(monkeypatch, month)
    corpus = ma.load(tmp_path / "f")
    assert rows(corpus, "unreadable_folder") == [str(month)]
    assert 0 < len(corpus.messages) < len(whole.messages)


def test_unreadable_dispatch_runs_are_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SAMPLES / "dispatch", tmp_path / "d")
    runs = tmp_path / "d" / ".dispatch" / "runs"
    deny(monkeypatch, runs)
    corpus = ma.load(tmp_path / "d")
    assert rows(corpus, "unreadable_folder") == [str(runs)]
    assert len(corpus.conversations) == 3  # the trace, the channel bot and the SQLite session


def test_unreadable_litany_steps_are_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SAMPLES / "litany" / "auth-refactor", tmp_path / "w")
    agent = tmp_path / "w" / "steps" / "20260421T150000Z-c0ffee00"
    deny(monkeypatch, agent)
    corpus = ma.load(tmp_path / "w")
    assert rows(corpus, "unreadable_folder") == [str(agent)]
    assert len(corpus.messages) == len(ma.load(SAMPLES / "litany" / "auth-refactor").messages)


# -- D4 / D6: what stands where a record was expected ---------------------------------------------


def test_things_that_are_not_regular_record_files_are_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = home(tmp_path / "h", {"bot/ok": 2})
    ctx = h / "conversations" / "bot"
    (ctx / "dir" / RECORD).mkdir(parents=True)
    (ctx / "loop").mkdir()
    (ctx / "loop" / RECORD).symlink_to(RECORD)
    (ctx / "fifo").mkdir()
    os.mkfifo(ctx / "fifo" / RECORD)
    (ctx / "dev").mkdir()
    (ctx / "dev" / RECORD).symlink_to("/dev/null")
    (ctx / "sock").mkdir()
    with socket.socket(socket.AF_UNIX) as sock:
        monkeypatch.chdir(ctx / "sock")
        sock.bind(RECORD)  # relative: a socket's path is limited to about 100 bytes
        monkeypatch.undo()
        corpus = finishes(lambda: ma.load(h))
    assert corpus.conversations["conversation_id"].tolist() == ["bot/ok"]
    assert rows(corpus, "not_a_file") == [str(ctx / "dir" / RECORD)]
    assert rows(corpus, "broken_link") == [str(ctx / "loop" / RECORD)]
    assert rows(corpus, "not_a_regular_file") == sorted(str(ctx / n / RECORD) for n in ("dev", "fifo", "sock"))


def test_a_fifo_given_directly_never_blocks(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / RECORD)
    corpus = finishes(lambda: ma.load(tmp_path / RECORD))
    assert kinds(corpus) == ["not_a_regular_file"]


def test_dispatch_fifos_never_block(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "dispatch", tmp_path / "d")
    os.mkfifo(tmp_path / "d" / "zz.session.json")
    os.mkfifo(tmp_path / "d" / "state" / "other.db")
    corpus = finishes(lambda: ma.load(tmp_path / "d"))
    assert rows(corpus, "not_a_regular_file") == [str(tmp_path / "d" / "state" / "other.db"),
                                                  str(tmp_path / "d" / "zz.session.json")]
    assert len(corpus.conversations) == 5
    lone = tmp_path / "lone"
    lone.mkdir()
    os.mkfifo(lone / "zz.session.json")
    assert kinds(finishes(lambda: ma.load(lone))) == ["not_a_regular_file"]


def test_flexigpt_fifo_never_blocks(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "flexigpt", tmp_path / "f")
    fifo = tmp_path / "f" / "conversations_v1" / "202509" / "01990e96-fc00-7dff-896a-fbac9eb1c609_Pipe.json"
    os.mkfifo(fifo)
    corpus = finishes(lambda: ma.load(tmp_path / "f"))
    assert rows(corpus, "not_a_regular_file") == [str(fifo)]
    assert len(corpus.conversations) == 4


# -- litany refs ---------------------------------------------------------------------------------


def git(git_dir: Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "--git-dir", str(git_dir), *args], input=stdin, capture_output=True, check=True,
                          env={**safe_env(), "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    return done.stdout.decode().strip()


def workspace(tmp_path: Path) -> Path:
    shutil.copytree(SAMPLES / "litany" / "auth-refactor", tmp_path / "w")
    return tmp_path / "w" / "repo.git"


def test_a_dangling_ref_loses_only_itself(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    (repo / "refs" / "heads" / "agents" / "ghost").write_text("1" * 40 + "\n")
    corpus = ma.load(tmp_path / "w")
    assert len(corpus.conversations) == 3
    assert len(corpus.messages) == len(ma.load(SAMPLES / "litany" / "auth-refactor").messages)
    assert any("ghost" in p for p in rows(corpus, "unreadable_branch"))


def test_refs_to_a_tag_or_a_blob_are_rows(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    head = (repo / "refs" / "heads" / "agents" / "20260421T150000Z-c0ffee00").read_text().strip()
    tag = git(repo, "mktag", stdin=f"object {head}\ntype commit\ntag t\ntagger t <t@t> 0 +0000\n\nm\n".encode())
    blob = git(repo, "hash-object", "-w", "--stdin", stdin=b"not a commit\n")
    (repo / "refs" / "heads" / "agents" / "tagged").write_text(tag + "\n")
    (repo / "refs" / "heads" / "agents" / "blobbed").write_text(blob + "\n")
    corpus = ma.load(tmp_path / "w")
    assert len(corpus.conversations) == 3
    assert sorted(p.rsplit("/", 1)[1] for p in rows(corpus, "not_a_commit")) == ["blobbed", "tagged"]


def test_a_shallow_clone_says_so_and_invents_no_times(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    agent = "20260421T150000Z-c0ffee00"
    clone = tmp_path / "shallow" / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", "--depth", "1", "--branch", f"agents/{agent}",
                    f"file://{repo}", str(clone)], check=True, env=safe_env() | {"GIT_ALLOW_PROTOCOL": "file"},
                   capture_output=True)
    subprocess.run(["git", "--git-dir", str(clone), "update-ref", f"refs/heads/agents/{agent}", f"agents/{agent}"],
                   check=True, env=safe_env(), capture_output=True)
    full = ma.load(tmp_path / "w").messages
    corpus = ma.load(tmp_path / "shallow")
    assert kinds(corpus).count("shallow_history") == 1
    msgs = corpus.messages
    whole = full[full["conversation_id"] == agent]
    assert len(msgs) == len(whole)
    # every entry the boundary commit holds was written at an unknown time, not at the boundary's
    assert msgs["created_at"].isna().sum() > 0
    known = msgs.dropna(subset=["created_at"])
    assert set(known["created_at"]) <= set(whole["created_at"])


# -- D5: names that are not UTF-8 ------------------------------------------------------------------


def test_a_murmur_context_name_that_is_not_utf8(tmp_path: Path) -> None:
    h = home(tmp_path / "h", {"bot/ok": 2})
    bad = os.fsdecode(os.fsencode(h / "conversations" / "bot") + b"/ctx\xff")
    write_record(Path(bad) / RECORD, [message(0), message(1, "assistant")])
    corpus = ma.load(h)
    assert len(corpus.messages) == 4
    conv = corpus.conversations.set_index("conversation_id")
    assert conv.loc["bot/ctx\\xff", "path_bytes"] == os.fsencode(bad) + b"/" + RECORD.encode()
    assert conv.loc["bot/ctx\\xff", "conversation_id_bytes"] == b"bot/ctx\xff"
    assert pa.types.is_binary(corpus.tables["conversations"].schema.field("path_bytes").type)
    assert len(corpus.conversation("bot/ctx\udcff").entries) == 2
    assert len(corpus.conversation("bot/ctx\\xff").entries) == 2
    assert corpus.conversations["path_bytes"].isna().sum() == 1


def test_flexigpt_and_dispatch_names_that_are_not_utf8(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "flexigpt", tmp_path / "f")
    month = tmp_path / "f" / "conversations_v1" / "202508"
    first = sorted(month.iterdir())[0]
    first.rename(os.fsdecode(os.fsencode(first)[:-5] + b"\xfe.json"))
    corpus = ma.load(tmp_path / "f")
    assert len(corpus.conversations) == 4 and corpus.conversations["path_bytes"].notna().sum() == 1
    shutil.copytree(SAMPLES / "dispatch", tmp_path / "d")
    runs = tmp_path / "d" / ".dispatch" / "runs"
    bad = os.fsdecode(os.fsencode(runs) + b"/x\xff.session.json")
    shutil.copy(runs / "1754003600000-3f9a1c2b7d4e.session.json", bad)
    os.makedirs(os.fsdecode(os.fsencode(runs) + b"/\xfe"))
    corpus = ma.load(tmp_path / "d")
    assert len(corpus.conversations) == 6
    sessions = corpus.frame("dispatch_sessions")
    assert sessions["path"].str.contains("\\xff", regex=False).sum() == 1


def test_a_litany_branch_name_that_is_not_utf8(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    heads = repo / "refs" / "heads" / "agents"
    head = (heads / "20260421T150000Z-c0ffee00").read_text()
    Path(os.fsdecode(os.fsencode(heads) + b"/odd\xff")).write_text(head)
    corpus = ma.load(tmp_path / "w")
    assert len(corpus.conversations) == 4
    assert "odd\\xff" in set(corpus.conversations["conversation_id"])
    assert b"odd\xff" in set(corpus.conversations["conversation_id_bytes"].dropna())


# -- D8: the same data reached twice ----------------------------------------------------------------


def test_a_path_given_twice_loads_once(tmp_path: Path) -> None:
    once = ma.load(SAMPLES / "murmur")
    twice = ma.load(SAMPLES / "murmur", SAMPLES / "murmur")
    assert len(twice.messages) == len(once.messages) == 27
    assert kinds(twice).count("reached_twice") == 1
    assert {k: t.num_rows for k, t in twice.tables.items() if k != "diagnostics"} == {
        k: t.num_rows for k, t in once.tables.items() if k != "diagnostics"}


def test_a_record_with_its_parent_and_a_linked_alias_load_once(tmp_path: Path) -> None:
    h = home(tmp_path / "h", {"bot/a": 3, "bot/b": 2})
    (h / "conversations" / "alias").symlink_to(h / "conversations" / "bot")
    record = h / "conversations" / "bot" / "a" / RECORD
    corpus = ma.load(h, record)
    assert len(corpus.messages) == 5
    assert sorted(corpus.conversations["conversation_id"]) == ["bot/a", "bot/b"]  # named by the real folder
    assert rows(corpus, "reached_twice") == [str(h / "conversations" / "alias" / n / RECORD) for n in "ab"] + [
        str(record)]


@pytest.mark.parametrize("name", ["dispatch", "litany", "flexigpt"])
def test_every_source_loads_a_path_given_twice_once(name: str) -> None:
    once = ma.load(SAMPLES / name)
    twice = ma.load(SAMPLES / name, SAMPLES / name)
    sizes = {k: t.num_rows for k, t in twice.tables.items() if k != "diagnostics"}
    assert sizes == {k: t.num_rows for k, t in once.tables.items() if k != "diagnostics"}


# -- D9: sources side by side ------------------------------------------------------------------------


def test_sources_side_by_side_all_load(tmp_path: Path) -> None:
    root = tmp_path / "all"
    root.mkdir()
    home(root, {"bot/ctx": 3})
    shutil.copytree(SAMPLES / "flexigpt" / "conversations_v1", root / "conversations_v1")
    shutil.copy(SAMPLES / "dispatch" / ".dispatch" / "runs" / "1754003600000-3f9a1c2b7d4e.session.json",
                root / "chat.session.json")
    shutil.copytree(SAMPLES / "litany" / "auth-refactor" / "repo.git", root / "repo.git")
    corpus = ma.load(root)
    by_source = corpus.conversations.groupby("source").size().to_dict()
    assert by_source == {"dispatch": 1, "flexigpt": 3, "litany": 3, "murmur": 1}
    nested = tmp_path / "nested"
    home(nested, {"bot/ctx": 2})
    shutil.copytree(SAMPLES / "flexigpt", nested / "flexi")
    assert set(ma.load(nested).conversations["source"]) == {"murmur", "flexigpt"}


def test_a_litany_message_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    repo = workspace(tmp_path)
    branch = "agents/20260421T150000Z-c0ffee00"
    index = {"GIT_INDEX_FILE": str(tmp_path / "index")}
    env = {**safe_env(), **index, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}

    def run(*args: str | bytes, stdin: bytes | None = None) -> str:
        done = subprocess.run(["git", "--git-dir", str(repo), *args], input=stdin, env=env, capture_output=True,
                              check=True)
        return done.stdout.decode().strip()

    before = len(ma.load(tmp_path / "w").messages)
    run("read-tree", branch)
    blob = run("hash-object", "-w", "--stdin", stdin=b"a note with an odd name\n")
    run("update-index", "--add", "--cacheinfo", b"100644," + blob.encode() + b",messages/9000-odd\xff.md")
    commit = run("commit-tree", run("write-tree"), "-p", run("rev-parse", branch), "-m", "odd")
    run("update-ref", f"refs/heads/{branch}", commit)
    corpus = ma.load(tmp_path / "w")
    assert len(corpus.messages) == before + 1
    assert "9000-odd\\xff.md" in set(corpus.messages["message_id"])


# -- the invariant: however the same data is reached, each conversation loads once ---------------------

_MURMUR = SAMPLES / "murmur"
_POOL = [
    _MURMUR, _MURMUR / "conversations", _MURMUR / "conversations" / "research-bot",
    _MURMUR / "conversations" / "support-bot", _MURMUR / "conversations" / "research-bot" / "ctx-scratch",
    _MURMUR / "conversations" / "research-bot" / "ctx-scratch" / RECORD,
]


def _conversations(corpus: ma.Corpus) -> set[str]:
    return set(corpus.conversations["path"])


@settings(max_examples=25)
@given(st.lists(st.sampled_from(range(len(_POOL))), min_size=1, max_size=6))
def test_any_paths_to_the_same_data_load_each_conversation_once(picks: list[int]) -> None:
    paths = [_POOL[i] for i in picks]
    corpus = ma.load(*paths)
    reached = set().union(*(_conversations(ma.load(p)) for p in set(paths)))
    assert sorted(corpus.conversations["path"]) == sorted(reached)  # each once, none lost
    assert corpus.messages.groupby("conversation_id").size().sum() == sum(
        len(ma.load(Path(p)).messages) for p in reached)


def test_a_fact_met_again_through_another_path_is_one_row() -> None:
    workspace_dir = SAMPLES / "litany" / "auth-refactor"
    once = ma.load(workspace_dir)
    again = ma.load(workspace_dir, workspace_dir / "repo.git")
    others = again.diagnostics[again.diagnostics["kind"] != "reached_twice"]
    columns = ["kind", "path", "line"]
    assert others[columns].values.tolist() == once.diagnostics[columns].values.tolist()
    assert kinds(again).count("reached_twice") == len(once.conversations)


def test_an_unreadable_repository_is_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SAMPLES / "litany", tmp_path / "l")
    locked = tmp_path / "l" / "docs-site" / "repo.git"
    whole = ma.load(tmp_path / "l")
    deny(monkeypatch, locked)
    corpus = ma.load(tmp_path / "l")
    assert rows(corpus, "unreadable_folder") == [str(locked)]
    assert 0 < len(corpus.conversations) < len(whole.conversations)
    alone = ma.load(tmp_path / "l" / "docs-site")
    assert rows(alone, "unreadable_folder") == [str(locked)] and len(alone.conversations) == 0


def test_unreadable_files_given_or_found_are_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(SAMPLES / "flexigpt", tmp_path / "f")
    conv = sorted((tmp_path / "f" / "conversations_v1" / "202508").iterdir())[0]
    session = tmp_path / "d" / "x.session.json"
    session.parent.mkdir()
    shutil.copy(SAMPLES / "dispatch" / ".dispatch" / "runs" / "1754003600000-3f9a1c2b7d4e.session.json", session)
    for file in (conv, session):
        deny_open(monkeypatch, file)
    for target in (conv, session):
        assert rows(ma.load(target), "unreadable") == [str(target)]
    assert rows(ma.load(tmp_path / "f"), "unreadable") == [str(conv)]
    assert rows(ma.load(tmp_path / "d"), "unreadable") == [str(session)]


def test_a_chmod_000_record_given_or_found_is_a_row_for_an_unprivileged_user() -> None:
    # murmur records are opened by the native engine, so the file's own mode is what refuses.
    with shared_tmp() as root:
        h = home(root / "h", {"bot/a": 2, "bot/b": 3})
        for folder, _, files in os.walk(root):
            os.chmod(folder, 0o755)
            for f in files:
                os.chmod(os.path.join(folder, f), 0o644)
        record = h / "conversations" / "bot" / "b" / RECORD
        record.chmod(0)

        def work() -> Any:
            found, given = ma.load(h), ma.load(record)
            return [len(found.messages), rows(found, "unreadable"), rows(given, "unreadable")]

        assert as_nobody(work) == [2, [str(record)], [str(record)]]


def test_a_link_given_that_leads_nowhere_is_a_row(tmp_path: Path) -> None:
    h = home(tmp_path / "h", {"bot/a": 2})
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "gone").symlink_to(tmp_path / "nothing")
    corpus = ma.load(tmp_path / "loop", h, tmp_path / "gone")
    assert len(corpus.messages) == 2
    assert rows(corpus, "broken_link") == [str(tmp_path / "gone"), str(tmp_path / "loop")]


def test_a_folder_named_as_a_dispatch_file_is_a_row(tmp_path: Path) -> None:
    (tmp_path / "d" / "odd.session.json").mkdir(parents=True)
    (tmp_path / "d" / "odd.dispatch-trace.json").mkdir()
    shutil.copy(SAMPLES / "dispatch" / ".dispatch" / "runs" / "1754003600000-3f9a1c2b7d4e.session.json",
                tmp_path / "d" / "ok.session.json")
    corpus = ma.load(tmp_path / "d")
    assert len(corpus.conversations) == 1
    assert rows(corpus, "not_a_file") == [str(tmp_path / "d" / "odd.dispatch-trace.json"),
                                          str(tmp_path / "d" / "odd.session.json")]


def test_two_files_with_one_id_both_load(tmp_path: Path) -> None:
    one = home(tmp_path / "one", {"bot/a": 2})
    two = home(tmp_path / "two", {"bot/a": 3})
    corpus = ma.load(one, two)
    assert corpus.conversations[["conversation_id", "messages"]].values.tolist() == [["bot/a", 2], ["bot/a#2", 3]]
    assert rows(corpus, "duplicate_id") == [str(two / "conversations" / "bot" / "a" / RECORD)]
    assert len(corpus.conversation("bot/a#2").entries) == 3


@pytest.mark.parametrize("name", ["packed-refs", "config", "refs/heads/agents/zz-pipe", "objects/info/alternates"])
def test_a_fifo_in_a_repository_is_a_row_and_never_blocks(tmp_path: Path, name: str) -> None:
    shutil.copytree(SAMPLES / "litany", tmp_path / "l")
    repo = tmp_path / "l" / "docs-site" / "repo.git"
    whole = ma.load(tmp_path / "l")
    (repo / name).unlink(missing_ok=True)
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(repo / name)
    corpus = finishes(lambda: ma.load(tmp_path / "l"))
    assert rows(corpus, "not_a_regular_file") == [str(repo / name)]
    assert 0 < len(corpus.conversations) < len(whole.conversations)
    with pytest.raises(ma.errors.GitError, match="would block"):
        finishes(lambda: ma.assemble_commit(repo, "agents/x"))


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
def test_a_fifo_beside_a_sqlite_file_is_a_row_and_never_blocks(tmp_path: Path, suffix: str) -> None:
    shutil.copytree(SAMPLES / "dispatch", tmp_path / "d")
    db = tmp_path / "d" / "state" / "session.sqlite"
    os.mkfifo(f"{db}{suffix}")
    for target in (db, tmp_path / "d"):
        corpus = finishes(lambda t=target: ma.load(t))
        assert rows(corpus, "not_a_regular_file") == [f"{db}{suffix}"]
    assert len(corpus.conversations) == 4  # all but the SQLite session


def test_a_workspace_whose_repo_is_no_repository_is_a_row(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "litany", tmp_path / "l")
    repo = tmp_path / "l" / "docs-site" / "repo.git"
    (repo / "HEAD").unlink()
    os.mkfifo(repo / "HEAD")
    corpus = finishes(lambda: ma.load(tmp_path / "l"))
    assert rows(corpus, "not_a_regular_file") == [str(repo / "HEAD")]
    (repo / "HEAD").unlink()
    corpus = ma.load(tmp_path / "l")
    assert rows(corpus, "not_a_repository") == [str(repo)] and len(corpus.conversations) > 0


def test_flexigpt_files_reached_through_a_linked_month_load_once(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES / "flexigpt", tmp_path / "f")
    store = tmp_path / "f" / "conversations_v1"
    whole = ma.load(tmp_path / "f")
    (store / "209912").symlink_to(store / "202508")
    linked = ma.load(tmp_path / "f")
    assert len(linked.messages) == len(whole.messages)
    assert kinds(linked).count("reached_twice") == len(list((store / "202508").iterdir()))
    first = sorted((store / "202508").iterdir())[0]
    (store / "209911").mkdir()
    shutil.copy(first, store / "209911" / first.name)  # another file, the same conversation id
    copied = ma.load(tmp_path / "f")
    assert len(copied.conversations) == len(whole.conversations) + 1
    assert kinds(copied).count("duplicate_id") == 1


def test_a_path_given_as_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path) + b"/home\xfe"
    write_record(Path(os.fsdecode(root)) / "conversations" / "bot" / "a" / RECORD, [message(0), message(1)])
    corpus = ma.load(root)
    assert len(corpus.messages) == 2
    assert corpus.conversations["path_bytes"].tolist() == [root + b"/conversations/bot/a/" + RECORD.encode()]
