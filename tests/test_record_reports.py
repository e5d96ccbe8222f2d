"""What a record reader reports about a record's skipped lines, and what that costs.

Every skipped line is reported once per reader in ``Page.reports``; a record of a million
junk lines must not cost a million rows made per page (the rows are made when read).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from murmur_lines import id_at, line, message
from murmur_pages import unindexed, write_lines

import murmur_analysis as ma
from murmur_analysis.algorithms.cursor import Reports
from murmur_analysis.sources.murmur import reader as reader_module
from murmur_analysis.sources.murmur import record as record_module
from murmur_analysis.sources.murmur.index import IndexStore

JUNK = 200_000


def counting_diagnostics(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every :class:`ma.Diagnostic` made from now on, whichever module makes it."""
    made = [0]
    original = ma.Diagnostic.__init__

    def init(self: ma.Diagnostic, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(ma.Diagnostic, "__init__", init)
    return made


def test_a_warm_page_of_a_junk_heavy_record_makes_no_row_per_skipped_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = write_lines(tmp_path / "bot" / "ctx" / "conversation.jsonl",
                         [line(message(0))] + ["x"] * JUNK + [line(message(1))])
    store = IndexStore(tmp_path / "cache", min_bytes=0)
    ma.RecordReader(index=store).read_messages(record, None, 10)  # writes the index
    expected = unindexed(record, 10)[0].reports
    warm = ma.RecordReader(index=store)
    made = counting_diagnostics(monkeypatch)
    page = warm.read_messages(record, None, 10)
    again = warm.read_messages(record, None, 10)
    assert warm.parsed_lines == 0 and page.total == 2
    assert made[0] <= 2  # not one per skipped line
    assert len(page.reports) == JUNK and again.reports == ()
    assert [(r.line, r.kind) for r in (page.reports[0], page.reports[-1])] == [
        (2, "not_a_message"), (JUNK + 1, "not_a_message")]
    assert page.reports == expected and page.reports == tuple(expected)  # every row, once, as a parse finds them
    assert hash(page) == hash(ma.Page(page.messages, page.next_cursor, page.total, tuple(expected)))
    diagnostics = warm.diagnostics  # the newest max_diagnostics rows, made when asked for
    assert diagnostics == list(expected[-10_000:])


kinds = st.sampled_from(["message", "junk", "junk", "junk", "blank", "{"])


def record_line(kind: str, n: int) -> str:
    return {"message": line(message(n)), "junk": "x", "blank": "", "{": "{"}[kind]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(states=st.lists(st.tuples(st.lists(kinds, max_size=30), st.booleans(), st.sampled_from(["", "x", "{"])),
                       min_size=1, max_size=5), max_diagnostics=st.integers(min_value=0, max_value=12))
def test_each_skipped_line_is_reported_once_per_reader_whatever_the_record_becomes(
    tmp_path_factory: Any, states: list[tuple[list[str], bool, str]], max_diagnostics: int
) -> None:
    tmp = tmp_path_factory.mktemp("reports")
    path = tmp / "r" / "c" / "conversation.jsonl"
    reader = ma.RecordReader(index=IndexStore(tmp / "idx", min_bytes=0), max_diagnostics=max_diagnostics)
    said: set[tuple[int | None, str]] = set()
    log: list[ma.Diagnostic] = []
    rows: list[str] = []
    for kinds_, rewrite, tail in states:
        rows = [] if rewrite else rows  # a rewrite, or the record grows
        rows += [record_line(kind, n) for n, kind in enumerate(kinds_)]
        write_lines(path, rows, tail)
        found = [r for page in unindexed(path, 100) for r in page.reports]  # what a fresh reader reports
        page = reader.read_messages(path, None, 100)
        fresh = [r for r in found if (r.line, r.kind) not in said]
        assert list(page.reports) == fresh and page.reports == tuple(fresh) and len(page.reports) == len(fresh)
        said |= {(r.line, r.kind) for r in fresh}
        log += fresh
        assert reader.diagnostics == (log[-max_diagnostics:] if max_diagnostics else [])


@st.composite
def reports(draw: st.DrawFn) -> tuple[Reports, tuple[ma.Diagnostic, ...]]:
    gaps = draw(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 6)), max_size=6))
    runs: list[int] = []
    at = 1
    for gap, count in gaps:
        runs += [at + gap, count]
        at += gap + count
    rest = tuple(ma.Diagnostic("murmur", "p", n, "other", "d") for n in range(draw(st.integers(0, 3))))

    def row(n: int) -> ma.Diagnostic:
        return ma.Diagnostic("murmur", "p", n, "not_a_message", f"line {n}")

    lines = [n for first, count in zip(runs[0::2], runs[1::2], strict=True) for n in range(first, first + count)]
    return Reports(runs, row, rest), tuple(row(n) for n in lines) + rest


