"""Codex rollouts exported incrementally: unchanged rollouts are not scanned, grown ones are read on from the point.

Every export of a grown home must equal a fresh load of it, table by table; the counts of the
export (and the files the engine was asked to scan) prove which path was taken.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from test_codex import CHILD, PARENT, Line, call, counters, env, meta, output, plus, rollout, said, tokens, turn
from test_export import _ordered, assert_same

import murmur_analysis as ma
import murmur_analysis.export as export_module
import murmur_analysis.sources.codex.source as codex_source
from murmur_analysis.core.handoff import ResumePoint
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import ExportResult, export
from murmur_analysis.sources.codex.carry import Carry

OTHER = "44444444-4444-4444-8444-444444444444"
NOW = {"codex": {"settle_seconds": 0.0}}
T_OLD = 1_700_000_000
A, B = counters(1000, 800, 50, 10), counters(300, 200, 20, 5)


def ts(second: int) -> str:
    return f"2026-01-02T03:{second // 60:02d}:{second % 60:02d}.000Z"


def ended(cid: str, code: int, second: int) -> Line:
    return env("event_msg", {"type": "exec_command_end", "call_id": cid, "exit_code": code, "stdout": "",
                             "stderr": "", "aggregated_output": "", "duration": {"secs": 0, "nanos": 1}}, ts(second))


def _append(path: Path, lines: list[Line], tail: bytes = b"", stamp: int = 0) -> None:
    with path.open("ab") as fh:
        fh.write(b"".join(json.dumps(x).encode() + b"\n" for x in lines) + tail)
    _age(path, stamp)


def _age(path: Path, stamp: int) -> None:
    os.utime(path, (T_OLD + stamp, T_OLD + stamp))  # an old time: settled, and not changed during the export


@pytest.fixture
def scanned() -> Iterator[list[list[str]]]:
    """What each call of the engine was asked to scan by the codex source: whole files by name,
    a range of a file as ``name[bytes]`` (the bytes read, not the file)."""
    calls: list[list[str]] = []
    real, real_bytes = codex_source.scan_lines, codex_source.scan_bytes

    def spy(fmt: str, paths: Any, **kw: Any) -> Any:
        calls.append([Path(p).name for p in paths])
        return real(fmt, paths, **kw)

    def spy_bytes(fmt: str, path: Path, data: bytes, first_line: int, **kw: Any) -> Any:
        calls.append([f"{Path(path).name}[{len(data)}]"])
        return real_bytes(fmt, path, data, first_line, **kw)

    with mock.patch.object(codex_source, "scan_lines", spy), mock.patch.object(codex_source, "scan_bytes", spy_bytes):
        yield calls


def _export(home: Path, out: Path) -> ExportResult:
    return export(home, out=out, source="codex", options=NOW, batch_conversations=1)


def _same(home: Path, out: Path) -> None:
    exported, loaded = read_parquet(out).tables, ma.load(home, source="codex", options=NOW).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)


#: The first part of a rollout: a turn that ends with a call whose result is not yet written.
FIRST = [
    meta(PARENT), turn("gpt-5.2-codex", ts(1)), said("user", "list the files", ts(2)),
    said("assistant", "looking", ts(3)), call("call_1", ts=ts(4)), tokens(A, A, ts(5)),
    ended("call_1", 2, 6),
]

#: What is appended: the call's output, a re-emitted total, a compaction after the last message before
#: the point's successor, a turn switching the model, a call answered at once, an error exit code.
GROWN = [
    output("call_1", "Output:\na.txt", ts(7)),  # answers a call made before the point; its exit code came before
    tokens(A, A, ts(8)),  # re-emitted totals: nothing counted
    env("compacted", {"message": "summary so far"}, ts(9)),  # follows the message before it (the output)
    env("event_msg", {"type": "context_compacted"}, ts(9)),
    turn("gpt-5.1-codex-max", ts(10)),
    said("user", "and now count them", ts(11)),
    call("call_2", '{"command":"wc -l"}', ts(12)),
    tokens(plus(A, B), None, ts(13)),  # no last: the delta is worked out from the total before the point
    output("call_2", "Exit code: 1\nOutput:\nno", ts(14)),
    said("assistant", "two files", ts(15)),
    tokens(plus(plus(A, B), B), B, ts(16)),
]


def _home(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "codex"
    grown = rollout(home, PARENT, FIRST)
    other = rollout(home, OTHER, [meta(OTHER), turn(), said("user", "hello"), said("assistant", "hi"),
                                  tokens(A, A)], folder="sessions/2026/01/03")
    _age(grown, 1)
    _age(other, 1)
    return home, grown


def test_a_second_export_of_an_unchanged_home_scans_nothing(tmp_path: Path, scanned: list[list[str]]) -> None:
    home, _ = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    assert sorted(n for c in scanned for n in c) == sorted(p.name for p in home.rglob("rollout-*.jsonl"))
    scanned.clear()
    result = _export(home, out)
    assert (result.conversations_kept, result.conversations_read, result.conversations_appended) == (2, 0, 0)
    assert scanned == []
    _same(home, out)


def test_a_grown_rollout_is_read_on_and_equals_a_fresh_load(tmp_path: Path, scanned: list[list[str]]) -> None:
    home, grown = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    size = grown.stat().st_size
    _append(grown, GROWN, stamp=2)
    scanned.clear()
    result = _export(home, out)
    assert (result.conversations_appended, result.conversations_kept, result.conversations_read) == (1, 1, 0)
    assert scanned == [[f"{grown.name}[{grown.stat().st_size - size}]"]]  # the appended bytes alone
    _same(home, out)
    exported = read_parquet(out).tables
    calls = sorted(exported["tool_calls"].select(["call_id", "status", "exit_code", "result_seq"]).to_pylist(),
                   key=lambda r: r["call_id"])
    assert calls == [{"call_id": "call_1", "status": "error", "exit_code": 2, "result_seq": 3},
                     {"call_id": "call_2", "status": "error", "exit_code": 1, "result_seq": 7}]
    usage = exported["usage"].select(["conversation_id", "seq", "model", "input_total_tokens"]).to_pylist()
    mine = sorted((u["seq"], u["model"], u["input_total_tokens"]) for u in usage if u["conversation_id"] == PARENT)
    assert mine == [(2, "gpt-5.2-codex", 1000), (6, "gpt-5.1-codex-max", 300), (8, "gpt-5.1-codex-max", 300)]
    growth = exported["growth"].to_pylist()
    assert [(g["position"], g["chars"]) for g in growth if g["event"] == "compaction"] == [(4, 48)]


@pytest.mark.parametrize("before", [False, True])
def test_a_compaction_right_after_the_point_follows_the_message_before_it(tmp_path: Path, before: bool) -> None:
    home = tmp_path / "codex"
    first = [meta(PARENT), turn(), said("user", "a"), said("assistant", "bb")]
    compacted = env("event_msg", {"type": "context_compacted"}, ts(20))
    path = rollout(home, PARENT, [*first, compacted] if before else first)
    _age(path, 1)
    out = tmp_path / "out"
    _export(home, out)
    _append(path, [env("event_msg", {"type": "context_compacted"}, ts(21)), said("user", "c")], stamp=2)
    result = _export(home, out)
    assert result.conversations_appended == 1
    _same(home, out)
    growth = read_parquet(out).tables["growth"].to_pylist()
    rows = [(g["position"], g["chars"], g["at"].second) for g in growth if g["event"] == "compaction"]
    assert rows == [(1, 3, 20 if before else 21)]


def test_a_rollout_grown_again_and_again_goes_on_from_each_point(tmp_path: Path) -> None:
    home, grown = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    for n, piece in enumerate((GROWN[:3], GROWN[3:7], GROWN[7:9], GROWN[9:]), 2):
        _append(grown, piece, stamp=n)
        result = _export(home, out)
        assert result.conversations_appended == 1, piece
        _same(home, out)


def test_the_point_carries_the_state_before_it(tmp_path: Path) -> None:
    home, _ = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    state = json.loads(next((out / ".export").rglob("state.json")).read_text())
    (unit,) = [u for k, u in state["units"].items() if PARENT in k]
    point = ResumePoint.from_doc(unit["resume"])
    assert point is not None and (point.messages, point.lines) == (3, 7)
    carry = Carry.from_doc(point.carry)
    assert carry is not None
    assert (carry.provider, carry.model, carry.assistant, carry.linked, carry.codes) == (
        "openai", "gpt-5.2-codex", -1, True, {"call_1": 2})
    assert carry.total == [1000, 800, 50, 10, 1050]


def test_a_point_without_a_carry_is_read_whole(tmp_path: Path) -> None:
    home, grown = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    for state in (out / ".export").rglob("state.json"):
        doc = json.loads(state.read_text())
        for unit in doc["units"].values():
            if unit.get("resume"):
                del unit["resume"]["carry"]  # as a point written before points had one
        state.write_text(json.dumps(doc))
    _append(grown, GROWN, stamp=2)
    result = _export(home, out)
    assert (result.conversations_appended, result.conversations_read) == (0, 1)
    _same(home, out)


def test_a_usage_row_after_the_point_reports_on_the_message_before_it(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    path = rollout(home, PARENT, [meta(PARENT), turn(), said("user", "a"), said("assistant", "b")])
    _age(path, 1)
    out = tmp_path / "out"
    _export(home, out)
    before = read_parquet(out).tables["conversations"].column("unreported_responses").to_pylist()
    _append(path, [tokens(A, A, ts(20)), said("user", "c")], stamp=2)
    result = _export(home, out)
    assert result.conversations_appended == 1
    _same(home, out)
    assert before == [1]
    assert read_parquet(out).tables["conversations"].column("unreported_responses").to_pylist() == [0]
    assert read_parquet(out).tables["usage"].column("seq").to_pylist() == [1]


def test_an_exit_code_for_a_call_answered_before_the_point_is_read_whole(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    path = rollout(home, PARENT, [meta(PARENT), turn(), said("user", "a"), call("c1"), output("c1", "no code")])
    _age(path, 1)
    out = tmp_path / "out"
    _export(home, out)
    _append(path, [ended("c1", 3, 30)], stamp=2)  # changes the earlier row: its exit code and error flag
    result = _export(home, out)
    assert (result.conversations_appended, result.conversations_read) == (0, 1)
    _same(home, out)
    assert read_parquet(out).tables["tool_calls"].column("exit_code").to_pylist() == [3]


@pytest.mark.parametrize("settle", [0.0, 3600.0])
def test_a_torn_last_line_at_the_point(tmp_path: Path, settle: float) -> None:
    home = tmp_path / "codex"
    path = rollout(home, PARENT, FIRST)
    torn = json.dumps(GROWN[0]).encode()
    _append(path, [], tail=torn[:20], stamp=1)  # a line still being written when the export reads
    out = tmp_path / "out"
    options = {"codex": {"settle_seconds": settle}}
    export(home, out=out, source="codex", options=options)
    fresh = ma.load(home, source="codex", options=options).tables
    assert_same(read_parquet(out).tables, fresh)
    _append(path, GROWN[1:], tail=b"", stamp=2)
    with path.open("r+b") as fh:  # the torn line finished in place, the rest after it
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(torn[:20], torn + b"\n", 1))
    _age(path, 3)
    result = export(home, out=out, source="codex", options=options)
    assert result.conversations_read == 1  # no point before a torn line: read whole
    assert_same(read_parquet(out).tables, ma.load(home, source="codex", options=options).tables)


def test_a_torn_last_line_after_the_point_is_read_on_and_then_read_whole(tmp_path: Path) -> None:
    home, grown = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    torn = json.dumps(GROWN[4]).encode()
    _append(grown, GROWN[:4], tail=torn[:15], stamp=2)
    result = _export(home, out)
    assert result.conversations_appended == 1
    _same(home, out)  # the torn line reported (settled) with its line number, as a fresh load does
    with grown.open("ab") as fh:
        fh.write(torn[15:] + b"\n")
    _append(grown, GROWN[5:], stamp=3)
    result = _export(home, out)
    assert result.conversations_read == 1  # the tail ended at a torn line: no point after it
    _same(home, out)


def test_a_fork_with_no_matched_prefix_is_read_on_as_a_plain_rollout(tmp_path: Path,
                                                                        scanned: list[list[str]]) -> None:
    home, grown = _home(tmp_path)
    fork = rollout(home, CHILD, [meta(CHILD, ts(30), forked_from_id=PARENT), *FIRST[1:5], said("user", "fork", ts(31)),
                                 said("assistant", "forked", ts(32)), tokens(plus(A, B), B, ts(33))])
    _age(fork, 1)
    out = tmp_path / "out"
    _export(home, out)
    _same(home, out)
    _append(fork, [said("user", "more", ts(40))], stamp=2)
    _append(grown, GROWN, stamp=2)
    scanned.clear()
    result = _export(home, out)
    # this fork copied no run of its parent's items that ends at the fork (its rows are its own, so its
    # fingerprint names no parent): both are read on, the other kept
    assert (result.conversations_read, result.conversations_appended, result.conversations_kept) == (0, 2, 1)
    names = [n for c in scanned for n in c]
    assert fork.name not in names and grown.name not in names
    _same(home, out)


def test_an_archived_copy_does_not_win_over_a_skipped_active_one(tmp_path: Path) -> None:
    home, _ = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    archived = rollout(home, PARENT, [*FIRST, said("user", "archived only")], folder="archived_sessions")
    _age(archived, 2)
    result = _export(home, out)
    assert result.conversations_kept == 2
    _same(home, out)
    assert read_parquet(out).tables["conversations"].num_rows == 2


# ------------------------------------------------------------------------------ Claude Code


def _claude_home(tmp_path: Path, flat: bool = False) -> Path:
    from test_claude_code import assistant, home, user
    from test_claude_code import counters as claude_counters

    sessions: dict[str, list[Any]] = {
        "s-1.jsonl": [user("u1", "start"), assistant("a1", "m1", "r1", claude_counters(10, 5))],
        "s-1/subagents/agent-abc.jsonl": [user("s1", "look", isSidechain=True, agentId="abc"),
                                          assistant("s2", "m2", "r2", claude_counters(4, 2), isSidechain=True,
                                                    agentId="abc")],
        "s-2.jsonl": [user("v1", "other", session="s-2"), assistant("b1", "m1", "r1", claude_counters(10, 5),
                                                                    session="s-2")],  # a resumed copy
    }
    if flat:
        sessions["agent-old.jsonl"] = [user("o", "z", session="s-0", isSidechain=True)]
    root = home(tmp_path, sessions)
    for f in root.rglob("*.jsonl"):
        _age(f, 1)
    return root


def _claude_export(root: Path, out: Path) -> ExportResult:
    return export(root, out=out, source="claude_code", options={"claude_code": {"settle_seconds": 0.0}})


def _claude_same(root: Path, out: Path) -> None:
    loaded = ma.load(root, source="claude_code", options={"claude_code": {"settle_seconds": 0.0}}).tables
    assert_same(read_parquet(out).tables, loaded)


@pytest.fixture
def claude_scans() -> Iterator[list[int]]:
    import murmur_analysis.sources.claude_code.source as claude_source

    calls: list[int] = []
    real = claude_source.scan_lines

    def spy(fmt: str, paths: Any, **kw: Any) -> Any:
        calls.append(len(paths))
        return real(fmt, paths, **kw)

    with mock.patch.object(claude_source, "scan_lines", spy):
        yield calls


def test_an_unchanged_claude_home_is_not_scanned_again(tmp_path: Path, claude_scans: list[int]) -> None:
    root = _claude_home(tmp_path)
    out = tmp_path / "out"
    _claude_export(root, out)
    assert claude_scans == [3]
    result = _claude_export(root, out)
    assert (result.conversations_kept, result.conversations_read) == (3, 0)
    assert claude_scans == [3]  # nothing scanned the second time
    _claude_same(root, out)


def test_a_changed_claude_file_reads_the_whole_home_again(tmp_path: Path, claude_scans: list[int]) -> None:
    from test_claude_code import assistant
    from test_claude_code import counters as claude_counters

    root = _claude_home(tmp_path)
    out = tmp_path / "out"
    _claude_export(root, out)
    # s-1 grows with a bigger count of the response s-2 copied: which file owns it may change
    with (root / "projects/-p/s-1.jsonl").open("a") as fh:
        fh.write(json.dumps(assistant("a2", "m1", "r1", claude_counters(10, 9))) + "\n")
    _age(root / "projects/-p/s-1.jsonl", 2)
    result = _claude_export(root, out)
    assert (result.conversations_kept, result.conversations_read) == (0, 3)
    # the second export's lean scan of the grown file finds its new line shares a response with s-2 (by the
    # keys s-2's last read kept): the home is read whole
    assert claude_scans == [3, 1, 3]
    _claude_same(root, out)


def test_a_claude_home_with_a_flat_agent_file_is_read_again(tmp_path: Path, claude_scans: list[int]) -> None:
    root = _claude_home(tmp_path, flat=True)
    out = tmp_path / "out"
    _claude_export(root, out)
    result = _claude_export(root, out)
    assert result.conversations_kept == 4  # its rows are kept, but its files were scanned to name the flat one
    assert claude_scans == [4, 4]
    _claude_same(root, out)


@pytest.mark.parametrize("range_bytes", [1, 300, 700, 1500])
def test_a_long_rollout_is_exported_a_range_at_a_time_as_a_fresh_load(tmp_path: Path, range_bytes: int,
                                                                       scanned: list[list[str]]) -> None:
    """A rollout longer than the range length is written by ranges, each read on from the one before.

    Ranges fall between a call and its output, a total and its re-emission, across a compaction
    and a model switch. Where one would begin with the exit code of a call made before it (only
    a range of a line or two does here) the rollout is read whole instead. A fork is read whole
    (its first range says it is one), with its parent's lines to match.
    """
    home, grown = _home(tmp_path)
    _append(grown, GROWN, stamp=1)
    fork = rollout(home, CHILD, [meta(CHILD, ts(30), forked_from_id=PARENT), *FIRST[1:5], said("user", "fork", ts(31)),
                                 said("assistant", "forked", ts(32)), tokens(plus(A, B), B, ts(33))])
    _age(fork, 1)
    out = tmp_path / "out"
    with mock.patch.object(export_module, "RANGE_BYTES", range_bytes):
        result = _export(home, out)
    assert result.conversations_read == 3
    names = [n for c in scanned for n in c]
    _same(home, out)
    whole_before_fork = names[:names.index(fork.name)].count(grown.name)
    ranges = [int(n[n.index("[") + 1:-1]) for n in names if n.startswith(f"{grown.name}[")]
    if range_bytes == 1:  # the range of the exit code line of call_1 (made in the range before): read whole
        assert whole_before_fork == 1 and len(ranges) == len(FIRST)  # the 7th range holds that line alone
    else:
        assert whole_before_fork == 0 and len(ranges) >= 2 and sum(ranges) == grown.stat().st_size
    assert sum(n.startswith(f"{fork.name}[") for n in names) == 1 and fork.name in names  # one range, then whole
    # a rollout written by ranges is read on afterwards like any other
    scanned.clear()
    size = grown.stat().st_size
    _append(grown, [said("user", "once more", ts(50)), tokens(plus(plus(plus(A, B), B), B), B, ts(51))], stamp=3)
    again = _export(home, out)
    assert again.conversations_appended == 1
    assert scanned == [[f"{grown.name}[{grown.stat().st_size - size}]"]]
    _same(home, out)


def test_a_conversation_s_cost_read_on_is_the_whole_read_s_float_sum(tmp_path: Path) -> None:
    """Costs are added one row at a time, in order, as a whole read adds them: a float sum depends on its order.

    A 1 USD response, then two of 1e-16 USD: added in order, each tiny cost is lost against the
    dollar (1.0); the two tails added first and then put on the dollar would make 1.0000000000000002.
    """
    prices = {"big-model": {"input_mtok": 1, "output_mtok": 0}, "tiny-model": {"input_mtok": 1e-10, "output_mtok": 0}}
    first, one = counters(1_000_000, 0, 0, 0), counters(1, 0, 0, 0)
    home = tmp_path / "codex"
    path = rollout(home, PARENT, [meta(PARENT), turn("big-model", ts(1)), said("user", "a", ts(2)),
                                  said("assistant", "b", ts(3)), tokens(first, first, ts(4))])
    _age(path, 1)
    out = tmp_path / "out"

    def run() -> ExportResult:
        return export(home, out=out, source="codex", options=NOW, prices=prices)

    run()
    _append(path, [turn("tiny-model", ts(5)), said("user", "c", ts(6)), said("assistant", "d", ts(7)),
                   tokens(plus(first, one), one, ts(8)), said("user", "e", ts(9)), said("assistant", "f", ts(10)),
                   tokens(plus(plus(first, one), one), one, ts(11))], stamp=2)
    assert run().conversations_appended == 1
    (row,) = read_parquet(out).tables["conversations"].to_pylist()
    loaded = ma.load(home, source="codex", options=NOW, prices=prices).tables["conversations"].to_pylist()
    assert row["cost_usd"] == loaded[0]["cost_usd"] == 1.0


def test_an_unchanged_re_export_keeps_what_each_rollout_could_not_read(tmp_path: Path) -> None:
    # the lines a rollout could not read are its own rows: kept with its rows when it is not read again
    home, _ = _home(tmp_path)
    for path in sorted(home.rglob("rollout-*.jsonl")):
        with path.open("ab") as fh:
            fh.write(b"not json\n")
        _age(path, 1)
    out = tmp_path / "out"
    first = _export(home, out)
    again = _export(home, out)
    assert (first.conversations_read, again.conversations_kept) == (2, 2)
    _same(home, out)
    assert read_parquet(out).tables["diagnostics"].column("kind").to_pylist() == ["bad_json", "bad_json"]


def _fork(home: Path, own: bool) -> Path:
    """A fork of the grown rollout: what it copied (the parent's items up to the fork), then (``own``) a turn."""
    lines = [meta(CHILD, ts(30), forked_from_id=PARENT), *FIRST[1:]]
    if own:
        lines += [said("user", "fork", ts(31)), said("assistant", "forked", ts(32)), tokens(plus(A, B), B, ts(33))]
    fork = rollout(home, CHILD, lines)
    _age(fork, 1)
    return fork


def _counts(result: ExportResult) -> tuple[int, int, int]:
    return result.conversations_read, result.conversations_appended, result.conversations_kept


@pytest.mark.parametrize("own", [True, False])
def test_a_grown_fork_is_read_on_while_its_parent_is_as_it_was(tmp_path: Path, scanned: list[list[str]],
                                                                 own: bool) -> None:
    home, _ = _home(tmp_path)
    fork = _fork(home, own)
    out = tmp_path / "out"
    _export(home, out)
    scanned.clear()
    assert _counts(_export(home, out)) == (0, 0, 3)  # unchanged, the fork too: nothing is scanned
    assert scanned == []
    _append(fork, [said("user", "more", ts(40)), said("assistant", "and more", ts(41)),
                   tokens(plus(plus(A, B), B), B, ts(42))], stamp=2)
    result = _export(home, out)
    if own:  # its own lines followed what it copied: only what it grew by is read
        assert _counts(result) == (0, 1, 2)
        assert [n.startswith(f"{fork.name}[") for c in scanned for n in c] == [True]  # a range of it, once
    else:  # it held nothing but what it copied, which may not have been all of it: read whole
        assert _counts(result) == (1, 0, 2)
    _same(home, out)


def test_a_fork_whose_parent_changed_is_read_whole(tmp_path: Path) -> None:
    home, grown = _home(tmp_path)
    fork = _fork(home, True)
    out = tmp_path / "out"
    _export(home, out)
    _append(grown, GROWN, stamp=2)
    _append(fork, [said("user", "more", ts(40))], stamp=2)
    assert _counts(_export(home, out)) == (1, 1, 1)  # the parent read on; the fork, matched against it, whole
    _same(home, out)
