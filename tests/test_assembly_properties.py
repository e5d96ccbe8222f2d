"""Hypothesis properties of the assembly core."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from murmur_analysis import assemble, pair_tools, transcript
from murmur_analysis.algorithms.pairing import Pairer, PairState
from murmur_analysis.core.model import Block, Entry, Text, ToolResult, ToolUse

ids = st.sampled_from(["a", "b", "c", "d", "e"])
block = st.one_of(
    st.builds(lambda t: Text(t), st.sampled_from(["x", "y"])),
    st.builds(lambda i: ToolUse(i, "bash", {}), ids),
    st.builds(lambda i, e: ToolResult(i, (Text("r"),), e), ids, st.booleans()),
)
entry_spec = st.tuples(
    st.integers(min_value=0, max_value=40), st.sampled_from(["user", "assistant", "tool"]), st.lists(block, max_size=4)
)


def build(specs: list[tuple[int, str, list[Block]]]) -> list[Entry]:
    return [Entry(pos, side, tuple(blocks)) for pos, side, blocks in specs]


def results(blocks: list[Block]) -> list[str]:
    return [b.tool_use_id for b in blocks if isinstance(b, ToolResult)]


@given(st.lists(entry_spec, max_size=25))
def test_no_result_without_an_earlier_call(specs: list[tuple[int, str, list[Block]]]) -> None:
    assembled = assemble(build(specs))
    called: set[str] = set()
    for message in assembled.messages:
        called |= {b.id for b in message.blocks if isinstance(b, ToolUse)}
        assert set(results(list(message.blocks))) <= called


@given(st.lists(entry_spec, max_size=25))
def test_dropped_plus_kept_results_are_all_results(specs: list[tuple[int, str, list[Block]]]) -> None:
    entries = build(specs)
    all_results = sorted(results([b for e in entries for b in e.blocks]))
    assembled = assemble(entries)
    kept = results([b for m in assembled.messages for b in m.blocks])
    assert sorted(kept + assembled.dropped_orphans) == all_results


@given(st.lists(entry_spec, max_size=25))
def test_messages_alternate_and_nothing_but_orphans_is_lost(specs: list[tuple[int, str, list[Block]]]) -> None:
    entries = build(specs)
    assembled = assemble(entries)
    roles = [m.role for m in assembled.messages]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert all(m.blocks for m in assembled.messages)
    raw = [b for m in transcript(entries) for b in m.blocks]
    kept = [b for m in assembled.messages for b in m.blocks]
    assert len(raw) - len(kept) == len(assembled.dropped_orphans)


@given(st.lists(entry_spec, max_size=25))
def test_pairing_orphans_are_exactly_the_dropped_orphans(specs: list[tuple[int, str, list[Block]]]) -> None:
    entries = build(specs)
    rows = pair_tools(entries)
    orphans = [r.call_id for r in rows if r.status == "orphan_result" and r.kind == "client"]
    assert orphans == assemble(entries).dropped_orphans
    calls = [b for e in sorted(entries, key=lambda e: e.position) for b in e.blocks if isinstance(b, ToolUse)]
    assert sum(1 for r in rows if r.called_seq is not None) == len(calls)
    every_result = results([b for e in entries for b in e.blocks])
    assert sum(1 for r in rows if r.result_seq is not None) == len(every_result)


@given(st.lists(entry_spec, max_size=25))
def test_a_growing_conversation_drops_what_assembly_drops_at_every_prefix(
    specs: list[tuple[int, str, list[Block]]],
) -> None:
    entries = sorted(build(specs), key=lambda e: e.position)
    pairer, lean = Pairer(), Pairer(keep_inputs=False, rows=False)  # lean: asked only what it drops
    for n, entry in enumerate(entries, start=1):
        pairer.feed(entry)
        lean.feed(entry)
        assert pairer.dropped_orphans() == lean.dropped_orphans() == assemble(entries[:n]).dropped_orphans
    with pytest.raises(ValueError, match="makes no rows"):
        lean.pairing()
    with pytest.raises(ValueError, match="makes no rows"):
        lean.finish()


@given(st.lists(entry_spec, max_size=25))
def test_tool_events_as_columns_pair_as_the_entries_do(specs: list[tuple[int, str, list[Block]]]) -> None:
    # The columnar entry point of the pairing core: events, positions and run indexes as arrays.
    from murmur_analysis.algorithms.pairing import pair_events, tool_event_columns

    entries = sorted(build(specs), key=lambda e: e.position)
    changes = (int(i > 0 and e.side != entries[i - 1].side) for i, e in enumerate(entries))
    runs = list(itertools.accumulate(changes))  # the 0-based message (run) index of each entry
    events = tool_event_columns(entries, keep_inputs=True)
    rows, dropped = pair_events([entries[i].position for i in events.row], [runs[i] for i in events.row], events)
    assert rows == pair_tools(entries)
    assert dropped == assemble(entries).dropped_orphans


sides = st.sampled_from(["user", "assistant", "tool", "", "système"])


@given(st.lists(sides, max_size=30), st.integers(0, 30))
def test_the_native_and_the_python_message_run_rules_agree(given: list[str], cut: int) -> None:
    from murmur_analysis.algorithms.pairing import MessageRuns
    from murmur_analysis.engine import _native

    runs = MessageRuns()
    whole = [runs.next(side) for side in given]
    assert _native.message_runs(given, -1, None) == whole
    assert MessageRuns().of_sides(pa.array(given, pa.string())).tolist() == whole
    # going on from the state after a cut, each from the other's
    cut = min(cut, len(given))
    first = _native.message_runs(given[:cut], -1, None)
    before = MessageRuns(first[-1], given[cut - 1]) if cut else MessageRuns()
    assert first + [before.next(side) for side in given[cut:]] == whole
    python = MessageRuns()
    head = [python.next(side) for side in given[:cut]]
    assert head + _native.message_runs(given[cut:], python.index, python.side) == whole


@given(st.lists(entry_spec, max_size=25), st.integers(0, 25), st.booleans())
def test_a_walk_saved_and_resumed_pairs_as_the_whole_walk(
    specs: list[tuple[int, str, list[Block]]], cut: int, through_bytes: bool
) -> None:
    entries = sorted(build(specs), key=lambda e: e.position)
    cut = min(cut, len(entries))
    whole = pair_tools(entries)
    first = Pairer()
    for entry in entries[:cut]:
        first.feed(entry)
    rows = first.finish()
    state = first.save()
    if through_bytes:
        state = PairState.from_bytes(state.to_bytes())
    assert state.rows == len(rows)
    second = Pairer(state=state)
    for entry in entries[cut:]:
        second.feed(entry)
    more = second.finish()
    own = len(more) - len(second.answered)
    for row, answer in zip(second.answered, more[own:], strict=True):  # a result for an earlier call
        assert rows[row].status == "unanswered" and rows[row].call_id == answer.call_id
        rows[row] = replace(rows[row], result_seq=answer.result_seq, result_message=answer.result_message,
                            status=answer.status, is_error=answer.is_error, result_chars=answer.result_chars,
                            result_text=answer.result_text)
    if second.exact:
        assert rows + more[:own] == whole
    # Not exact only where the state cannot tell: a result for an id called before the cut (known
    # by its hash), or a message going on across the cut.
    called = {b.id for e in entries[:cut] for b in e.blocks if isinstance(b, ToolUse)}
    answered_later = {b.tool_use_id for e in entries[cut:] for b in e.blocks if isinstance(b, ToolResult)}
    if (cut in (0, len(entries)) or entries[cut - 1].side != entries[cut].side) and not called & answered_later:
        assert second.exact


def test_a_pairing_state_is_read_back_only_whole_and_of_its_version() -> None:
    pairer = Pairer()
    for entry in build([(0, "assistant", [ToolUse("a", "bash", {}), ToolUse("b", "bash", {})]),
                        (1, "tool", [ToolResult("a", (Text("r"),), False)])]):
        pairer.feed(entry)
    pairer.finish()
    data = pairer.save().to_bytes()
    state = PairState.from_bytes(data)
    assert state.to_bytes() == data and state.rows == 2 and state.runs == (1, "tool")
    assert PairState().rows == 0 and PairState().runs == (-1, None)
    other_version = data[:4] + bytes([data[4] + 1]) + data[5:]
    for bad in [data[:n] for n in range(len(data))] + [data + b"\0", b"XXXX" + data[4:], other_version]:
        with pytest.raises(ValueError):
            PairState.from_bytes(bad)
    Pairer(state=state)  # a walk takes the state over: it serves once
    with pytest.raises(ValueError, match="taken"):
        state.to_bytes()


def test_a_walk_saved_moves_its_open_calls_into_the_state_once() -> None:
    pairer = Pairer()
    entries = build([(0, "assistant", [ToolUse("a", "bash", {})]), (1, "tool", [ToolResult("b", (Text("r"),), False)])])
    for entry in entries:
        pairer.feed(entry)
    pairer.finish()
    state = pairer.save()
    again = PairState.from_bytes(state.to_bytes())
    assert again.to_bytes() == state.to_bytes() and state.rows == 2
    with pytest.raises(ValueError, match="was saved"):
        pairer.save()  # the open call moved into the first state: a second would lose it
    with pytest.raises(ValueError, match="was saved"):
        pairer.finish()
    resumed = Pairer(state=state)
    resumed.feed(build([(2, "tool", [ToolResult("a", (Text("late"),), False)])])[0])
    rows = resumed.finish()
    assert resumed.answered == [0] and rows[-1].result_text == "late"


@given(st.lists(entry_spec, max_size=25), st.lists(st.integers(0, 40), max_size=4), st.data())
def test_texts_fed_as_arrays_or_lists_reach_the_rows_alike(specs: list[tuple[int, str, list[Block]]],
                                                           cuts: list[int], data: st.DataObject) -> None:
    """A walk keeps no text itself: each row's texts are the ones fed for its call and its result,
    whether they came as lists or as Arrow arrays, in one piece or several."""
    from murmur_analysis.algorithms.pairing import tool_event_columns
    from murmur_analysis.core.handoff import ToolEvents

    entries = sorted(build(specs), key=lambda e: e.position)
    changes = (int(i > 0 and e.side != entries[i - 1].side) for i, e in enumerate(entries))
    runs = list(itertools.accumulate(changes))
    events = tool_event_columns(entries)
    n = len(events)
    texts = data.draw(st.lists(st.none() | st.text(max_size=4), min_size=n, max_size=n))
    positions, messages = [entries[i].position for i in events.row], [runs[i] for i in events.row]
    bounds = sorted({min(c, n) for c in cuts} | {0, n})

    def walk(arrays: bool) -> pa.RecordBatch:
        pairer = Pairer(keep_inputs=False)
        for k, (a, b) in enumerate(itertools.pairwise(bounds)):
            given = pa.array(texts[a:b], pa.string()) if arrays and k % 2 == 0 else texts[a:b]
            piece = ToolEvents(row=events.row[a:b], call=events.call[a:b], kind=events.kind[a:b],
                               call_id=events.call_id[a:b], name=events.name[a:b], is_error=events.is_error[a:b],
                               chars=events.chars[a:b], input_bytes=events.input_bytes[a:b], texts=given)
            pairer.feed_columns(positions[a:b], messages[a:b], piece)
        return pairer.pairing().rows

    rows = walk(False)
    assert walk(True).equals(rows)
    fed = {(call, i, t) for call, i, t in zip(events.call, events.call_id, texts, strict=True) if t is not None}
    for row in rows.to_pylist():
        assert row["result_text"] is None or (False, row["call_id"], row["result_text"]) in fed
    # every call makes a row, which carries the text fed for it
    calls = Counter((i, t) for call, i, t in zip(events.call, events.call_id, texts, strict=True) if call and t)
    assert calls == Counter((r["call_id"], r["input_text"]) for r in rows.to_pylist() if r["input_text"])