@given(reports(), st.integers(-40, 40), st.integers(-40, 40), st.sampled_from([None, 1, 2, -1, -3]))
def test_reports_are_the_tuple_of_their_rows(
    made: tuple[Reports, tuple[ma.Diagnostic, ...]], i: int, j: int, step: int | None
) -> None:
    lazy, rows = made
    assert len(lazy) == len(rows) and tuple(lazy) == rows and lazy == rows and rows == lazy
    assert hash(lazy) == hash(rows) and bool(lazy) == bool(rows)
    assert lazy[i:j:step] == rows[i:j:step]
    if -len(rows) <= i < len(rows):
        assert lazy[i] == rows[i]
    else:
        with pytest.raises(IndexError):
            lazy[i]
    assert pickle.loads(pickle.dumps(lazy)) == rows
    assert lazy != [*rows] and (lazy == rows[:-1]) == (not rows)
    with pytest.raises(AttributeError):
        lazy._rest = ()  # type: ignore[misc]


def test_a_warm_page_does_not_decide_the_junk_between_its_messages_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = write_lines(tmp_path / "bot" / "ctx" / "conversation.jsonl",
                         [line(message(0))] + ["x", "not json"] * (JUNK // 2) + [line(message(1))])
    store = IndexStore(tmp_path / "cache", min_bytes=0)
    ma.RecordReader(index=store).read_messages(record, None, 10)  # writes the index
    decided: list[int] = []
    original = reader_module.index_lines

    def index_lines(data: bytes, limit: int, base: int, first: bool) -> record_module.LineSpans:
        decided.append(limit)
        return original(data, limit, base, first)

    monkeypatch.setattr(reader_module, "index_lines", index_lines)
    page = ma.RecordReader(index=store).read_messages(record, None, 10)
    assert [m.id for m in page.messages] == [id_at(1), id_at(0)] and len(page.reports) == JUNK
    assert decided == []  # the lines between the two messages hold no '{': none of them can be a message


@given(st.lists(st.sampled_from(["x", "", " ", "{", '{"role":"user"}', "[1]", "\u00e9", "}", '"role"']), max_size=8),
       st.sampled_from([b"", b"\xff", b"\xed\xa0\x80", b"{\xc3"]), st.booleans())
def test_no_message_in_never_says_so_of_lines_with_a_message_or_bad_utf8(
    rows: list[str], odd: bytes, first: bool
) -> None:
    data = "".join(r + "\n" for r in rows).encode() + (odd + b"\n" if odd else b"")
    found = record_module.index_lines(data, len(data), 0, first)
    if record_module.no_message_in(data):
        assert not found.starts and not found.bad_utf8
    assert record_module.no_message_in(data) == (b"{" not in data and not found.bad_utf8)


def test_page_on_the_command_line_names_the_first_skipped_lines_and_counts_the_rest(tmp_path: Path) -> None:
    record = tmp_path / "conversation.jsonl"
    lines = [b'{"content":[{"type":"text","text":"hi"}],"id":"msg_1","role":"user"}'] + [b"x"] * 5_000
    record.write_bytes(b"\n".join(lines) + b"\n")
    proc = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "page", str(record)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "MURMUR_ANALYSIS_CACHE": str(tmp_path / "c")})
    assert proc.returncode == 0
    notes = proc.stderr.splitlines()
    assert len(notes) == 21 and notes[0].endswith("line 2 is not a message and was skipped")
    assert notes[-1] == ("note: and 4,980 more line(s) of this record were skipped "
                         "(`murmur-analysis diagnostics --source murmur RECORD` lists every one)")
