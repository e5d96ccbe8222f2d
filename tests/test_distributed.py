"""The Dask loader builds the same rows as ma.load, conversations batched into tasks, on any scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dask
import pandas as pd
import pytest

import murmur_analysis as ma
from murmur_analysis.loading.distributed import load_dask
from murmur_analysis.tables.schema import TABLES


def normalized(frame: pd.DataFrame) -> pd.DataFrame:
    text = frame.astype(str)
    return text.sort_values(list(text.columns)).reset_index(drop=True)


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_dask_tables_equal_the_eager_load(samples: Path, scheduler: str) -> None:
    eager = ma.load(samples)
    frames = load_dask(samples, conversations_per_task=1)
    with dask.config.set(scheduler=scheduler):
        assert_same(frames, eager)
    # One task per conversation the listing handed over: the loaded ones, and the files found
    # unreadable only once read (a FlexiGPT file of another schema or not JSON adds no rows).
    unread = eager.diagnostics.query("source == 'flexigpt' and kind in ['bad_json', 'unknown_schema']")
    assert frames["messages"].npartitions == len(eager.conversation_ids()) + len(unread)


def assert_same(frames: dict[str, Any], eager: ma.Corpus) -> None:
    """Every table of ``frames``, computed, holds the rows and dtypes of the eager load."""
    for name in TABLES:
        lazy = frames[name].compute()
        assert list(lazy.columns) == list(eager.frame(name).columns), name
        assert [str(t) for t in lazy.dtypes] == [str(t) for t in eager.frame(name).dtypes], name
        if name == "diagnostics":
            assert set(map(tuple, normalized(lazy).values)) == set(map(tuple, normalized(eager.frame(name)).values))
        else:
            pd.testing.assert_frame_equal(normalized(lazy), normalized(eager.frame(name)), check_dtype=False)


def test_conversations_are_batched_into_tasks(samples: Path) -> None:
    eager = ma.load(samples)
    n = len(eager.conversation_ids())
    frames = load_dask(samples, conversations_per_task=5)
    assert frames["messages"].npartitions == -(-n // 5) < n
    with dask.config.set(scheduler="synchronous"):
        assert_same(frames, eager)
    with pytest.raises(ValueError, match="conversations_per_task"):
        load_dask(samples, conversations_per_task=0)


def test_a_local_cluster_of_worker_processes_builds_the_eager_tables(samples: Path) -> None:
    from distributed import Client, LocalCluster

    eager = ma.load(samples)
    frames = load_dask(samples, conversations_per_task=4)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        with dask.config.set(scheduler=client.get):
            assert_same(frames, eager)


def test_missing_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_dask(tmp_path / "nope")


def test_an_empty_folder_of_a_source_gives_empty_frames(tmp_path: Path) -> None:
    (tmp_path / "conversations").mkdir()
    frames = load_dask(tmp_path, source="murmur")
    assert len(frames["messages"].compute()) == 0
    assert list(frames["messages"].columns) == [c.name for c in TABLES["messages"]]


def test_dask_loads_data_reached_twice_once_as_the_eager_load_does(samples: Path, tmp_path: Path) -> None:
    (tmp_path / "alias").symlink_to(samples / "murmur")
    paths = (samples / "murmur", tmp_path / "alias", samples / "murmur" / "conversations")
    eager = ma.load(*paths)
    frames = load_dask(*paths)
    with dask.config.set(scheduler="synchronous"):
        for name in ("messages", "conversations"):
            pd.testing.assert_frame_equal(normalized(frames[name].compute()), normalized(eager.frame(name)),
                                          check_dtype=False)
        assert set(frames["diagnostics"].compute()["kind"]) == set(eager.diagnostics["kind"])
