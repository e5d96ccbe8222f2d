"""The Dask loader builds the same rows as ma.load, one partition per conversation."""

from __future__ import annotations

from pathlib import Path

import dask
import pandas as pd
import pytest

import murmur_analysis as ma
from murmur_analysis.distributed import load_dask
from murmur_analysis.schema import TABLES


def normalized(frame: pd.DataFrame) -> pd.DataFrame:
    text = frame.astype(str)
    return text.sort_values(list(text.columns)).reset_index(drop=True)


@pytest.mark.parametrize("scheduler", ["synchronous", "threads"])
def test_dask_tables_equal_the_eager_load(samples: Path, scheduler: str) -> None:
    eager = ma.load(samples)
    frames = load_dask(samples)
    with dask.config.set(scheduler=scheduler):
        for name in TABLES:
            lazy = frames[name].compute()
            assert list(lazy.columns) == list(eager.frame(name).columns), name
            assert [str(t) for t in lazy.dtypes] == [str(t) for t in eager.frame(name).dtypes], name
            if name == "diagnostics":
                assert set(map(tuple, normalized(lazy).values)) == set(map(tuple, normalized(eager.frame(name)).values))
            else:
                pd.testing.assert_frame_equal(normalized(lazy), normalized(eager.frame(name)), check_dtype=False)
    assert frames["messages"].npartitions == len(eager.conversation_ids())


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
