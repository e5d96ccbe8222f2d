"""Pairing rows view a scan's tool texts where they lie, and equal a copy wherever they cannot.

The line engine writes a file's call inputs and result texts into a buffer each, in event
order (``input_text``, ``result_text`` of :data:`~murmur_analysis.sources.lines.EVENTS`). The
pairing rows (one per call, in call order) then take each side's texts in order, and
:func:`~murmur_analysis.algorithms.pairing.viewed` gives them as new offsets over the same
bytes. Where the picks do not allow it (a result answered out of order, a text taken twice),
the texts are copied; either way the rows are ``take``'s.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis.algorithms.pairing import Pairer, _nulls, viewed
from murmur_analysis.core.handoff import ToolEvents
from murmur_analysis.sources.lines import scan_lines

_texts = st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=12)


@st.composite
def _picks(draw: st.DrawFn) -> tuple[pa.Array, pa.Array, int]:
    values = draw(_texts)
    offset = draw(st.integers(0, len(values)))  # a slice of a longer array, as a file's chunk is
    texts = pa.array(values, pa.string()).slice(offset)
    n = len(texts)
    index = draw(st.lists(st.one_of(st.none(), st.integers(0, n - 1)) if n else st.none(), max_size=12))
    cut = draw(st.integers(0, len(index)))  # the index a slice too, its validity bits offset
    return texts, pa.array([None] * cut + index, pa.int64()).slice(cut), offset


@given(_picks())
def test_viewed_equals_take(case: tuple[pa.Array, pa.Array, int]) -> None:
    texts, index, _ = case
    # the index as Arrow (null: no text) and as the pairing walk hands it, NumPy (-1: no text)
    numpy_index = np.array([-1 if i is None else i for i in index.to_pylist()], np.int64)
    for given_index in (index, numpy_index):
        got = viewed(texts, given_index)
        got.validate(full=True)
        assert got.type == pa.string()
        assert got.to_pylist() == texts.take(index).to_pylist()
        assert got.null_count == texts.take(index).null_count


@given(st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=300), st.data())
def test_a_slices_null_flags_are_its_own_stretch_of_the_bitmap(values: list[str | None], data: st.DataObject) -> None:
    """A conversation's slice of a scan's joined column reads its own bits, at any bit offset and length."""
    start = data.draw(st.integers(0, len(values)))
    length = data.draw(st.integers(0, len(values) - start))
    piece = pa.array(values, pa.string()).slice(start, length)
    assert _nulls(piece).tolist() == [v is None for v in values[start:start + length]]


def test_viewed_shares_the_bytes_when_picks_ascend_over_empty_gaps() -> None:
    # a calls' side: texts at the calls, null (empty) at the results between them
    inputs = pa.array(['{"a":1}', None, '{"b":2}', None, None, '{"c":3}'], pa.string())
    index = pa.array([0, None, 2, 5], pa.int64())  # an orphan result's row between the calls
    got = viewed(inputs, index)
    assert got.to_pylist() == ['{"a":1}', None, '{"b":2}', '{"c":3}']
    assert got.buffers()[2].address == inputs.buffers()[2].address
    # out of order (a later call answered first), or a text taken twice: a copy, the same values
    for picks in ([2, 0, 5], [0, 0]):
        again = viewed(inputs, pa.array(picks, pa.int64()))
        assert again.to_pylist() == inputs.take(pa.array(picks, pa.int64())).to_pylist()
        assert again.buffers()[2].address != inputs.buffers()[2].address
    # a text skipped that is not empty lies between two picks: a copy
    full = pa.array(["x", "y", "z"], pa.string())
    assert viewed(full, pa.array([0, 2], pa.int64())).buffers()[2].address != full.buffers()[2].address


def _claude_file(tmp_path: Path) -> Path:
    """A Claude Code session: two calls answered in order, a third answered before the second."""
    import json

    def line(kind: str, uuid: str, content: list[dict[str, object]]) -> str:
        return json.dumps({"type": kind, "uuid": uuid, "sessionId": "s1", "timestamp": "2025-11-20T10:00:00.000Z",
                           "message": {"role": kind, "content": content,
                                       **({"id": f"msg_{uuid}", "model": "claude-sonnet-4-5-20250929"}
                                          if kind == "assistant" else {})}})

    def use(i: str) -> dict[str, object]:
        return {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"echo {i}"}}

    def result(i: str) -> dict[str, object]:
        return {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"out {i}"}

    path = tmp_path / "projects" / "-work" / "s1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join([
        line("user", "u0", [{"type": "text", "text": "go"}]),
        line("assistant", "a1", [use("1")]),
        line("user", "u1", [result("1")]),
        line("assistant", "a2", [use("2"), use("3")]),
        line("user", "u2", [result("3"), result("2")]),
    ]) + "\n")
    return path


def test_a_scans_texts_reach_the_pairing_rows_in_place(tmp_path: Path) -> None:
    path = _claude_file(tmp_path)
    (rows,) = scan_lines("claude_code", [path])
    ev = rows.events
    inputs, results = ev.column("input_text").chunk(0), ev.column("result_text").chunk(0)
    calls = ev.column("call").to_pylist()
    # each side holds its own texts only
    assert [t is not None for t in inputs.to_pylist()] == calls
    assert [t is not None for t in results.to_pylist()] == [not c for c in calls]
    pairer = Pairer(keep_inputs=False)
    pairer.feed_columns(ev.column("row").to_pylist(), ev.column("row").to_pylist(), ToolEvents(
        row=ev.column("row").to_pylist(), call=calls, kind=["client"] * len(calls),
        call_id=ev.column("call_id").to_pylist(), name=ev.column("name").to_pylist(),
        is_error=ev.column("is_error").to_pylist(), chars=ev.column("chars").to_pylist(),
        input_bytes=ev.column("input_bytes").to_pylist(), texts=inputs, result_texts=results))
    paired = pairer.pairing().rows
    assert paired.column("input_text").to_pylist() == ['{"command":"echo 1"}', '{"command":"echo 2"}',
                                                       '{"command":"echo 3"}']
    assert paired.column("result_text").to_pylist() == ["out 1", "out 2", "out 3"]
    # the calls' inputs are viewed where the scan wrote them; the results, answered out of order, copied
    assert paired.column("input_text").buffers()[2].address == inputs.buffers()[2].address
    assert paired.column("result_text").buffers()[2].address != results.buffers()[2].address
    # and the load's rows are the same texts
    calls_table = ma.load(tmp_path, source="claude_code").tables["tool_calls"]
    assert calls_table.column("input").to_pylist() == paired.column("input_text").to_pylist()
    assert calls_table.column("result_text").to_pylist() == ["out 1", "out 2", "out 3"]


_conversation = st.lists(st.tuples(st.booleans(), st.sampled_from(["a", "b", "c"])), max_size=8)


def _walks(conversations: list[list[tuple[bool, str]]], shared: str) -> list[Pairer]:
    """A walk per conversation, fed its events; texts as each one's slice of one array per side (``one``), as
    lists (``lists``), or the calls' so and the results' an array of each conversation's own (``mixed``, as
    a load's texts past a size stay each file's)."""
    flat = [(k, i, call, cid) for k, events in enumerate(conversations) for i, (call, cid) in enumerate(events)]
    inputs = pa.array([f"in {k}.{i}" if call else None for k, i, call, _ in flat], pa.string())
    results = pa.array([None if call else f"out {k}.{i}" for k, i, call, _ in flat], pa.string())
    walks, at = [], 0
    for events in conversations:
        n = len(events)
        calls = [call for call, _ in events]
        if shared != "lists":
            texts: list[str | None] | pa.Array = inputs.slice(at, n)
            result_texts: pa.Array | None = results.slice(at, n)
            if shared == "mixed":
                result_texts = pa.array(result_texts.to_pylist(), pa.string())
        else:
            texts = [a if c else b for a, b, c in zip(inputs.slice(at, n).to_pylist(),
                                                      results.slice(at, n).to_pylist(), calls, strict=True)]
            result_texts = None
        walk = Pairer(keep_inputs=False)
        walk.feed_columns(list(range(n)), list(range(n)), ToolEvents(
            row=list(range(n)), call=calls, kind=["client"] * n, call_id=[cid for _, cid in events],
            name=["Bash" if c else None for c in calls], is_error=[None if c else False for c in calls],
            chars=[None if c else 3 for c in calls], input_bytes=[2 if c else None for c in calls],
            texts=texts, result_texts=result_texts))
        walks.append(walk)
        at += n
    return walks


@given(st.lists(_conversation, max_size=5), st.sampled_from(["one", "lists", "mixed"]))
def test_walks_paired_together_pair_as_each_alone(conversations: list[list[tuple[bool, str]]], shared: str) -> None:
    alone = [w.pairing() for w in _walks(conversations, shared)]
    walks = _walks(conversations, shared)
    together = Pairer.pairings(walks)
    assert len(together) == len(alone)
    for one, other, walk in zip(together, alone, walks, strict=True):
        one.rows.validate(full=True)
        assert one.rows.to_pylist() == other.rows.to_pylist()
        assert (one.made, one.errors, one.dropped) == (other.made, other.errors, other.dropped)
        assert walk.exact and walk.answered == []


def test_walks_paired_together_view_their_load_s_texts_where_they_lie() -> None:
    conversations = [[(True, "a"), (False, "a")], [], [(True, "b"), (True, "c"), (False, "c"), (False, "b")]]
    walks = _walks(conversations, "one")
    parent = walks[0]._texts.side(False)[0]  # the calls' side: the first conversation's slice of the one array
    rows = [p.rows for p in Pairer.pairings(walks)]
    assert [r.column("input_text").to_pylist() for r in rows] == [["in 0.0"], [], ["in 2.0", "in 2.1"]]
    assert [r.column("result_text").to_pylist() for r in rows] == [["out 0.1"], [], ["out 2.3", "out 2.2"]]
    # every conversation's call rows view the one array's bytes; the results answered out of order are copied
    assert {r.column("input_text").buffers()[2].address for r in rows if r.num_rows} == {
        parent.buffers()[2].address}
