"""Columns declared once: a table's column is one declaration, with how it is computed.

``murmur_analysis.tables.schema`` declares each column with its type, its meaning and how the frame
builder computes it from its table's input; nothing else lists a table's columns. So a column
added to the declaration reaches the loaded tables (every source, both decode paths) with no
other change.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

import murmur_analysis as ma
from murmur_analysis.core.diagnostics import Diagnostic
from murmur_analysis.core.handoff import EntryColumns, GrowthRow, OrphanRow, StepRow, UsageRow
from murmur_analysis.tables import schema
from murmur_analysis.tables.columns import TableBuilder
from murmur_analysis.tables.rows import CallColumns, ConversationRow
from murmur_analysis.tables.schema import Column

SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"

#: The typed value each core table is computed from.
INPUTS: dict[str, type] = {
    "messages": EntryColumns,
    "tool_calls": CallColumns,
    "usage": UsageRow,
    "orphans": OrphanRow,
    "growth": GrowthRow,
    "steps": StepRow,
    "conversations": ConversationRow,
    "diagnostics": Diagnostic,
}


def test_a_column_added_to_messages_by_one_declaration_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    length = Column("text_length", pa.int32(), "characters of the text column",
                    value=lambda chunk: pc.utf8_length(chunk.text))
    monkeypatch.setitem(schema.TABLES, "messages", (*schema.MESSAGES, length))
    for text in (True, False):
        messages = ma.load(SAMPLES, text=text).tables["messages"]
        assert messages.schema.names == [*(c.name for c in schema.MESSAGES), "text_length"]
        assert messages.schema.field("text_length").type == pa.int32()
        rows = messages.select(["source", "text", "text_length"]).to_pylist()
        # every source, the native murmur scan and the entry-decoded ones alike
        assert {r["source"] for r in rows} == {"murmur", "litany", "flexigpt", "dispatch", "claude_code", "codex"}
        assert [r["text_length"] for r in rows] == [None if r["text"] is None else len(r["text"]) for r in rows]
        assert any(r["text_length"] for r in rows) == text


def test_a_column_added_to_a_row_table_by_one_declaration_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    answered = Column("answered_in", pa.string(), "the model and where its counters were read",
                      value=lambda row: f"{row.model}@{row.found_in}")
    monkeypatch.setitem(schema.TABLES, "usage", (*schema.USAGE, answered))
    usage = ma.load(SAMPLES).tables["usage"]
    assert usage.schema.names[-1] == "answered_in"
    rows = usage.to_pylist()
    assert rows and [r["answered_in"] for r in rows] == [f"{r['model']}@{r['found_in']}" for r in rows]


@pytest.mark.parametrize("table", sorted(INPUTS))
def test_a_column_with_no_rule_is_a_field_of_its_tables_input(table: str) -> None:
    names = {f.name for f in fields(INPUTS[table])}
    given = {"source", "conversation_id"} - names  # the key columns the frame builder gives
    plain = [c.name for c in schema.TABLES[table] if c.value is None and c.filled_by is None]
    assert plain, table
    assert [n for n in plain if n not in names | given] == []


def test_the_text_columns_are_the_declared_ones() -> None:
    declared = {t: [c.name for c in cols if c.text] for t, cols in schema.TABLES.items() if any(c.text for c in cols)}
    assert declared == {"messages": ["text", "reasoning_text"], "tool_calls": ["input", "result_text"],
                        "growth": ["summary"]}
    lean = ma.load(SAMPLES, text=False).tables
    for table, names in declared.items():
        for name in names:
            assert lean[table].column(name).null_count == lean[table].num_rows, (table, name)


_ORPHAN = st.builds(OrphanRow, tool_use_id=st.text(max_size=5), found_by=st.sampled_from(["assembly", "record"]),
                    step=st.none() | st.integers(0, 10**6), commit=st.none() | st.text(max_size=5))


@given(
    rows=st.lists(st.tuples(st.sampled_from(["add", "mapping", "append"]), _ORPHAN, st.text(max_size=3)), max_size=40),
    batch_rows=st.integers(1, 7),
)
def test_the_table_builder_keeps_rows_in_the_order_given_however_they_are_given(
    rows: list[tuple[str, OrphanRow, str]], batch_rows: int
) -> None:
    builder = TableBuilder("orphans", batch_rows=batch_rows)
    expected = []
    for how, orphan, conversation in rows:
        row = {"source": "s", "conversation_id": conversation, "step": orphan.step, "commit": orphan.commit,
               "tool_use_id": orphan.tool_use_id, "found_by": orphan.found_by}
        expected.append(row)
        if how == "add":
            builder.add(orphan, {"source": "s", "conversation_id": conversation})
        elif how == "mapping":
            builder.add_mapping({k: v for k, v in row.items() if k != "source"}, {"source": "s"})
        else:
            builder.append(tuple(row.values()))
        assert builder.num_rows == len(expected)
    table = builder.finish()
    assert table.schema == schema.schema("orphans")
    assert table.to_pylist() == expected


def test_a_chunks_token_columns_read_its_usage_with_none_as_no_counters_and_keep_nothing_past_it() -> None:
    import sys
    from dataclasses import replace

    from murmur_analysis.core.handoff import ToolEvents
    from murmur_analysis.core.model import Usage

    def chunk(usage: list[Usage | None] | None) -> EntryColumns:
        n = 3
        ints, strs = pa.array([0, 1, 2], pa.int64()), pa.array(["a", "b", "c"])
        return EntryColumns(position=ints, id=strs, side=pa.array(["user", "assistant", "assistant"]), origin=strs,
                            model=strs, created_at=pa.nulls(n, pa.timestamp("us", "UTC")),
                            n_blocks=pa.array([1] * n, pa.int32()), text_chars=ints, status=strs, error=strs,
                            source_id=strs, block_kinds=pa.array([["text"]] * n, pa.list_(pa.string())), text=strs,
                            reasoning_text=strs, usage=usage, events=ToolEvents())

    spent = Usage.normalize(input_tokens=5, output_tokens=7, cache_in_input=False, reasoning_in_output=False)
    alone = sys.getrefcount(spent)
    c = chunk([None, spent, None])
    builder = TableBuilder("messages")
    builder.add_columns(c, 3, {"source": "s", "conversation_id": "c"})
    table = builder.finish()
    assert table.column("output_tokens").to_pylist() == [None, 7, None]
    assert table.column("input_tokens").to_pylist() == [None, 5, None]
    filled = c.usage_filled()
    assert filled is c.usage_filled() and filled is not None and filled[1] is spent and filled[0] == Usage()
    assert replace(c).usage_filled() is not filled  # a copy makes its own
    assert chunk(None).usage_filled() is None
    # once the chunk goes, nothing the build made holds its usage
    del c, filled
    assert sys.getrefcount(spent) == alone
