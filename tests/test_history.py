"""The history core: every state's size equals the same count made from scratch on that state."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from murmur_analysis.algorithms.assembly import assemble
from murmur_analysis.algorithms.history import (
    Appended,
    Event,
    History,
    Reset,
    State,
    context_after,
    context_tokens,
    message_states,
    replay,
    running_context,
)
from murmur_analysis.core.blocks import text_chars
from murmur_analysis.core.model import Entry, Text, ToolResult, ToolUse, Usage

IDS = ("a", "b", "c")

usages = st.one_of(st.none(), st.builds(
    Usage, input_total_tokens=st.one_of(st.none(), st.integers(0, 10_000)),
    output_tokens=st.one_of(st.none(), st.integers(0, 500)), reasoning_tokens=st.one_of(st.none(), st.integers(0, 50))))
blocks = st.one_of(
    st.builds(Text, st.text(max_size=8)),
    st.builds(ToolUse, st.sampled_from(IDS), st.just("sh")),
    st.builds(ToolResult, st.sampled_from(IDS), st.one_of(st.none(), st.tuples(st.builds(Text, st.text(max_size=5))))),
)
bodies = st.tuples(st.sampled_from(["user", "assistant", "tool"]), st.lists(blocks, max_size=3), usages)


def entries_from(specs: Sequence[tuple[str, list[object], Usage | None]], start: int) -> list[Entry]:
    return [Entry(position=start + i, side=side, blocks=tuple(b), id=f"e{start + i}", usage=u)  # type: ignore[arg-type]
            for i, (side, b, u) in enumerate(specs)]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[Event], list[list[Entry]]]:
    """Events, and the entries each state holds."""
    events: list[Event] = []
    states: list[list[Entry]] = []
    held: list[Entry] = []
    for _ in range(draw(st.integers(1, 8))):
        specs = draw(st.lists(bodies, max_size=4))
        if held and draw(st.booleans()) and draw(st.booleans()):
            held = entries_from(specs, draw(st.integers(0, 3)))  # rewritten: may sort anywhere
            events.append(Reset(list(reversed(held))))  # any order: the core sorts
        else:
            new = entries_from(specs, (held[-1].position + 1) if held else 0)
            held = [*held, *new]
            events.append(Appended(new))
        states.append(list(held))
    return events, states


def from_scratch(held: list[Entry]) -> State:
    contexts = running_context([e.usage for e in held], None)
    return State(len(held), sum(text_chars(e.blocks) for e in held), contexts[-1] if contexts else None,
                 tuple(assemble(held).dropped_orphans))


@settings(max_examples=200, deadline=None)
@given(histories())
def test_each_state_is_counted_as_from_scratch(history: tuple[list[Event], list[list[Entry]]]) -> None:
    events, states = history
    assert list(replay(events)) == [from_scratch(held) for held in states]


@settings(max_examples=100, deadline=None)
@given(st.lists(bodies, max_size=12), st.integers(1, 5))
def test_the_columnar_path_counts_each_entry_as_a_state(specs: list[tuple[str, list[object], Usage | None]],
                                                       chunk: int) -> None:
    entries = entries_from(specs, 0)
    one = History(orphans=False)
    expected = [one.append([e]) for e in entries]
    columns = History(orphans=False)
    got: list[tuple[int, int, int | None]] = []
    for i in range(0, len(entries), chunk):
        part = entries[i : i + chunk]
        usage = [e.usage for e in part]
        grown = columns.append_columns(pa.array([text_chars(e.blocks) for e in part], pa.int64()),
                                       usage if any(u is not None for u in usage) else None)
        got += zip(grown.messages.to_pylist(), grown.chars.to_pylist(), grown.context_tokens.to_pylist(), strict=True)
    assert got == [(s.messages, s.chars, s.context_tokens) for s in expected]
    assert columns.state == (one.state if entries else State(0, 0, None, ()))


def test_context_is_the_last_reported_prompt_plus_all_it_generated() -> None:
    first = Usage(input_total_tokens=1000, output_tokens=30, reasoning_tokens=7)
    unreported = Usage(output_tokens=12)
    assert context_tokens(first) == 1037
    assert context_tokens(unreported) is None
    assert running_context([None, first, None, unreported], 5) == [5, 1037, 1037, 1037]


def test_a_source_can_settle_the_usage_the_context_counts() -> None:
    bare = Entry(position=0, side="assistant", blocks=(Text("hi"),), id="m")
    settled = Usage(input_total_tokens=10, output_tokens=2)
    history = History(usage=lambda e: settled if e.id == "m" else e.usage)
    assert history.append([bare]).context_tokens == 12
    assert history.reset([]).context_tokens is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(bodies, max_size=6), max_size=5))
def test_many_histories_at_once_count_as_each_alone(
    histories: list[list[tuple[str, list[object], Usage | None]]],
) -> None:
    entries = [entries_from(specs, 0) for specs in histories]
    flat = [e for es in entries for e in es]
    usage = [e.usage for e in flat]
    starts = np.cumsum([0, *(len(es) for es in entries)])[:-1]
    grown = message_states(np.array([text_chars(e.blocks) for e in flat], dtype=np.int64),
                           usage if any(u is not None for u in usage) else None, starts)
    got = list(zip(grown.messages.to_pylist(), grown.chars.to_pylist(), grown.context_tokens.to_pylist(), strict=True))
    expected = []
    for es in entries:
        alone = History(orphans=False)
        expected += [(s.messages, s.chars, s.context_tokens) for s in (alone.append([e]) for e in es)]
    assert got == expected


usage_or_none = st.one_of(st.none(), st.builds(
    Usage, input_total_tokens=st.one_of(st.none(), st.integers(0, 2**63 - 1)),
    output_tokens=st.one_of(st.none(), st.integers(0, 2**62)),
    reasoning_tokens=st.one_of(st.none(), st.integers(0, 50))))


@given(st.lists(usage_or_none, max_size=8), st.one_of(st.none(), st.integers(0, 10**6)))
def test_the_context_after_some_entries_is_the_last_of_their_running_context(
    usages: list[Usage | None], previous: int | None
) -> None:
    expected = running_context(usages, previous)[-1] if usages else previous
    assert context_after(usages, previous) == expected
