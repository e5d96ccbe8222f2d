"""Diagnostics: what could not be read, as data rather than as printed warnings."""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["Diagnostic", "Diagnostics"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One thing that could not be read, or that a reader must know about.

    Attributes:
        source: the source that met it (``"murmur"``, ``"litany"``, ...).
        path: the file, blob path or object it concerns.
        line: the 1-based line number, when it is a line of a file.
        kind: a short stable tag, e.g. ``not_a_message``, ``partial_line``,
            ``truncated_record``, ``bad_json``, ``unknown_schema``.
        detail: a human-readable sentence.
    """

    source: str
    path: str
    line: int | None
    kind: str
    detail: str


class Diagnostics:
    """Where a source reports what it could not read. Sources never print or warn."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.rows: list[Diagnostic] = []

    def report(self, path: str | os.PathLike[str], kind: str, detail: str, line: int | None = None) -> None:
        """Record one diagnostic row."""
        self.rows.append(Diagnostic(self.source, os.fspath(path), line, kind, detail))

    def extend(self, rows: list[Diagnostic]) -> None:
        """Record rows another reader produced."""
        self.rows.extend(rows)
