"""Times no timestamp can hold: each is a ``bad_time`` diagnostics row naming file, field and value; the time is null.

One test per source and per place a time is read: murmur's message ids (both views of a record,
and the lines an incremental export reads on), its truncation marker and its session traces;
litany's commit times and step records; FlexiGPT's ``createdAt``; dispatch's run records, eval
traces and memory rows.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from litany_git import Branch, RepoBuilder, tree
from murmur_home import T0, ev, header, inference, mid, msg, record, text, trace
from murmur_lines import append

import murmur_analysis as ma
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.murmur import MurmurSource

LAST_MS = (1 << 48) - 1  # the latest time a UUIDv7 holds: in year 10889
LAST_DATETIME_MS = 253_402_300_799_999  # the last millisecond of year 9999
BIG_MS = 1 << 62
BAD_ID = mid(LAST_MS)


def bad_times(corpus: ma.Corpus) -> list[tuple[str, str, Any, str]]:
    rows = corpus.diagnostics[corpus.diagnostics["kind"] == "bad_time"]
    return [(r.source, r.path, None if pd.isna(r.line) else int(r.line), r.detail) for r in rows.itertuples()]


# -- murmur ----------------------------------------------------------------------------------


def test_a_message_id_minted_in_year_10889_is_a_row_and_no_time(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = record(home, "bot", "ctx", [header(), msg("user", T0), {**msg("assistant", T0 + 1), "id": BAD_ID},
                                       msg("user", T0 + 2, n=2)])
    corpus = ma.load(home)
    assert corpus.messages["created_at"].isna().tolist() == [False, True, False]
    ((source, where, line, detail),) = bad_times(corpus)
    assert (source, where, line) == ("murmur", str(path), 3)
    assert detail.startswith(f"message id = {BAD_ID!r}") and "year 10889" in detail
    # The same line read as entries (a conversation read again) reports the same row.
    diagnostics = Diagnostics("murmur")
    conv = MurmurSource().reopen((str(path), "bot", "ctx"), diagnostics)
    assert [e.created_at is None for e in conv.entries] == [False, True, False]
    assert [(d.path, d.line, d.kind, d.detail) for d in diagnostics.rows] == [(where, 3, "bad_time", detail)]


@settings(max_examples=20)
@given(st.one_of(st.integers(min_value=0, max_value=LAST_DATETIME_MS),
                 st.integers(min_value=LAST_DATETIME_MS + 1, max_value=LAST_MS)))
def test_the_engine_and_the_entries_agree_on_which_id_times_are_held(tmp_path_factory: Any, ms: int) -> None:
    home = tmp_path_factory.mktemp("home")
    path = record(home, "bot", "ctx", [{**msg("user", 0), "id": mid(ms)}])
    corpus = ma.load(home)
    diagnostics = Diagnostics("murmur")
    (entry,) = MurmurSource().reopen((str(path), "bot", "ctx"), diagnostics).entries
    held = ms <= LAST_DATETIME_MS
    assert corpus.messages["created_at"].notna().tolist() == [held] == [entry.created_at is not None]
    assert len(bad_times(corpus)) == len(diagnostics.rows) == (0 if held else 1)


def test_an_appended_line_with_such_an_id_is_reported_at_its_own_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = record(home, "bot", "ctx", [msg("user", T0), msg("assistant", T0 + 1, n=1)])
    old = T0 / 1000
    os.utime(path, (old, old))
    out = tmp_path / "out"
    export(home, out=out)
    append(path, [msg("user", T0 + 2, n=2), {**msg("assistant", T0 + 3, n=3), "id": BAD_ID}])
    os.utime(path, (old, old))
    assert export(home, out=out).conversations_appended == 1  # only the appended lines were read
    exported = read_parquet(out)
    assert [(w, line) for _, w, line, _ in bad_times(exported)] == [(str(path), 4)]
    assert bad_times(exported) == bad_times(ma.load(home))


def test_a_truncation_marker_naming_an_id_of_year_10889_is_a_row(tmp_path: Path) -> None:
    home = tmp_path / "home"
    marker = {"at_ms": T0, "dropped": 2, "last_dropped_id": BAD_ID, "oldest_surviving_id": mid(T0)}
    path = record(home, "bot", "ctx", [header(marker), msg("user", T0)])
    corpus = ma.load(home)
    assert [(w, line) for _, w, line, _ in bad_times(corpus)] == [(str(path), 1)]
    assert bad_times(corpus)[0][3].startswith(f"truncated.last_dropped_id = {BAD_ID!r}")


def test_a_trace_event_time_no_timestamp_holds_is_a_row(tmp_path: Path) -> None:
    home = tmp_path / "home"
    record(home, "bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 21, text("answer"), n=1)])
    events = [ev("session_start", T0, capsule_name="bot", model="gpt-4.1"),
              ev("task_start", T0 + 1, task_id="A", context_id="ctx"),
              inference(BIG_MS, "A", 0, input_tokens_actual=10, output_tokens_actual=2),
              ev("task_end", T0 + 500, task_id="A")]
    path = trace(home / "sessions" / "ses_1", events)
    corpus = ma.load(home)
    assert corpus.usage["output_tokens"].tolist() == [2] and corpus.usage["created_at"].isna().all()
    ((source, where, line, detail),) = bad_times(corpus)
    assert (source, where, line) == ("murmur", str(path), 3)
    assert detail.startswith(f"timestamp = {BIG_MS} ") and "names year 146140482" in detail


# -- litany ----------------------------------------------------------------------------------


def test_a_commit_time_and_a_step_time_no_timestamp_holds_are_rows(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    Branch(repo, "far", start=99_999_999_999_999).put(tree(("001-op.md", "go")))
    Branch(repo, "near").put(tree(("001-op.md", "go")))
    shas = repo.finish()
    meta = ws / "steps" / "near" / "001" / "meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"commit": shas[2], "started_at": "2026-04-22T24:00:00Z",
                                "ended_at": "2026-04-22T09:00:09Z"}))
    corpus = ma.load(ws)
    at = corpus.messages.set_index("conversation_id")["created_at"]
    assert pd.isna(at["far"]) and pd.notna(at["near"])
    assert corpus.steps["started_at"].isna().all() and corpus.steps["ended_at"].notna().all()
    rows = {where: detail for _, where, _, detail in bad_times(corpus)}
    assert set(rows) == {f"{ws / 'repo.git'}@{shas[1]}", str(meta)}
    assert rows[f"{ws / 'repo.git'}@{shas[1]}"].startswith("committer time = 100000000000059 (Unix seconds)")
    assert rows[str(meta)].startswith("started_at = '2026-04-22T24:00:00Z'") and "hour must be in 0..23" in rows[
        str(meta)]


# -- FlexiGPT --------------------------------------------------------------------------------


def test_a_flexigpt_created_at_at_hour_24_is_a_row(tmp_path: Path) -> None:
    doc = {"id": "01987561-cb00-7000-8000-000000000001", "title": "t", "schemaVersion": "v1",
           "createdAt": "2025-08-04T14:00:00Z", "modifiedAt": "2025-08-04T14:00:00Z",
           "messages": [{"id": "m1", "role": "user", "createdAt": "2025-08-04T14:00:00Z",
                         "inputs": [{"kind": "inputMessage", "inputMessage": {"contents": []}}]},
                        {"id": "m2", "role": "assistant", "createdAt": "2025-08-04T24:00:00Z"}]}
    path = tmp_path / "conversations_v1" / "202508" / f"{doc['id']}_t.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    corpus = ma.load(tmp_path)
    assert corpus.messages["created_at"].isna().tolist() == [False, True]
    ((source, where, line, detail),) = bad_times(corpus)
    assert (source, where, line) == ("flexigpt", str(path), None)
    assert detail.startswith("messages[1].createdAt = '2025-08-04T24:00:00Z'") and "hour must be in 0..23" in detail


# -- dispatch --------------------------------------------------------------------------------


def test_dispatch_run_trace_and_memory_times_no_timestamp_holds_are_rows(tmp_path: Path) -> None:
    runs = tmp_path / ".dispatch" / "runs"
    runs.mkdir(parents=True)
    rid = "1754000000000-3f9a1c2b7d4e"
    run = runs / f"{rid}.json"
    run.write_text(json.dumps({"run_id": rid, "status": "exited", "started_at_ms": BIG_MS,
                               "stopped_at_ms": 1754000001600}))
    (runs / f"{rid}.session.json").write_text(json.dumps({"id": "s", "history": [{"role": "user", "content": "hi"}]}))
    evals = tmp_path / "evals" / ("ab" * 32)
    evals.mkdir(parents=True)
    eval_trace = evals / "1754000000000-smoke.dispatch-trace.json"
    eval_trace.write_text(json.dumps({"kind": "parcel_eval_case", "case_name": "smoke", "steps": [],
                                      "started_at_ms": 1754000000000, "finished_at_ms": BIG_MS}))
    store = tmp_path / "state" / "session.sqlite"
    store.parent.mkdir()
    with sqlite3.connect(store) as con:
        con.execute("CREATE TABLE dispatch_memory (namespace TEXT, key TEXT, value TEXT, updated_at INTEGER)")
        con.executemany("INSERT INTO dispatch_memory VALUES (?, ?, ?, ?)",
                        [("ns", "far", "v", BIG_MS), ("ns", "near", "v", 1754000000)])
    con.close()
    corpus = ma.load(tmp_path)
    sessions = corpus.frame("dispatch_sessions").set_index("kind")
    assert pd.isna(sessions.loc["run", "started_at"]) and pd.notna(sessions.loc["run", "stopped_at"])
    assert pd.notna(sessions.loc["eval_trace", "started_at"]) and pd.isna(sessions.loc["eval_trace", "stopped_at"])
    memory = corpus.frame("memory").set_index("key")
    assert pd.isna(memory.loc["far", "updated_at"]) and pd.notna(memory.loc["near", "updated_at"])
    rows = {where: detail for source, where, _, detail in bad_times(corpus) if source == "dispatch"}
    assert set(rows) == {str(run), str(eval_trace), str(store)}
    assert rows[str(run)].startswith(f"started_at_ms = {BIG_MS} (Unix milliseconds) names year 146140482")
    assert rows[str(eval_trace)].startswith(f"finished_at_ms = {BIG_MS} ")
    assert rows[str(store)].startswith(f"dispatch_memory.updated_at (namespace 'ns', key 'far') = {BIG_MS} ")
