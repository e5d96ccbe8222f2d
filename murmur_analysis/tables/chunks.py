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
import pyarrow.compute as pc

from ..algorithms.pairing import MessageRuns, Pairer, tool_event_columns
from ..core.blocks import block_kind, message_text, reasoning_text, text_chars
from ..core.handoff import Conversation, EntryColumns, Pairing, Reading, Summary
from ..core.model import Entry, sorted_entries
from .columns import BATCH_ROWS, arrow_array
from .rows import EntryTimes

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

    Iterate it to the end, then read :meth:`pairing`. The walk keeps only the calls still open,
    so a conversation of any length streams through it.

    Args:
        chunks: the conversation's chunks, in position order.
        known: the pairing, when the source's engine already walked it (then nothing is walked again).
    """

    def __init__(self, chunks: Iterable[EntryColumns], known: Pairing | None = None) -> None:
        self._chunks = chunks
        self._known = known
        self._pairer = Pairer(keep_inputs=False)
        self._runs = MessageRuns()
        self._times: list[tuple[pa.Array, pa.Array]] = []  # (position, created_at) of entries with tool events
        self._seqs: pa.Array | None = None
        if known is not None:  # its events are not in the chunks: the entries it names are the ones to time
            rows = known.rows
            self._seqs = pc.unique(pa.concat_arrays([rows.column("called_seq"), rows.column("result_seq")]))

    def __iter__(self) -> Iterator[EntryColumns]:
        for chunk in self._chunks:
            if len(chunk):
                if self._known is None:
                    self._feed(chunk)
                else:
                    self._time(chunk, pc.is_in(chunk.position, value_set=self._seqs))
            yield chunk

    def _feed(self, chunk: EntryColumns) -> None:
        runs = self._runs.of_sides(chunk.side)
        events = chunk.events
        if len(events):
            rows = np.asarray(events.row, dtype=np.int64)
            positions = chunk.position.to_numpy(zero_copy_only=False)
            self._pairer.feed_columns(positions[rows].tolist(), runs[rows].tolist(), events)
            self._time(chunk, np.unique(rows))

    def _time(self, chunk: EntryColumns, rows: np.ndarray | pa.Array) -> None:
        """Keep the position and time of the chunk's entries at ``rows`` (indexes, or a mask)."""
        if isinstance(rows, pa.Array):
            self._times.append((chunk.position.filter(rows), chunk.created_at.filter(rows)))
        elif len(rows):
            self._times.append((chunk.position.take(rows), chunk.created_at.take(rows)))

    def times(self) -> EntryTimes:
        """When each entry holding a tool call or result was written (after the chunks are read)."""
        if not self._times:
            return EntryTimes(pa.array([], _I64), pa.array([], _TIMESTAMP))
        return EntryTimes(pa.concat_arrays([p for p, _ in self._times]),
                          pa.concat_arrays([t.cast(_TIMESTAMP) for _, t in self._times]))

    def pairing(self) -> Pairing:
        """The pairing walk's rows (:meth:`Pairer.pairing`) and counts."""
        if self._known is not None:
            return self._known
        return self._pairer.pairing()
