"""Integers, times and strings as runtimes write them: the one place each reading rule is written.

Each function names one meaning; a value that does not have it is ``None`` (never 0, never a
naive time):

* :func:`json_str`: a JSON string;
* :func:`json_int`: any JSON integer (a boolean is not one);
* :func:`json_count`: a JSON integer that is not negative (a count, a size, a turn);
* :func:`read_counter`: a token counter, ``0..2**63-1``, whose misfits are reported;
* :func:`held` / :func:`counter_sum`: a sum as an ``int64`` column holds it (the one overflow
  rule: a sum past ``int64`` is null, and its maker reports a ``sum_overflow`` row);
* :func:`datetime_of_ms` / :func:`ms_of_datetime`: Unix milliseconds and UTC times, exactly
  (no float on the way);
* :func:`datetime_of_seconds`: Unix seconds (git's commit times);
* :func:`rfc3339_datetime`: Go's ``time.Time`` JSON (RFC 3339, up to nanoseconds);
* :func:`iso_datetime`: an ISO 8601 text, a time without an offset read as UTC;
* :func:`uuid7_ms` / :func:`uuid7_datetime`: the mint time inside a UUIDv7 id.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from . import _native

__all__ = [
    "COUNTER_MAX",
    "EPOCH",
    "counter_sum",
    "datetime_of_ms",
    "datetime_of_seconds",
    "held",
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
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
    problems.append(f"counter {name} = {shown} is not a non-negative 64-bit integer; read as not reported")
    return None


def held(total: int) -> int | None:
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
        never 0) or when it passes ``int64`` (:func:`held`; then ``overflowed`` is true).
    """
    total: int | None = None
    for value in values:
        if value is not None:
            total = value if total is None else total + value
    if total is None:
        return None, False
    kept = held(total)
    return kept, kept is None


def datetime_of_ms(ms: int | None) -> datetime | None:
    """The UTC time ``ms`` Unix milliseconds name, exactly; ``None`` outside years 1..9999."""
    if ms is None:
        return None
    try:
        return EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None


def ms_of_datetime(at: datetime | None) -> int | None:
    """Unix milliseconds of a timezone-aware ``at``, exactly (microseconds cut, no float)."""
    if at is None:
        return None
    delta = at - EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def datetime_of_seconds(seconds: int) -> datetime | None:
    """The UTC time ``seconds`` Unix seconds name; ``None`` outside years 1..9999."""
    try:
        return EPOCH + timedelta(seconds=seconds)
    except OverflowError:
        return None


def rfc3339_datetime(value: object) -> datetime | None:
    """An RFC 3339 time (Go's ``time.Time`` JSON, up to nanoseconds) as aware UTC.

    Fractions beyond microseconds are cut (not rounded); Go's zero time, anything that is not
    a string and anything that does not parse give ``None``.
    """
    if not isinstance(value, str):
        return None
    m = _RFC3339.match(value)
    if m is None:
        return None
    date, clock, frac, zone = m.groups()
    text = f"{date}T{clock}"
    if frac:
        text += "." + frac[:6].ljust(6, "0")
    text += "+00:00" if zone in ("Z", "z") else zone
    try:
        at = datetime.fromisoformat(text).astimezone(UTC)
    except (ValueError, OverflowError):
        return None
    return None if at.year <= 1 else at


def iso_datetime(value: object) -> datetime | None:
    """An ISO 8601 text (Python's reading of it) as aware UTC; without an offset it is UTC.

    Anything that is not a string, or does not parse, is ``None``.
    """
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def uuid7_ms(hex_id: str) -> int | None:
    """The Unix-millisecond mint time inside a UUIDv7, or ``None`` when ``hex_id`` is not one.

    The id ends with a UUIDv7 in simple or dashed form (each dash optional), at its start or
    after a ``_``; its first 48 bits are the Unix-ms time and its version nibble is 7. A time
    past year 9999 is ``None`` (no datetime can hold it). The rule is the native engine's, so a
    scanned ``created_at`` and an entry's agree.

    Args:
        hex_id: e.g. ``msg_01a04900754b7183b66c11e744612e2d`` or a dashed UUID.

    Returns:
        The first 48 bits, which a UUIDv7 defines as its Unix-ms time.
    """
    ms: int | None = _native.uuid7_ms(hex_id)
    return ms


def uuid7_datetime(hex_id: str) -> datetime | None:
    """The mint time inside a UUIDv7 (simple or dashed form, any prefix before ``_``).

    Args:
        hex_id: e.g. ``msg_01a04900754b7183b66c11e744612e2d`` or a dashed UUID.

    Returns:
        The timezone-aware UTC time of the first 48 bits, or ``None`` when ``hex_id`` is not
        a UUIDv7.
    """
    return datetime_of_ms(uuid7_ms(hex_id))
