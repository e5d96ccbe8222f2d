"""The frame builder builds a batch of conversations at once: the same tables as each built alone, in order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from murmur_analysis.core.blocks import Text, Thinking, ToolResult, ToolUse
from murmur_analysis.core.handoff import (
    Conversation,
    GrowthColumns,
    GrowthRow,
    Summary,
    ToolMeta,
    UsageColumns,
    UsageRow,
)
from murmur_analysis.core.model import Entry, Usage
from murmur_analysis.tables import frames
from murmur_analysis.tables.chunks import PairedChunks, entry_chunks
from murmur_analysis.tables.frames import FrameBuilder
from murmur_analysis.tables.rows import EntryIndex

IDS = ("a", "b", "c")
T0 = datetime(2026, 11, 1, tzinfo=UTC)

usages = st.one_of(st.none(), st.builds(
    Usage, input_total_tokens=st.one_of(st.none(), st.integers(0, 10_000)),
    output_tokens=st.one_of(st.none(), st.integers(0, 500)), reasoning_tokens=st.one_of(st.none(), st.integers(0, 50))))
blocks = st.one_of(
    st.builds(Text, st.text(max_size=6)),
    st.builds(Thinking, st.text(max_size=4)),
    st.builds(ToolUse, st.sampled_from(IDS), st.sampled_from(["sh", "grep"]), st.just({"x": 1})),
    st.builds(ToolResult, st.sampled_from(IDS), st.one_of(st.none(), st.tuples(st.builds(Text, st.text(max_size=5)))),
              st.booleans()),
)
entry_specs = st.tuples(
    st.sampled_from(["user", "assistant", "tool", "system"]),
    st.lists(blocks, max_size=3),
    usages,
    st.one_of(st.none(), st.integers(0, 10**6)),  # seconds after T0, or no time
    st.integers(0, 2),  # the step from the previous position (0: the same position again)
)


def as_columns(rows: tuple[UsageRow, ...]) -> UsageColumns:
    """Usage rows as the columns a source may hand instead (every field of every row kept)."""
    def field(name: str, typ: pa.DataType) -> pa.Array:
        return pa.array([getattr(r, name) for r in rows], typ)

    return UsageColumns([r.usage for r in rows], message_id=field("message_id", pa.string()),
                        seq=field("seq", pa.int64()), model=field("model", pa.string()),
                        provider=field("provider", pa.string()),
                        created_at=field("created_at", pa.timestamp("us", tz="UTC")),
                        attempt=field("attempt", pa.int32()), sealed=field("sealed", pa.bool_()),
                        found_in=field("found_in", pa.string()), accounting=field("accounting", pa.string()),
                        provider_source=field("provider_source", pa.string()),
                        session_id=field("session_id", pa.string()))


@st.composite
def conversations(draw: st.DrawFn, source: str, cid: str) -> Conversation:
    """One conversation of varied shape: entries or column chunks, a known pairing or a walk, a summary or none."""
    entries: list[Entry] = []
    position = draw(st.integers(0, 3))
    for i, (side, body, usage, at, step) in enumerate(draw(st.lists(entry_specs, max_size=9))):
        position += step if i else 0
        entries.append(Entry(position, side, tuple(body), id=f"{cid}-{i}", model="m" if side == "assistant" else None,
                             created_at=None if at is None else T0 + timedelta(seconds=at),
                             usage=usage if side == "assistant" else None))
    text = True  # a columnar source fills its text columns; the builder leaves them null when text is off
    seqs = sorted({e.position for e in entries})
    usage_rows: tuple[UsageRow, ...] | UsageColumns | None = None
    if draw(st.booleans()):  # usage the runtime recorded outside the entries, naming some of them
        usage_rows = tuple(UsageRow(Usage(input_total_tokens=draw(st.integers(0, 100)), output_tokens=1), seq=seq,
                                    model="m") for seq in draw(st.lists(st.sampled_from(seqs), max_size=3))
                           ) if seqs else ()
        if draw(st.booleans()):  # the same as columns, as a source that counts responses as columns hands them
            usage_rows = as_columns(usage_rows)
    growth: tuple[GrowthRow, ...] | GrowthColumns | None = None
    shape = draw(st.sampled_from(["derived", "compactions", "rows", "columns"]))
    if shape == "compactions" and seqs:
        growth = tuple(GrowthRow(p, "compaction", tokens_before=9, summary="s") for p in
                       draw(st.lists(st.sampled_from([*seqs, 999]), min_size=1, max_size=2)))
    elif shape == "rows":
        growth = (GrowthRow(0, "commit", messages=1, chars=2, commit="c0"),)
    elif shape == "columns":
        n = draw(st.integers(0, 3))
        growth = GrowthColumns(n, pa.array(range(n), pa.int64()), pa.nulls(n, pa.timestamp("us", tz="UTC")),
                               pa.array(["commit"] * n, pa.string()), pa.array(range(n), pa.int64()),
                               pa.array([5] * n, pa.int64()),
                               pa.nulls(n, pa.int64()), commit=pa.array([f"c{i}" for i in range(n)], pa.string()))
    meta = {"a": ToolMeta(duration_ms=1.5, exit_code=0)} if draw(st.booleans()) else {}
    rows = draw(st.integers(1, 4))  # entries per chunk
    readable = draw(st.integers(0, 9)) > 0
    if draw(st.booleans()):  # as a columnar decoder hands it over: chunks, and the pairing its engine walked
        walk = PairedChunks(entry_chunks(entries, rows=rows, text=text))
        for _ in walk:
            pass
        summary = Summary(usage=usage_rows, growth=growth, title=cid, paired=walk.pairing(), readable=readable)
        return Conversation(source, cid, entries, columns=list(entry_chunks(entries, rows=rows, text=text)),
                            tool_meta=meta, summary=summary)
    summary = Summary(usage=usage_rows, growth=growth, readable=readable)
    return Conversation(source, cid, entries, tool_meta=meta, summary=summary if draw(st.booleans()) else None)


@st.composite
def batches(draw: st.DrawFn) -> list[Conversation]:
    n = draw(st.integers(1, 6))
    return [draw(conversations(draw(st.sampled_from(["s", "t"])), f"c{i}")) for i in range(n)]


@settings(max_examples=150, deadline=None)
@given(convs=batches(), text=st.booleans(), batch_rows=st.sampled_from([1, 3, 7, 65_536]))
def test_a_batch_built_together_is_each_conversation_built_alone(convs: list[Conversation], text: bool,
                                                                 batch_rows: int) -> None:
    with mock.patch.object(frames, "BATCH_ROWS", batch_rows):  # batches ending anywhere
        together = FrameBuilder(text=text)
        counted = []
        for conv in convs:
            together.add(conv)
            counted.append(together.rows())
        tables = together.finish()
    alone = []
    for conv in convs:
        one = FrameBuilder(text=text)
        one.add(conv)
        alone.append(one.finish())
    for name, table in tables.items():
        expected = pa.concat_tables([t[name] for t in alone])
        assert table.schema == expected.schema, name
        assert table.to_pylist() == expected.to_pylist(), name
    # The rows counted as each conversation is added are those it adds, built or held.
    assert counted[-1] == {name: t.num_rows for name, t in tables.items()}
    for before, after, one_table in zip([{n: 0 for n in tables}, *counted], counted, alone, strict=False):
        assert {n: after[n] - before[n] for n in after} == {n: t.num_rows for n, t in one_table.items()}


positions = st.one_of(st.none(), st.integers(0, 6), st.integers(-(2**63), 2**63 - 1),
                      st.sampled_from([2**32 - 1, 2**32]))


@given(st.lists(st.tuples(st.integers(0, 3), positions), max_size=30),
       st.lists(st.tuples(st.integers(0, 4), positions), max_size=30))
def test_entries_are_found_by_conversation_and_position_as_a_first_match(
    held: list[tuple[int, int | None]], asked: list[tuple[int, int | None]]
) -> None:
    first: dict[tuple[int, int], int] = {}
    for i, (conversation, position) in enumerate(held):
        if position is not None:
            first.setdefault((conversation, position), i)
    index = EntryIndex(pa.array([c for c, _ in held], pa.int64()).to_numpy(),
                       pa.array([p for _, p in held], pa.int64()))
    conversations = pa.array([c for c, _ in asked], pa.int64()).to_numpy()
    where = pa.array([p for _, p in asked], pa.int64())
    expected = [None if p is None else first.get((c, p)) for c, p in asked]
    assert index.find(conversations, where).to_pylist() == expected
    assert index.holds(conversations, where).tolist() == [e is not None for e in expected]


counters = st.one_of(st.none(), st.integers(0, 2**40))
usage_rows = st.lists(st.builds(
    UsageRow,
    st.builds(Usage.normalize, input_tokens=counters, output_tokens=counters, cache_read_tokens=counters,
              cache_write_tokens=counters, reasoning_tokens=counters, cache_in_input=st.booleans(),
              reasoning_in_output=st.booleans(), context_window=counters),
    message_id=st.one_of(st.none(), st.text(max_size=4)), seq=st.one_of(st.none(), st.integers(-3, 9)),
    model=st.one_of(st.none(), st.sampled_from(["claude-sonnet-4-5", "gpt-5"])),
    provider=st.one_of(st.none(), st.just("anthropic")),
    created_at=st.one_of(st.none(), st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1),
                                                 timezones=st.just(UTC))),
    attempt=st.one_of(st.none(), st.integers(1, 3)), sealed=st.one_of(st.none(), st.booleans()),
    found_in=st.sampled_from(["entry", "trace", "response"]), accounting=st.sampled_from(["anthropic", "openai"]),
    provider_source=st.one_of(st.none(), st.just("runtime")), session_id=st.one_of(st.none(), st.just("s1"))),
    max_size=6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(usage_rows, st.booleans()), min_size=1, max_size=4), st.sampled_from([1, 4, 65_536]))
def test_usage_handed_as_columns_is_the_usage_handed_as_rows(given_usage: list[tuple[list[UsageRow], bool]],
                                                             batch_rows: int) -> None:
    def built(columns: list[bool]) -> dict[str, pa.Table]:
        builder = FrameBuilder()
        for k, ((rows, _), as_cols) in enumerate(zip(given_usage, columns, strict=True)):
            usage = as_columns(tuple(rows)) if as_cols else tuple(rows)
            builder.add(Conversation("s", f"c{k}", [], summary=Summary(usage=usage)))
        return builder.finish()

    with mock.patch.object(frames, "BATCH_ROWS", batch_rows):  # written together at any count
        as_rows = built([False] * len(given_usage))
        mixed = built([as_cols for _, as_cols in given_usage])
    for name in ("usage", "conversations", "diagnostics"):
        assert mixed[name].to_pylist() == as_rows[name].to_pylist(), name
    assert as_rows["usage"].num_rows == sum(len(rows) for rows, _ in given_usage)
    # the rows a source hands as columns are its rows again
    for rows, _ in given_usage:
        back = as_columns(tuple(rows)).rows()
        assert back == rows
        assert all(r.created_at is None or r.created_at.tzinfo is UTC for r in back)
