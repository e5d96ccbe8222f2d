"""One long file exported a range of bytes at a time: memory bounded by the range, not the file.

A :class:`~murmur_analysis.sources.resume.Resumable` source's file longer than the range
length is cut at line starts where the source says (murmur: where a new run of one side begins
when one is near, inside a run otherwise), and each range is decoded and written
on its own, continued from the ranges before it as an appended tail is continued from an
earlier export (:func:`~murmur_analysis.export.resume.continue_rows`): positions, growth counts
and characters go on, the pairing walk goes on from the state the range before left (an
earlier range's ``tool_calls`` file is written again when a later result answers one of its
calls), and the ``conversations`` row is written once, at the end. Where a range cannot be
continued exactly, what was written of the record is taken back and the record is read whole.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..core.diagnostics import Diagnostics
from ..core.files import open_regular
from ..core.handoff import Conversation, ResumePoint
from ..sources.resume import START, Resumable, identity_at
from ..tables.schema import schema
from .resume import answer, continue_rows
from .writer import BatchWriter

__all__ = ["export_ranges"]

#: The frame builder's priced rows of one conversation (and the diagnostics its reading reported).
Build = Callable[[Conversation, Diagnostics], dict[str, pa.Table]]


def export_ranges(source: Resumable, conv: Conversation, unit: str, writer: BatchWriter, build: Build,
                  scratch: Path, limit: int, text: bool) -> tuple[bool, ResumePoint | None]:
    """Write ``conv``'s file a range of about ``limit`` bytes at a time, if it is longer than that.

    Returns:
        Whether it was written so (else nothing of it was), and its resume point.
    """
    if conv.path is None or not source.resumable(conv, None, None):
        return False, None
    try:
        with open_regular(Path(conv.path)) as f:
            fd = f.fileno()
            size = os.fstat(fd).st_size
            if size <= limit:
                return False, None
            return _write(source, conv, unit, writer, build, scratch, limit, fd, size, text)
    except OSError:
        return False, None


def _write(source: Resumable, conv: Conversation, unit: str, writer: BatchWriter, build: Build, scratch: Path,
           limit: int, fd: int, size: int, text: bool) -> tuple[bool, ResumePoint | None]:
    point = START
    before: dict[str, Any] | None = None
    written: list[str] = []
    calls: list[tuple[str, int, int]] = []  # this record's tool_calls files: (path, first row, rows)
    first = 0  # the file's tool_calls rows written before this range
    start = 0
    while start < size:
        end = size if size - start <= limit * 3 // 2 else (source.cut(fd, start + limit, size, limit // 64) or size)
        diagnostics = Diagnostics(conv.source)
        tail = source.read_range(conv, fd, start, end, point, diagnostics, text, scratch)
        grown = None if tail is None else continue_rows(tail, point, build(tail.conversation, diagnostics), before)
        if tail is None or tail.point is None or grown is None:
            writer.discard(written)
            return False, None
        if not _answer(writer, calls, grown.answered):
            writer.discard(written)
            return False, None
        before = grown.tables.pop("conversations").to_pylist()[0]
        rows = {t: d for t, d in grown.tables.items() if d.num_rows}
        files = writer.write(rows, {t: [(unit, d.num_rows)] for t, d in rows.items()})
        written += files
        calls += [(p, first, rows["tool_calls"].num_rows) for p in files
                  if writer.state.files[p]["table"] == "tool_calls"]
        first += grown.tables["tool_calls"].num_rows
        point, start = tail.point, end
    assert before is not None
    written += writer.write({"conversations": pa.Table.from_pylist([before], schema=schema("conversations"))},
                            {"conversations": [(unit, 1)]})
    at = identity_at(fd, size)
    return True, (replace(point, at=at) if at is not None else None)


def _answer(writer: BatchWriter, calls: list[tuple[str, int, int]], answered: dict[int, dict[str, Any]]) -> bool:
    """Write again the earlier ranges' tool_calls files holding calls answered now (``False``: not exactly)."""
    for relative, first, n in calls:
        mine = {i - first: change for i, change in answered.items() if first <= i < first + n}
        if not mine:
            continue
        rows = answer(pq.read_table(writer.staged.path / relative), mine)
        if rows is None:
            return False  # the files written so far are taken back by the caller
        writer.rewrite("tool_calls", rows, relative)
    return True
