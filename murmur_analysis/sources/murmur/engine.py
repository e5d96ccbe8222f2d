"""The native scan's output, as the columns and pairing the frame builder reads.

:func:`~.record.scan_records` scans many records at once, and the engine hands them back
joined: one group's Arrow buffers (validity bitmaps, offsets, values) hold every record's rows
one after the other. A :class:`ScanGroup` (a :class:`~murmur_analysis.engine.groups.Group`, as
the line-delimited formats' groups are) wraps each buffer into an Arrow array once, without
copying it through Python objects; each record is a :class:`RecordScan` whose columns are
slices of the group's (no copy either), so the work per record is a few slices and what the
frame builder joins again is one array (:func:`~murmur_analysis.tables.batch.adjacent`). The
texts, most of the bytes, are not joined (that would copy them): each record's are an array of
its own, which the frame builder keeps as chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...core.handoff import PAIRED, EntryColumns, Pairing, ToolEvents
from ...engine.groups import EVENT_FIXED, EVENT_PLAIN, Group

if TYPE_CHECKING:
    from ...engine._native import PairState, ScannedGroup

__all__ = ["RecordScan", "ScanGroup", "pairing", "scanned_columns", "tool_events"]

_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")
#: Columns without nulls, and their types.
_PLAIN = {"line": _I64, "n_blocks": pa.int32(), "text_chars": _I64, **EVENT_PLAIN, "ev_text_at": _I64}
#: Nullable columns of fixed width (a validity bitmap and values), and their types; the rest are strings.
_FIXED = {"created_ms": _I64, "created_us": _TIMESTAMP, **EVENT_FIXED, "pair_called_seq": _I64,
          "pair_result_seq": _I64, "pair_is_error": pa.bool_(), "pair_result_chars": _I64, "pair_input_bytes": _I64}
_PAIRED_KEYS = tuple(f"pair_{name}" for name in PAIRED.names)
#: The scan's columns a record's message rows are made of (:func:`scanned_columns`).
_ROW_KEYS = ("id", "role", "created_us", "n_blocks", "text_chars", "source_id", "kinds", "text", "reasoning_text")


class ScanGroup(Group):
    """Records scanned together, each column of theirs an Arrow array made once (see the module doc)."""

    def __init__(self, raw: ScannedGroup) -> None:
        super().__init__(raw, "records", _PLAIN, _FIXED)
        self.raw: ScannedGroup = raw
        self._text_chars: list[int] | None = None

    def records(self) -> list[RecordScan]:
        """Each record of the group, in the order scanned."""
        return [RecordScan(self, i) for i in range(self.size)]

    def text_chars(self) -> list[int]:
        """Each record's text characters, summed over its messages (summed for the whole group at once)."""
        if self._text_chars is None:
            chars = np.frombuffer(memoryview(self.raw["text_chars"]), np.int64)
            running = np.concatenate([[0], np.cumsum(chars)])
            starts = self.starts["rows"]
            self._text_chars = (running[starts[1:]] - running[starts[:-1]]).tolist()
        return self._text_chars


