"""The hand-off is one-way: nothing is written into a conversation once it is made.

A source gives every fact at construction or returns it, as a :class:`Summary`, from the
generator of its stream; the loaders (discovery, the load plan, the handles, the Dask tasks)
make new conversations instead of changing the ones they are handed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa
import pytest
from murmur_home import T0, ev, inference, msg, record, text, trace

import murmur_analysis as ma
from murmur_analysis.core import handoff
from murmur_analysis.core.handoff import Conversation, Summary, TableRows
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export
from murmur_analysis.loading.plan import iter_batches
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.murmur import MurmurSource

_T = TypeVar("_T")


def _seal(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every conversation refuse a write once its ``__init__`` returned; the refused writes are listed."""
    refused: list[str] = []
    made = handoff.Conversation.__init__

    def init(self: Conversation, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        object.__setattr__(self, "_sealed", True)

    def guard(self: Conversation, name: str, value: Any) -> None:
        if getattr(self, "_sealed", False):
            refused.append(name)
            raise AttributeError(f"{name!r} written into a conversation after it was handed over")
        object.__setattr__(self, name, value)

    monkeypatch.setattr(handoff.Conversation, "__init__", init)
    monkeypatch.setattr(handoff.Conversation, "__setattr__", guard)
    return refused


@pytest.fixture
def sealed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Conversations refuse writes once made (see :func:`_seal`)."""
    return _seal(monkeypatch)


def _homes(samples: Path, tmp_path: Path) -> list[bytes]:
    """The murmur sample twice (the same record names: ids made unique), once under a name that is not UTF-8."""
    first, second = tmp_path / "one", Path(os.fsdecode(os.fsencode(tmp_path) + b"/two\xfe"))
    for home in (first, second):
        shutil.copytree(samples / "murmur", home)
    # the second path reaches the first home's records again: each loads once
    return [os.fsencode(first), os.fsencode(first / "conversations" / "support-bot"), os.fsencode(second)]


def _tables(corpus: dict[str, pa.Table]) -> dict[str, pd.DataFrame]:
    return {name: table.to_pandas() for name, table in corpus.items()}


def _assert_same(left: dict[str, pd.DataFrame], right: dict[str, pd.DataFrame]) -> None:
    assert left.keys() == right.keys()
    for name in left:
        pd.testing.assert_frame_equal(left[name], right[name], obj=name)


def test_a_murmur_load_writes_nothing_into_a_conversation(
    samples: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = _homes(samples, tmp_path)
    expected = _tables(ma.load(*paths, source="murmur").tables)
    handles = ma.load(*paths, source="murmur")
    entries = {cid: [e.id for e in handles.conversation(cid, "murmur").entries]
               for _, cid in handles.conversation_ids()}

    refused = _seal(monkeypatch)
    told: list[str] = []
    corpus = ma.load(*paths, source="murmur", progress=lambda event, _detail: told.append(event))
    assert refused == []
    _assert_same(_tables(corpus.tables), expected)
    assert {"entries", "conversation"} <= set(told)
    kinds = expected["diagnostics"]["kind"].tolist()
    assert "reached_twice" in kinds and "duplicate_id" in kinds
    assert expected["conversations"]["path_bytes"].notna().any()  # the name that is not UTF-8
    # A handle decodes its conversation again and keeps the sorted entries beside it.
    for _, cid in corpus.conversation_ids():
        handle = corpus.conversation(cid, "murmur")
        assert [e.id for e in handle.entries] == entries[cid]
        assert handle.entries is handle.entries
    # The batches and the Dask tasks build the same rows, and change no conversation either.
    batches = list(iter_batches(*paths, source="murmur"))
    for name, frame in expected.items():
        if name != "diagnostics":
            got = pa.concat_tables([b.tables[name] for b in batches if name in b.tables]).to_pandas()
            pd.testing.assert_frame_equal(got.drop(columns=[c for c in got if c.endswith("cost_usd")]),
                                          frame.drop(columns=[c for c in frame if c.endswith("cost_usd")]), obj=name)
    import dask

    from murmur_analysis.loading.distributed import load_dask

    with dask.config.set(scheduler="synchronous"):
        frames = load_dask(*paths, source="murmur", conversations_per_task=2)
        messages = frames["messages"].compute()
    assert sorted(zip(messages["conversation_id"], messages["seq"], strict=True)) == sorted(
        zip(expected["messages"]["conversation_id"], expected["messages"]["seq"], strict=True))
    assert refused == []


def _drained(stream: Iterable[_T]) -> tuple[list[_T], Any]:
    """Every item of ``stream``, and the value its generator returned."""
    it = iter(stream)
    items: list[_T] = []
    while True:
        try:
            items.append(next(it))
        except StopIteration as stop:
            return items, stop.value


def test_a_streamed_murmur_record_returns_its_summary(samples: Path, sealed: list[str]) -> None:
    corpus = ma.load(samples / "murmur")
    source = MurmurSource()
    opened = [c for c in source.open(samples / "murmur", Diagnostics("murmur")) if isinstance(c, Conversation)]
    joined = compacted = 0
    for conv in opened:
        # Reopened, the conversation knows nothing up front: what its stream learns is returned.
        again = source.reopen(conv.key, Diagnostics("murmur"))
        assert again.summary is None
        entries, summary = _drained(again.entries)
        assert isinstance(summary, Summary)
        assert [e.position for e in entries] == list(range(len(entries)))
        title = corpus.conversations.set_index("conversation_id").loc[conv.conversation_id, "title"]
        assert summary.title == title
        usage = [r for r in corpus.tables["usage"].to_pylist() if r["conversation_id"] == conv.conversation_id]
        compactions = [g["position"] for g in corpus.tables["growth"].to_pylist()
                       if g["conversation_id"] == conv.conversation_id and g["event"] == "compaction"]
        if not usage:
            assert summary.usage is None
        else:
            joined += 1
            assert summary.usage is not None
            assert [(r.seq, r.usage.input_total_tokens) for r in summary.usage] == [
                (r["seq"], r["input_total_tokens"]) for r in usage]
        assert [g.position for g in summary.growth or ()] == compactions
        compacted += len(compactions)
        # The columns the engine scanned carry the same facts up front.
        assert conv.summary is not None and conv.summary.usage == summary.usage and conv.summary.title == title
    assert len(opened) == len(corpus.conversations) and joined and compacted and not sealed


def _session_home(tmp_path: Path) -> Path:
    """A home whose session spent tokens outside any task (an on-session-end hook)."""
    home = tmp_path / "home"
    record(home, "bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 21, text("answer"), n=1)])
    hook = {"input_tokens": 300, "output_tokens": 40, "input_tokens_actual": 310, "output_tokens_actual": 41,
            "origin": "hook:on-session-end", "model": "gpt-4.1-mini", "turn": 0, "decision": "text"}
    trace(home / "sessions" / "ses_1", [
        ev("session_start", T0, capsule_name="bot", model="gpt-4.1"),
        ev("task_start", T0 + 1, task_id="A", context_id="ctx"),
        inference(T0 + 20, "A", 0, input_tokens_actual=1900, output_tokens_actual=22),
        ev("task_end", T0 + 500, task_id="A", exit_status="ok"),
        ev("inference", T0 + 600, task_id=None, **hook),
        ev("session_end", T0 + 900, exit_status="ok"),
    ])
    old = T0 / 1000  # every file settled, and the same time on every run
    for path in home.rglob("*"):
        os.utime(path, (old, old))
    return home


def test_session_spend_is_rows_beside_the_conversations(tmp_path: Path, sealed: list[str]) -> None:
    home = _session_home(tmp_path)
    source = MurmurSource()
    items = list(source.open(home, Diagnostics("murmur")))
    rows = [item for item in items if isinstance(item, TableRows)]
    assert [r.table for r in rows] == ["usage"]
    [row] = rows[0].rows
    assert (row["session_id"], row["input_total_tokens"], row["model"]) == ("ses_1", 310, "gpt-4.1-mini")
    assert "source" not in row and "conversation_id" not in row  # the frame builder's to fill
    assert not hasattr(source, "extra_tables")  # no table kept aside between open() and after
    usage = ma.load(home).usage
    session = usage[usage["conversation_id"].isna()]
    assert session["source"].tolist() == ["murmur"] and session["input_total_tokens"].tolist() == [310]
    assert not sealed


def test_session_spend_is_exported_once_however_often_the_export_runs(tmp_path: Path) -> None:
    home, out = _session_home(tmp_path), tmp_path / "out"
    expected = [("", 310), ("bot/ctx", 1900)]
    for run in range(3):
        if run == 2:  # a new conversation beside the one kept
            record(home, "bot", "new", [msg("user", T0 + 10)])
            for path in home.rglob("*"):
                if path.stat().st_mtime != T0 / 1000:  # setting an aged file's times again changes it
                    os.utime(path, (T0 / 1000, T0 / 1000))
        result = export(home, out=out)
        # the second run reads no conversation again (none changed), the third reads the new one
        assert (result.conversations_read, result.conversations_kept) == [(1, 0), (0, 1), (1, 1)][run]
        usage = read_parquet(out).tables["usage"].to_pylist()
        assert sorted((r["conversation_id"] or "", r["input_total_tokens"]) for r in usage) == expected
