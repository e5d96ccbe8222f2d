"""Reading on from a point as a source's declared capability: the generic line-file implementation.

The example plugin (plain-text transcripts) mixes in ``AppendOnlyLines`` and gets incremental
export of grown files and exports by ranges; every table must equal a fresh load's, row order
within each conversation included.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator
from pathlib import Path
from typing import Any, ClassVar
from unittest import mock

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from murmur_analysis_example_plugin import PlaintextSource
from test_export import _ordered, assert_same

import murmur_analysis as ma
import murmur_analysis.export as export_module
from murmur_analysis.core.handoff import Conversation
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export
from murmur_analysis.sources.base import READ_ALL, Diagnostics, ReadContext, Source
from murmur_analysis.sources.resume import Resumable

T0 = 1_700_000_000

#: Lines of a transcript: messages of each side, tool calls and results (some answering no
#: call, some twice), continuation lines, and lines that are no message.
line = st.one_of(
    st.sampled_from(["user", "assistant"]).map(lambda r: f"{r}: hello"),
    st.integers(0, 3).map(lambda k: f"assistant: -> c{k} bash {{\"n\": {k}}}"),
    st.tuples(st.integers(0, 3), st.booleans()).map(lambda t: f"tool: <- c{t[0]} {'error ' if t[1] else ''}out"),
    st.just("  more of the message before"),
    st.just("??? not a message"),
)


def _write(path: Path, lines: list[str], stamp: int) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.writelines(f"{x}\n" for x in lines)
    os.utime(path, (T0 + stamp, T0 + stamp))  # distinct old times: settled, and never racy


def test_the_plugin_declares_the_capability_and_murmur_does_too() -> None:
    assert isinstance(PlaintextSource(), Resumable)
    assert isinstance(ma.sources.get_source("murmur"), Resumable)
    assert not isinstance(ma.sources.get_source("litany"), Resumable)  # a git history is not an appended file


def test_a_grown_transcript_is_read_on_from_where_the_export_stopped(tmp_path: Path) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    _write(folder / "a.chat.txt", ["user: hi", "assistant: -> c1 bash {}"], 1)
    _write(folder / "b.chat.txt", ["user: other"], 2)
    out = tmp_path / "out"
    export(folder, out=out)
    _write(folder / "a.chat.txt", ["tool: <- c1 done", "assistant: ok"], 3)
    with mock.patch.object(PlaintextSource, "reopen", side_effect=AssertionError("read whole")):
        result = export(folder, out=out)
    assert (result.conversations_appended, result.conversations_kept, result.conversations_read) == (1, 1, 0)
    exported, loaded = read_parquet(out).tables, ma.load(folder).tables
    assert_same(exported, loaded)
    calls = exported["tool_calls"].to_pylist()
    assert [(c["call_id"], c["status"], c["called_seq"], c["result_seq"]) for c in calls] == [("c1", "ok", 1, 2)]


def test_lines_that_cannot_be_read_alone_are_read_whole(tmp_path: Path) -> None:
    folder = tmp_path / "chats"
    folder.mkdir()
    _write(folder / "a.chat.txt", ["user: hi"], 1)
    out = tmp_path / "out"
    export(folder, out=out)
    _write(folder / "a.chat.txt", ["  and more of it"], 2)  # continues the message before the point
    result = export(folder, out=out)
    assert (result.conversations_appended, result.conversations_read) == (0, 1)
    assert read_parquet(out).tables["messages"]["text"].to_pylist() == ["hi\nand more of it"]


@settings(max_examples=max(10, settings.default.max_examples // 8), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(line, max_size=6), st.lists(st.tuples(st.integers(0, 1), st.lists(line, max_size=6)), min_size=1,
                                            max_size=3), st.sampled_from([16 << 20, 40, 90]))
def test_exports_of_transcripts_that_grew_equal_a_fresh_load(
    tmp_path_factory: Any, start: list[str], appends: list[tuple[int, list[str]]], range_bytes: int
) -> None:
    tmp = tmp_path_factory.mktemp("grow")
    folder = tmp / "chats"
    folder.mkdir()
    files = [folder / "a.chat.txt", folder / "b.chat.txt"]
    _write(files[0], start, 1)
    _write(files[1], ["user: hi"], 2)
    out = tmp / "out"
    with mock.patch.object(export_module, "RANGE_BYTES", range_bytes):  # small: written a range at a time
        export(folder, out=out, batch_conversations=1)
        for n, (which, added) in enumerate(appends, 3):
            _write(files[which], added, n)
            result = export(folder, out=out, batch_conversations=1)
            exported, loaded = read_parquet(out).tables, ma.load(folder).tables
            assert_same(exported, loaded)
            assert _ordered(exported) == _ordered(loaded)
            hypothesis.event("read on" if result.conversations_appended else "read" if result.conversations_read
                             else "kept")


class _Recording(Source):
    """A source that records what each ``open`` was told."""

    name: ClassVar[str] = "recording"
    told: ClassVar[list[ReadContext]] = []

    def guess_can_open(self, path: Path) -> bool:
        return path.name == "rec"

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        self.told.append(ctx)
        yield Conversation(self.name, "one", [], key="one", path=None)

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        return Conversation(self.name, "one", [], key="one")


@pytest.mark.parametrize("text", [True, False])
def test_a_source_is_told_what_the_load_wants_as_an_argument(tmp_path: Path, text: bool) -> None:
    (tmp_path / "rec").mkdir()
    _Recording.told.clear()
    with mock.patch.dict(ma.sources.registry(), {"recording": _Recording}):
        corpus = ma.load(tmp_path / "rec", source="recording", text=text)
        export(tmp_path / "rec", out=tmp_path / "out", source="recording", text=text)
    assert corpus.tables["conversations"].num_rows == 1
    load_ctx, export_ctx = _Recording.told
    assert (load_ctx.text, load_ctx.skip) == (text, None)
    assert export_ctx.text == text and export_ctx.skip is not None and export_ctx.read_ahead is not None
