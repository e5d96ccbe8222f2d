"""The native line-delimited engine: its line rule, its order, and reading on from where it stopped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from murmur_analysis.core.diagnostics import Diagnostics
from murmur_analysis.sources.lines import LineRows, columns_of, joined, report, scan_lines


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _obj(i: int, **extra: object) -> bytes:
    return json.dumps({"type": "user", "uuid": f"u{i}", "timestamp": "2026-07-01T10:00:01.000Z", **extra}).encode()


def test_the_formats_declare_their_columns() -> None:
    for name in ("claude_code", "codex"):
        ints, strs = columns_of(name)
        assert ints and strs and not set(ints) & set(strs)


def test_a_line_is_read_iff_serde_json_parses_an_object(tmp_path: Path) -> None:
    data = b"\n".join([
        _obj(1),
        b"   ",  # blank: skipped, not reported
        b"[1, 2]",  # JSON, not an object
        b"{\"type\": ",  # not JSON
        b"\xff\xfe",  # not UTF-8
        _obj(2, text="a\u2028b"),  # a raw U+2028 stays inside its line
        _obj(3) + b"\r",  # CRLF: the \r is whitespace to serde_json
        b'{"type":"user","uuid":"u4"} trailing',
    ]) + b"\n"
    rows = scan_lines("claude_code", [_write(tmp_path / "s.jsonl", data)])[0]
    assert rows.table.column("line").to_pylist() == [1, 6, 7]
    assert rows.table.column("uuid").to_pylist() == ["u1", "u2", "u3"]
    assert rows.reported == ((3, 1), (4, 1), (5, 3), (8, 1))
    assert rows.lines == 8 and rows.end == rows.size == len(data)
    diagnostics = Diagnostics("claude_code")
    report(rows, diagnostics, settle_seconds=0.0)
    kinds = [(d.line, d.kind) for d in diagnostics.rows]
    assert kinds == [(3, "bad_json"), (4, "bad_json"), (5, "bad_utf8"), (8, "bad_json")]


def test_a_torn_last_line_waits_until_its_file_settles_and_is_read_again_from_end(tmp_path: Path) -> None:
    whole = _obj(1) + b"\n"
    path = _write(tmp_path / "s.jsonl", whole + b'{"type":"assis')
    rows = scan_lines("claude_code", [path])[0]
    assert rows.end == len(whole) and rows.reported == ((2, 2),)
    waiting, settled = Diagnostics("claude_code"), Diagnostics("claude_code")
    report(rows, waiting, settle_seconds=3600.0)
    report(rows, settled, settle_seconds=0.0)
    assert waiting.rows == [] and [d.kind for d in settled.rows] == ["partial_line"]
    path.write_bytes(whole + _obj(2) + b"\n")
    on = scan_lines("claude_code", [path], starts=[(rows.end, 2)])[0]
    assert on.table.column("line").to_pylist() == [2] and on.table.column("uuid").to_pylist() == ["u2"]


def test_an_unreadable_file_is_reported_not_raised(tmp_path: Path) -> None:
    rows = scan_lines("claude_code", [tmp_path / "missing.jsonl"])[0]
    assert rows.table.num_rows == 0 and rows.error is not None and "could not open" in rows.error
    diagnostics = Diagnostics("claude_code")
    report(rows, diagnostics, 0.0)
    assert [d.kind for d in diagnostics.rows] == ["unreadable"]


def test_timestamps_become_utc_microseconds(tmp_path: Path) -> None:
    stamps = ["2026-07-01T10:00:01.000Z", "2026-07-01T12:00:01.123456+02:00", "2026-07-01T10:00:01", "soon", None]
    data = b"".join(json.dumps({"type": "user", "timestamp": s}).encode() + b"\n" for s in stamps)
    rows = scan_lines("claude_code", [_write(tmp_path / "s.jsonl", data)])[0]
    base = 1_782_900_001_000_000
    assert rows.table.column("ts_us").to_pylist() == [base, base + 123_456, None, None, None]


lines = st.lists(
    st.one_of(
        st.integers(0, 10**6).map(lambda i: _obj(i)),
        st.sampled_from([b"", b"  ", b"nope", b"[]", b"\xc3"]),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(lines=lines, cut_at=st.lists(st.floats(0, 1), max_size=4))
def test_reading_on_from_each_end_equals_one_whole_read(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], cut_at: list[float]
) -> None:
    tmp = tmp_path_factory.mktemp("grow")
    data = b"\n".join(lines) + b"\n"
    path = _write(tmp / "s.jsonl", data)
    whole = scan_lines("claude_code", [path])[0]
    seen: list[tuple[int, str | None]] = []
    start = (0, 1)
    for size in sorted({int(f * len(data)) for f in cut_at} | {len(data)}):
        _write(tmp / "p.jsonl", data[:size])
        got = scan_lines("claude_code", [tmp / "p.jsonl"], starts=[start])[0]
        # rows before a torn end are final; the torn line is read again from `end`
        seen.extend(zip(got.table.column("line").to_pylist(), got.table.column("uuid").to_pylist(), strict=True))
        consumed = data[start[0]:got.end]
        start = (got.end, start[1] + consumed.count(b"\n"))
        if got.end < size:  # a torn line that parsed as an object would be kept: none of ours does
            assert not data[got.end:size].endswith(b"\n")
    full = list(zip(whole.table.column("line").to_pylist(), whole.table.column("uuid").to_pylist(), strict=True))
    assert seen == full


def _call(i: int, k: int) -> bytes:
    content = [{"type": "text", "text": f"call {k}"},
               {"type": "tool_use", "id": f"t{k}", "name": "Read", "input": {"k": k}}]
    return json.dumps({"type": "assistant", "uuid": f"a{i}", "message": {"role": "assistant", "id": f"m{i}",
                                                                         "content": content}}).encode()


def _result(i: int, k: int, text: str) -> bytes:
    return json.dumps({"type": "user", "uuid": f"r{i}", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": f"t{k}", "content": text}]}}).encode()


def _same_rows(a: LineRows, b: LineRows) -> None:
    assert a.table.equals(b.table) and a.kinds.equals(b.kinds) and a.events.equals(b.events)
    assert (a.lines, a.end, a.size, a.reported, a.error) == (b.lines, b.end, b.size, b.reported, b.error)


files = st.lists(st.lists(st.one_of(
    st.builds(_call, st.integers(0, 9), st.integers(0, 5)),
    st.builds(_result, st.integers(0, 9), st.integers(0, 5), st.text(max_size=20)),
    st.builds(_obj, st.integers(0, 9)),
    st.sampled_from([b"", b"[1]", b"{\"type\": ", b"\xff"]),
), max_size=8), max_size=5)


@settings(max_examples=60, deadline=None)
@given(files=files)
def test_files_scanned_together_read_as_each_scanned_alone(
    tmp_path_factory: pytest.TempPathFactory, files: list[list[bytes]]
) -> None:
    """The engine joins the files of one scan; each file's rows are still its own, and joined end to end."""
    tmp = tmp_path_factory.mktemp("together")
    paths = [_write(tmp / f"{i}.jsonl", b"\n".join(lines) + b"\n") for i, lines in enumerate(files)]
    together = scan_lines("claude_code", paths)
    assert [r.path for r in together] == paths
    each = [scan_lines("claude_code", [path])[0] for path in paths]
    for got, one in zip(together, each, strict=True):
        _same_rows(got, one)
    if not together:
        return
    whole = joined(together)
    alone = joined(each)  # scanned apart: joined end to end, file by file
    assert whole.table.equals(alone.table) and whole.kinds.equals(alone.kinds) and whole.events.equals(alone.events)
    assert whole.starts.tolist() == alone.starts.tolist() and whole.event_starts.tolist() == alone.event_starts.tolist()


def test_texts_too_large_to_join_stay_each_files_own(tmp_path: Path) -> None:
    """Past 8 MiB of a text column, each file keeps its texts as an array of its own: the rows read the same."""
    big = "x" * (3 << 20)
    paths = [_write(tmp_path / f"{i}.jsonl", b"\n".join([_call(i, i), _result(i, i, big), _obj(i)]) + b"\n")
             for i in range(4)]
    together = scan_lines("claude_code", paths)
    whole = joined(together)
    assert whole.events.column("result_text").num_chunks == len(paths)  # the parts, not joined
    assert whole.table.column("uuid").num_chunks == 1  # the small columns, joined
    for path, got in zip(paths, together, strict=True):
        _same_rows(got, scan_lines("claude_code", [path])[0])
        assert got.events.column("result_text").to_pylist() == [None, big]
