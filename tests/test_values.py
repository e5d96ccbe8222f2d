"""Integers and times as runtimes write them: each reading rule, at its edges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from murmur_analysis.core.values import (
    BAD_TIME,
    EPOCH,
    BadTime,
    datetime_of_ms,
    datetime_of_seconds,
    datetime_of_us,
    held,
    iso_datetime,
    json_count,
    json_int,
    json_str,
    ms_of_datetime,
    rfc3339_datetime,
    uuid7_datetime,
    uuid7_ms,
)
from murmur_analysis.sources.base import Diagnostics


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2025-08-04T14:00:00.123456789Z", datetime(2025, 8, 4, 14, 0, 0, 123456, tzinfo=UTC)),
     ("2025-08-04T14:00:00Z", datetime(2025, 8, 4, 14, tzinfo=UTC)),
     ("2025-08-04T16:00:00.5+02:00", datetime(2025, 8, 4, 14, 0, 0, 500000, tzinfo=UTC)),
     ("0001-01-01T00:00:00Z", None), (None, None), (5, None)],
)
def test_rfc3339_nanoseconds(text: Any, expected: datetime | None) -> None:
    got = rfc3339_datetime(text)
    assert got == expected
    assert got is None or (isinstance(got, datetime) and got.tzinfo is UTC)


@pytest.mark.parametrize(
    ("text", "why"),
    [("yesterday", "is not an RFC 3339 time"), ("2025-08-04T24:00:00Z", "hour must be in 0..23"),
     ("2025-02-30T00:00:00Z", "day is out of range"),
     # an offset that moves the time out of datetime's years 1..9999 is no time, not a crash
     ("0001-01-01T00:30:00+01:00", "outside the years 1..9999"), ("9999-12-31T23:30:00-01:00", "outside")],
)
def test_an_rfc3339_text_no_timestamp_holds_is_a_bad_time(text: str, why: str) -> None:
    got = rfc3339_datetime(text)
    assert isinstance(got, BadTime) and got.written == repr(text) and why in got.why


def test_integers_by_meaning() -> None:
    assert json_int(-3) == -3 and json_int(True) is None and json_int(2.0) is None and json_int("2") is None
    assert json_count(0) == 0 and json_count(-1) is None and json_count(False) is None
    assert json_str("a") == "a" and json_str(1) is None


@given(st.integers(min_value=ms_of_datetime(datetime(1, 1, 1, tzinfo=UTC)) or 0,
                   max_value=ms_of_datetime(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)) or 0))
def test_unix_ms_round_trips_exactly(ms: int) -> None:
    at = datetime_of_ms(ms)
    assert isinstance(at, datetime) and at.tzinfo is UTC
    assert ms_of_datetime(at) == ms


@pytest.mark.parametrize(("ms", "year"), [(10**17, 3170843), (-(10**17), -3166904), (2**62, 146140482)])
def test_unix_ms_outside_datetime_is_a_bad_time_naming_its_year(ms: int, year: int) -> None:
    got = datetime_of_ms(ms)
    assert isinstance(got, BadTime) and got.written == str(ms) and f"names year {year};" in got.why
    seconds = datetime_of_seconds(ms)
    assert isinstance(seconds, BadTime) and seconds.written == str(ms)
    assert datetime_of_ms(None) is None


@given(st.integers(min_value=-62135596800 * 10**6, max_value=253402300799999999))
def test_unix_microseconds_name_their_utc_time_exactly(us: int) -> None:
    """Whole seconds and the microseconds beyond them, never a float: a written time, to the microsecond."""
    at = datetime_of_us(us)
    seconds, micros = divmod(us, 10**6)
    assert at.replace(microsecond=0) == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    assert at.microsecond == micros
    assert at.tzinfo is UTC and ms_of_datetime(at) == us // 1000
    assert datetime_of_us(None) is None


_MS_RANGE = st.integers(min_value=ms_of_datetime(datetime(1, 1, 1, tzinfo=UTC)) or 0,
                        max_value=ms_of_datetime(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)) or 0)
_CYCLE_MS = 146_097 * 86_400_000  # 400 Gregorian years: the calendar repeats


@given(_MS_RANGE, st.integers(min_value=-10**6, max_value=10**6).filter(lambda k: k != 0))
def test_a_time_outside_years_1_to_9999_names_its_exact_year(ms: int, cycles: int) -> None:
    # Moved by whole 400-year cycles, a time keeps its date: the year named moves by 400 a cycle.
    at = datetime_of_ms(ms)
    assert isinstance(at, datetime)
    moved = datetime_of_ms(ms + cycles * _CYCLE_MS)
    year = at.year + 400 * cycles
    if 1 <= year <= 9999:
        assert isinstance(moved, datetime) and moved.year == year
    else:
        assert isinstance(moved, BadTime) and f"names year {year};" in moved.why


def test_seconds_and_iso() -> None:
    assert datetime_of_seconds(1_700_000_000) == EPOCH + timedelta(seconds=1_700_000_000)
    assert iso_datetime("2025-01-02T03:04:05") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert iso_datetime("2025-01-02T05:04:05+02:00") == datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert iso_datetime(5) is None and iso_datetime(None) is None
    for text, why in (("not a time", "Invalid isoformat"), ("2025-01-02T24:00:00", "hour must be in 0..23"),
                      ("9999-12-31T23:30:00-01:00", "outside the years 1..9999")):
        got = iso_datetime(text)
        assert isinstance(got, BadTime) and got.written == repr(text) and why in got.why


def test_uuid7_time() -> None:
    assert uuid7_datetime("019a4e7c-1f00-7000-8000-000000000000") == datetime_of_ms(0x019A4E7C1F00)
    assert uuid7_datetime("msg_nothex") is None
    assert uuid7_ms("msg_" + f"{1:032x}") is None  # not a v7 id: no time, and nothing wrong with it


@given(st.integers(min_value=0, max_value=(1 << 48) - 1), st.booleans())
def test_a_uuid7_time_past_year_9999_is_a_bad_time(ms: int, dashed: bool) -> None:
    hex_id = f"{ms:012x}7abc8def0123456789ab"
    if dashed:
        hex_id = f"{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}"
    got, at = uuid7_ms("msg_" + hex_id), datetime_of_ms(ms)
    if isinstance(at, datetime):
        assert got == ms and uuid7_datetime("msg_" + hex_id) == at
    else:  # 48 bits reach year 10889
        assert isinstance(got, BadTime) and str(ms) in got.why and "msg_" + hex_id in got.written
        assert uuid7_datetime("msg_" + hex_id) == got


def test_held_reports_a_bad_time_once_and_gives_none() -> None:
    rows = Diagnostics("x")
    assert held(datetime_of_ms(5), rows, "f", "at") == EPOCH + timedelta(milliseconds=5)
    assert held(None, rows, "f", "at") is None and not rows.rows  # absent: nothing to report
    assert held(datetime_of_ms(2**62), rows, "f.json", "started_at_ms", 3) is None
    (row,) = rows.rows
    assert (row.path, row.line, row.kind) == ("f.json", 3, BAD_TIME)
    assert row.detail.startswith("started_at_ms = 4611686018427387904 ") and "names year 146140482" in row.detail
