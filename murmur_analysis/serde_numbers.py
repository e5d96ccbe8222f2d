"""Numbers as serde_json reads them (1.0.x, default features: no ``float_roundtrip``).

serde_json does not round a decimal number correctly in every case. It reads up to 19-20
significant digits into a ``u64`` (digits past that are dropped, or counted into the exponent),
converts that to a double and multiplies or divides by one power of ten from a table. When the
digits fit in 53 bits and the power is at most ``1e22`` both steps are exact and the result is
correctly rounded, as orjson's is; otherwise the two can differ in the last bit, and a few numbers
orjson reads serde refuses (``18446744073709551617.5``). An integer token is a ``u64`` or an
``i64`` when it fits, ``-0`` is the double ``-0.0``, and anything wider is a double.

:func:`loads` re-reads a line whose numbers could differ (:func:`risky` finds them) with this
module's :func:`number`, a port of serde_json's ``parse_integer``/``parse_decimal``/
``parse_exponent``/``f64_from_parts``. ``tests/test_serde_oracle.py`` checks it against serde_json.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["loads", "may_refuse", "number", "risky"]

_U64_MAX = (1 << 64) - 1
_DIGITS = frozenset(b"0123456789")
_I32_MAX = (1 << 31) - 1
_POW10 = [float(f"1e{i}") for i in range(309)]  # correctly rounded, as serde's table literals

#: Where a number token may start: right after ``:``, ``[`` or ``,`` (so the hex digits of an id
#: string do not count; text that looks like this only costs a look at the token).
_SHAPE = bytes.maketrans(b"123456789,[", b"000000000::")
_TWENTY_DIGITS = b":" + b"0" * 20
_TOKEN = re.compile(rb"[:\[,][ \t\r\n]*(-?[0-9][0-9.eE+-]*)")


def may_refuse(line: bytes) -> bool:
    """Whether ``line`` may hold a number serde refuses though a correct parser reads it.

    Only a number whose integer part overflows a ``u64`` (20 or more digits) followed by a
    fraction can be (see :func:`number`); 20 digits right after ``:``, ``[`` or ``,`` (whitespace
    and ``-`` between do not count) are the cheap test for it.
    """
    return _TWENTY_DIGITS in line.translate(_SHAPE, b" \t\r\n-")


def risky(line: bytes) -> bool:
    """Whether ``line`` holds a number serde may read differently from a correctly rounding parser.

    That is ``-0``, a number with an exponent, or one of 16 or more digits: below that the
    digits fit in 53 bits and the power of ten is exact, so serde's result is correctly rounded.
    """
    # A cheap first look: every digit a 0, every ",[" a ":", no whitespace or "-". No ":0", no number.
    if b":0" not in line.translate(_SHAPE, b" \t\r\n-"):
        return False
    for match in _TOKEN.finditer(line):
        token = match[1]
        if token == b"-0" or b"e" in token or b"E" in token or sum(c in _DIGITS for c in token) >= 16:
            return True
    return False


def _overflows(significand: int, digit: int, limit: int) -> bool:
    return significand >= limit // 10 and (significand > limit // 10 or digit > limit % 10)


def _from_parts(positive: bool, significand: int, exponent: int) -> float:
    value = float(significand)
    while True:
        if abs(exponent) < len(_POW10):
            if exponent >= 0:
                value *= _POW10[exponent]
                if value == float("inf"):
                    raise ValueError("number out of range")
            else:
                value /= _POW10[-exponent]
            break
        if value == 0.0:
            break
        if exponent >= 0:
            raise ValueError("number out of range")
        value /= 1e308
        exponent += 308
    return value if positive else -value


def number(token: str) -> int | float:
    """One JSON number token as serde_json's ``Value`` holds it.

    Raises:
        ValueError: serde_json refuses the token (out of range, or its decimal-overflow quirk).
    """
    positive = not token.startswith("-")
    text = token[1:] if not positive else token
    n, i = len(text), 0
    significand = exponent = 0
    long_integer = False
    if text[:1] != "0":
        while i < n and text[i].isdigit():
            digit = ord(text[i]) - 48
            if _overflows(significand, digit, _U64_MAX):
                long_integer = True  # the remaining integer digits only scale the exponent
                while i < n and text[i].isdigit():
                    i += 1
                    exponent += 1
                break
            significand = significand * 10 + digit
            i += 1
    else:
        i = 1
    if i == n and not long_integer:
        if positive:
            return significand
        return -significand if 0 < significand <= 1 << 63 else -float(significand)
    if i < n and text[i] == ".":
        i += 1
        overflowed = False
        while i < n and text[i].isdigit():
            digit = ord(text[i]) - 48
            if _overflows(significand, digit, _U64_MAX):
                overflowed = True  # further fraction digits are dropped
                while i < n and text[i].isdigit():
                    i += 1
                break
            significand = significand * 10 + digit
            exponent -= 1
            i += 1
        if not overflowed and exponent == 0:
            raise ValueError("invalid number")
    if i < n and text[i] in "eE":
        i += 1
        positive_exp = text[i] != "-"
        if text[i] in "+-":
            i += 1
        exp = 0
        while i < n:
            digit = ord(text[i]) - 48
            if _overflows(exp, digit, _I32_MAX):
                if significand != 0 and positive_exp:
                    raise ValueError("number out of range")
                return 0.0 if positive else -0.0
            exp = exp * 10 + digit
            i += 1
        exponent = exponent + exp if positive_exp else exponent - exp
    return _from_parts(positive, significand, exponent)


def loads(line: bytes) -> Any:
    """Parse a (valid JSON) line with serde_json's number rules.

    Raises:
        ValueError: a number serde_json refuses.
    """
    return json.loads(line, parse_int=number, parse_float=number)
