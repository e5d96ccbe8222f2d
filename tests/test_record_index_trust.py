"""The persisted line index is data, not trust.

* A cache file is read only as a bounded regular file reached without a link: a FIFO there
  never blocks a page, a link to ``/dev/zero`` or a huge file never fills memory, a link out of
  the cache folder is not followed.
* No index content changes a page: one forged without the cache folder's key is ignored, and
  every line served from any index is checked against the record's bytes.

Every page is compared with the page a reader without any index serves.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from murmur_lines import id_at, line, message
from murmur_pages import unindexed, walk_pages, write_lines

import murmur_analysis as ma
from murmur_analysis.sources.murmur.index import IndexStore

MAGIC = b"murmur-analysis line index\n"

# --------------------------------------------------------------------------------------- helpers


def nested(n: int) -> dict[str, Any]:
    """A message holding, in a field of its own, an object that would read as another message."""
    value = message(n)
    value["meta"] = {"content": "not in the record", "id": f"forged_{n}", "role": "assistant"}
    return value


def forged(n: int) -> bytes:
    """The text of the object inside line ``n`` of a record of :func:`nested` messages."""
    return line(nested(n)["meta"]).encode()


def forge(index_file: Path, change: Callable[[dict[str, Any], array[int], array[int]], None]) -> None:
    """Rewrite an index file's offsets as someone without the key would: the format is known, its checksum too."""
    body = index_file.read_bytes()[:-32]
    at = len(MAGIC)
    length = int.from_bytes(body[at : at + 8], "little")
    at += 8
    meta = json.loads(body[at : at + length])
    at += length
    count = meta["count"]
    starts, ends = array("q"), array("q")
    starts.frombytes(body[at : at + 8 * count])
    ends.frombytes(body[at + 8 * count : at + 16 * count])
    rest = body[at + 16 * count :]
    change(meta, starts, ends)
    encoded = json.dumps(meta).encode()
    body = MAGIC + len(encoded).to_bytes(8, "little") + encoded + starts.tobytes() + ends.tobytes() + rest
    index_file.write_bytes(body + hashlib.blake2b(body, digest_size=32).digest())


def span(path: Path, text: bytes, n: int = 0) -> tuple[int, int]:
    """The byte offsets of the ``n``-th occurrence of ``text`` in the file."""
    data = path.read_bytes()
    at = -1
    for _ in range(n + 1):
        at = data.index(text, at + 1)
    return at, at + len(text)


@pytest.fixture
def store(tmp_path: Path) -> IndexStore:
    return IndexStore(tmp_path / "cache" / "record-index", min_bytes=0)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "bot" / "ctx" / "conversation.jsonl"


# ------------------------------------------------------------------- a cache file is a bounded regular file

CHILD = """
import json, sys
import murmur_analysis as ma
from murmur_analysis.sources.murmur.index import IndexStore
reader = ma.RecordReader(index=IndexStore(sys.argv[2], min_bytes=0))
page = reader.read_messages(sys.argv[1], None, 5)
print(json.dumps([reader.parsed_lines, page.total, [m.id for m in page.messages], page.next_cursor]))
"""


