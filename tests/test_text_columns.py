"""The text columns: message text and reasoning, tool inputs and result texts, compaction summaries.

Computed by the native scan for murmur and by the same rules for every other source's entries;
``text=False`` leaves them null with the schema unchanged.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_lines import id_at, line, write_record
from test_murmur_scan import both_paths

import murmur_analysis as ma
from murmur_analysis.tables.schema import schema

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "data" / "samples"
TEXT_COLUMNS = {"messages": ["text", "reasoning_text"], "tool_calls": ["input", "result_text"], "growth": ["summary"]}


def rows(corpus: ma.Corpus, table: str, **where: Any) -> list[dict[str, Any]]:
    out = corpus.tables[table].to_pylist()
    return [r for r in out if all(r[k] == v for k, v in where.items())]


def test_samples_have_the_text_of_every_source() -> None:
    corpus = ma.load(SAMPLES)
    # murmur: the sample record's lines, as written
    billing = "support-bot/ctx-billing"
    [thought] = [r for r in rows(corpus, "messages", source="murmur", conversation_id=billing) if r["reasoning_text"]]
    assert thought["reasoning_text"] == "Look up the account's invoices first."
    [call] = rows(corpus, "tool_calls", source="murmur", conversation_id=billing, call_id="toolu_01")
    assert call["input"] == '{"query":"invoices account:4417 month:2026-03"}'
    assert call["result_text"] == "INV-2291 Pro plan $49.00 2026-03-01\nINV-2304 Pro plan $49.00 2026-03-02"
    [compaction] = rows(corpus, "growth", source="murmur", conversation_id=billing, event="compaction")
    summary = SAMPLES / "murmur" / "sessions"
    written = [json.loads(x)["summary"] for p in summary.rglob("compaction-summaries.jsonl")
               for x in p.read_text().splitlines() if x.strip()]
    assert compaction["summary"] in written and compaction["summary"].startswith("1. THE ISSUE")
    # litany: a tool call's arguments and its result text
    [sql] = [r for r in rows(corpus, "tool_calls", source="litany") if r["input"] == '{"q":"ALTER TABLE part1"}']
    assert sql["result_text"] == "Exit code: 0\nALTER TABLE part1\n"
    # FlexiGPT: reasoning, a function call's parsed arguments, a result
    [paris] = rows(corpus, "tool_calls", source="flexigpt", call_id="call_paris")
    assert (paris["input"], paris["result_text"]) == ('{"city":"Paris"}', "18°C, cloudy")
    assert any(r["reasoning_text"] == "Search the web for the Go release history."
               for r in rows(corpus, "messages", source="flexigpt"))
    # dispatch
    [weather] = rows(corpus, "tool_calls", source="dispatch", tool_name="weather")
    assert (weather["input"], weather["result_text"]) == ('{"city":"Paris"}', "18C cloudy")
    assert any(r["text"] == "Summarize today's weather alerts." for r in rows(corpus, "messages", source="dispatch"))


def test_text_false_leaves_the_columns_null_with_the_same_schema() -> None:
    lean = ma.load(SAMPLES, text=False)
    full = ma.load(SAMPLES)
    for table, columns in TEXT_COLUMNS.items():
        assert lean.tables[table].schema == schema(table) == full.tables[table].schema
        for name in columns:
            assert lean.tables[table].column(name).null_count == lean.tables[table].num_rows, (table, name)
            assert full.tables[table].column(name).null_count < full.tables[table].num_rows, (table, name)
        # everything else is the same
        rest = [c for c in schema(table).names if c not in columns]
        assert lean.tables[table].select(rest).equals(full.tables[table].select(rest)), table
    batches = list(ma.iter_batches(SAMPLES, text=False))
    assert all(b.tables["messages"].column("text").null_count == b.tables["messages"].num_rows for b in batches)


def test_model_text_is_kept_as_written(tmp_path: Path) -> None:
    html = 'a <script>alert("x")</script> & \\n é 漢'
    path = write_record(tmp_path / "conversations" / "r" / "c" / "conversation.jsonl", [
        {"role": "user", "id": id_at(1), "content": html},
        {"role": "assistant", "id": id_at(2), "content": [
            {"type": "thinking", "text": "first"}, {"type": "text", "text": "one"},
            {"type": "thinking", "text": "second"}, {"type": "text", "text": ""},
            {"type": "tool_call", "id": "c1", "name": "bash", "input": {"z": 1.5, "a": ["<b>", "é"]}}]},
        {"role": "tool", "id": id_at(3), "tool_call_id": "c1",
         "content": [{"type": "text", "text": "out"}, {"type": "image", "source": {}}, {"type": "text", "text": html}]},
        {"role": "assistant", "id": id_at(4), "content": [{"type": "tool_call", "id": "c2", "name": "x"}]},
        {"role": "tool", "id": id_at(5), "tool_call_id": "c2", "content": [{"type": "image", "source": {}}]},
    ])
    for tables in both_paths(path):
        messages = tables["messages"].to_pylist()
        assert [m["text"] for m in messages] == [html, "one\n", None, None, None]
        assert [m["reasoning_text"] for m in messages] == [None, "first\nsecond", None, None, None]
        calls = tables["tool_calls"].to_pylist()
        assert [c["input"] for c in calls] == ['{"a":["<b>","é"],"z":1.5}', None]
        assert [c["result_text"] for c in calls] == [f"out\n{html}", None]
        assert calls[0]["input_bytes"] == len(calls[0]["input"].encode())


text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=8)
ids = st.sampled_from(["c1", "c2"])
json_value = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | text
                          | st.floats(allow_nan=False, allow_infinity=False),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                          max_leaves=6)
block = st.one_of(
    text,
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries({"type": st.just("text"), "text": st.integers(0, 9)}),
    st.fixed_dictionaries({"type": st.just("thinking"), "text": text}),
    st.fixed_dictionaries({"type": st.just("thinking"), "text": text, "signature": st.integers(0, 9)}),
    st.fixed_dictionaries({"type": st.just("tool_call"), "id": ids, "name": text, "input": json_value}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": ids,
                           "content": st.lists(st.one_of(text, st.fixed_dictionaries(
                               {"type": st.just("text"), "text": text})), max_size=3) | text}),
)
message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                           "content": st.lists(block, max_size=4) | text}),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": ids,
                           "content": st.lists(block, max_size=3) | text}),
)


def _texts(tables: dict[str, pa.Table]) -> dict[str, list[Any]]:
    return {f"{t}.{c}": tables[t].column(c).to_pylist() for t in ("messages", "tool_calls") for c in TEXT_COLUMNS[t]}


@settings(max_examples=80, deadline=None)
@given(st.lists(message, max_size=12))
def test_engine_and_entries_give_the_same_text(values: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations" / "r" / "c" / "conversation.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(line({**v, "id": id_at(i + 1)}) + "\n" for i, v in enumerate(values)), "utf-8")
        columns, entries = both_paths(path)
        assert _texts(columns) == _texts(entries)
        # the rule, stated on the lines themselves: a message's text blocks (a bare string is one)
        for value, got in zip(values, columns["messages"].column("text").to_pylist(), strict=True):
            content = value["content"]
            blocks = [content] if isinstance(content, str) else content
            texts = [b if isinstance(b, str) else b["text"] for b in blocks
                     if isinstance(b, str) or (b.get("type") == "text" and isinstance(b.get("text"), str))]
            expected = "\n".join(texts) if texts and value["role"] != "tool" else None
            assert got == expected


def test_export_without_text_writes_null_text_and_reads_again_when_text_is_asked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    lean = ma.export_parquet(SAMPLES / "dispatch", out=out, text=False)
    assert lean.conversations_read > 0
    messages = ma.read_parquet(out).tables["messages"]
    assert messages.num_rows and messages.column("text").null_count == messages.num_rows
    assert json.loads((out / "_manifest.json").read_text())["text"] is False
    full = ma.export_parquet(SAMPLES / "dispatch", out=out)  # rows made without text are made again
    assert full.conversations_read == lean.conversations_read and full.conversations_kept == 0
    messages = ma.read_parquet(out).tables["messages"]
    assert messages.column("text").null_count < messages.num_rows


def test_the_command_line_leaves_text_out_with_no_text(tmp_path: Path) -> None:
    import subprocess
    import sys

    for flag, nulls in (([], False), (["--no-text"], True)):
        out = tmp_path / ("lean" if flag else "full")
        subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "export", str(SAMPLES / "flexigpt"), "--out",
                        str(out), "-q", *flag], check=True, capture_output=True)
        calls = ma.read_parquet(out).tables["tool_calls"]
        assert (calls.column("input").null_count == calls.num_rows) is nulls


def test_results_answered_out_of_order_keep_their_own_texts(tmp_path: Path) -> None:
    """Parallel calls answered last first, a result that answers no call, a call never answered:
    each row has its own call's input and its own result's text (the engine moves the texts
    within their buffer, setting aside those that come out of order)."""
    calls = [{"type": "tool_call", "id": f"c{i}", "name": "sh", "input": {"n": i, "pad": "é" * i}} for i in range(4)]
    values = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": calls},
        {"role": "tool", "tool_call_id": "c2", "content": "two\nlines"},
        {"role": "tool", "tool_call_id": "nobody", "content": "stray"},
        {"role": "tool", "tool_call_id": "c0", "content": [{"type": "text", "text": "zero"}]},
        {"role": "tool", "tool_call_id": "c1", "content": ""},
    ]
    path = tmp_path / "conversations" / "r" / "c" / "conversation.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(line({**v, "id": id_at(i + 1)}) + "\n" for i, v in enumerate(values)), "utf-8")
    columns, entries = both_paths(path)
    assert _texts(columns) == _texts(entries)
    got = {r["call_id"]: (r["input"], r["result_text"]) for r in columns["tool_calls"].to_pylist()}
    assert got == {
        "c0": ('{"n":0,"pad":""}', "zero"),
        "c1": ('{"n":1,"pad":"é"}', ""),
        "c2": ('{"n":2,"pad":"éé"}', "two\nlines"),
        "c3": ('{"n":3,"pad":"ééé"}', None),
        "nobody": (None, "stray"),
    }
