"""Records scanned together: each record's share of the group is what scanning it alone gives, and
the frame builder joins a group's slices again without a copy."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_lines import line
from test_murmur_scan import message

from murmur_analysis.core.wire import block_rules
from murmur_analysis.engine import _native
from murmur_analysis.sources.murmur.engine import RecordScan, ScanGroup, pairing, tool_events
from murmur_analysis.sources.murmur.record import scan_records
from murmur_analysis.tables.batch import adjacent

#: Every column the scan hands over, by the key it is read by.
KEYS = ["line", "created_ms", "created_us", "id", "role", "source_id", "n_blocks", "text_chars", "kinds", "text",
        "reasoning_text", "ev_row", "ev_call", "ev_id", "ev_name", "ev_error", "ev_chars", "ev_bytes", "ev_text_at",
        "pair_call_id", "pair_tool_name", "pair_kind", "pair_status", "pair_called_seq", "pair_result_seq",
        "pair_is_error", "pair_result_chars", "pair_input_bytes", "pair_input_text", "pair_result_text"]


def _read(scan: RecordScan) -> dict[str, Any]:
    """Everything a record's scan tells, as plain values."""
    out: dict[str, Any] = {key: scan.column(key).to_pylist() for key in KEYS}
    out.update(rows=scan.rows, events=scan.events, pairs=scan.pairs, lines=scan.lines, diagnostics=scan.diagnostics,
               title=scan.title, header=scan.header, error=scan.error, pair_summary=scan.pair_summary,
               pair_state=scan.pair_state.to_bytes(), line_numbers=scan.line_numbers().tolist(),
               text_chars_sum=scan.text_chars(), pairing=pairing(scan).rows.to_pylist(),
               events_list=tool_events(scan))
    return out


def _record(folder: Path, i: int, lines: list[Any]) -> Path:
    path = folder / f"r{i}" / "c" / "conversation.jsonl"
    path.parent.mkdir(parents=True)
    rows = [line({k: v for k, v in value.items() if v is not None or k == "content"}) if isinstance(value, dict)
            else value for value in lines]
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def _scan(paths: list[str], text: bool, part_bytes: int | None) -> list[RecordScan]:
    """The records scanned together, string columns of more than ``part_bytes`` left as parts."""
    groups = _native.scan_records([os.fsencode(p) for p in paths], block_rules("murmur"), text, None, part_bytes)
    return [scan for group in groups for scan in ScanGroup(group).records()]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.one_of(message(), st.just("not json"), st.just("")), max_size=8), min_size=1, max_size=6),
       st.booleans(), st.sampled_from([None, 0, 40]))
def test_each_record_of_a_group_reads_as_it_does_alone(records: list[list[Any]], text: bool,
                                                       part_bytes: int | None) -> None:
    """Joined or left as parts (``part_bytes`` 0: every column of strings is each record's own), a
    record's columns are those of the record scanned alone."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [str(_record(Path(tmp), i, lines)) for i, lines in enumerate(records)]
        together = _scan(paths, text, part_bytes)
        assert len(together) == len(paths) and len({id(s.group) for s in together}) == 1
        for path, scan in zip(paths, together, strict=True):
            alone = scan_records([path], text)
            assert _read(scan) == _read(alone[0])


def test_a_missing_record_in_a_group_is_its_error_alone(tmp_path: Path) -> None:
    good = _record(tmp_path, 0, [{"role": "user", "content": "hello"}])
    scans = scan_records([str(tmp_path / "gone.jsonl"), str(good)])
    assert scans[0].error is not None and scans[0].rows == 0
    assert scans[1].error is None and scans[1].column("text").to_pylist() == ["hello"]


def test_texts_too_large_to_join_stay_each_records_own(tmp_path: Path) -> None:
    """A group whose texts pass 8 MiB keeps them as each record's part (no copy); the rest is joined."""
    big = "x" * (9 << 20)
    paths = [str(_record(tmp_path, i, [{"role": "user", "content": t}]))
             for i, t in enumerate(["small", big, "also small"])]
    scans = scan_records(paths)
    group = scans[0].group
    assert isinstance(group.raw["text"], list) and not isinstance(group.raw["id"], list)
    assert [s.column("text").to_pylist() for s in scans] == [["small"], [big], ["also small"]]
    assert [_read(s) for s in scans] == [_read(scan_records([p])[0]) for p in paths]


def test_a_shifted_scan_numbers_its_lines_on(tmp_path: Path) -> None:
    path = _record(tmp_path, 0, ["not json", {"role": "user", "content": "a"}])
    scan = scan_records([str(path)])[0]
    moved = scan.shifted(10)
    assert moved.line_numbers().tolist() == [12] and moved.diagnostics == [(11, 1)]
    assert scan.line_numbers().tolist() == [2]


# ----------------------------------------------------------------------------------- adjacent

arrays = st.one_of(
    st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=30).map(lambda v: pa.array(v, pa.int64())),
    st.lists(st.none() | st.text(max_size=5), max_size=30).map(lambda v: pa.array(v, pa.string())),
    st.lists(st.none() | st.booleans(), max_size=30).map(lambda v: pa.array(v, pa.bool_())),
    st.lists(st.none() | st.lists(st.text(max_size=3), max_size=3), max_size=30).map(
        lambda v: pa.array(v, pa.list_(pa.string()))),
    st.lists(st.none() | st.integers(0, 2**50), max_size=30).map(
        lambda v: pa.array(v, pa.int64()).cast(pa.timestamp("us", tz="UTC"))),
)


@settings(max_examples=200, deadline=None)
@given(arrays, st.lists(st.integers(0, 30), min_size=1, max_size=6), st.integers(0, 5))
def test_adjacent_slices_join_into_a_slice_of_their_array(array: pa.Array, cuts: list[int], skip: int) -> None:
    """Slices laid end to end are their array's stretch, its buffers shared; anything else is refused."""
    n = len(array)
    bounds = sorted({min(c, n) for c in cuts} | {0, n}) if n else [0, 0]
    pieces = [array.slice(a, b - a) for a, b in itertools.pairwise(bounds)] or [array.slice(0, 0)]
    start = pieces[0].offset
    joined = adjacent(pieces)
    assert joined is not None
    assert joined.equals(pa.concat_arrays(pieces)) and joined.to_pylist() == array.to_pylist()[start:]
    assert joined.offset == start
    if n:
        assert joined.buffers()[1].address == array.buffers()[1].address  # no copy
    if len(pieces) > 2:  # a piece left out: one stretch no longer, unless it held no row
        k = 1 + skip % (len(pieces) - 2)
        gapped = pieces[:k] + pieces[k + 1:]
        assert (adjacent(gapped) is None) == (len(pieces[k]) > 0)
    other = pa.array(array.to_pylist(), array.type)  # the same values, other buffers
    if len(pieces) > 1 and len(pieces[0]) and len(pieces[1]):
        assert adjacent([pieces[0], other.slice(len(pieces[0]), len(pieces[1]))]) is None
