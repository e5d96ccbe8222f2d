"""Integers and times as runtimes write them: each reading rule, at its edges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from murmur_analysis.values import (
    EPOCH,
    datetime_of_ms,
    datetime_of_seconds,
    iso_datetime,
    json_count,
    json_int,
    json_str,
    ms_of_datetime,
    rfc3339_datetime,
    uuid7_datetime,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2025-08-04T14:00:00.123456789Z", datetime(2025, 8, 4, 14, 0, 0, 123456, tzinfo=UTC)),
     ("2025-08-04T14:00:00Z", datetime(2025, 8, 4, 14, tzinfo=UTC)),
     ("2025-08-04T16:00:00.5+02:00", datetime(2025, 8, 4, 14, 0, 0, 500000, tzinfo=UTC)),
     ("0001-01-01T00:00:00Z", None), ("yesterday", None), (None, None),
     # an offset that moves the time out of datetime's years 1..9999 is no time, not a crash
     ("0001-01-01T00:30:00+01:00", None), ("9999-12-31T23:30:00-01:00", None)],
)
def test_rfc3339_nanoseconds(text: Any, expected: datetime | None) -> None:
    got = rfc3339_datetime(text)
    assert got == expected
    assert got is None or got.tzinfo is UTC


def test_integers_by_meaning() -> None:
    assert json_int(-3) == -3 and json_int(True) is None and json_int(2.0) is None and json_int("2") is None
    assert json_count(0) == 0 and json_count(-1) is None and json_count(False) is None
    assert json_str("a") == "a" and json_str(1) is None


@given(st.integers(min_value=ms_of_datetime(datetime(1, 1, 1, tzinfo=UTC)) or 0,
                   max_value=ms_of_datetime(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)) or 0))
def test_unix_ms_round_trips_exactly(ms: int) -> None:
    at = datetime_of_ms(ms)
    assert at is not None and at.tzinfo is UTC
    assert ms_of_datetime(at) == ms


@pytest.mark.parametrize("ms", [10**17, -(10**17)])
def test_unix_ms_outside_datetime_is_none(ms: int) -> None:
    assert datetime_of_ms(ms) is None
    assert datetime_of_seconds(ms) is None


def test_seconds_and_iso() -> None:
    assert datetime_of_seconds(1_700_000_000) == EPOCH + timedelta(seconds=1_700_000_000)
    assert iso_datetime("2025-01-02T03:04:05") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert iso_datetime("2025-01-02T05:04:05+02:00") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert iso_datetime("not a time") is None and iso_datetime(5) is None


def test_uuid7_time() -> None:
    assert uuid7_datetime("019a4e7c-1f00-7000-8000-000000000000") == datetime_of_ms(0x019A4E7C1F00)
    assert uuid7_datetime("msg_nothex") is None
