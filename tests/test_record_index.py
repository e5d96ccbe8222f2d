"""The record reader's file identity and its persisted line index.

A reader must never take a replaced record for one that grew (an atomic rewrite can reuse the
inode and be larger), and a fresh reader of a big record must serve pages from the index a
previous reader left in the cache folder, parsing only what was appended since.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from murmur_lines import id_at, line, message
from murmur_pages import unindexed, walk_pages, write_lines

import murmur_analysis as ma
from murmur_analysis.core import cache
from murmur_analysis.sources.murmur.index import RUN_SLACK, IndexStore
from murmur_analysis.ui.cli import main

PAD = "x" * 180  # a line of about 300 bytes, so a few thousand make a record past the 1 MiB threshold


def padded(n: int) -> dict[str, object]:
    value = message(n)
    value["content"] = [{"text": f"{n} {PAD}", "type": "text"}]
    return value


def write(path: Path, numbers: range, *, header: dict[str, object] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = ([line(header)] if header else []) + [line(padded(n)) for n in numbers]
    path.write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def append(path: Path, numbers: range) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write("".join(line(padded(n)) + "\n" for n in numbers))


def rename_over(path: Path, numbers: range, *, header: dict[str, object] | None = None) -> None:
    tmp = write(path.with_name("conversation.jsonl.tmp"), numbers, header=header)
    tmp.replace(path)


def ids(page: ma.Page) -> list[str | None]:
    return [m.id for m in page.messages]


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return IndexStore(tmp_path / "cache", min_bytes=0)


@pytest.fixture
def record(tmp_path: Path) -> Path:
    return tmp_path / "bot" / "ctx" / "conversation.jsonl"


# ------------------------------------------------------------------------------ identity (D2)


def test_two_atomic_rewrites_are_not_taken_for_growth(record: Path) -> None:
    write(record, range(0, 100))
    reader = ma.RecordReader(index=None)
    first = reader.read_messages(record, None, 10)
    assert first.total == 100 and first.next_cursor == "mc_90"
    rename_over(record, range(20, 130))
    rename_over(record, range(30, 160))  # ext4 often hands this file the first one's inode back
    page = reader.read_messages(record, None, 10)
    assert page.total == 130
    assert ids(page) == [id_at(n) for n in range(159, 149, -1)]
    older = reader.read_messages(record, first.next_cursor, 10)
    assert ids(older) == [id_at(n) for n in range(119, 109, -1)]  # positions 80..89 of the new list
    assert [m.id for m in ma.walk(record, reader=reader)] == [id_at(n) for n in range(159, 29, -1)]


def test_a_larger_rewrite_of_the_same_inode_is_read_again_from_the_start(record: Path) -> None:
    write(record, range(0, 100))
    reader = ma.RecordReader(index=None)
    assert reader.read_messages(record, None, 5).total == 100
    inode = record.stat().st_ino
    data = "".join(line(padded(n)) + "\n" for n in range(20, 130)).encode()
    fd = os.open(record, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    assert record.stat().st_ino == inode and record.stat().st_size > 0
    page = reader.read_messages(record, None, 5)
    assert page.total == 110
    assert ids(page) == [id_at(n) for n in range(129, 124, -1)]
    assert reader.reads == 2


def test_a_same_size_rewrite_is_not_taken_for_the_same_file(record: Path) -> None:
    write(record, range(0, 50))
    reader = ma.RecordReader(index=None)
    reader.read_messages(record)
    data = record.read_bytes().replace(id_at(0).encode(), id_at(99).encode())
    fd = os.open(record, os.O_WRONLY)
    try:
        os.write(fd, data)  # same length, same inode
    finally:
        os.close(fd)
    assert ids(reader.read_messages(record))[-1] == id_at(99)


def test_growth_is_read_from_where_the_last_parse_stopped(record: Path) -> None:
    write(record, range(0, 40))
    reader = ma.RecordReader(index=None)
    reader.read_messages(record)
    assert reader.parsed_lines == 40
    append(record, range(40, 45))
    assert reader.read_messages(record).total == 45
    assert reader.parsed_lines == 45 and reader.reads == 2


# ------------------------------------------------------------------------------ the persisted index


def test_a_fresh_reader_serves_pages_from_the_persisted_index(record: Path, store: IndexStore) -> None:
    write(record, range(0, 300))
    first = ma.RecordReader(index=store)
    expected = first.read_messages(record, None, 20)
    assert first.parsed_lines == 300
    assert store.file_for(str(record)).is_file()

    fresh = ma.RecordReader(index=store)
    page = fresh.read_messages(record, None, 20)
    assert fresh.parsed_lines == 0 and fresh.reads == 0
    assert page == expected
    assert ids(fresh.read_messages(record, page.next_cursor, 20)) == [id_at(n) for n in range(279, 259, -1)]


def test_a_grown_record_is_parsed_only_from_where_it_grew(record: Path, store: IndexStore) -> None:
    write(record, range(0, 300))
    ma.RecordReader(index=store).read_messages(record)
    append(record, range(300, 310))
    fresh = ma.RecordReader(index=store)
    page = fresh.read_messages(record, None, 10)
    assert page.total == 310 and ids(page) == [id_at(n) for n in range(309, 299, -1)]
    assert fresh.parsed_lines == 10


def test_a_persisted_index_of_a_replaced_record_is_not_used(record: Path, store: IndexStore) -> None:
    write(record, range(0, 100))
    ma.RecordReader(index=store).read_messages(record)
    data = "".join(line(padded(n)) + "\n" for n in range(20, 130)).encode()
    fd = os.open(record, os.O_WRONLY | os.O_TRUNC)  # same inode, larger: only the checksums tell
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    fresh = ma.RecordReader(index=store)
    page = fresh.read_messages(record, None, 5)
    assert page.total == 110 and ids(page) == [id_at(n) for n in range(129, 124, -1)]
    assert fresh.parsed_lines == 110


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage", "foreign"])
def test_a_damaged_or_foreign_index_is_ignored(record: Path, store: IndexStore, tmp_path: Path, damage: str) -> None:
    write(record, range(0, 60))
    ma.RecordReader(index=store).read_messages(record)
    index_file = store.file_for(str(record))
    data = index_file.read_bytes()
    if damage == "flip":
        index_file.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif damage == "truncate":
        index_file.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        index_file.write_bytes(b"")
    elif damage == "garbage":
        index_file.write_bytes(os.urandom(len(data)))
    else:  # another record's index under this record's name
        other = write(tmp_path / "bot" / "other" / "conversation.jsonl", range(500, 560))
        ma.RecordReader(index=store).read_messages(other)
        index_file.write_bytes(store.file_for(str(other)).read_bytes())
    fresh = ma.RecordReader(index=store)
    page = fresh.read_messages(record, None, 3)
    assert page.total == 60 and ids(page) == [id_at(59), id_at(58), id_at(57)]
    assert fresh.parsed_lines == 60
    assert ma.RecordReader(index=store).read_messages(record).total == 60  # rewritten whole, then trusted


def test_an_index_that_misplaces_lines_is_dropped_and_the_record_read_whole(record: Path, store: IndexStore) -> None:
    """Offsets that passed the identity check but do not fit the file (a rewrite it could not see)."""
    write(record, range(0, 50))
    ma.RecordReader(index=store).read_messages(record)
    index = store.load(str(record))
    assert index is not None
    for n in range(len(index.starts)):
        index.starts[n] += 3  # every line now starts mid-line
    index.saved_size = 0
    assert store.save(index)
    fresh = ma.RecordReader(index=store)
    page = fresh.read_messages(record, None, 4)
    assert ids(page) == [id_at(n) for n in range(49, 45, -1)]
    assert fresh.parsed_lines == 50
    assert [m["id"] for m in ma.RecordReader(index=store).messages(record)][:2] == [id_at(0), id_at(1)]


def test_the_index_keeps_the_header_and_skipped_lines(record: Path, store: IndexStore) -> None:
    header = {"capsule": "c", "created_ms": 1, "type": "murmur.record",
              "truncated": {"at_ms": 2, "dropped": 3, "last_dropped_id": id_at(2), "oldest_surviving_id": id_at(3)}}
    write(record, range(3, 30), header=header)
    append(record, range(0, 0))
    with record.open("a", encoding="utf-8") as f:
        f.write("not json\n")
    expected = ma.RecordReader(index=store).read_messages(record)
    fresh = ma.RecordReader(index=store)
    page = fresh.read_messages(record)
    assert fresh.parsed_lines == 0
    assert page == expected
    assert [(r.kind, r.line) for r in page.reports] == [("not_a_message", 29), ("truncated_record", 1)]
    assert fresh.header(record) == header


def test_small_records_are_not_persisted_by_default(record: Path, tmp_path: Path) -> None:
    write(record, range(0, 10))
    default = IndexStore(tmp_path / "cache")
    ma.RecordReader(index=default).read_messages(record)
    assert not default.file_for(str(record)).exists()


def test_growth_is_persisted_geometrically(record: Path, store: IndexStore) -> None:
    write(record, range(0, 100))
    reader = ma.RecordReader(index=store)
    reader.read_messages(record)
    saved = store.file_for(str(record)).stat().st_mtime_ns, store.file_for(str(record)).stat().st_size
    append(record, range(100, 101))  # 1% growth: not worth rewriting the index
    reader.read_messages(record)
    assert (store.file_for(str(record)).stat().st_mtime_ns, store.file_for(str(record)).stat().st_size) == saved
    append(record, range(101, 130))  # 30%: rewritten
    reader.read_messages(record)
    assert store.file_for(str(record)).stat().st_size > saved[1]
    fresh = ma.RecordReader(index=store)
    assert fresh.read_messages(record).total == 130 and fresh.parsed_lines == 0


def test_index_writes_are_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "c" / "x.idx"
    cache.write_atomic(target, b"old")

    def fail(src: object, dst: object, **dir_fds: object) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        cache.write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.idx"]  # no partial file left


def test_an_unwritable_cache_folder_costs_only_the_index(record: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    reader = ma.RecordReader(index=IndexStore(blocker / "sub", min_bytes=0))
    write(record, range(0, 5))
    assert reader.read_messages(record).total == 5


def test_a_fresh_process_serves_the_first_page_from_the_index(record: Path, tmp_path: Path) -> None:
    """The default reader, the default cache folder, a big record, two processes."""
    write(record, range(0, 4000))
    assert record.stat().st_size > 1 << 20
    env = {**os.environ, "MURMUR_ANALYSIS_CACHE": str(tmp_path / "user-cache")}
    script = (
        "import json, sys, murmur_analysis as ma\n"
        "from murmur_analysis.sources.murmur.reader import _DEFAULT_READER as r\n"
        "p = ma.read_messages(sys.argv[1], limit=5)\n"
        "print(json.dumps([r.parsed_lines, p.total, [m.id for m in p.messages]]))\n"
    )

    def run() -> list[object]:
        out = subprocess.run([sys.executable, "-c", script, str(record)], env=env, capture_output=True, text=True,
                             check=True).stdout
        return json.loads(out)  # type: ignore[no-any-return]

    newest = [id_at(n) for n in range(3999, 3994, -1)]
    assert run() == [4000, 4000, newest]
    assert run() == [0, 4000, newest]
    append(record, range(4000, 4003))
    assert run() == [3, 4003, [id_at(n) for n in range(4002, 3997, -1)]]


# ------------------------------------------------------------------------------ an index grows with message lines


def index_size(store: IndexStore, path: Path) -> int:
    index_file = store.file_for(str(path))
    return index_file.stat().st_size if index_file.exists() else 0


def test_junk_lines_do_not_grow_the_index(record: Path, store: IndexStore) -> None:
    rows = []
    for n in range(40):
        rows += [line(message(n))] + ["x"] * 2500  # 100,000 lines that are not messages
    write_lines(record, rows)
    expected = unindexed(record, 9)
    first = ma.RecordReader(index=store)
    assert walk_pages(first, record, 9) == expected
    assert 0 < index_size(store, record) <= 64 * 40 + 4096  # bounded by the messages, not the lines
    warm = ma.RecordReader(index=store)
    assert walk_pages(warm, record, 9) == expected
    assert warm.parsed_lines == 0
    assert len(expected[0].reports) == 100_000  # every skipped line is still reported, once


def test_junk_lines_between_blank_lines_do_not_grow_the_index(record: Path, store: IndexStore) -> None:
    rows = []
    for n in range(40):
        rows += [line(message(n))] + ["x", ""] * 1000  # 40,000 runs of one skipped line each
    write_lines(record, rows)
    expected = unindexed(record, 9)
    assert walk_pages(ma.RecordReader(index=store), record, 9) == expected
    assert index_size(store, record) <= 64 * 40 + 4096
    assert walk_pages(ma.RecordReader(index=store), record, 9) == expected


kinds = st.sampled_from(["message", "message", "junk", "blank", "spaces", "array", "role-number"])


def record_line(kind: str, n: int) -> str:
    return {"message": line(message(n)), "junk": "not json", "blank": "", "spaces": "  ", "array": "[1]",
            "role-number": '{"role":1}'}[kind]


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=st.lists(kinds, max_size=60),
    grown=st.lists(kinds, max_size=20),
    header=st.booleans(),
    crlf=st.booleans(),
    tail=st.sampled_from(["", '{"role":"user","id":"t"}', "junk", "{"]),
    limit=st.integers(min_value=1, max_value=9),
)
def test_an_index_of_any_record_serves_its_pages_and_is_bounded_by_its_messages(
    tmp_path_factory: Any, first: list[str], grown: list[str], header: bool, crlf: bool, tail: str, limit: int
) -> None:
    tmp = tmp_path_factory.mktemp("kinds")
    end = "\r\n" if crlf else "\n"
    rows = ([line({"capsule": "c", "created_ms": 1, "type": "murmur.record"})] if header else [])
    rows += [record_line(kind, n) for n, kind in enumerate(first)]
    path = tmp / "r" / "c" / "conversation.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(("".join(r + end for r in rows) + tail).encode())
    store = IndexStore(tmp / "idx", min_bytes=0)
    for _ in range(2):  # the reader that writes the index, then one that reads it
        expected = unindexed(path, limit)
        reader = ma.RecordReader(index=store)
        assert walk_pages(reader, path, limit) == expected
        messages = expected[0].total
        assert index_size(store, path) <= 48 * messages + 16 * RUN_SLACK + 2048
        with path.open("ab") as f:  # grown (a tail left unterminated is continued)
            f.write("".join(record_line(kind, 100 + n) + end for n, kind in enumerate(grown)).encode())
    hypothesis.note(repr(path.read_bytes()))


# ------------------------------------------------------------------------------ the cache folder and its CLI


def test_cache_folder_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(cache.ENV, str(tmp_path / "here"))
    assert cache.cache_dir() == tmp_path / "here"
    monkeypatch.delenv(cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache.cache_dir() == tmp_path / "xdg" / "murmur-analysis"


def test_cache_cli_path_info_and_clear(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, record: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "user-cache"
    monkeypatch.setenv(cache.ENV, str(root))
    (root).mkdir()
    (root / "keep.txt").write_text("not ours")
    write(record, range(0, 20))
    ma.RecordReader(index=IndexStore(min_bytes=0)).read_messages(record)

    assert main(["cache", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(root)
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "indexes  1" in out and str(root) in out
    assert main(["cache", "clear"]) == 0
    assert "removed 2 file(s)" in capsys.readouterr().out  # the index and the key that signed it
    assert cache.cache_info().indexes == 0 and not (root / cache.INDEX_DIR).exists()
    assert (root / "keep.txt").read_text() == "not ours"  # only the toolkit's own files go
    fresh = ma.RecordReader(index=IndexStore(min_bytes=0))
    assert fresh.read_messages(record).total == 20 and fresh.parsed_lines == 20


# ------------------------------------------------------------------------------ what a long-lived reader remembers


def test_cursor_shifted_survives_eviction_and_says_the_walk_repeats(tmp_path: Path) -> None:
    path = write(tmp_path / "a" / "c" / "conversation.jsonl", range(1, 7))
    other = write(tmp_path / "b" / "c" / "conversation.jsonl", range(1, 3))
    reader = ma.RecordReader(max_records=1, index=None)
    first = reader.read_messages(path, None, 2)
    reader.read_messages(other)  # evicts the first record's offsets
    header = {"capsule": "c", "created_ms": 1, "type": "murmur.record",
              "truncated": {"at_ms": 2, "dropped": 2, "last_dropped_id": id_at(2), "oldest_surviving_id": id_at(3)}}
    rename_over(path, range(3, 7), header=header)
    page = reader.read_messages(path, first.next_cursor, 2)
    [shifted] = [r for r in page.reports if r.kind == "cursor_shifted"]
    assert "dropped 2 more message(s)" in shifted.detail
    assert "again" in shifted.detail and "skip" not in shifted.detail
    assert ids(page) == [id_at(6), id_at(5)]  # served as murmur serves it: ids the walk already returned
    assert [r.kind for r in reader.read_messages(path, page.next_cursor, 2).reports] == []


def test_a_long_lived_reader_keeps_bounded_memory(tmp_path: Path) -> None:
    reader = ma.RecordReader(index=None, max_diagnostics=5, max_remembered=3)
    paths = []
    for n in range(10):
        path = tmp_path / f"r{n}" / "c" / "conversation.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(line(message(1)) + "\nbad\n", encoding="utf-8")
        paths.append(path)
        assert [r.kind for r in reader.read_messages(path).reports] == ["not_a_message"]
    assert len(reader.diagnostics) == 5
    assert [d.path for d in reader.diagnostics] == [str(p) for p in paths[5:]]
    assert reader.read_messages(paths[-1]).reports == ()  # still remembered
    assert [r.kind for r in reader.read_messages(paths[0]).reports] == ["not_a_message"]  # forgotten, said again


# ------------------------------------------------------------------------------ reading ahead


def test_a_record_read_in_chunks_ahead_gives_the_index_of_one_read(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from murmur_analysis.sources.murmur import reader as murmur_reader

    write(record, range(40))
    whole = murmur_reader.RecordReader().read_messages(record, limit=100)
    monkeypatch.setattr(murmur_reader, "_CHUNK", 700)  # a few lines a chunk: each next one read ahead
    reads: list[int] = []
    filled: list[object] = []  # the buffers the chunks are read into (held, so no two share an id)
    preadv = os.preadv

    def counted(fd: int, buffers: list[memoryview], offset: int) -> int:
        reads.append(offset)
        filled.extend(b.obj for b in buffers)
        return preadv(fd, buffers, offset)

    monkeypatch.setattr(murmur_reader.os, "preadv", counted)
    chunked = murmur_reader.RecordReader().read_messages(record, limit=100)
    assert len(reads) > 10
    assert reads == sorted(reads)
    assert len({id(b) for b in filled}) == 2  # two buffers take turns, whatever the number of chunks
    assert (chunked.total, ids(chunked)) == (whole.total, ids(whole)) == (40, [id_at(n) for n in reversed(range(40))])


@pytest.mark.parametrize("failing", [1, 3])
def test_a_failed_read_ahead_fails_the_page_as_a_failed_first_read_does(
    record: Path, monkeypatch: pytest.MonkeyPatch, failing: int
) -> None:
    import errno
    import threading

    from murmur_analysis.sources.murmur import reader as murmur_reader

    write(record, range(40))
    monkeypatch.setattr(murmur_reader, "_CHUNK", 700)
    calls = 0
    preadv = os.preadv

    def failing_read(fd: int, buffers: list[memoryview], offset: int) -> int:
        nonlocal calls
        calls += 1
        if calls == failing:
            raise OSError(errno.EIO, "Input/output error")
        return preadv(fd, buffers, offset)

    monkeypatch.setattr(murmur_reader.os, "preadv", failing_read)
    threads = threading.active_count()
    with pytest.raises(ma.ReadMessagesError, match="Input/output error") as failed:
        murmur_reader.RecordReader().read_messages(record, limit=100)
    assert failed.value.code == "unavailable"
    assert threading.active_count() == threads  # no read left running


def _coherent_by_hand(starts: list[int], ends: list[int], runs: list[tuple[int, int]], size: int) -> bool:
    """The rule a persisted index's offsets and runs are held to, written out plainly."""
    spans = list(zip(starts, ends, strict=True))
    ordered = all(s <= e for s, e in spans) and all(b[0] > a[1] for a, b in itertools.pairwise(spans))
    within = not spans or (spans[0][0] >= 0 and spans[-1][1] <= size)
    lines_ok = all(first >= 1 and n >= 1 for first, n in runs) and all(
        b[0] > a[0] + a[1] for a, b in itertools.pairwise(runs))
    return ordered and within and lines_ok


@settings(max_examples=300)
@given(spans=st.lists(st.tuples(st.integers(-5, 60), st.integers(-5, 60)), max_size=8),
       runs=st.lists(st.tuples(st.integers(-2, 30), st.integers(-2, 10)), max_size=6),
       size=st.integers(0, 70))
def test_an_index_is_coherent_exactly_when_its_offsets_and_runs_can_describe_the_file(
    spans: list[tuple[int, int]], runs: list[tuple[int, int]], size: int
) -> None:
    from array import array

    from murmur_analysis.sources.murmur.index import _coherent

    starts, ends = array("q", [s for s, _ in spans]), array("q", [e for _, e in spans])
    skipped = array("q", [v for run in runs for v in run])
    n = {"parsed_to": size, "size": size, "tail_start": len(spans), "count": len(spans)}
    assert _coherent(starts, ends, skipped, n) == _coherent_by_hand(list(starts), list(ends), runs, size)
