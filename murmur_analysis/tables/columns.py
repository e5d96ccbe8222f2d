"""One declared table built in Arrow record batches, its columns computed as its schema declares.

The declarations are :mod:`~murmur_analysis.tables.schema`'s.

:class:`TableBuilder` takes a table's input (a chunk of entries, a row of the hand-off, ...),
computes each column by its declaration, and keeps record batches of at most ``batch_rows``
rows, so memory stays bounded and no schema is inferred.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..core.handoff import UsageRow, repeated
from .schema import Column, built_schema, declared, schema

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BATCH_ROWS", "TableBuilder", "arrow_array", "to_pandas", "usage_table"]

BATCH_ROWS = 65_536


def arrow_array(values: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """Convert one column to Arrow.

    Timestamps go through integer microseconds: pyarrow converts aware datetimes one by one,
    several times slower. Every timestamp value here is a timezone-aware datetime.
    """
    if pa.types.is_timestamp(typ):
        micros = [None if v is None else round(v.timestamp() * 1_000_000) for v in values]
        return pa.array(micros, type=pa.int64()).cast(typ)
    return pa.array(values, type=typ)


class TableBuilder:
    """Rows of one declared table, turned into Arrow record batches as they accumulate.

    Rows given as the table's input (:meth:`add`) are kept as they are and computed column by
    column when a batch is made, each column by its declaration.

    Args:
        table: the declared table (:data:`~murmur_analysis.tables.schema.TABLES`).
        batch_rows: rows per record batch.
        text: compute the text columns; ``False`` leaves them null.
    """

    def __init__(self, table: str, batch_rows: int = BATCH_ROWS, text: bool = True) -> None:
        self.table = table
        self.schema = built_schema(table)
        self.declared = schema(table)
        self.batch_rows = batch_rows
        self.text = text
        self.columns: tuple[Column, ...] = tuple(c for c in declared(table) if c.filled_by is None)
        self._rows: list[tuple[object, ...]] = []  # rows given by value, in schema order
        self._items: list[object] = []  # rows given as the table's input
        self._given: list[Mapping[str, object]] = []  # the key values given with each
        self._batches: list[pa.RecordBatch] = []
        self._parts: list[tuple[int, pa.Table]] = []  # tables added, each after the batches before it
        self._batched_rows = 0

    @property
    def num_rows(self) -> int:
        """Rows added so far."""
        return self._batched_rows + len(self._rows) + len(self._items)

    def add(self, item: object, given: Mapping[str, object] | None = None) -> None:
        """Add one row computed from ``item`` by the table's declared columns.

        Args:
            item: the table's input (a :class:`~murmur_analysis.core.handoff.UsageRow`, ...).
            given: values of the columns the input does not carry (``source``, ``conversation_id``).
        """
        if self._rows:
            self._flush()
        self._items.append(item)
        self._given.append(given or {})
        if len(self._items) >= self.batch_rows:
            self._flush()

    def add_mapping(self, row: Mapping[str, object], given: Mapping[str, object] | None = None) -> None:
        """Add one row given as values by column name (a column it lacks: ``given``'s, else null)."""
        fixed = given or {}
        self.append(tuple(row[c.name] if c.name in row else fixed.get(c.name) for c in self.columns))

    def add_columns(self, item: object, n: int, given: Mapping[str, str | pa.Array]) -> None:
        """Add ``n`` rows computed from ``item`` column-wise (each column one Arrow array).

        Args:
            item: the table's input (an :class:`~murmur_analysis.core.handoff.EntryColumns` chunk, ...).
            n: the rows it holds.
            given: each key column the input does not carry: one value for every row, or an
                array of one value per row (the rows of a batch of conversations).
        """
        self._add_computed(n, given, lambda c: c.value(item) if c.value is not None else getattr(item, c.name))

    def add_row_columns(self, item: Any, n: int, given: Mapping[str, str | pa.Array]) -> None:
        """Add ``n`` rows of a table whose input is rows, given instead as columns (each field an array).

        A column with no rule is the field of its name. A rule that reads a field (an
        ``attrgetter``, such as ``usage.input_tokens``) reads it from the columns at once; any
        other rule is applied to each row, the rows made for it once (``item.rows()``).

        Args:
            item: the rows as columns (:class:`~murmur_analysis.core.handoff.UsageColumns`).
            n: how many rows.
            given: the key columns, as for :meth:`add_columns`.
        """
        made: list[Any] = []

        def compute(c: Column[Any]) -> Any:
            if c.value is None:
                return getattr(item, c.name)
            if isinstance(c.value, attrgetter):
                return c.value(item)
            if not made:
                made.extend(item.rows())
            return list(map(c.value, made))

        self._add_computed(n, given, compute)

    def _add_computed(self, n: int, given: Mapping[str, str | pa.Array], compute: Callable[[Column[Any]], Any]) -> None:
        """Add ``n`` rows, each column's values ``compute(column)`` (the key columns ``given``)."""
        arrays: list[pa.Array] = []
        for c in self.columns:
            if c.text and not self.text:
                arrays.append(pa.nulls(n, c.type))
                continue
            if c.value is None and c.name in given:
                key = given[c.name]
                arrays.append(key if isinstance(key, pa.Array) else repeated(key, n))
                continue
            values = compute(c)
            if values is None:
                arrays.append(pa.nulls(n, c.type))
            elif isinstance(values, pa.Array | pa.ChunkedArray):
                arrays.append(values)
            elif isinstance(values, Sequence):
                arrays.append(arrow_array(values, c.type))
            else:  # a NumPy array, say
                arrays.append(pa.array(values, type=c.type))
        if any(isinstance(a, pa.ChunkedArray) for a in arrays):  # a column of many pieces, kept as they are
            self.append_table(pa.Table.from_arrays(arrays, schema=self.schema))
        else:
            self.append_batch(arrays)

    def append(self, row: tuple[object, ...]) -> None:
        """Add one row, its values in schema order (prefer :meth:`add`, which names them)."""
        if self._items:
            self._flush()
        self._rows.append(row)
        if len(self._rows) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if self._items:
            keys = self._given_keys()
            arrays = [arrow_array(self._column(c, keys), c.type) for c in self.columns]
            n = len(self._items)
            self._items, self._given = [], []
        elif self._rows:
            columns = list(zip(*self._rows, strict=True))
            arrays = [arrow_array(col, f.type) for col, f in zip(columns, self.schema, strict=True)]
            n = len(self._rows)
            self._rows = []
        else:
            return
        self._batches.append(pa.RecordBatch.from_arrays(arrays, schema=self.schema))
        self._batched_rows += n

    def _given_keys(self) -> tuple[frozenset[str], frozenset[str]]:
        """The columns every row given as input was given a value of, and those any row was."""
        kinds = set(map(frozenset, self._given))  # a few kinds of key sets, however many rows
        return frozenset.intersection(*kinds), frozenset.union(*kinds)

    def _column(self, c: Column, keys: tuple[frozenset[str], frozenset[str]]) -> list[object]:
        """Column ``c`` of the rows given as input, computed by its declaration (``keys``: :meth:`_given_keys`)."""
        items, given = self._items, self._given
        if c.text and not self.text:
            return [None] * len(items)
        if c.value is not None:
            return list(map(c.value, items))
        every, some = keys
        if c.name in every:
            return [g[c.name] for g in given]
        if c.name not in some:
            return list(map(attrgetter(c.name), items))
        return [g[c.name] if c.name in g else getattr(i, c.name) for i, g in zip(items, given, strict=True)]

    def append_batch(self, arrays: list[pa.Array]) -> None:
        """Add rows given as one Arrow array per column, in schema order."""
        self._flush()
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._batches.append(batch)
        self._batched_rows += batch.num_rows

    def append_table(self, table: pa.Table) -> None:
        """Add the rows of ``table`` (this builder's columns; each may be in pieces of its own)."""
        self._flush()
        self._parts.append((len(self._batches), table.select(self.schema.names)))
        self._batched_rows += table.num_rows

    def _table(self) -> pa.Table:
        """The batches and the tables added, in the order added."""
        if not self._parts:
            return pa.Table.from_batches(self._batches, schema=self.schema)
        pieces, done = [], 0
        for at, table in self._parts:
            if at > done:
                pieces.append(pa.Table.from_batches(self._batches[done:at], schema=self.schema))
            pieces.append(table)
            done = at
        if done < len(self._batches):
            pieces.append(pa.Table.from_batches(self._batches[done:], schema=self.schema))
        return pa.concat_tables(pieces)

    def finish(self) -> pa.Table:
        """The table so far, with the declared schema (columns filled later are null)."""
        self._flush()
        table = self._table()
        if self.declared == self.schema:
            return table
        columns = [table.column(f.name) if f.name in self.schema.names else pa.nulls(table.num_rows, f.type)
                   for f in self.declared]
        return pa.Table.from_arrays(columns, schema=self.declared)


def usage_table(source: str, rows: Iterable[UsageRow]) -> pa.Table:
    """A ``usage`` table of rows that belong to no conversation (``conversation_id`` null).

    Args:
        source: the source that read them.
        rows: the usage rows (a runtime session's own spend, say).
    """
    builder = TableBuilder("usage")
    for row in rows:
        builder.add(row, {"source": source, "conversation_id": None})
    return builder.finish()


def to_pandas(table: pa.Table) -> pd.DataFrame:
    """A table as a pandas frame whose columns keep their Arrow types (``pd.ArrowDtype``)."""
    import pandas as pd  # only a frame needs pandas: loading builds Arrow tables alone

    frame: pd.DataFrame = table.to_pandas(types_mapper=pd.ArrowDtype)
    return frame
