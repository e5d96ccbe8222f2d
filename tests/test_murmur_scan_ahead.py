"""The murmur source scans the next group of records while the consumer works through this one."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from murmur_home import T0, call, msg, record, settle, tool

import murmur_analysis.sources.murmur.source as murmur_source
from murmur_analysis.core.handoff import Conversation
from murmur_analysis.sources.base import Diagnostics, ReadContext
from murmur_analysis.sources.murmur import MurmurSource
from murmur_analysis.tables.frames import FrameBuilder


def _home(tmp_path: Path, records: int = 9) -> Path:
    home = tmp_path / "home"
    for r in range(records):
        t = T0 + 10_000 * r
        record(home, f"bot{r % 3}", f"ctx-{r}", [
            msg("user", t, n=0),
            msg("assistant", t + 1, call(f"c{r}", "ls", {"path": "/" * r}), n=1),
            tool(t + 2, f"c{r}", body="x" * (200 * r), n=2),
            msg("assistant", t + 3, n=3),
        ])
    settle(home)
    return home


def _tables(convs: Iterator[Conversation | Any]) -> dict[str, pa.Table]:
    builder = FrameBuilder()
    for conv in convs:
        assert isinstance(conv, Conversation)
        builder.add(conv)
    return builder.finish()


def test_records_scanned_ahead_in_small_groups_load_as_in_one_group(tmp_path: Path) -> None:
    home = _home(tmp_path)
    whole = _tables(MurmurSource().open(home, Diagnostics("murmur")))
    # a read-ahead of two bytes: every record a group of its own, each scanned while the one before is used
    apart = _tables(MurmurSource().open(home, Diagnostics("murmur"), ReadContext(read_ahead=2)))
    assert whole["messages"].num_rows == 36 and whole["tool_calls"].num_rows == 9
    for name in ("messages", "tool_calls", "conversations", "growth"):
        assert apart[name].equals(whole[name]), name


class _Spy:
    """``scan_records`` counted: the scans started, and how many ran at once."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.started = 0
        self.running = 0
        self.most = 0
        self.fail_at = fail_at
        self.lock = threading.Lock()
        self.real = murmur_source.scan_records

    def __call__(self, paths: list[str], text: bool = True) -> Any:
        with self.lock:
            self.started += 1
            self.running += 1
            self.most = max(self.most, self.running)
            n = self.started
        try:
            if n == self.fail_at:
                raise OSError("the disk went away")
            return self.real(paths, text)
        finally:
            with self.lock:
                self.running -= 1


def test_one_scan_runs_at_a_time_and_only_the_next_group_is_scanned_ahead(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    spy = _Spy()
    monkeypatch.setattr(murmur_source, "scan_records", spy)
    seen = 0
    for conv in MurmurSource().open(home, Diagnostics("murmur"), ReadContext(read_ahead=2)):
        assert isinstance(conv, Conversation) and conv.columns
        seen += 1
        # the record handed over is the seen-th group's: at most the group after it has been started
        assert spy.started <= seen + 1
        if seen == 1:  # and that one is scanned while this one is in the consumer's hands
            deadline = time.monotonic() + 10
            while spy.started < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert spy.started == 2
    assert (seen, spy.started, spy.most) == (9, 9, 1)


def test_a_consumer_that_stops_early_leaves_no_scan_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    spy = _Spy()
    monkeypatch.setattr(murmur_source, "scan_records", spy)
    convs = MurmurSource().open(home, Diagnostics("murmur"), ReadContext(read_ahead=2))
    next(convs)
    convs.close()
    assert spy.running == 0 and spy.started <= 2  # the group being used, and the one scanned ahead (if begun)
    assert not [t for t in threading.enumerate() if t.name.startswith("murmur-scan")]


def test_a_scan_that_fails_fails_the_read_where_its_group_is_reached(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setattr(murmur_source, "scan_records", _Spy(fail_at=4))
    convs = MurmurSource().open(home, Diagnostics("murmur"), ReadContext(read_ahead=2))
    got = [next(convs) for _ in range(3)]  # the three groups scanned before the failing one
    assert all(isinstance(c, Conversation) for c in got)
    with pytest.raises(OSError, match="the disk went away"):
        next(convs)
    assert not [t for t in threading.enumerate() if t.name.startswith("murmur-scan")]


def test_records_the_consumer_skips_are_not_scanned_ahead_either(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    spy = _Spy()
    monkeypatch.setattr(murmur_source, "scan_records", spy)
    odd = ReadContext(read_ahead=2,
                      skip=lambda conv: conv.path is not None and int(conv.path.split("ctx-")[1][0]) % 2 == 1)
    convs = list(MurmurSource().open(home, Diagnostics("murmur"), odd))
    assert len(convs) == 9
    assert [bool(isinstance(c, Conversation) and c.columns) for c in convs] == [r % 2 == 0 for r in range(9)]
    assert spy.started == 5  # a group of skipped records starts no scan