def page_in_a_child(record_path: Path, folder: Path) -> list[Any]:
    """``[parsed lines, total, ids, next cursor]`` of the newest page, read by a fresh process.

    The process gets 60 seconds and 3 GiB of address space: a read that blocks or fills memory
    fails the test instead of hanging it or the machine.
    """

    def bounded() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    done = subprocess.run([sys.executable, "-c", CHILD, str(record_path), str(folder)], capture_output=True,
                          text=True, timeout=60, preexec_fn=bounded, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("thing", ["fifo", "dev-zero", "huge", "link-out", "linked-folder"])
def test_what_stands_at_an_index_path_never_blocks_fills_memory_or_is_followed(
    path: Path, store: IndexStore, tmp_path: Path, thing: str
) -> None:
    write_lines(path, [line(message(n)) for n in range(300)])
    newest = [id_at(n) for n in range(299, 294, -1)]
    assert page_in_a_child(path, store.folder) == [300, 300, newest, "mc_295"]
    assert page_in_a_child(path, store.folder) == [0, 300, newest, "mc_295"]  # the index is used
    index_file = store.file_for(str(path))
    if thing == "fifo":
        index_file.unlink()
        os.mkfifo(index_file)
    elif thing == "dev-zero":
        index_file.unlink()
        index_file.symlink_to("/dev/zero")
    elif thing == "huge":  # the good index, then a sparse terabyte
        with index_file.open("ab") as f:
            f.truncate(index_file.stat().st_size + (1 << 40))
    elif thing == "link-out":  # a good index, outside the cache folder
        outside = tmp_path / "elsewhere.idx"
        index_file.rename(outside)
        index_file.symlink_to(outside)
    else:  # the folder itself is a link to a folder holding the good index
        elsewhere = tmp_path / "elsewhere"
        store.folder.rename(elsewhere)
        store.folder.symlink_to(elsewhere)
    assert page_in_a_child(path, store.folder) == [300, 300, newest, "mc_295"]


def test_a_key_others_may_read_is_not_trusted_and_is_made_anew(path: Path, store: IndexStore) -> None:
    write_lines(path, [line(message(n)) for n in range(30)])
    expected = unindexed(path)
    ma.RecordReader(index=store).read_messages(path)
    key = store.folder / "key"
    assert key.stat().st_mode & 0o777 == 0o600
    old = key.read_bytes()
    key.chmod(0o644)  # anyone could have read it, and signed an index with it
    reader = ma.RecordReader(index=store)
    assert walk_pages(reader, path, 7) == expected
    assert reader.parsed_lines == 30  # no index signed with it is used ...
    assert key.read_bytes() != old and key.stat().st_mode & 0o777 == 0o600  # ... and the index is signed anew
    again = ma.RecordReader(index=store)
    assert walk_pages(again, path, 7) == expected and again.parsed_lines == 0


# ------------------------------------------------------------------------- no index content changes a page


def test_an_index_forged_without_the_key_cannot_serve_a_message_that_is_not_in_the_record(
    path: Path, store: IndexStore
) -> None:
    write_lines(path, [line(nested(n)) for n in range(40)])
    expected = unindexed(path)
    ma.RecordReader(index=store).read_messages(path)
    start, end = span(path, forged(39))

    def point_at_the_nested_object(meta: dict[str, Any], starts: array[int], ends: array[int]) -> None:
        starts[-1], ends[-1] = start, end

    forge(store.file_for(str(path)), point_at_the_nested_object)
    reader = ma.RecordReader(index=store)
    pages = walk_pages(reader, path, 7)
    assert [m.id for m in pages[0].messages][:2] == [id_at(39), id_at(38)]
    assert pages == expected
    assert reader.parsed_lines == 40  # the forged index was not used


def test_an_index_forged_without_the_key_cannot_change_the_total_or_the_cursor(path: Path, store: IndexStore) -> None:
    write_lines(path, [line(message(n)) for n in range(40)])
    expected = unindexed(path)
    ma.RecordReader(index=store).read_messages(path)

    def drop_the_oldest(meta: dict[str, Any], starts: array[int], ends: array[int]) -> None:
        del starts[0], ends[0]
        meta["count"] -= 1
        meta["tail_start"] -= 1

    forge(store.file_for(str(path)), drop_the_oldest)
    reader = ma.RecordReader(index=store)
    pages = walk_pages(reader, path, 7)
    assert pages[0].total == 40 and pages[0].next_cursor == "mc_33"
    assert pages == expected


def test_an_index_signed_with_the_key_still_serves_only_the_records_lines(path: Path, store: IndexStore) -> None:
    """An index whose offsets are wrong though it is signed (stale, or written by someone holding the key)."""
    write_lines(path, [line(nested(n)) for n in range(40)])
    expected = unindexed(path)
    ma.RecordReader(index=store).read_messages(path)
    index = store.load(str(path))
    assert index is not None
    index.starts[-1], index.ends[-1] = span(path, forged(39))
    index.saved_size = 0
    assert store.save(index)
    reader = ma.RecordReader(index=store)
    assert walk_pages(reader, path, 7) == expected
    assert reader.parsed_lines == 40  # dropped once it did not fit, the record parsed whole
    again = ma.RecordReader(index=store)
    assert walk_pages(again, path, 7) == expected and again.parsed_lines == 0  # and its fresh index kept


def test_an_index_signed_with_the_key_that_hides_a_message_of_a_page_is_dropped(path: Path, store: IndexStore) -> None:
    write_lines(path, [line(message(n)) for n in range(40)])
    expected = unindexed(path)
    ma.RecordReader(index=store).read_messages(path)
    index = store.load(str(path))
    assert index is not None
    del index.starts[37], index.ends[37]  # message 37 sits between two messages of the newest page
    index.tail_start -= 1
    index.saved_size = 0
    assert store.save(index)
    assert walk_pages(ma.RecordReader(index=store), path, 7) == expected


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_index_file_without_the_key_serves_the_records_pages(tmp_path_factory: Any, data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("forged")
    path = write_lines(tmp / "r" / "c" / "conversation.jsonl",
                       [line(nested(n)) if n % 3 else "junk" for n in range(30)])
    store = IndexStore(tmp / "idx", min_bytes=0)
    ma.RecordReader(index=store).read_messages(path)
    record_bytes = path.read_bytes()
    places = [i for i, b in enumerate(record_bytes) if b in b'{}\n"'] + [0, len(record_bytes)]
    offsets = st.sampled_from(places) | st.integers(min_value=-2, max_value=len(record_bytes) + 2)

    def change(meta: dict[str, Any], starts: array[int], ends: array[int]) -> None:
        for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
            k = data.draw(st.integers(min_value=0, max_value=len(starts) - 1))
            starts[k], ends[k] = data.draw(offsets), data.draw(offsets)
        if data.draw(st.booleans()):
            k = data.draw(st.integers(min_value=0, max_value=len(starts) - 1))
            del starts[k], ends[k]
            meta["count"] -= 1
            meta["tail_start"] = min(meta["tail_start"], meta["count"])

    forge(store.file_for(str(path)), change)
    limit = data.draw(st.integers(min_value=1, max_value=12))
    assert walk_pages(ma.RecordReader(index=store), path, limit) == unindexed(path, limit)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_offsets_a_signed_index_holds_serve_only_the_records_lines(tmp_path_factory: Any,
                                                                         data: st.DataObject) -> None:
    tmp = tmp_path_factory.mktemp("signed")
    path = write_lines(tmp / "r" / "c" / "conversation.jsonl",
                       [line(nested(n)) if n % 3 else "junk" for n in range(30)])
    store = IndexStore(tmp / "idx", min_bytes=0)
    ma.RecordReader(index=store).read_messages(path)
    index = store.load(str(path))
    assert index is not None
    record_bytes = path.read_bytes()
    places = [i for i, b in enumerate(record_bytes) if b in b'{}\n"'] + [0, len(record_bytes)]
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        k = data.draw(st.integers(min_value=0, max_value=len(index.starts) - 1))
        index.starts[k], index.ends[k] = data.draw(st.sampled_from(places)), data.draw(st.sampled_from(places))
    index.saved_size = 0
    assert store.save(index)
    limit = data.draw(st.integers(min_value=1, max_value=12))
    assert walk_pages(ma.RecordReader(index=store), path, limit) == unindexed(path, limit)
