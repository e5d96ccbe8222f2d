"""Claude Code homes exported incrementally: a session file that only grew is read on from where the last read stopped.

A home is counted as a whole (a response in several files counts once), so what a file grew by
is read alone only where it changes no other file's rows, nor its own earlier ones; else the
home, or that file, is read whole. Either way every export of a grown home must equal a fresh
load of it, table by table: the tests below cut each sample file at every line, export, append
the rest and export again. The export's counts prove which path was taken.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from test_export import _ordered, assert_same

import murmur_analysis as ma
import murmur_analysis.sources.claude_code.source as claude_source
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import ExportResult, export

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "samples" / "claude_code"
NOW = {"claude_code": {"settle_seconds": 0.0}}
T_OLD = 1_700_000_000
SHOP = "projects/-home-dev-shop"
MAIN = f"{SHOP}/6f1c2a9e-3b7d-4c21-9a55-0d4e8b1f7a01.jsonl"
SECOND = f"{SHOP}/8a2d4c6e-1f3b-4d5a-8e7c-2b9a0f1e3d02.jsonl"
AGENT = f"{SHOP}/6f1c2a9e-3b7d-4c21-9a55-0d4e8b1f7a01/subagents/agent-a7f3e91.jsonl"
NOTES = "projects/-home-dev-notes/1b3d5f7a-9c2e-4f6a-8b0d-3c5e7a9f1b03.jsonl"
FILES = [MAIN, SECOND, AGENT, NOTES]


def _age(home: Path, stamp: int) -> None:
    for f in home.rglob("*.jsonl"):
        os.utime(f, (T_OLD + stamp, T_OLD + stamp))  # settled, and not changed during the export


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(SAMPLE, home)
    _age(home, 0)
    return home


def _cut(path: Path, keep: int) -> bytes:
    """Keep the first ``keep`` lines of ``path``; the rest."""
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:keep]))
    return b"".join(lines[keep:])


def _grow(home: Path, name: str, data: bytes, stamp: int = 1) -> None:
    """Append ``data`` to the file ``name``, which alone is touched."""
    path = home / name
    with path.open("ab") as fh:
        fh.write(data)
    os.utime(path, (T_OLD + stamp, T_OLD + stamp))


def _export(home: Path, out: Path) -> ExportResult:
    return export(home, out=out, source="claude_code", options=NOW, batch_conversations=1)


def _cut_exported_grown(tmp_path: Path, name: str, keep: int) -> tuple[Path, Path]:
    """A home whose file ``name`` held its first ``keep`` lines when it was exported, and has all of them now."""
    home = _home(tmp_path)
    rest = _cut(home / name, keep)
    _age(home, 0)
    out = tmp_path / "out"
    _export(home, out)
    _grow(home, name, rest)
    return home, out


def _reexport(home: Path, out: Path) -> tuple[int, int, int]:
    """Export again: the conversations read on, kept and read whole (the export equal to a fresh load)."""
    again = _export(home, out)
    _same(home, out)
    return again.conversations_appended, again.conversations_kept, again.conversations_read


def _same(home: Path, out: Path) -> None:
    exported, loaded = read_parquet(out).tables, ma.load(home, source="claude_code", options=NOW).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)


def _lines(name: str) -> int:
    return len((SAMPLE / name).read_bytes().splitlines())


def _line(name: str, n: int) -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads((SAMPLE / name).read_bytes().splitlines()[n - 1])
    return parsed


@pytest.mark.parametrize(("name", "keep"), [(f, k) for f in FILES for k in range(1, _lines(f))])
def test_every_cut_of_every_file_exports_as_a_fresh_load(tmp_path: Path, name: str, keep: int) -> None:
    home, out = _cut_exported_grown(tmp_path, name, keep)
    again = _export(home, out)
    _same(home, out)
    assert again.conversations_appended + again.conversations_read + again.conversations_kept == len(FILES)


def test_lines_that_touch_no_other_file_are_read_on_and_the_rest_kept(tmp_path: Path) -> None:
    # the prompt and the call exported; the result and the answer appended
    home, out = _cut_exported_grown(tmp_path, NOTES, 2)
    assert _reexport(home, out) == (1, 3, 0)
    # and once more, growing two files at once, one with a new ai-title: both read on, titled as a whole read
    new = {**_line(NOTES, 4), "uuid": "0c0c0c0c-0000-4000-8000-000000000001", "timestamp": "2025-11-26T23:00:00.000Z"}
    new["message"] = {**new["message"], "id": "msg_grown_notes", "content": [{"type": "text", "text": "more"}]}
    title = {"type": "ai-title", "aiTitle": "Notes, summarised again", "sessionId": new["sessionId"]}
    _grow(home, NOTES, (json.dumps(new) + "\n" + json.dumps(title) + "\n").encode(), 2)
    prompt = {**_line(MAIN, 19), "uuid": "0c0c0c0c-0000-4000-8000-000000000002", "parentUuid": _line(MAIN, 20)["uuid"],
              "timestamp": "2025-11-27T10:00:00.000Z",
              "message": {"role": "user", "content": [{"type": "text", "text": "and the tax?"}]}}
    _grow(home, MAIN, (json.dumps(prompt) + "\n").encode(), 2)
    assert _reexport(home, out) == (2, 2, 0)
    titles = read_parquet(out).tables["conversations"].to_pydict()
    assert "Notes, summarised again" in titles["title"]


def test_only_the_grown_files_are_scanned_and_what_the_others_kept_is_enough(tmp_path: Path) -> None:
    home, out = _cut_exported_grown(tmp_path, NOTES, 2)
    scans: list[list[str]] = []
    real = claude_source.scan_lines

    def spy(fmt: str, paths: Any, **kw: Any) -> Any:
        scans.append(sorted(Path(p).name for p in paths))
        return real(fmt, paths, **kw)

    with mock.patch.object(claude_source, "scan_lines", spy):
        again = _export(home, out)
    assert (again.conversations_appended, again.conversations_kept) == (1, 3)
    # the grown file, and the one whose last read kept nothing (it ends in a torn line: no point to keep it in)
    assert scans == [sorted([Path(NOTES).name, Path(SECOND).name])]
    _same(home, out)


def test_a_line_another_file_holds_reads_the_home_whole(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    # a response line of the second session, copied into the notes session (as a resumed session's copy is)
    _grow(home, NOTES, (SAMPLE / SECOND).read_bytes().splitlines(keepends=True)[6])
    assert _reexport(home, out) == (0, 0, 4)


def test_a_response_streamed_across_the_point_reads_the_file_whole(tmp_path: Path) -> None:
    # the main session's first response is written as three lines: cut after the first of them
    home, out = _cut_exported_grown(tmp_path, MAIN, 3)
    again = _export(home, out)
    assert again.conversations_appended == 0
    _same(home, out)


def _prompt(uuid: str, parent: str, text: str, at: str) -> dict[str, Any]:
    return {**_line(NOTES, 1), "uuid": uuid, "parentUuid": parent, "timestamp": at,
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def test_a_rewind_in_the_new_lines_reads_the_file_whole(tmp_path: Path) -> None:
    home = _home(tmp_path)
    answer = _line(NOTES, 4)["uuid"]
    first = _prompt("0c0c0c0c-0000-4000-8000-000000000004", answer, "now in two bullets", "2025-11-26T23:00:00.000Z")
    _grow(home, NOTES, (json.dumps(first) + "\n").encode())
    out = tmp_path / "out"
    _export(home, out)
    # the user rewinds: a later prompt under the same answer abandons the first one's branch
    again = _prompt("0c0c0c0c-0000-4000-8000-000000000005", answer, "no, in one line", "2025-11-26T23:30:00.000Z")
    _grow(home, NOTES, (json.dumps(again) + "\n").encode(), 2)
    assert _reexport(home, out) == (0, 3, 1)
    messages = read_parquet(out).tables["messages"].to_pydict()
    assert [s for c, s in zip(messages["conversation_id"], messages["status"], strict=True)
            if c == Path(NOTES).stem][-2:] == ["abandoned", None]


def test_a_response_with_no_id_copied_from_another_file_reads_the_home_whole(tmp_path: Path) -> None:
    # a response line with no message.id is one response by itself: only its uuid tells a copy of it
    home = _home(tmp_path)
    alone = {**_line(AGENT, 2), "uuid": "0c0c0c0c-0000-4000-8000-000000000006", "timestamp": "2025-11-24T09:12:40.000Z"}
    alone["message"] = {k: v for k, v in alone["message"].items() if k != "id"}
    _grow(home, AGENT, (json.dumps(alone) + "\n").encode())
    out = tmp_path / "out"
    _export(home, out)
    _grow(home, NOTES, (json.dumps({**alone, "sessionId": _line(NOTES, 1)["sessionId"]}) + "\n").encode(), 2)
    assert _reexport(home, out) == (0, 0, 4)


def test_new_lines_earlier_than_a_file_s_first_line_read_the_home_whole(tmp_path: Path) -> None:
    # the two shop sessions share a response, counted in the one whose first line is earliest (the
    # main session: the same time, first in load order); a line older than both moves it to the second
    home = _home(tmp_path)
    _cut(home / SECOND, _lines(SECOND) - 1)  # its torn last line left out: it ends at a line's end
    _age(home, 0)
    out = tmp_path / "out"
    _export(home, out)
    early = _prompt("0c0c0c0c-0000-4000-8000-000000000007", _line(SECOND, 8)["uuid"], "one more thing",
                    "2025-11-24T09:00:00.000Z")
    _grow(home, SECOND, (json.dumps({**early, "sessionId": _line(SECOND, 2)["sessionId"]}) + "\n").encode())
    assert _reexport(home, out) == (0, 0, 4)


def test_new_lines_naming_a_subagent_s_spawning_call_read_the_home_whole(tmp_path: Path) -> None:
    # a subagent of the notes session with no .meta.json: its parent call is the result that names it
    home = _home(tmp_path)
    session = _line(NOTES, 1)["sessionId"]
    agent = home / "projects" / "-home-dev-notes" / session / "subagents" / "agent-b0b0b0b.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(b"".join((json.dumps({**_line(AGENT, n), "sessionId": session}) + "\n").encode()
                               for n in range(1, _lines(AGENT) + 1)))
    _age(home, 0)
    out = tmp_path / "out"
    _export(home, out)
    call = {**_line(NOTES, 2), "uuid": "0c0c0c0c-0000-4000-8000-000000000008", "timestamp": "2025-11-26T23:00:00.000Z"}
    call["message"] = {**call["message"], "id": "msg_spawn",
                       "content": [{"type": "tool_use", "id": "toolu_spawn", "name": "Task", "input": {}}]}
    answered = [{"type": "tool_result", "tool_use_id": "toolu_spawn", "content": "done"}]
    result = {**_line(NOTES, 3), "uuid": "0c0c0c0c-0000-4000-8000-000000000009",
              "timestamp": "2025-11-26T23:00:09.000Z", "message": {"role": "user", "content": answered},
              "toolUseResult": {"status": "completed", "agentId": "b0b0b0b"}}
    _grow(home, NOTES, (json.dumps(call) + "\n" + json.dumps(result) + "\n").encode())
    assert _reexport(home, out) == (0, 0, 5)
    conversations = read_parquet(out).tables["conversations"].to_pydict()
    assert conversations["parent_call_id"][conversations["conversation_id"].index(f"{session}/agent-b0b0b0b")] \
        == "toolu_spawn"


def test_one_response_written_into_two_grown_files_reads_the_home_whole(tmp_path: Path) -> None:
    home = _home(tmp_path)
    out = tmp_path / "out"
    _export(home, out)
    both = {**_line(NOTES, 4), "uuid": "0c0c0c0c-0000-4000-8000-00000000000a", "timestamp": "2025-11-26T23:00:00.000Z"}
    both["message"] = {**both["message"], "id": "msg_in_both"}
    _grow(home, NOTES, (json.dumps(both) + "\n").encode())
    _grow(home, AGENT, (json.dumps(both) + "\n").encode())
    assert _reexport(home, out) == (0, 0, 4)


def test_what_a_file_read_on_keeps_covers_its_earlier_lines_too(tmp_path: Path) -> None:
    home, out = _cut_exported_grown(tmp_path, NOTES, 2)
    assert _export(home, out).conversations_appended == 1
    # the notes session's first response (before the point it was read on from), copied into the subagent
    _grow(home, AGENT, (SAMPLE / NOTES).read_bytes().splitlines(keepends=True)[1], 2)
    assert _reexport(home, out) == (0, 0, 4)


def test_what_is_kept_of_a_file_reads_back_or_is_none() -> None:
    from murmur_analysis.sources.claude_code.readon import Kept
    from murmur_analysis.sources.lines import scan_lines

    (rows,) = scan_lines("claude_code", [SAMPLE / NOTES], text=False)
    kept = Kept.of(rows.table)
    back = Kept.from_doc(json.loads(json.dumps(kept.to_doc())))
    assert back is not None and back.first == kept.first and back.keys.tolist() == kept.keys.tolist()
    assert len(kept.keys) == 4 + 2  # four lines' uuids, two responses' ids
    for doc in (None, {}, {"keys": 3}, {"keys": "not base64!"}, {"keys": "AAAA"}, {"keys": "", "first": "x"},
                {"keys": "", "first": True}):
        assert Kept.from_doc(doc) is None


def test_what_is_kept_of_every_file_of_a_load_at_once_is_what_each_alone_keeps() -> None:
    from murmur_analysis.sources.claude_code.readon import Kept
    from murmur_analysis.sources.claude_code.whole import Whole
    from murmur_analysis.sources.lines import scan_lines

    paths = sorted(SAMPLE.rglob("*.jsonl"))
    rows = scan_lines("claude_code", paths, text=False)
    w = Whole.of(rows)
    together = Kept.each(w.table, w.starts)
    assert len(together) == len(paths) > 3
    for kept, one in zip(together, rows, strict=True):
        alone = Kept.of(one.table)
        named = [k for c in ("uuid_key", "msg_key") for k in one.table.column(c).to_pylist() if k is not None]
        assert kept.keys.tolist() == alone.keys.tolist() == sorted(set(named))
        assert kept.first == alone.first == min((t for t in one.table.column("ts_us").to_pylist() if t is not None),
                                                default=None)
    # a file whose lines name no key and carry no time keeps nothing
    (empty,) = Kept.each(w.table.slice(0, 0), np.array([0, 0], np.int64))
    assert empty.keys.tolist() == [] and empty.first is None
