"""Integers, times and strings as runtimes write them: the one place each reading rule is written.

Each function names one meaning; a value that does not have it is ``None`` (never 0, never a
naive time):

* :func:`json_str`: a JSON string;
* :func:`json_int`: any JSON integer (a boolean is not one);
* :func:`json_count`: a JSON integer that is not negative (a count, a size, a turn);
* :func:`read_counter`: a token counter, ``0..2**63-1``, whose misfits are reported;
* :func:`int64_held` / :func:`counter_sum`: a sum as an ``int64`` column holds it (the one overflow
  rule: a sum past ``int64`` is null, and its maker reports a ``sum_overflow`` row);
* :func:`datetime_of_ms` / :func:`ms_of_datetime`: Unix milliseconds and UTC times, exactly
  (no float on the way);
* :func:`datetime_of_seconds`: Unix seconds (git's commit times);
* :func:`rfc3339_datetime`: Go's ``time.Time`` JSON (RFC 3339, up to nanoseconds);
* :func:`iso_datetime`: an ISO 8601 text, a time without an offset read as UTC;
* :func:`uuid7_ms` / :func:`uuid7_datetime`: the mint time inside a UUIDv7 id.

A time is absent (``None``: not written, or written as "no time", like Go's zero time) or
present; a present one that no timestamp can hold (outside years 1..9999, hour 24, a text that
is no time) is not ``None`` but a :class:`BadTime` saying what was written and why it is no
time. Every reader turns a :class:`BadTime` into the one ``bad_time`` diagnostics row with
:func:`held`, and the time is null.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple, Protocol, TypeAlias, TypeVar, overload

from ..engine import _native

#: A JSON value as Python holds it (what an export's state and a source's fingerprint are made of).
JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"

__all__ = [
    "BAD_TIME",
    "COUNTER_MAX",
    "EPOCH",
    "JSON",
    "BadTime",
    "Reporter",
    "counter_sum",
    "datetime_of_ms",
    "datetime_of_seconds",
    "datetime_of_us",
    "held",
    "int64_held",
    "iso_datetime",
    "json_count",
    "json_int",
    "json_str",
    "ms_of_datetime",
    "read_counter",
    "rfc3339_datetime",
    "uuid7_datetime",
    "uuid7_ms",
]

#: The Unix epoch, UTC.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The largest counter a table column holds (Arrow ``int64``).
COUNTER_MAX = (1 << 63) - 1
#: The diagnostics kind of a time that is written but that no timestamp holds.
BAD_TIME = "bad_time"
_DAY_MS = 86_400_000
_CYCLE_DAYS = 146_097  # the days of 400 Gregorian years, after which the calendar repeats

_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$")


def json_str(value: object) -> str | None:
    """``value`` when it is a JSON string, else ``None``."""
    return value if isinstance(value, str) else None


def json_int(value: object) -> int | None:
    """``value`` when it is a JSON integer of any sign (``True`` is not ``1``), else ``None``."""
    return value if type(value) is int else None


def json_count(value: object) -> int | None:
    """``value`` when it is a non-negative JSON integer, else ``None`` (what was not reported)."""
    return value if type(value) is int and value >= 0 else None


def read_counter(value: object, name: str, problems: list[str]) -> int | None:
    """One token counter as written: a JSON integer in ``0..2**63-1``, else ``None``.

    A counter the runtime left out (``None``) is simply not reported. Any other value that is
    not such an integer (a string ``"1900"``, a float, a boolean, a negative number, one too
    large for a 64-bit column) is not read: ``None``, and a sentence is added to ``problems``
    (the frame builder turns it into a diagnostics row).

    Args:
        value: the counter as JSON-decoded.
        name: the counter's name, for the sentence.
        problems: where the sentence goes.
    """
    if value is None:
        return None
    if type(value) is int and 0 <= value <= COUNTER_MAX:
        return value
    problems.append(f"counter {name} = {_shown(value)} is not a non-negative 64-bit integer; read as not reported")
    return None


def _shown(value: object, most: int = 40) -> str:
    """``value`` as written in a diagnostics sentence: its ``repr``, cut after ``most`` characters."""
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."


class BadTime(NamedTuple):
    """A time that is written but that no timestamp holds: what was written, and why it is no time.

    Attributes:
        written: the value as written (its ``repr``, cut when long).
        why: why no timestamp holds it, e.g. ``"names year 10889; a timestamp holds years 1..9999"``.
    """

    written: str
    why: str


class Reporter(Protocol):
    """Where a reader reports (a source's :class:`~murmur_analysis.core.diagnostics.Diagnostics`)."""

    def report(self, path: str | os.PathLike[str], kind: str, detail: str, line: int | None = None) -> None:
        """Record one diagnostics row."""


_T = TypeVar("_T")


def held(found: _T | BadTime | None, diagnostics: Reporter, path: str | os.PathLike[str], name: str,
         line: int | None = None) -> _T | None:
    """``found`` as a time a table holds: a :class:`BadTime` is reported and is ``None``.

    This is how every reader of times reports one that cannot be held: a ``bad_time`` row
    naming the file (``path``), the field (``name``, with ``line`` when it is a line of a file)
    and the value written; the time is null.

    Args:
        found: what a conversion of this module returned.
        diagnostics: where the row goes.
        path: the file (or object) the time was read from.
        name: the field, e.g. ``"started_at_ms"`` or ``"messages[3].createdAt"``.
        line: the 1-based line, when the time is on a line of ``path``.
    """
    if isinstance(found, BadTime):
        diagnostics.report(path, BAD_TIME, f"{name} = {found.written} {found.why}; read as no time (null)", line)
        return None
    return found


def _year(ms: int) -> int:
    """The proleptic Gregorian year of Unix milliseconds ``ms``, however far from year 1..9999."""
    days = ms // _DAY_MS
    cycles = days // _CYCLE_DAYS  # whole 400-year cycles: the calendar repeats after each
    return (EPOCH + timedelta(days=days - cycles * _CYCLE_DAYS)).year + 400 * cycles


def _beyond(ms: int) -> str:
    return f"names year {_year(ms)}; a timestamp holds years 1..9999"


def int64_held(total: int) -> int | None:
    """An exact integer as an ``int64`` column holds it: ``total``, or ``None`` past ``int64``.

    The one overflow rule of every sum the tables and metrics compute (a conversation's
    ``tokens``, a response's context, a report's totals): a sum that cannot be held is null,
    never wrapped and never a crash, and whoever makes it reports a ``sum_overflow`` row.
    """
    return total if -COUNTER_MAX - 1 <= total <= COUNTER_MAX else None


def counter_sum(values: Iterable[int | None]) -> tuple[int | None, bool]:
    """The sum of the known ``values`` as an ``int64`` column holds it, and whether it overflowed.

    Returns:
        ``(sum, overflowed)``: the sum is ``None`` when no value is known (nothing reported:
        never 0) or when it passes ``int64`` (:func:`int64_held`; then ``overflowed`` is true).
    """
    total: int | None = None
    for value in values:
        if value is not None:
            total = value if total is None else total + value
    if total is None:
        return None, False
    kept = int64_held(total)
    return kept, kept is None


def datetime_of_ms(ms: int | None) -> datetime | BadTime | None:
    """The UTC time ``ms`` Unix milliseconds name, exactly; a :class:`BadTime` outside years 1..9999."""
    if ms is None:
        return None
    try:
        return EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return BadTime(_shown(ms), f"(Unix milliseconds) {_beyond(ms)}")


@overload
def datetime_of_us(us: int) -> datetime: ...


@overload
def datetime_of_us(us: None) -> None: ...


@overload
def datetime_of_us(us: int | None) -> datetime | None: ...


def datetime_of_us(us: int | None) -> datetime | None:
    """The UTC time ``us`` Unix microseconds name, exactly (no float): a time the engine read from a line."""
    return None if us is None else EPOCH + timedelta(microseconds=us)


def ms_of_datetime(at: datetime | None) -> int | None:
    """Unix milliseconds of a timezone-aware ``at``, exactly (microseconds cut, no float)."""
    if at is None:
        return None
    delta = at - EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def datetime_of_seconds(seconds: int) -> datetime | BadTime:
    """The UTC time ``seconds`` Unix seconds name; a :class:`BadTime` outside years 1..9999."""
    try:
        return EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        return BadTime(_shown(seconds), f"(Unix seconds) {_beyond(seconds * 1000)}")


def rfc3339_datetime(value: object) -> datetime | BadTime | None:
    """An RFC 3339 time (Go's ``time.Time`` JSON, up to nanoseconds) as aware UTC.

    Fractions beyond microseconds are cut (not rounded). Anything that is not a string, and
    Go's zero time (year 1: Go writes it for a time never set), are ``None``; a string that is
    no RFC 3339 time a timestamp holds (hour 24, February 30, an offset that leaves years
    1..9999, not a time at all) is a :class:`BadTime`.
    """
    if not isinstance(value, str):
        return None
    m = _RFC3339.match(value)
    if m is None:
        return BadTime(_shown(value), "is not an RFC 3339 time")
    date, clock, frac, zone = m.groups()
    text = f"{date}T{clock}"
    if frac:
        text += "." + frac[:6].ljust(6, "0")
    text += "+00:00" if zone in ("Z", "z") else zone
    try:
        at = datetime.fromisoformat(text).astimezone(UTC)
    except ValueError as err:
        return BadTime(_shown(value), f"is not a time a timestamp holds ({err})")
    except OverflowError:
        return BadTime(_shown(value), "is outside the years 1..9999 a timestamp holds, in UTC")
    return None if at.year <= 1 else at


def iso_datetime(value: object) -> datetime | BadTime | None:
    """An ISO 8601 text (Python's reading of it) as aware UTC; without an offset it is UTC.

    Anything that is not a string is ``None``; a string that does not parse, or that leaves
    years 1..9999 in UTC, is a :class:`BadTime`.
    """
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
        return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    except ValueError as err:
        return BadTime(_shown(value), f"is not an ISO 8601 time a timestamp holds ({err})")
    except OverflowError:
        return BadTime(_shown(value), "is outside the years 1..9999 a timestamp holds, in UTC")


def uuid7_ms(hex_id: str) -> int | BadTime | None:
    """The Unix-millisecond mint time inside a UUIDv7, or ``None`` when ``hex_id`` is not one.

    The id ends with a UUIDv7 in simple or dashed form (each dash optional), at its start or
    after a ``_``; its first 48 bits are the Unix-ms time and its version nibble is 7. A time
    past year 9999 (48 bits reach year 10889) is a :class:`BadTime`. The rule is the native
    engine's, so a scanned ``created_at`` and an entry's agree.

    Args:
        hex_id: e.g. ``msg_01a04900754b7183b66c11e744612e2d`` or a dashed UUID.

    Returns:
        The first 48 bits, which a UUIDv7 defines as its Unix-ms time.
    """
    ms: int | None = _native.uuid7_field(hex_id)
    if ms is None:
        return None
    if isinstance(datetime_of_ms(ms), BadTime):
        return BadTime(_shown(hex_id, 60), f"(a UUIDv7 minted at {ms} Unix ms) {_beyond(ms)}")
    return ms


def uuid7_datetime(hex_id: str) -> datetime | BadTime | None:
    """The mint time inside a UUIDv7 (simple or dashed form, any prefix before ``_``).

    Args:
        hex_id: e.g. ``msg_01a04900754b7183b66c11e744612e2d`` or a dashed UUID.

    Returns:
        The timezone-aware UTC time of the first 48 bits, ``None`` when ``hex_id`` is not a
        UUIDv7, or a :class:`BadTime` when the time is past year 9999.
    """
    ms = uuid7_ms(hex_id)
    return ms if isinstance(ms, BadTime) else datetime_of_ms(ms)


