"""Hypothesis properties of the cursor core."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_lines import append, id_at, line, message, write_record

import murmur_analysis as ma
from murmur_analysis.algorithms.cursor import decode_cursor, encode_cursor, entries_page, paginate
from murmur_analysis.core.model import Entry, Text
from murmur_analysis.sources.murmur.reader import RecordReader

limits = st.integers(min_value=-3, max_value=130)


@given(n=st.integers(min_value=0, max_value=400), limit=limits)
def test_paginate_walk_is_the_reversed_list(n: int, limit: int) -> None:
    items = list(range(n))
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        page, cursor, total = paginate(items, cursor, limit)
        pages += 1
        assert total == n
        assert 1 <= len(page) <= 100 or n == 0
        seen.extend(page)
        if cursor is None:
            break
    assert seen == items[::-1]
    size = min(max(limit, 1), 100)
    assert pages == max(1, -(-n // size))


@given(position=st.integers(min_value=0, max_value=2**64 - 1))
def test_cursor_codec_round_trips(position: int) -> None:
    assert decode_cursor(encode_cursor(position)) == position


@given(text=st.text())
def test_only_host_shaped_cursors_decode(text: str) -> None:
    decoded = decode_cursor(text)
    if decoded is not None:
        digits = text[3:].lstrip("+")
        assert text.startswith("mc_") and digits.isascii() and digits.isdigit()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=0, max_value=150), limit=limits)
def test_a_file_walk_at_any_limit_is_the_reversed_message_list(n: int, limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_record(Path(tmp) / "c.jsonl", [message(i) for i in range(1, n + 1)])
        reader = RecordReader()
        ids = [m.id for m in ma.walk(path, limit=limit, reader=reader)]
        assert ids == [id_at(i) for i in range(n, 0, -1)]
        assert len(set(ids)) == len(ids)
        assert reader.reads <= 1


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=120),
    limit=st.integers(min_value=1, max_value=40),
    appends=st.lists(st.integers(min_value=0, max_value=7), max_size=12),
)
def test_a_walk_interleaved_with_appends_returns_the_first_pages_messages_once(
    n: int, limit: int, appends: list[int]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_record(Path(tmp) / "c.jsonl", [message(i) for i in range(1, n + 1)])
        reader = RecordReader()
        seen: list[str | None] = []
        cursor = None
        next_id = n + 1
        first_total = None
        for step in range(10_000):
            page = reader.read_messages(path, cursor, limit)
            first_total = first_total if first_total is not None else page.total
            seen.extend(m.id for m in page.messages)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
            k = appends[step % len(appends)] if appends else 0
            append(path, [message(i) for i in range(next_id, next_id + k)])
            next_id += k
        assert first_total == n
        assert seen == [id_at(i) for i in range(n, 0, -1)]


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=8), cut=st.integers(1, 40))
def test_incremental_parsing_equals_a_fresh_parse(parts: list[int], cut: int) -> None:
    """A record grown in pieces, some ending mid-line, reads as a fresh reader reads it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.jsonl"
        text = "".join(line(message(i)) + "\n" for i in range(1, sum(parts) + 1))
        reader = RecordReader()
        written = 0
        for chunk in parts:
            end = min(len(text), written + chunk * cut)
            with path.open("a", encoding="utf-8") as f:
                f.write(text[written:end])
            written = end
            incremental = [m.id for m in ma.walk(path, limit=7, reader=reader)]
            fresh = [m.id for m in ma.walk(path, limit=7, reader=RecordReader())]
            assert incremental == fresh


@given(n=st.integers(min_value=0, max_value=250), limit=limits)
def test_entries_page_pages_any_source_like_a_record(n: int, limit: int) -> None:
    entries = [Entry(i, "user", (Text(f"m{i}"),), id=f"e{i}") for i in range(n)]
    seen = []
    cursor = None
    while True:
        page = entries_page(entries, cursor, limit)
        assert page.total == n
        seen.extend(m.id for m in page.messages)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"e{i}" for i in range(n - 1, -1, -1)]
