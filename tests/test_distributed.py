"""The Dask loader runs ma.load's plan: every table of ma.load, row for row and in order, on any scheduler."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dask
import pandas as pd
import pytest

import murmur_analysis as ma
from murmur_analysis.core.handoff import Conversation, TableRows
from murmur_analysis.errors import SourceError
from murmur_analysis.loading.distributed import load_dask
from murmur_analysis.sources.base import READ_ALL, Diagnostics, ReadContext
from murmur_analysis.sources.dispatch import DispatchSource
from murmur_analysis.tables.schema import TABLES

RUNTIMES = {"murmur", "litany", "flexigpt", "dispatch", "claude_code", "codex"}


def assert_same(frames: dict[str, Any], eager: ma.Corpus) -> None:
    """``frames``, computed, are the eager load's tables: the same names, and each row for row, in order."""
    assert list(frames) == list(eager.tables)  # a table missing on either side fails here
    computed = dask.compute(*frames.values())
    for name, lazy in zip(frames, computed, strict=True):
        pd.testing.assert_frame_equal(lazy.reset_index(drop=True), eager.frame(name), obj=name)


def handed_over(eager: ma.Corpus) -> Counter[str]:
    """The conversations the load plan hands over per source: the loaded ones, and the files found
    unreadable only once read (a FlexiGPT file of another schema or not JSON adds no rows)."""
    unread = eager.diagnostics.query("source == 'flexigpt' and kind in ['bad_json', 'unknown_schema']")
    return Counter(source for source, _ in eager.conversation_ids()) + Counter(unread["source"])


@pytest.fixture(scope="module")
def eager(samples: Path) -> ma.Corpus:
    corpus = ma.load(samples)
    # The samples hold every runtime, and a source's own tables with rows: the comparison has teeth.
    assert set(corpus.conversations["source"]) == RUNTIMES
    assert corpus.tables["dispatch_sessions"].num_rows and corpus.tables["memory"].num_rows
    assert len(corpus.diagnostics) > 1
    return corpus


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_dask_tables_equal_the_eager_load(samples: Path, eager: ma.Corpus, scheduler: str) -> None:
    frames = load_dask(samples, conversations_per_task=1)
    with dask.config.set(scheduler=scheduler):
        assert_same(frames, eager)
    assert frames["messages"].npartitions == sum(handed_over(eager).values())  # one task per conversation


def test_conversations_are_batched_into_tasks_of_one_path(samples: Path, eager: ma.Corpus) -> None:
    frames = load_dask(samples, conversations_per_task=5)
    per_source = handed_over(eager)  # each runtime is one folder of the samples
    assert frames["messages"].npartitions == sum(-(-n // 5) for n in per_source.values()) < sum(per_source.values())
    with dask.config.set(scheduler="synchronous"):
        assert_same(frames, eager)
    with pytest.raises(ValueError, match="conversations_per_task"):
        load_dask(samples, conversations_per_task=0)


def test_a_local_cluster_of_worker_processes_builds_the_eager_tables(samples: Path, eager: ma.Corpus) -> None:
    from distributed import Client, LocalCluster

    frames = load_dask(samples, conversations_per_task=4)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        with dask.config.set(scheduler=client.get):
            assert_same(frames, eager)


def test_text_and_prices_are_the_eager_loads(samples: Path) -> None:
    prices = {"claude-haiku-4": {"input_mtok": 1, "output_mtok": 5}}
    eager = ma.load(samples, text=False, prices=prices)
    assert "unpriced_model" not in set(eager.diagnostics["kind"])
    with dask.config.set(scheduler="synchronous"):
        assert_same(load_dask(samples, text=False, prices=prices, conversations_per_task=3), eager)


def test_two_homes_each_decode_against_their_own_traces(samples: Path, tmp_path: Path) -> None:
    # The second home has no session traces and the same conversation ids: its records load
    # with null usage and qualified ids, the first home's with their traces' usage.
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(samples / "murmur", first)
    shutil.copytree(samples / "murmur", second)
    shutil.rmtree(second / "formations")
    eager = ma.load(first, second, samples)
    assert "duplicate_id" in set(eager.diagnostics["kind"]) and eager.usage["input_total_tokens"].notna().any()
    with dask.config.set(scheduler="synchronous"):
        assert_same(load_dask(first, second, samples, conversations_per_task=3), eager)


def test_dask_loads_data_reached_twice_once_as_the_eager_load_does(samples: Path, tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(samples / "murmur")
    paths = (samples / "murmur", tmp_path / "alias", samples / "murmur" / "conversations")
    eager = ma.load(*paths)
    assert "reached_twice" in set(eager.diagnostics["kind"])
    with dask.config.set(scheduler="synchronous"):
        assert_same(load_dask(*paths), eager)


def test_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_dask(tmp_path / "nope")


def test_an_empty_folder_of_a_source_gives_empty_frames(tmp_path: Path) -> None:
    (tmp_path / "conversations").mkdir()
    frames = load_dask(tmp_path)
    assert list(frames) == list(TABLES)
    assert len(frames["messages"].compute()) == 0
    assert list(frames["messages"].columns) == [c.name for c in TABLES["messages"]]
    with dask.config.set(scheduler="synchronous"):
        assert_same(frames, ma.load(tmp_path))
    # A forced source that finds nothing is refused, as by ma.load.
    with pytest.raises(SourceError, match="found no conversations"):
        load_dask(tmp_path, source="murmur")


def test_a_table_of_its_own_a_source_did_not_name_while_listing_is_an_error(
    samples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = DispatchSource.open

    def unnamed(
        self: DispatchSource, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL
    ) -> Iterator[Conversation | TableRows]:
        return (item for item in opened(self, path, diagnostics, ctx)
                if not (isinstance(item, TableRows) and item.table == "dispatch_sessions"))

    monkeypatch.setattr(DispatchSource, "open", unnamed)
    assert "dispatch_sessions" in ma.load(samples / "dispatch").tables  # its conversations' rows
    frames = load_dask(samples / "dispatch")
    assert "dispatch_sessions" not in frames
    with dask.config.set(scheduler="synchronous"), pytest.raises(SourceError, match="dispatch_sessions"):
        frames["messages"].compute()
