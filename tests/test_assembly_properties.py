"""Hypothesis properties of the assembly core."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from murmur_analysis import assemble, pair_tools, transcript
from murmur_analysis.algorithms.pairing import Pairer
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
    pairer = Pairer()
    for n, entry in enumerate(entries, start=1):
        pairer.feed(entry)
        assert pairer.dropped_orphans() == assemble(entries[:n]).dropped_orphans


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
