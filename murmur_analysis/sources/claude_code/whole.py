"""Every file of a load as one table: the rows the engine scanned, end to end, in file order.

What is decided about the lines (which are messages, which are responses, which sit on a
rewind's abandoned branch) is decided once over these columns, as arrays; each conversation
is then a slice of them (:meth:`Whole.span`, zero copy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..lines import LineRows, joined

__all__ = ["Whole", "firsts", "lasts", "mask", "true"]

_I64 = pa.int64()


def true(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Where an integer flag column is 1 (null: not set), as a numpy mask."""
    return mask(pc.equal(column, 1))


def mask(condition: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean column as a numpy mask, null read as false."""
    out: np.ndarray = pc.fill_null(condition, False).to_numpy(zero_copy_only=False)
    return out


def firsts(at: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For each span ``starts[i]..starts[i + 1]``, the first of the sorted indexes ``at`` in it, else -1."""
    found = np.searchsorted(at, starts[:-1])
    out = np.full(len(starts) - 1, -1, np.int64)
    inside = found < len(at)
    inside[inside] = at[found[inside]] < starts[1:][inside]
    out[inside] = at[found[inside]]
    return out


def lasts(at: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """For each span ``starts[i]..starts[i + 1]``, the last of the sorted indexes ``at`` in it, else -1."""
    found = np.searchsorted(at, starts[1:]) - 1
    out = np.full(len(starts) - 1, -1, np.int64)
    inside = found >= 0
    inside[inside] = at[found[inside]] >= starts[:-1][inside]
    out[inside] = at[found[inside]]
    return out


@dataclass(frozen=True)
class Whole:
    """The rows of every file of a load, concatenated in file order.

    Attributes:
        table: every file's rows (one chunk per file).
        starts: file ``i``'s rows are ``starts[i]:starts[i + 1]`` (``len(files) + 1`` values).
        kinds: each row's block kinds.
        events: every tool event, its ``row`` the row's index in :attr:`table`.
        event_starts: file ``i``'s events are ``event_starts[i]:event_starts[i + 1]``.
    """

    table: pa.Table
    starts: np.ndarray
    kinds: pa.ChunkedArray
    events: pa.Table
    event_starts: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[LineRows]) -> Whole:
        """The files' rows, end to end (the engine's buffers are kept, not copied: :func:`~..lines.joined`)."""
        j = joined(rows)
        return cls(j.table, j.starts, j.kinds, j.events, j.event_starts)

    @property
    def files(self) -> int:
        """How many files."""
        return len(self.starts) - 1

    def one(self, i: int, upto: int | None = None) -> Whole:
        """File ``i`` alone, as the rows of a load of that one file (its first ``upto`` rows)."""
        a, b = int(self.starts[i]), int(self.starts[i + 1])
        n = b - a if upto is None else upto
        events = self.events.slice(int(self.event_starts[i]), int(self.event_starts[i + 1] - self.event_starts[i]))
        rows = events.column("row").to_numpy() - a
        keep = rows < n
        events = events.filter(pa.array(keep)).set_column(0, "row", pa.array(rows[keep], _I64))
        return Whole(self.table.slice(a, n), np.array([0, n], np.int64), self.kinds.slice(a, n), events,
                     np.array([0, events.num_rows], np.int64))

    @property
    def file(self) -> np.ndarray:
        """Each row's file."""
        return np.repeat(np.arange(self.files, dtype=np.int64), np.diff(self.starts))
