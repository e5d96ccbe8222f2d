"""A group of the engine's joined output, each column wrapped into an Arrow array once.

A scan of many inputs (records, session files) hands back their columns joined: one group's
Arrow buffers (validity bitmaps, offsets, values) hold every input's rows one after the other,
``<span>_starts`` saying where each input's rows of a span (``rows``, ``events``, ``pairs``)
begin. :class:`Group` wraps each buffer into an Arrow array once, without copying it through
Python objects; an input's columns are slices of the group's (no copy either). A column of
strings too large to join without copying most of what was read (the texts) comes as its
inputs' parts instead, and each input's part is an array of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["EVENT_FIXED", "EVENT_PLAIN", "Group", "views"]

_STR = pa.string()
_I64 = pa.int64()
#: The tool event columns every format hands over (``event_columns`` in ``native/src/lib.rs``):
#: those without nulls, and the nullable ones of fixed width (``ev_id`` and ``ev_name`` are strings).
EVENT_PLAIN: dict[str, pa.DataType] = {"ev_row": _I64, "ev_call": pa.uint8()}
EVENT_FIXED: dict[str, pa.DataType] = {"ev_error": _I64, "ev_chars": _I64, "ev_bytes": _I64}
#: The spans a group may give starts for, and the prefix of the columns of each (the rest: ``rows``).
_SPANS = {"events": "ev_", "pairs": "pair_"}


def views(array: pa.Array) -> tuple[int | None, ...]:
    """Which buffers ``array`` views: their addresses, ``None`` for a buffer it has not.

    Arrays that view the same are slices of one array, such as each input's slice of a group's column.
    """
    return tuple(None if b is None else b.address for b in array.buffers())


def _strings(n: int, bufs: Any) -> pa.Array:
    return pa.Array.from_buffers(_STR, n, [pa.py_buffer(b) for b in bufs])


class Group:
    """Inputs scanned together (see the module doc).

    Args:
        raw: the engine's dict of one group.
        count: the key of how many inputs it holds.
        plain: columns without nulls (one values buffer), and their types.
        fixed: nullable columns of fixed width (a validity bitmap and values), and their types;
            every other column is strings, and ``kinds`` (with ``kinds_offsets``) each row's
            list of block kinds.
    """

    def __init__(self, raw: Mapping[str, Any], count: str, plain: Mapping[str, pa.DataType],
                 fixed: Mapping[str, pa.DataType]) -> None:
        self.raw = raw
        self.size: int = raw[count]
        self.starts = {span: np.frombuffer(memoryview(raw[f"{span[:-1]}_starts"]), np.int64)
                       for span in ("rows", *_SPANS) if f"{span[:-1]}_starts" in raw}
        self._bounds = {span: starts.tolist() for span, starts in self.starts.items()}  # as Python ints
        self._plain, self._fixed = plain, fixed
        self._arrays: dict[str, pa.Array] = {}
        self._kept_parts: dict[str, list[pa.Array]] = {}
        self._spans: dict[str, str] = {}
        self._plans: dict[tuple[str, ...], list[tuple[Any, list[int] | None]]] = {}

    def span(self, key: str) -> str:
        """Which rows column ``key`` has: the inputs' ``rows``, their ``events`` or their ``pairs``."""
        found = self._spans.get(key)
        if found is None:
            found = self._spans[key] = next((span for span, prefix in _SPANS.items() if key.startswith(prefix)),
                                            "rows")
        return found

    def range(self, span: str, i: int) -> tuple[int, int]:
        """Where input ``i``'s rows of ``span`` are among the group's: ``(start, end)``."""
        bounds = self._bounds[span]
        return bounds[i], bounds[i + 1]

    def joined(self, key: str) -> pa.Array:
        """Every input's values of the joined column ``key``, one after the other."""
        found = self._arrays.get(key)
        if found is None:
            n = int(self.starts[self.span(key)][-1])
            bufs: Any = self.raw[key]
            if key == "kinds":
                offsets = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(self.raw["kinds_offsets"])])
                found = pa.ListArray.from_arrays(offsets, _strings(offsets[-1].as_py(), bufs))
            elif key in self._plain:
                found = pa.Array.from_buffers(self._plain[key], n, [None, pa.py_buffer(bufs)])
            else:
                found = pa.Array.from_buffers(self._fixed.get(key, _STR), n, [pa.py_buffer(b) for b in bufs])
            self._arrays[key] = found
        return found

    def _parts(self, key: str) -> list[pa.Array]:
        """Each input's values of column ``key``, which the engine left as its inputs' parts."""
        found = self._kept_parts.get(key)
        if found is None:
            starts = self.starts[self.span(key)]
            found = [_strings(int(m - k), p) for k, m, p in zip(starts[:-1], starts[1:], self.raw[key], strict=True)]
            self._kept_parts[key] = found
        return found

    def whole(self, key: str) -> pa.ChunkedArray:
        """Every input's values of column ``key``: the joined column, or its parts as chunks."""
        if isinstance(self.raw[key], list):
            return pa.chunked_array(self._parts(key), self._fixed.get(key, _STR))
        return pa.chunked_array([self.joined(key)])

    def column(self, key: str, i: int) -> pa.Array:
        """Input ``i``'s values of column ``key``: a slice of the joined column, or its part."""
        return self.columns((key,), i)[0]

    def columns(self, keys: tuple[str, ...], i: int) -> list[pa.Array]:
        """Input ``i``'s values of each column of ``keys``, as :meth:`column` gives each.

        Where each column lies is looked up once per group and tuple of keys, so an input's
        columns cost a slice each (a group of many short inputs asks this once per input).
        """
        plan = self._plans.get(keys)
        if plan is None:
            plan = self._plans[keys] = [
                (self._parts(k), None) if isinstance(self.raw[k], list)
                else (self.joined(k), self._bounds[self.span(k)]) for k in keys]
        out = []
        for whole, bounds in plan:
            if bounds is None:
                out.append(whole[i])
            else:
                a = bounds[i]
                out.append(whole.slice(a, bounds[i + 1] - a))
        return out

    def derived(self, key: str, make: Callable[[], pa.Array]) -> pa.Array:
        """A column of every input's rows derived once for the group (``make()``), kept."""
        found = self._arrays.get(key)
        if found is None:
            found = self._arrays[key] = make()
        return found
