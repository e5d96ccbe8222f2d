"""What an export read, and which of its files the next export can keep.

The state file of a generation (``state.json``) holds:

``units``
    One entry per conversation, keyed ``source <US> conversation_id <US> repr(key)``: its
    ``fingerprint`` (``Source.fingerprint``: file identities, branch tips) and, for a record
    that can be read on from where this export stopped, its ``resume`` point
    (:meth:`~murmur_analysis.core.handoff.ResumePoint.to_doc`): the counts read, the file's identity, and
    the state the pairing walk saved (``pairing``: base64 of its versioned bytes; a point
    without one this version reads has its record read whole once).
``files``
    One entry per Parquet file of a conversation batch, by its path in the generation: its
    ``table``, its ``source`` and its ``units`` in order, each with how many rows it has in
    the file. A conversation's rows are contiguous in a file, and a conversation whose record
    grew has rows in more than one file of its table: the rows read before, then the rows of
    what was appended. A file whose units all keep their rows is carried into the next
    generation as it is (a hard link); one that lost some is rewritten with the rows of the
    others only; one that lost all is gone.

Rows a source reports for no conversation (discovery, retention) and a source's own tables are
written again by every export, in files marked ``"whole": true``, which are never carried.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.files import display
from ..core.handoff import Conversation
from ..core.values import JSON

__all__ = ["ExportState", "as_json", "unit_id"]

STATE_VERSION = 2


def unit_id(conv: Conversation) -> str:
    r"""The state's key of a conversation: stable while its source, id and reopen key are.

    A name that is not UTF-8 is written as ``\xNN``, as the tables show it (so the key is the
    same for the conversation as found and as shown, and JSON can hold it).
    """
    return display(f"{conv.source}\x1f{conv.conversation_id}\x1f{conv.key!r}")


@dataclass
class ExportState:
    """The state of one generation, being read (previous) or written (next)."""

    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_doc(cls, doc: dict[str, Any] | None) -> ExportState:
        """The state a generation recorded; empty when it has none, or of another version."""
        if not doc or doc.get("version") != STATE_VERSION:
            return cls()
        return cls(dict(doc.get("units", {})), dict(doc.get("files", {})))

    def to_doc(self) -> dict[str, Any]:
        """The state as JSON values."""
        return {"version": STATE_VERSION, "units": self.units, "files": self.files}

    def unchanged(self, unit: str, fingerprint: JSON) -> bool:
        """Whether ``unit`` was exported from input with this fingerprint (never for ``None``)."""
        old = self.units.get(unit)
        return fingerprint is not None and old is not None and old["fingerprint"] == fingerprint

    def of_table(self, table: str) -> Iterable[tuple[str, dict[str, Any]]]:
        """The conversation files of ``table``: ``(path, entry)``."""
        return ((path, entry) for path, entry in self.files.items() if entry["table"] == table)

    def unit_files(self, unit: str, table: str) -> list[tuple[str, int, int]]:
        """Where ``unit``'s rows of ``table`` are: ``(path, offset, length)`` in file order."""
        out: list[tuple[str, int, int]] = []
        for path, entry in self.of_table(table):
            offset = 0
            for u, n in entry["units"]:
                if u == unit and n:
                    out.append((path, offset, n))
                offset += n
        return out

    @staticmethod
    def ranges(entry: dict[str, Any], keep: set[str]) -> list[tuple[int, int]]:
        """The ``(offset, length)`` row ranges of a file's units in ``keep``, merged where adjacent."""
        offset = 0
        ranges: list[tuple[int, int]] = []
        for unit, n in entry["units"]:
            if unit in keep and n:
                if ranges and ranges[-1][0] + ranges[-1][1] == offset:
                    ranges[-1] = (ranges[-1][0], ranges[-1][1] + n)
                else:
                    ranges.append((offset, n))
            offset += n
        return ranges


def as_json(value: object) -> JSON:
    r"""A source's fingerprint as the JSON values the state stores (what a round trip through JSON gives).

    Names that are not UTF-8 (surrogate escapes) are written as ``\xNN``, as the tables show them:
    JSON holds no lone surrogate, and the same name always gives the same text.
    """
    if isinstance(value, str):
        return display(value)
    if isinstance(value, dict):
        return {display(str(k)): as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    raise TypeError(f"a fingerprint holds {type(value).__name__}, which JSON cannot: {value!r}")
