"""The native scan's output for one record, as the columns and pairing the frame builder reads.

:func:`~.murmur_record.scan_records` hands back, per record, Arrow buffers (validity bitmaps,
offsets, values) built by the engine; this module wraps them into arrays without copying them
through Python objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from ...core.handoff import PAIRED, EntryColumns, Pairing, ToolEvents, repeated

if TYPE_CHECKING:
    from ...engine._native import IntKey, Scanned, StrKey

__all__ = ["ints", "pairing", "scanned_columns", "strings", "tool_events"]

_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")


def strings(scanned: Scanned, key: StrKey, n: int | None = None) -> pa.Array:
    """A string column of the scan (``n`` rows; the record's message rows by default)."""
    valid, offsets, data = scanned[key]
    rows = scanned["rows"] if n is None else n
    return pa.Array.from_buffers(_STR, rows, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)])


def ints(scanned: Scanned, key: IntKey, n: int | None = None, typ: pa.DataType = _I64) -> pa.Array:
    """A nullable 64-bit column of the scan (``n`` rows; the record's message rows by default)."""
    valid, values = scanned[key]
    rows = scanned["rows"] if n is None else n
    return pa.Array.from_buffers(typ, rows, [pa.py_buffer(valid), pa.py_buffer(values)])


def pairing(scanned: Scanned) -> Pairing:
    """The record's tool pairing, as the assembly core's walk left it in the scan."""
    n = scanned["pairs"]
    rows = pa.RecordBatch.from_arrays(
        [
            strings(scanned, "pair_call_id", n),
            strings(scanned, "pair_tool_name", n),
            repeated("client", n),  # murmur's dialect has client tools only
            ints(scanned, "pair_called_seq", n),
            ints(scanned, "pair_result_seq", n),
            strings(scanned, "pair_status", n),
            ints(scanned, "pair_is_error", n, pa.bool_()),
            ints(scanned, "pair_result_chars", n),
            ints(scanned, "pair_input_bytes", n),
            strings(scanned, "pair_input_text", n),
            strings(scanned, "pair_result_text", n),
        ],
        schema=PAIRED,
    )
    made, errors, dropped = scanned["pair_summary"]
    return Pairing(rows, made, errors, dropped)


def scanned_columns(scanned: Scanned, model: pa.Array, usage: list[Any] | None) -> EntryColumns:
    """The record's message rows as one chunk of columns (its tool events already paired)."""
    n = scanned["rows"]
    kinds_offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(scanned["kinds_offsets"])])
    kinds = strings(scanned, "kinds", (len(kinds_offsets) and kinds_offsets[-1].as_py()) or 0)
    nulls = pa.nulls(n, _STR)
    return EntryColumns(
        position=pa.array(np.arange(n, dtype=np.int64), _I64),
        id=strings(scanned, "id"),
        side=strings(scanned, "role"),
        origin=nulls,
        model=model,
        created_at=ints(scanned, "created_us", typ=_TIMESTAMP),
        n_blocks=pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(scanned["n_blocks"])]),
        text_chars=pa.Array.from_buffers(_I64, n, [None, pa.py_buffer(scanned["text_chars"])]),
        status=nulls,
        error=nulls,
        source_id=strings(scanned, "source_id"),
        block_kinds=pa.ListArray.from_arrays(kinds_offsets, kinds),
        text=strings(scanned, "text"),
        reasoning_text=strings(scanned, "reasoning_text"),
        usage=usage,
        events=ToolEvents(),  # already paired by the scan: see pairing()
    )


def tool_events(scanned: Scanned) -> ToolEvents:
    """The record's tool events as the pairing walk reads them (row ``i`` being message row ``i``), texts kept.

    The scan pairs them itself; these are for a walk that goes on from an earlier one's state
    (:class:`~murmur_analysis.algorithms.pairing.Pairer`), over the lines appended to a record.
    """
    n, rows = scanned["events"], scanned["pairs"]
    # each event's text is where the scan's own walk put it: a row's input, or its result text
    texts = pa.concat_arrays([strings(scanned, "pair_input_text", rows), strings(scanned, "pair_result_text", rows)])
    at = np.frombuffer(memoryview(scanned["ev_text_at"]), np.int64)
    return ToolEvents(
        row=np.frombuffer(memoryview(scanned["ev_row"]), np.int64).tolist(),
        call=(np.frombuffer(memoryview(scanned["ev_call"]), np.uint8) == 1).tolist(),
        kind=["client"] * n,  # murmur's dialect has client tools only
        call_id=strings(scanned, "ev_id", n).to_pylist(),
        name=strings(scanned, "ev_name", n).to_pylist(),
        is_error=ints(scanned, "ev_error", n).cast(pa.bool_()).to_pylist(),
        chars=ints(scanned, "ev_chars", n).to_pylist(),
        input_bytes=ints(scanned, "ev_bytes", n).to_pylist(),
        texts=texts.take(pa.array(at, mask=at < 0)).to_pylist(),
    )