@dataclass(frozen=True, slots=True)
class RecordScan:
    """One record as the engine scanned it: its share of a :class:`ScanGroup`.

    Attributes:
        group: the group it was scanned in.
        index: its place in the group.
        line_shift: added to every line number it reports (a scan of a range of a record
            numbers its lines from the range's start).
    """

    group: ScanGroup
    index: int
    line_shift: int = 0

    def _range(self, span: str) -> tuple[int, int]:
        return self.group.range(span, self.index)

    def _count(self, span: str) -> int:
        a, b = self._range(span)
        return b - a

    @property
    def rows(self) -> int:
        """Its message rows."""
        return self._count("rows")

    @property
    def events(self) -> int:
        """Its tool events."""
        return self._count("events")

    @property
    def pairs(self) -> int:
        """Its pairing rows."""
        return self._count("pairs")

    @property
    def lines(self) -> int:
        """The lines it read (blank and skipped ones too)."""
        return self.group.raw["lines"][self.index]

    @property
    def diagnostics(self) -> list[tuple[int, int]]:
        """``(line, code)`` of each line it skipped and reports."""
        return [(n + self.line_shift, code) for n, code in self.group.raw["diagnostics"][self.index]]

    @property
    def title(self) -> str | None:
        """The first user message's text, for the title."""
        return self.group.raw["title"][self.index]

    @property
    def header(self) -> bytes | None:
        """Line 1, when it is the ``murmur.record`` header."""
        return self.group.raw["header"][self.index]

    @property
    def error(self) -> str | None:
        """Why the record could not be opened or read, or ``None``."""
        return self.group.raw["error"][self.index]

    @property
    def pair_summary(self) -> tuple[int, int, list[str]]:
        """The pairing walk's calls made, calls in error and client orphans dropped."""
        return self.group.raw["pair_summary"][self.index]

    @property
    def pair_state(self) -> PairState:
        """What the pairing walk leaves for a walk of lines appended later."""
        return self.group.raw["pair_state"][self.index]

    def column(self, key: str) -> pa.Array:
        """Its values of the scan's column ``key`` (a slice of the group's, or its part)."""
        return self.group.column(key, self.index)

    def columns(self, keys: tuple[str, ...]) -> list[pa.Array]:
        """Its values of each of the scan's columns ``keys`` (as :meth:`column` gives each)."""
        return self.group.columns(keys, self.index)

    def line_numbers(self) -> np.ndarray:
        """Each message row's 1-based line."""
        a, b = self._range("rows")
        return np.frombuffer(memoryview(self.group.raw["line"]), np.int64)[a:b] + self.line_shift

    def text_chars(self) -> int:
        """The text characters of its messages, summed."""
        return self.group.text_chars()[self.index]

    def shifted(self, lines: int) -> RecordScan:
        """The same scan, its line numbers ``lines`` further on."""
        return replace(self, line_shift=self.line_shift + lines)

    def derived(self, key: str, make: Callable[[], pa.Array]) -> pa.Array:
        """Its rows of a column derived for the whole group (:meth:`ScanGroup.derived`)."""
        a, b = self._range("rows")
        return self.group.derived(key, make).slice(a, b - a)


def pairing(scan: RecordScan) -> Pairing:
    """The record's tool pairing, as the assembly core's walk left it in the scan."""
    made, errors, dropped = scan.pair_summary
    return Pairing(pa.RecordBatch.from_arrays(scan.columns(_PAIRED_KEYS), schema=PAIRED), made, errors, dropped)


def _positions(group: ScanGroup) -> pa.Array:
    """Each message row's position in its record."""
    starts = group.starts["rows"]
    n = int(starts[-1])
    return pa.array(np.arange(n, dtype=np.int64) - np.repeat(starts[:-1], np.diff(starts)), _I64)


def scanned_columns(scan: RecordScan, model: pa.Array | None, usage: list[Any] | None) -> EntryColumns:
    """The record's message rows as one chunk of columns (its tool events already paired).

    Args:
        scan: the record.
        model: each row's model; ``None``: none known.
        usage: each row's usage, or ``None`` when no row has any.
    """
    group = scan.group
    nulls = scan.derived("nulls", lambda: pa.nulls(int(group.starts["rows"][-1]), _STR))
    ids, role, created, n_blocks, text_chars, source_id, kinds, text, reasoning = scan.columns(_ROW_KEYS)
    return EntryColumns(
        position=scan.derived("position", lambda: _positions(group)),
        id=ids,
        side=role,
        origin=nulls,
        model=nulls if model is None else model,
        created_at=created,
        n_blocks=n_blocks,
        text_chars=text_chars,
        status=nulls,
        error=nulls,
        source_id=source_id,
        block_kinds=kinds,
        text=text,
        reasoning_text=reasoning,
        usage=usage,
        events=ToolEvents(),  # already paired by the scan: see pairing()
    )


def tool_events(scan: RecordScan) -> ToolEvents:
    """The record's tool events as the pairing walk reads them (row ``i`` being message row ``i``), texts kept.

    The scan pairs them itself; these are for a walk that goes on from an earlier one's state
    (:class:`~murmur_analysis.algorithms.pairing.Pairer`), over the lines appended to a record.
    """
    n = scan.events
    # each event's text is where the scan's own walk put it: a row's input, or its result text
    texts = pa.concat_arrays([scan.column("pair_input_text"), scan.column("pair_result_text")])
    at = scan.column("ev_text_at").to_numpy()
    return ToolEvents(
        row=scan.column("ev_row").to_numpy().tolist(),
        call=(scan.column("ev_call").to_numpy() == 1).tolist(),
        kind=["client"] * n,  # murmur's dialect has client tools only
        call_id=scan.column("ev_id").to_pylist(),
        name=scan.column("ev_name").to_pylist(),
        is_error=scan.column("ev_error").cast(pa.bool_()).to_pylist(),
        chars=scan.column("ev_chars").to_pylist(),
        input_bytes=scan.column("ev_bytes").to_pylist(),
        texts=texts.take(pa.array(at, mask=at < 0)),
    )
