"""A conversation as finished column chunks, and its tool pairing, ready for the frame builder.

A columnar decoder (murmur's native scan) hands over :class:`~murmur_analysis.core.handoff.EntryColumns`
chunks and the pairing it walked while reading; every other source hands over entries.
:func:`conversation_chunks` turns those entries into the same chunks (the per-message sizes and
texts by the model's rules), and :class:`PairedChunks` runs the assembly core's pairing walk over
chunks as they stream past, so the frame builder receives finished columns and a
:class:`~murmur_analysis.core.handoff.Pairing` either way and only puts tables together.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator

import numpy as np
import pyarrow as pa

from ..algorithms.pairing import Pairer, tool_event_columns
from ..core.blocks import block_kind, message_text, reasoning_text, text_chars
from ..core.handoff import Conversation, EntryColumns, Pairing, Reading, Summary
from ..core.model import Entry, sorted_entries
from .columns import BATCH_ROWS, arrow_array

__all__ = ["PairedChunks", "conversation_chunks", "entry_chunks"]

_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def conversation_chunks(conv: Conversation, text: bool = True) -> Iterable[EntryColumns]:
    """The conversation's column chunks: its source's own, or its entries turned into them (a list sorted first)."""
    if conv.columns is not None:
        return conv.columns
    entries: Iterable[Entry] = conv.entries
    if isinstance(entries, list):
        entries = sorted_entries(entries)
    return entry_chunks(entries, text=text)


def entry_chunks(
    entries: Iterable[Entry], rows: int = BATCH_ROWS, text: bool = True
) -> Generator[EntryColumns, None, Summary | None]:
    """Entries (in position order) turned into the column chunks a columnar decoder builds.

    ``text`` computes the text columns (else they are null), by the rules the engine follows.
    Returns the :class:`~murmur_analysis.core.handoff.Summary` a generator of entries returned at
    its end, if any.
    """
    reading = Reading(entries, None)
    chunk: list[Entry] = []
    for entry in reading:
        chunk.append(entry)
        if len(chunk) >= rows:
            yield _entry_chunk(chunk, text)
            chunk = []
    if chunk:
        yield _entry_chunk(chunk, text)
    return reading.summary


def _entry_chunk(entries: list[Entry], text: bool) -> EntryColumns:
    usage = [e.usage for e in entries]
    n = len(entries)
    return EntryColumns(
        position=pa.array([e.position for e in entries], _I64),
        id=pa.array([e.id for e in entries], _STR),
        side=pa.array([e.side for e in entries], _STR),
        origin=pa.array([e.origin for e in entries], _STR),
        model=pa.array([e.model for e in entries], _STR),
        created_at=arrow_array([e.created_at for e in entries], _TIMESTAMP),
        n_blocks=pa.array([len(e.blocks) for e in entries], pa.int32()),
        text_chars=pa.array([text_chars(e.blocks) for e in entries], _I64),
        status=pa.array([e.status for e in entries], _STR),
        error=pa.array([e.error for e in entries], _STR),
        source_id=pa.array([e.source_id for e in entries], _STR),
        block_kinds=pa.array([[block_kind(b) for b in e.blocks] for e in entries], pa.list_(_STR)),
        text=pa.array([message_text(e.blocks) for e in entries], _STR) if text else pa.nulls(n, _STR),
        reasoning_text=pa.array([reasoning_text(e.blocks) for e in entries], _STR) if text else pa.nulls(n, _STR),
        usage=usage if any(u is not None for u in usage) else None,
        events=tool_event_columns(entries, text=text),
    )


class PairedChunks:
    """Chunks passed through unchanged while the assembly core's pairing walk reads their tool events.

    Iterate it to the end, then read :meth:`pairing` and :attr:`timed`. The walk keeps only the
    calls still open, so a conversation of any length streams through it.

    Args:
        chunks: the conversation's chunks, in position order.
        known: the pairing, when the source's engine already walked it (then nothing is walked again).

    Attributes:
        timed: per chunk of entries read (empty chunks left out), the rows whose times the tool
            calls are looked up in: those holding tool events, or ``None`` for every row (the
            pairing was known, so its events are not in the chunks).
    """

    def __init__(self, chunks: Iterable[EntryColumns], known: Pairing | None = None) -> None:
        self._chunks = chunks
        self._known = known
        self._pairer = Pairer(keep_inputs=False)
        self.timed: list[np.ndarray | None] = []

    def __iter__(self) -> Iterator[EntryColumns]:
        for chunk in self._chunks:
            if len(chunk):
                self.timed.append(None if self._known is not None else self._feed(chunk))
            yield chunk

    def _feed(self, chunk: EntryColumns) -> np.ndarray:
        """Walk the chunk's tool events; return the rows holding them."""
        return self._pairer.feed_chunk(chunk)

    def pairing(self) -> Pairing:
        """The pairing walk's rows (:meth:`Pairer.pairing`) and counts."""
        if self._known is not None:
            return self._known
        return self._pairer.pairing()
