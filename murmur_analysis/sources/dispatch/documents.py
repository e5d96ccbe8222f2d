"""dispatch's JSON documents as read, and the values read out of them.

A document that cannot be read, is not JSON, or is JSON of another shape is a diagnostics
row, never an exception and never silence. Values of the wrong JSON type read as ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ...core.files import display, read_regular
from ..base import Diagnostics

__all__ = ["document", "printable_row", "read_json"]

#: What :func:`_parse_json` gives for a document that is not JSON (``None`` is JSON's ``null``).
_UNREADABLE = object()


def _parse_json(raw: bytes, path: Path, diagnostics: Diagnostics) -> Any:
    """The document's value, or :data:`_UNREADABLE` after reporting why it is not JSON."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        diagnostics.report(path, "bad_json", f"not a JSON document ({err}); skipped")
        return _UNREADABLE


def read_json(path: Path, diagnostics: Diagnostics) -> Any:
    """A JSON file's value, or ``None`` after reporting why it could not be read."""
    raw = read_regular(path, diagnostics)
    value = _parse_json(raw, path, diagnostics) if raw is not None else None
    return None if value is _UNREADABLE else value


def document(path: Path, listing: str, diagnostics: Diagnostics, kind: str, what: str) -> dict[str, Any] | None:
    """A JSON object holding a list under ``listing``, or ``None`` once reported.

    Unreadable, not JSON, or JSON of another shape (``null`` included): nothing is dropped
    without a row.
    """
    raw = read_regular(path, diagnostics)
    data = _parse_json(raw, path, diagnostics) if raw is not None else _UNREADABLE
    if data is _UNREADABLE:
        return None
    if not isinstance(data, dict) or not isinstance(data.get(listing), list):
        diagnostics.report(path, kind, f"not {what} (no {listing} list); skipped")
        return None
    return data


def printable_row(row: Mapping[str, Any]) -> dict[str, Any]:
    r"""A row of dispatch's own tables with its texts as Arrow can hold them (undecodable bytes as ``\xNN``)."""
    return {name: display(value) if isinstance(value, str) else value for name, value in row.items()}
