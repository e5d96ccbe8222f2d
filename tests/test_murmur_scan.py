"""The native scan (what load reads) gives the same tables as the entry path, line shape by line shape."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_lines import line

from murmur_analysis.core.wire import block_rules
from murmur_analysis.engine import _native
from murmur_analysis.sources import Diagnostics
from murmur_analysis.sources.murmur import MurmurSource
from murmur_analysis.tables.frames import FrameBuilder
from murmur_analysis.tables.schema import TABLES

REPO = Path(__file__).resolve().parent.parent


def both_paths(path: Path) -> tuple[dict[str, pa.Table], dict[str, pa.Table]]:
    """Tables built from the column path (what load uses) and from reopened entries."""
    source = MurmurSource(settle_seconds=0)
    by_columns, by_entries = FrameBuilder(), FrameBuilder()
    diags_columns, diags_entries = Diagnostics("murmur"), Diagnostics("murmur")
    for conv in source.open(path, diags_columns):
        assert conv.columns is not None
        by_columns.add(conv)
        again = source.reopen(conv.key, diags_entries)
        # the entries view alone: what the scan learned up front is left out, the stream returns its own
        by_entries.add(replace(again, columns=None, summary=None))
    by_columns.add_diagnostics(diags_columns.rows)
    by_entries.add_diagnostics(diags_entries.rows)
    return by_columns.finish(), by_entries.finish()


LINE_KINDS = {"not_a_message", "partial_line", "bad_utf8", "missing_tool_call_id", "truncated_record"}


def assert_same(path: Path) -> None:
    columns, entries = both_paths(path)
    for name in TABLES:
        if name == "diagnostics":  # open() also reports trace and retention facts; compare the record's
            def lines(t: pa.Table) -> list[dict[str, Any]]:
                return [r for r in t.to_pylist() if r["kind"] in LINE_KINDS]

            assert lines(columns[name]) == lines(entries[name])
            continue
        assert columns[name].equals(entries[name]), name


def test_the_sample_home_reads_alike_both_ways() -> None:
    assert_same(REPO / "data" / "samples" / "murmur")


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
ids = st.sampled_from(["c1", "c2", "c3"])
block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries({"type": st.just("text"), "text": text, "cache": st.booleans()}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.integers(0, 2**40)}),
    st.fixed_dictionaries(
        {"type": st.just("tool_call"), "id": ids, "name": text, "input": st.dictionaries(text, text)}
    ),
    st.fixed_dictionaries({"type": st.just("tool_call"), "id": ids, "name": text, "input": st.none()}),
    st.fixed_dictionaries({"type": st.just("tool_call"), "id": ids, "name": text}),
    st.fixed_dictionaries({"type": st.just("thinking"), "text": text, "signature": st.none() | text}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": ids, "content": st.just([])}),
    st.fixed_dictionaries({"type": st.just("future"), "x": st.integers(0, 9)}),
    text,
)
content = st.one_of(st.lists(block, max_size=4), text, st.none(), st.integers(-(2**63), 2**63 - 1))
ms = st.integers(min_value=1_700_000_000_000, max_value=1_800_000_000_000)
msg_id = st.one_of(st.builds(lambda t: f"msg_{t:012x}7{'a' * 19}", ms), st.just("msg_1"), st.none(), st.integers(0, 9))


def message() -> st.SearchStrategy[dict[str, Any]]:
    common = {"id": msg_id, "content": content, "source_id": st.none() | text}
    return st.one_of(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), **common}),
        st.fixed_dictionaries(
            {"role": st.just("tool"), **common, "tool_call_id": st.none() | ids, "is_error": st.none() | st.booleans()}
        ),
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(message(), st.just("not json"), st.just("")), max_size=25))
def test_any_record_reads_alike_both_ways(lines: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations" / "r" / "c" / "conversation.jsonl"
        path.parent.mkdir(parents=True)
        rows = []
        for value in lines:
            if isinstance(value, dict):
                rows.append(line({k: v for k, v in value.items() if v is not None or k == "content"}))
            else:
                rows.append(value)
        path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
        assert_same(path)


def _plain(value: Any) -> Any:
    """A scan result's value as plain data: buffers as their bytes, the walk's state as its bytes."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if hasattr(value, "to_bytes") and not isinstance(value, int):
        return value.to_bytes()
    try:
        return bytes(memoryview(value))
    except TypeError:
        return value


def _scan(path: Path, block_bytes: int | None) -> Any:
    return _plain(_native.scan_records([bytes(path)], block_rules("murmur"), True, block_bytes)[0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(message(), st.just("not json"), st.just(""), st.just("  ")), max_size=25),
       st.sampled_from([b"", b"\n", b'{"role":"user","content":"to', b"\xff\xfe"]),
       st.integers(1, 300))
def test_a_record_scans_the_same_at_any_block_size(lines: list[Any], tail: bytes, block_bytes: int) -> None:
    """Lines cut by a block's end, a torn or non-UTF-8 last line, the header on line 1, tool
    events walked block by block as blocks are joined: the columns equal a read in one block."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversation.jsonl"
        header = line({"type": "murmur.record", "capsule": "c", "created_ms": 1})
        rows = [header] + [line({k: v for k, v in value.items() if v is not None or k == "content"})
                           if isinstance(value, dict) else value for value in lines]
        path.write_bytes("".join(r + "\n" for r in rows).encode("utf-8") + tail)
        assert _scan(path, block_bytes) == _scan(path, None)


def test_the_sample_records_scan_the_same_at_any_block_size() -> None:
    for path in sorted((REPO / "data" / "samples" / "murmur").rglob("conversation.jsonl")):
        whole = _scan(path, None)
        for block_bytes in (1, 97, 4096):
            assert _scan(path, block_bytes) == whole, (path, block_bytes)


def test_a_record_of_many_pieces_scans_the_same_in_blocks_of_many_pieces() -> None:
    """Blocks of several pieces each (a piece is 1 MiB), the line each block's end cuts handed
    on alone between them: it is decided with the block before and joined with it, beside the
    next block's decision. The columns, the pairing and the walk's state equal a read in one block."""
    samples = sorted((REPO / "data" / "samples" / "murmur").rglob("conversation.jsonl"))
    body = [ln for path in samples for ln in path.read_bytes().splitlines(keepends=True)[1:] if ln.strip()]
    header = line({"type": "murmur.record", "capsule": "c", "created_ms": 1}).encode() + b"\n"
    data = bytearray(header)
    while len(data) < 5 << 20:  # five pieces and more: blocks below hold two or three each
        data += b"".join(body) + b"not json\n\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversation.jsonl"
        path.write_bytes(bytes(data) + b'{"role":"user","content":"torn')
        whole = _scan(path, None)
        assert int.from_bytes(whole["pair_starts"][-8:], "little") > 1000  # tool calls paired across the blocks
        for block_bytes in ((2 << 20) + 7, (3 << 20) - 1):
            assert _scan(path, block_bytes) == whole, block_bytes
