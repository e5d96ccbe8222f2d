"""tool_calls.called_at and result_at: when the entries holding a call and its result were written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from litany_entries import result, use
from murmur_home import T0, call, msg, record, text, tool

import murmur_analysis as ma
from murmur_analysis.core.handoff import Conversation
from murmur_analysis.core.model import Entry, Text
from murmur_analysis.tables.chunks import entry_chunks
from murmur_analysis.tables.frames import FrameBuilder

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "data" / "samples"
UTC_US = pa.timestamp("us", tz="UTC")
KEYS = ["source", "conversation_id"]


def self_joined(messages: pd.DataFrame, calls: pd.DataFrame, seq: str) -> pd.Series:
    """The created_at of the message at each call row's ``seq`` column: the self-join the columns replace."""
    times = messages[[*KEYS, "seq", "created_at"]].rename(columns={"seq": seq})
    assert not times.duplicated([*KEYS, seq]).any()
    joined = calls[[*KEYS, seq]].merge(times, on=[*KEYS, seq], how="left")
    assert len(joined) == len(calls)
    return joined["created_at"]


def assert_times_are_the_entries(tables: dict[str, pa.Table]) -> None:
    calls, messages = tables["tool_calls"], tables["messages"]
    assert calls.schema.field("called_at").type == UTC_US
    assert calls.schema.field("result_at").type == UTC_US
    frame, msgs = calls.to_pandas(), messages.to_pandas()
    for at, seq in (("called_at", "called_seq"), ("result_at", "result_seq")):
        expected = self_joined(msgs, frame, seq)
        assert frame[at].isna().tolist() == expected.isna().tolist(), at
        assert frame[at].dropna().tolist() == expected.dropna().tolist(), at


def test_every_source_times_its_calls_and_results_as_its_messages() -> None:
    tables = ma.load(SAMPLES).tables
    assert_times_are_the_entries(tables)
    calls = tables["tool_calls"].to_pandas()
    timed = calls.dropna(subset=["called_at", "result_at"])
    # every source with timed messages has timed calls; dispatch records no message times
    assert set(timed.source) == {"murmur", "litany", "flexigpt", "claude_code", "codex"}
    assert set(calls.source) == {"murmur", "litany", "flexigpt", "dispatch", "claude_code", "codex"}


def test_latency_is_a_subtraction_and_unknown_ends_are_null(tmp_path: Path) -> None:
    home = tmp_path / "home"
    record(home, "bot", "ctx", [
        msg("user", T0, text("go")),
        msg("assistant", T0 + 10, call("c1"), call("c2"), n=1),
        tool(T0 + 250, "c1", n=2),
        tool(T0 + 300, "nobody-called", n=3),
    ])
    for lean in (False, True):
        calls = ma.load(home, text=not lean).tool_calls.set_index("call_id")
        start = datetime.fromtimestamp(T0 / 1000, UTC)
        assert calls.loc["c1", "result_at"] - calls.loc["c1", "called_at"] == timedelta(milliseconds=240)
        assert calls.loc["c2", "called_at"] == start + timedelta(milliseconds=10)
        assert calls.loc["c2", "status"] == "unanswered" and pd.isna(calls.loc["c2", "result_at"])
        orphan = calls.loc["nobody-called"]
        assert orphan.status == "orphan_result" and pd.isna(orphan.called_at)
        assert orphan.result_at == start + timedelta(milliseconds=300)


def test_an_export_read_back_keeps_the_times(tmp_path: Path) -> None:
    loaded = ma.load(SAMPLES).tables["tool_calls"]
    ma.export_parquet(SAMPLES, out=tmp_path / "out")
    back = ma.read_parquet(tmp_path / "out").tables["tool_calls"]
    assert back.schema.field("called_at").type == UTC_US and back.schema.field("result_at").type == UTC_US

    def rows(t: pa.Table) -> list[dict[str, Any]]:
        return sorted(t.select([*KEYS, "call_id", "called_at", "result_at"]).to_pylist(), key=repr)

    assert rows(back) == rows(loaded)
    assert any(r["called_at"] is not None for r in rows(back))


# -- streamed in chunks: the call and its result may be chunks apart -----------------------------------

_IDS = ["a", "b", "c"]
_when = st.none() | st.integers(0, 10_000).map(lambda s: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=s))
_entry = st.one_of(
    st.tuples(st.just("user"), st.lists(st.just(None), max_size=0)),
    st.tuples(st.just("assistant"), st.lists(st.sampled_from(_IDS), max_size=2)),
    st.tuples(st.just("tool"), st.lists(st.sampled_from([*_IDS, "z"]), min_size=1, max_size=2)),
)


def _entries(drawn: list[tuple[tuple[str, list[Any]], datetime | None]]) -> list[Entry]:
    out = []
    for i, ((side, ids), at) in enumerate(drawn):
        if side == "user":
            blocks: tuple[Any, ...] = (Text("u"),)
        elif side == "assistant":
            blocks = (Text("a"), *(use(i_) for i_ in ids))
        else:
            blocks = tuple(result(i_) for i_ in ids)
        out.append(Entry(i, side, blocks, created_at=at))
    return out


@settings(max_examples=60)
@given(st.lists(st.tuples(_entry, _when), min_size=1, max_size=14), st.integers(1, 4))
def test_times_are_the_entries_whatever_the_chunks(drawn: list[Any], rows: int) -> None:
    entries = _entries(drawn)
    whole, chunked = FrameBuilder(), FrameBuilder()
    whole.add(Conversation("test", "c", entries))
    chunked.add(Conversation("test", "c", entries, columns=entry_chunks(entries, rows=rows)))
    tables = chunked.finish()
    assert_times_are_the_entries(tables)
    assert tables["tool_calls"].equals(whole.finish()["tool_calls"])
