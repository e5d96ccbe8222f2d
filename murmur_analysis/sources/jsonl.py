"""JSONL that a runtime may still be appending to, read line by line with what went wrong reported."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import orjson

from ..core.files import read_file
from .base import Diagnostics

__all__ = ["read_jsonl"]


def read_jsonl(path: Path, diagnostics: Diagnostics, settle_seconds: float) -> Iterator[tuple[int, object]]:
    """Every parsed line of a JSONL file that a runtime may still be appending to.

    Blank lines are skipped. A line that is not JSON is reported (``bad_json``). An unterminated
    last line that is not JSON is a line still being written: it is skipped and reported
    (``partial_line``) only once the file has not changed for ``settle_seconds``.

    Yields:
        ``(1-based line number, parsed value)``.
    """
    found = read_file(path, diagnostics)
    if found is None:
        return
    data, mtime = found
    settled = time.time() - mtime >= settle_seconds
    lines = data.split(b"\n")
    last = len(lines)
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if number == last:
                if settled:
                    diagnostics.report(
                        path, "partial_line", f"line {number} is unterminated and not JSON; skipped", number
                    )
            else:
                diagnostics.report(path, "bad_json", f"line {number} is not JSON; skipped", number)
            continue
        yield number, value
