"""Mirrors of murmur's own paging tests (crates/capsule-runtime/src/conversation.rs)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from murmur_lines import append, id_at, line, message, write_record

import murmur_analysis as ma
from murmur_analysis.sources.murmur.reader import RecordReader


def record(tmp_path: Path) -> Path:
    return tmp_path / "conversations" / "capsule" / "ctx_1" / "conversation.jsonl"


def walk_ids(path: Path, limit: int, reader: RecordReader) -> tuple[list[str | None], list[int], int]:
    seen: list[str | None] = []
    totals: list[int] = []
    pages = 0
    cursor = None
    while True:
        page = reader.read_messages(path, cursor, limit)
        pages += 1
        totals.append(page.total)
        seen.extend(m.id for m in page.messages)
        if page.next_cursor is None:
            return seen, totals, pages
        cursor = page.next_cursor


def test_paging_walks_the_record_newest_first_without_repeating_a_message(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n, "user", f"m{n}") for n in range(1, 6)])
    seen: list[str | None] = []
    cursor = None
    while True:
        page = ma.read_messages(path, cursor, 2, reader=RecordReader())  # a fresh reader per page, as upstream
        assert page.total == 5
        seen.extend(m.id for m in page.messages)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [id_at(n) for n in range(5, 0, -1)]


def test_limit_is_clamped_at_both_ends(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 121)])
    assert len(ma.read_messages(path, None, 0, reader=RecordReader()).messages) == 1
    assert len(ma.read_messages(path, None, 2**32 - 1, reader=RecordReader()).messages) == 100
    assert len(ma.read_messages(path, None, -5, reader=RecordReader()).messages) == 1


@pytest.mark.parametrize("cursor", ["7", "mc_", "mc_nine", "mc_9", "cur_1", "mc_-1", "mc_ 1", "mc_1 ", "MC_1"])
def test_a_foreign_cursor_is_refused(tmp_path: Path, cursor: str) -> None:
    path = write_record(record(tmp_path), [message(1)])
    with pytest.raises(ma.ReadMessagesError) as err:
        ma.read_messages(path, cursor, 10, reader=RecordReader())
    assert str(err.value) == "invalid-cursor"
    assert err.value.code == "invalid-cursor"


def test_cursor_numbers_parse_as_rust_usize(tmp_path: Path) -> None:
    # Rust's usize parse takes one leading '+' and leading zeros; the host accepts what it accepts.
    path = write_record(record(tmp_path), [message(n) for n in range(1, 4)])
    reader = RecordReader()
    assert [m.id for m in reader.read_messages(path, "mc_+2", 10).messages] == [id_at(2), id_at(1)]
    assert [m.id for m in reader.read_messages(path, "mc_002", 10).messages] == [id_at(2), id_at(1)]
    assert reader.read_messages(path, "mc_0", 10).messages == ()
    assert reader.read_messages(path, "mc_3", 10).total == 3
    with pytest.raises(ma.ReadMessagesError, match="invalid-cursor"):
        reader.read_messages(path, "mc_" + "9" * 30, 10)


def test_an_absent_record_is_an_empty_page(tmp_path: Path) -> None:
    for path in (None, record(tmp_path)):
        page = ma.read_messages(path, None, 10, reader=RecordReader())
        assert page.messages == ()
        assert page.next_cursor is None
        assert page.total == 0


def test_not_granted_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    with pytest.raises(ma.ReadMessagesError) as err:
        ma.read_messages(record(tmp_path), granted=False)
    assert str(err.value) == "not-granted"


def test_an_unreadable_record_is_unavailable_with_a_reason(tmp_path: Path) -> None:
    path = record(tmp_path)
    path.mkdir(parents=True)  # a folder where the record should be
    with pytest.raises(ma.ReadMessagesError) as err:
        ma.read_messages(path, reader=RecordReader())
    assert str(err.value).startswith("unavailable: ")
    assert err.value.code == "unavailable"


def test_a_fifo_named_as_the_record_is_unavailable_and_never_blocks(tmp_path: Path) -> None:
    path = record(tmp_path)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)  # no writer ever opens it: a blocking open or read would hang here

    class Hung(BaseException):  # not an OSError: nothing on the way may take it for a read error
        pass

    def hung(signum: int, frame: object) -> None:
        raise Hung("read_messages blocked on a FIFO")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(5)  # a regression fails after 5 s instead of hanging the run
    try:
        with pytest.raises(ma.ReadMessagesError) as err:
            ma.read_messages(path, reader=RecordReader())
        with pytest.raises(ma.ReadMessagesError):
            RecordReader().messages(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert str(err.value) == "unavailable: a FIFO, not a regular file"


def test_invalid_utf8_is_unavailable_as_a_whole_string_read_is(tmp_path: Path) -> None:
    path = record(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(line(message(1)).encode() + b"\n\xff\xfe\n")
    with pytest.raises(ma.ReadMessagesError) as err:
        ma.read_messages(path, reader=RecordReader())
    assert str(err.value) == "unavailable: stream did not contain valid UTF-8"


def test_a_malformed_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 4)], tail='{"role":"user"')
    reader = RecordReader()
    page = reader.read_messages(path, None, 10)
    assert page.total == 3
    assert len(page.messages) == 3
    assert [(r.line, r.kind) for r in page.reports] == [(4, "partial_line")]
    assert "line 4 is not a message" in page.reports[0].detail


def test_a_malformed_line_is_reported_once_for_a_whole_walk(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 11)], tail='{"role":"user"')
    reader = RecordReader()
    cursor = None
    pages = 0
    reports = []
    while True:
        page = reader.read_messages(path, cursor, 2)
        pages += 1
        reports.extend(page.reports)
        assert page.total == 10
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 5
    assert [r.line for r in reports] == [11]
    assert [r.line for r in reader.diagnostics] == [11]


def test_every_skipped_line_is_reported_with_its_number(tmp_path: Path) -> None:
    path = record(tmp_path)
    path.parent.mkdir(parents=True)
    rows = [line(message(1)), "", "   ", "[1,2]", '{"role":5}', "not json", line(message(2)), '{"id":"x"}']
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    page = ma.read_messages(path, reader=RecordReader())
    assert page.total == 2
    assert [(r.line, r.kind) for r in page.reports] == [
        (4, "not_a_message"),
        (5, "not_a_message"),
        (6, "not_a_message"),
        (8, "not_a_message"),
    ]


def test_a_header_line_changes_neither_the_messages_nor_total(tmp_path: Path) -> None:
    header = {"capsule": "capsule", "created_ms": 1756400000000, "type": "murmur.record"}
    path = write_record(record(tmp_path), [header, message(1, "user", "one"), message(2, "assistant", "two")])
    page = ma.read_messages(path, None, 100, reader=RecordReader())
    assert page.total == 2
    assert len(page.messages) == 2
    assert page.reports == ()  # an expected header is not a malformed line


def test_a_truncated_record_is_named_with_how_many_were_dropped(tmp_path: Path) -> None:
    header = {
        "capsule": "someone-else",
        "created_ms": 1756400000000,
        "truncated": {
            "at_ms": 1756400000001, "dropped": 5, "last_dropped_id": id_at(5), "oldest_surviving_id": id_at(6),
        },
        "type": "murmur.record",
    }
    path = write_record(record(tmp_path), [header, message(6), message(7)])
    reader = RecordReader()
    page = reader.read_messages(path)
    assert page.total == 2
    [report] = page.reports
    assert report.kind == "truncated_record" and report.line == 1
    assert "dropped 5 message" in report.detail
    assert reader.header(path) == header
    assert reader.read_messages(path).reports == ()  # once per reader
    diagnostics = ma.load(path).diagnostics
    [detail] = diagnostics.loc[diagnostics["kind"] == "truncated_record", "detail"]
    assert detail == report.detail  # paging and loading word the truncation alike


def test_a_paging_loop_reads_the_record_once_and_a_grown_record_once_more(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 251)])
    reader = RecordReader()
    seen, totals, pages = walk_ids(path, 25, reader)
    assert pages == 10
    assert seen == [id_at(n) for n in range(250, 0, -1)]
    assert reader.reads == 1

    append(path, [message(n) for n in range(251, 261)])
    seen, totals, pages = walk_ids(path, 25, reader)
    assert totals[0] == 260
    assert seen == [id_at(n) for n in range(260, 0, -1)]
    assert reader.reads == 2


def test_appends_mid_walk_leave_the_walk_intact(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 251)])
    reader = RecordReader()
    seen: list[str | None] = []
    totals = []
    cursor = None
    while True:
        page = reader.read_messages(path, cursor, 25)
        totals.append(page.total)
        seen.extend(m.id for m in page.messages)
        if len(totals) == 3:
            append(path, [message(n) for n in range(251, 261)])
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert totals[0] == 250 and totals[-1] == 260
    assert seen == [id_at(n) for n in range(250, 0, -1)]


def test_page_items_carry_the_lifecycle_encoding(tmp_path: Path) -> None:
    values = [
        {"content": [{"text": "Summarize.", "type": "text"}], "id": id_at(1), "role": "user", "source_id": "src-9"},
        {
            "content": [
                {"text": "Looking.", "type": "text"},
                {"id": "call_1", "input": {"path": "."}, "name": "ls", "type": "tool_call"},
            ],
            "id": id_at(2),
            "role": "assistant",
        },
        {"content": [{"text": "a.txt\nb.txt", "type": "text"}], "id": id_at(3), "is_error": False, "role": "tool",
         "tool_call_id": "call_1"},
        {"id": 7, "role": "assistant"},
    ]
    path = write_record(record(tmp_path), values)
    newest, tool, assistant, user = ma.read_messages(path, reader=RecordReader()).messages
    assert user.role == "user" and user.id == id_at(1) and user.source_id == "src-9"
    assert user.content == '[{"text":"Summarize.","type":"text"}]'
    assert assistant.content == (
        '[{"text":"Looking.","type":"text"},{"id":"call_1","input":{"path":"."},"name":"ls","type":"tool_call"}]'
    )
    assert tool.content == (
        '{"__murmur_tool_msg__":true,"body":[{"text":"a.txt\\nb.txt","type":"text"}],'
        '"is_error":false,"tool_call_id":"call_1"}'
    )
    # A message with no content lowers to an empty string, and a non-string id to none.
    assert newest.content == "" and newest.id is None


def test_keys_are_sorted_in_content_whatever_order_the_line_used(tmp_path: Path) -> None:
    path = record(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"role":"user","content":[{"type":"text","text":"hi","a":1}],"id":"msg_1"}\n', encoding="utf-8")
    [m] = ma.read_messages(path, reader=RecordReader()).messages
    assert m.content == '[{"a":1,"text":"hi","type":"text"}]'


def test_a_tool_message_without_call_fields_gets_null_envelope_fields(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [{"content": [], "role": "tool"}])
    [m] = ma.read_messages(path, reader=RecordReader()).messages
    assert m.content == '{"__murmur_tool_msg__":true,"body":[],"is_error":null,"tool_call_id":null}'


def test_crlf_lines_and_a_record_rewritten_by_retention(tmp_path: Path) -> None:
    path = record(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\r\n".join(line(message(n)).encode() for n in range(1, 4)) + b"\r\n")
    reader = RecordReader()
    assert reader.read_messages(path).total == 3
    # An atomic rewrite (a new file renamed over the old) is parsed again from the start.
    replacement = path.with_suffix(".tmp")
    write_record(replacement, [message(3)])
    replacement.replace(path)
    assert [m.id for m in reader.read_messages(path).messages] == [id_at(3)]
    assert reader.reads == 2


def test_walk_pages_to_the_end(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 8)])
    assert [m.id for m in ma.walk(path, limit=3)] == [id_at(n) for n in range(7, 0, -1)]
    assert list(ma.walk(None)) == []


def test_lines_serde_json_refuses_are_not_messages(tmp_path: Path) -> None:
    # A lone surrogate escape, a number out of the double range and a byte-order mark: serde_json
    # refuses each, so murmur's host skips them; an integer wider than 64 bits reads as a double,
    # written back the way serde_json writes a double (no "+" in the exponent).
    path = record(tmp_path)
    path.parent.mkdir(parents=True)
    rows = [
        line(message(1)),
        '{"content":[{"text":"\\ud800","type":"text"}],"id":"msg_2","role":"user"}',
        '{"content":[1e400],"id":"msg_3","role":"user"}',
        "\ufeff" + line(message(4)),
        '{"content":[123456789012345678901234567890],"id":"msg_5","role":"user"}',
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    page = ma.read_messages(path, reader=RecordReader())
    assert page.total == 2
    assert [r.line for r in page.reports] == [2, 3, 4]
    assert page.messages[0].content == "[1.2345678901234568e29]"  # serde writes no "+" in an exponent


def test_a_walk_across_a_retention_rewrite_says_its_cursor_moved(tmp_path: Path) -> None:
    path = write_record(record(tmp_path), [message(n) for n in range(1, 7)])
    reader = RecordReader()
    first = reader.read_messages(path, None, 2)
    assert first.next_cursor == "mc_4"
    header = {
        "capsule": "c", "created_ms": 1, "type": "murmur.record",
        "truncated": {"at_ms": 2, "dropped": 2, "last_dropped_id": id_at(2), "oldest_surviving_id": id_at(3)},
    }
    replacement = path.with_suffix(".tmp")
    write_record(replacement, [header, *[message(n) for n in range(3, 7)]])
    replacement.replace(path)  # retention's atomic rewrite
    page = reader.read_messages(path, first.next_cursor, 2)
    assert [m.id for m in page.messages] == [id_at(6), id_at(5)]  # served as murmur serves it
    assert [r.kind for r in page.reports] == ["truncated_record", "cursor_shifted"]
    assert "dropped 2 more message(s)" in page.reports[1].detail
    assert reader.read_messages(path, None, 2).reports == ()  # a fresh walk is anchored anew
