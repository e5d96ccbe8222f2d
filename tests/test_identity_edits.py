"""A file's identity sees an edit that keeps its size and puts its modification time back.

``touch -r`` and ``cp -p`` put the times back after an edit; the change time (``ctime``) the
kernel sets on every write still tells. The record reader (its memory and its persisted index)
and the incremental export both read such a record again. Every page is compared with the page
a reader without any index serves, every export with a fresh load.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from murmur_home import T0, msg, record
from murmur_lines import id_at, line, message
from murmur_pages import edit_in_place, unindexed, walk_pages, write_lines

import murmur_analysis as ma
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export
from murmur_analysis.sources.murmur.index import IndexStore


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return IndexStore(tmp_path / "cache" / "record-index", min_bytes=0)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "bot" / "ctx" / "conversation.jsonl"


def test_a_same_size_edit_with_its_times_put_back_is_read_again(path: Path, store: IndexStore) -> None:
    rows = [line(message(n)) for n in range(2000)]
    rows[1000] = "x" + rows[1000][1:]  # line 1001 is not a message ...
    write_lines(path, rows)
    reader = ma.RecordReader(index=store)
    assert reader.read_messages(path).total == 1999
    offset = len("".join(r + "\n" for r in rows[:1000]))
    edit_in_place(path, offset, b"{")  # ... until it is, the record's size and times as they were
    page = reader.read_messages(path, "mc_1001", 3)
    assert page.total == 2000 and [m.id for m in page.messages] == [id_at(1000), id_at(999), id_at(998)]
    fresh = ma.RecordReader(index=store)
    assert walk_pages(fresh, path, 100) == unindexed(path, 100)
    assert fresh.read_messages(path).total == 2000


def test_an_incremental_export_reads_a_record_edited_with_its_times_put_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    values = [msg("user" if i % 2 == 0 else "assistant", T0 + i, n=i) for i in range(100)]
    rec = record(home, "bot", "ctx", values)
    old = T0 / 1000
    os.utime(rec, (old, old))  # long settled: nothing about the record looks new
    out = tmp_path / "out"
    export(home, out=out)
    assert_rows_equal(read_parquet(out).tables, ma.load(home).tables)
    at = rec.read_bytes().index(f"user at {T0 + 80}".encode())
    edit_in_place(rec, at, b"USER")  # the same size, far from the first 4 KiB, times put back
    export(home, out=out)
    fresh = ma.load(home).tables
    assert any("USER at" in row for row in rows(fresh["messages"]))
    assert_rows_equal(read_parquet(out).tables, fresh)


def rows(table: Any) -> list[str]:
    return sorted(json.dumps(r, default=str, sort_keys=True) for r in table.to_pylist())


def assert_rows_equal(exported: dict[str, Any], loaded: dict[str, Any]) -> None:
    assert set(exported) == set(loaded)
    for name, table in loaded.items():
        assert rows(exported[name]) == rows(table), name


operations = st.lists(st.sampled_from(["append", "edit", "chmod", "rewrite", "rename", "nothing"]), min_size=1,
                      max_size=6)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations, limit=st.integers(min_value=1, max_value=9))
def test_after_any_changes_readers_serve_what_a_reader_without_index_serves(
    tmp_path_factory: Any, ops: list[str], limit: int
) -> None:
    tmp = tmp_path_factory.mktemp("changes")
    path = write_lines(tmp / "r" / "c" / "conversation.jsonl", [line(message(n)) for n in range(200)])
    store = IndexStore(tmp / "idx", min_bytes=0)
    kept = ma.RecordReader(index=store)  # a long-lived reader: its own memory and the store
    walk_pages(kept, path, limit)
    serial = 1000
    for op in ops:
        serial += 10
        if op == "append":
            with path.open("a") as f:
                f.write("".join(line(message(serial + i)) + "\n" for i in range(3)))
        elif op == "edit":  # a line between the first and the last 4 KiB made junk, or a message again
            data = path.read_bytes()
            at = data.index(b"\n", len(data) // 2) + 1
            edit_in_place(path, at, b"x" if data[at : at + 1] == b"{" else b"{")
        elif op == "chmod":
            os.chmod(path, 0o600 if path.stat().st_mode & 0o044 else 0o644)
        elif op == "rewrite":  # the same inode, larger
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            os.write(fd, "".join(line(message(serial + i)) + "\n" for i in range(210)).encode())
            os.close(fd)
        elif op == "rename":
            tmp_file = write_lines(path.with_name("tmp"), [line(message(serial + i)) for i in range(205)])
            tmp_file.replace(path)
        expected = unindexed(path, limit)
        # The long-lived reader reported what it found before: its pages hold the same messages.
        assert [(p.messages, p.next_cursor, p.total) for p in walk_pages(kept, path, limit)] == \
            [(p.messages, p.next_cursor, p.total) for p in expected]
        assert walk_pages(ma.RecordReader(index=store), path, limit) == expected


@given(st.binary(max_size=40), st.booleans())
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_an_identity_taken_with_its_ending_is_the_identity_and_the_ending_steady_reads(
    tmp_path: Path, data: bytes, settled_long_ago: bool
) -> None:
    from murmur_analysis.core.files import steady
    from murmur_analysis.core.identity import file_identity, file_identity_ending

    file = tmp_path / "session.jsonl"
    file.write_bytes(data)
    if settled_long_ago:
        os.utime(file, (0, 0))
    identity, ends = file_identity_ending(file)
    assert identity == file_identity(file)
    assert ends == (data == b"" or data.endswith(b"\n"))
    # steady given that ending answers as steady reading the file itself
    assert steady(file, 60.0, ends) == steady(file, 60.0)
    assert steady(file, 60.0) == (ends or settled_long_ago)


def test_no_identity_no_ending_for_what_is_not_a_regular_file(tmp_path: Path) -> None:
    from murmur_analysis.core.identity import file_identity_ending

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert file_identity_ending(fifo) == (None, None)  # never opened: it could block
    assert file_identity_ending(tmp_path / "gone") == (None, None)
    assert file_identity_ending(tmp_path) == (None, None)
