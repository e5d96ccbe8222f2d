"""The toolkit reads the benchmarks' tricky murmur record correctly, row for row.

On a short record made of tricky rows (backslashes, tabs, quotes, control characters, astral
and RTL unicode, tool bodies that are sometimes a block list and sometimes a bare string) the
toolkit's tables and its walk are compared with a reference ``orjson`` parse of every line: role,
id, tool_call_id, is_error and the content (the text). A fast toolkit that silently mangles rows
is no win.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

import murmur_analysis as ma

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
FIELDS = ("role", "id", "tool_call_id", "is_error")


def _generate_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("murmur_bench_generate", BENCH / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def record(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("murmur-home")
    path = home / "conversations" / "bench" / "ctx-tricky" / "conversation.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\n".join(_generate_module().tricky_lines()) + b"\n")
    return path


@pytest.fixture(scope="module")
def reference(record: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in record.read_bytes().splitlines() if line.strip()]


def test_the_record_is_tricky(reference: list[dict[str, Any]]) -> None:
    """The rows hold what breaks engines, so a pass below means something."""
    text = orjson.dumps(reference).decode()
    for needle in ("\\\\", "\\t", '\\"', "\\u0000", "\\u001b", "中文", "🎉", "\u2028", "עברית"):
        assert needle in text, needle
    shapes = {type(r["content"]).__name__ for r in reference if r["role"] == "tool"}
    assert shapes == {"list", "str"}
    assert {r["role"] for r in reference} == {"user", "assistant", "tool"}
    assert any(r.get("is_error") is True for r in reference)


def _mismatches(rows: list[dict[str, Any]], reference: list[dict[str, Any]]) -> list[str]:
    """Rows whose fields or content differ from the reference."""
    assert len(rows) == len(reference), f"{len(rows)} rows, expected {len(reference)}"
    bad: list[str] = []
    for i, (got, want) in enumerate(zip(rows, reference, strict=True)):
        for name in FIELDS:
            if got.get(name) != want.get(name):
                bad.append(f"row {i}: {name} {got.get(name)!r} != {want.get(name)!r}")
        if got.get("content") != want["content"]:
            bad.append(f"row {i}: content differs: {str(got.get('content'))[:60]!r}")
    return bad


def _text_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(b["text"]) for b in content if b.get("type") in ("text", "thinking"))


def test_toolkit_tables_match_the_reference(record: Path, reference: list[dict[str, Any]]) -> None:
    corpus = ma.load(record.parents[2])
    messages = corpus.tables["messages"].sort_by("seq").to_pylist()
    assert len(messages) == len(reference)
    for row, want in zip(messages, reference, strict=True):
        assert (row["role"], row["message_id"]) == (want["role"], want["id"])
        if want["role"] == "tool":
            assert (row["n_blocks"], row["block_kinds"]) == (1, ["tool_result"])
        else:
            assert row["block_kinds"] == [b["type"].replace("tool_call", "tool_use") for b in want["content"]]
        assert row["text_chars"] == _text_chars(want["content"]), want["id"]
    results = {(r["call_id"], r["result_seq"]): r["is_error"]
               for r in corpus.tables["tool_calls"].to_pylist() if r["result_seq"] is not None}
    expected = {(w["tool_call_id"], i): w["is_error"] for i, w in enumerate(reference) if w["role"] == "tool"}
    assert results == expected


def test_toolkit_walk_matches_the_reference(record: Path, reference: list[dict[str, Any]]) -> None:
    rows = []
    for message in reversed(list(ma.walk(record))):
        content = orjson.loads(message.content)
        row: dict[str, Any] = {"role": message.role, "id": message.id, "content": content}
        if message.role == "tool":
            assert content["__murmur_tool_msg__"] is True
            row.update(tool_call_id=content["tool_call_id"], is_error=content["is_error"], content=content["body"])
        rows.append(row)
    assert _mismatches(rows, reference) == []


@pytest.mark.parametrize("lines_a_chunk", [2, 0])
def test_the_engine_row_of_a_cold_page_counts_the_messages_the_reader_does(
    record: Path, lines_a_chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine's row of the cold-page scenario reads the record in chunks, as the reader does: same count."""
    from murmur_analysis.sources.murmur import reader

    sys.path.insert(0, str(BENCH))
    try:
        import scenarios
    finally:
        sys.path.remove(str(BENCH))
    longest = max(len(line) for line in record.read_bytes().splitlines()) + 1
    chunk = longest * lines_a_chunk or record.stat().st_size  # a few lines a chunk, or the whole record in one
    assert chunk < record.stat().st_size or not lines_a_chunk
    monkeypatch.setattr(reader, "_CHUNK", chunk)
    counted = scenarios.engine_index(str(record))()
    assert counted == {"messages": ma.RecordReader().read_messages(record).total}
