"""What an export read, and which of its files the next export can keep.

The state file of a generation (``state.json``) holds:

``units``
    One entry per conversation, keyed ``source <US> conversation_id <US> repr(key)``:
    its ``fingerprint`` (``Source.fingerprint``: file identities, branch tips), the ``batch``
    holding its rows and how many ``rows`` it has in each table. A conversation's rows are
    contiguous in every file of its batch, in the order of the batch's ``units``.
``batches``
    One entry per batch of conversations: its ``source``, its ``units`` in order, and its
    ``files`` by table. A batch whose conversations all kept their fingerprints is carried
    into the next generation as it is (a hard link); one that lost some is rewritten with
    the rows of the others only; one that lost all is gone.

Rows a source reports for no conversation (discovery, retention) and a source's own tables are
written again by every export, in batches marked ``"whole": true``, which are never carried.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..handoff import Conversation

__all__ = ["ExportState", "unit_id"]

STATE_VERSION = 1


def unit_id(conv: Conversation) -> str:
    """The state's key of a conversation: stable while its source, id and reopen key are."""
    return f"{conv.source}\x1f{conv.conversation_id}\x1f{conv.key!r}"


@dataclass
class ExportState:
    """The state of one generation, being read (previous) or written (next)."""

    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_doc(cls, doc: dict[str, Any] | None) -> ExportState:
        """The state a generation recorded; empty when it has none, or of another version."""
        if not doc or doc.get("version") != STATE_VERSION:
            return cls()
        return cls(dict(doc.get("units", {})), dict(doc.get("batches", {})))

    def to_doc(self) -> dict[str, Any]:
        """The state as JSON values."""
        return {"version": STATE_VERSION, "units": self.units, "batches": self.batches}

    def unchanged(self, unit: str, fingerprint: Any) -> bool:
        """Whether ``unit`` was exported from input with this fingerprint (never for ``None``)."""
        old = self.units.get(unit)
        return fingerprint is not None and old is not None and old["fingerprint"] == fingerprint

    def slices(self, batch: str, keep: set[str]) -> dict[str, list[tuple[int, int]]]:
        """Per table, the ``(offset, length)`` row ranges of the batch's units in ``keep``."""
        entry = self.batches[batch]
        out: dict[str, list[tuple[int, int]]] = {}
        for table in entry["files"]:
            offset = 0
            ranges: list[tuple[int, int]] = []
            for unit in entry["units"]:
                n = self.units[unit]["rows"].get(table, 0)
                if unit in keep and n:
                    if ranges and ranges[-1][0] + ranges[-1][1] == offset:
                        ranges[-1] = (ranges[-1][0], ranges[-1][1] + n)
                    else:
                        ranges.append((offset, n))
                offset += n
            out[table] = ranges
        return out
