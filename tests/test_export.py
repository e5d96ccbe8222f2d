"""Parquet export: whole or not at all, exactly what was read, and only what changed read again."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from unittest import mock

import hypothesis
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litany_git import T0 as T0_GIT
from litany_git import Branch, RepoBuilder, j, tree
from live_git import commit_file
from murmur_home import T0, home_with, msg, record, settle
from murmur_lines import append, line

import murmur_analysis as ma
import murmur_analysis.export as export_module
from murmur_analysis.corpus import read_parquet
from murmur_analysis.export import export
from murmur_analysis.loading.plan import iter_batches
from murmur_analysis.tables.schema import SCHEMA_VERSION, TABLES, schema

REPO = Path(__file__).resolve().parent.parent


def rows(table: pa.Table) -> Counter[str]:
    """A table's rows as a multiset (order-free, duplicates counted)."""
    return Counter(orjson.dumps(r, default=str, option=orjson.OPT_SORT_KEYS).decode() for r in table.to_pylist())


def assert_same(exported: dict[str, pa.Table], loaded: dict[str, pa.Table]) -> None:
    assert set(exported) == set(loaded)
    for name, table in loaded.items():
        assert exported[name].schema.equals(table.schema), name
        assert rows(exported[name]) == rows(table), name


def rec(home: Path, r: int) -> Path:
    return home / "conversations" / "bot" / f"ctx-{r}" / "conversation.jsonl"


# ---------------------------------------------------------------------------------- exact


def test_a_fixed_line_leaves_no_stale_diagnostics_row(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=1)
    path = rec(home, 0)
    good = path.read_text()
    path.write_text(good + "{not json\n")
    settle(home)
    out = tmp_path / "out"
    first = export(home, out=out)
    assert first.rows["diagnostics"] == 2  # the bad line, and the home's no_session_traces (it has no trace)
    path.write_text(good)
    settle(home)
    second = export(home, out=out)
    assert second.rows["diagnostics"] == 1
    assert ds.dataset(out / "diagnostics", partitioning="hive").to_table()["kind"].to_pylist() == ["no_session_traces"]
    assert read_parquet(out).tables["diagnostics"]["kind"].to_pylist() == ["no_session_traces"]


def test_a_source_that_is_gone_leaves_no_partition(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=2)
    flex = REPO / "data" / "samples" / "flexigpt"
    out = tmp_path / "out"
    export(home, flex, out=out)
    assert (out / "messages" / "source=flexigpt").is_dir()
    export(home, out=out)
    assert not (out / "messages" / "source=flexigpt").exists()
    sources = set(ds.dataset(out / "messages", partitioning="hive").to_table()["source"].to_pylist())
    assert sources == {"murmur"}


def test_the_samples_round_trip_with_declared_types_and_stamps(tmp_path: Path, samples: Path) -> None:
    out = tmp_path / "out"
    export(samples, out=out)
    back = read_parquet(out)
    assert_same(back.tables, ma.load(samples).tables)
    for name in TABLES:
        assert back.tables[name].schema.equals(schema(name))
    usage = back.usage
    assert str(usage["input_tokens"].dtype) == "int64[pyarrow]" and str(usage["sealed"].dtype) == "bool[pyarrow]"
    import duckdb  # a dependency of murmur-analysis itself
    for name in TABLES:  # DuckDB reads each table folder as it is, through the links
        files = f"{out / name}/**/*.parquet"
        query = f"select count(*) from read_parquet('{files}', hive_partitioning=true, union_by_name=true)"
        assert duckdb.sql(query).fetchall() == [(back.tables[name].num_rows,)], name
    plain = pd.read_parquet(out / "usage")  # pandas alone: the files say which dtypes
    assert str(plain["input_tokens"].dtype) == "int64[pyarrow]" and str(plain["sealed"].dtype) == "bool[pyarrow]"
    assert len(plain) == len(usage)
    manifest = orjson.loads((out / "_manifest.json").read_bytes())
    version = ma.pricing.price_data_version()
    assert manifest["schema_version"] == SCHEMA_VERSION and manifest["price_data_version"] == version
    listed = {f["path"] for t in manifest["tables"].values() for f in t["files"]}
    current = out / ".export" / "current"
    on_disk = {str(p.relative_to(current)) for p in current.rglob("*.parquet")}
    assert listed == on_disk
    for path in listed:
        meta = orjson.loads(pq.read_schema(out / path).metadata[b"murmur_analysis"])
        assert meta["schema_version"] == SCHEMA_VERSION and meta["price_data_version"] == version


def test_the_packaged_price_data_is_stamped_without_user_prices(tmp_path: Path) -> None:
    out = tmp_path / "out"
    export(home_with(tmp_path), out=out)
    some = next((out / "messages").rglob("*.parquet"))
    stamp = orjson.loads(pq.read_schema(some).metadata[b"murmur_analysis"])["price_data_version"]
    assert stamp == ma.pricing.price_data_version() and stamp.startswith("genai-prices ") and "+user:" not in stamp


def test_corpus_to_parquet_replaces_the_previous_export_whole(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=2)
    out = tmp_path / "out"
    ma.load(home).to_parquet(out)
    shutil.rmtree(home / "conversations" / "bot" / "ctx-1")
    ma.load(home).to_parquet(out)
    assert read_parquet(out).tables["conversations"]["conversation_id"].to_pylist() == ["bot/ctx-0"]


def test_a_folder_of_parquet_files_with_no_export_of_ours_is_refused_and_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "messages" / "source=murmur").mkdir(parents=True)
    part = out / "messages" / "source=murmur" / "part-0.parquet"
    pq.write_table(schema("messages").empty_table().drop_columns(["source"]), part)
    before = part.read_bytes()
    with pytest.raises(ma.ExportError, match="holds no murmur-analysis export"):
        export(home_with(tmp_path), out=out)
    assert part.read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["messages"]


def test_a_file_in_the_way_is_an_export_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.write_text("not a folder")
    with pytest.raises(ma.ExportError):
        export(home_with(tmp_path), out=out)


def test_read_parquet_of_a_folder_with_no_export_is_an_export_error(tmp_path: Path) -> None:
    with pytest.raises(ma.ExportError):
        read_parquet(tmp_path)


# ---------------------------------------------------------------------------------- incremental


def test_unchanged_input_is_not_read_again(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    again = export(home, out=out)
    assert again.conversations_read == 0 and again.conversations_kept == 3
    assert_same(read_parquet(out).tables, ma.load(home).tables)


def test_an_appended_record_has_only_its_appended_lines_read(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out, batch_conversations=2)
    append(rec(home, 1), [msg("user", T0 + 5000, n=50)])
    settle(home)
    again = export(home, out=out, batch_conversations=2)
    assert again.conversations_read == 0 and again.conversations_appended == 1 and again.conversations_kept == 2
    assert again.rows["messages"] == 13
    assert_same(read_parquet(out).tables, ma.load(home).tables)


def test_a_rewritten_record_and_a_removed_one(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    path = rec(home, 0)
    tmp = path.with_name("new.jsonl")
    tmp.write_text(line(msg("user", T0 + 9, n=9)) + "\n")
    os.replace(tmp, path)  # same size or not: another inode, another head
    shutil.rmtree(rec(home, 2).parent)
    settle(home)
    again = export(home, out=out)
    assert again.conversations_read == 1
    assert_same(read_parquet(out).tables, ma.load(home).tables)
    assert again.rows["messages"] == 5


def test_a_new_commit_reads_its_branch_again_and_a_rewound_branch_too(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    repo = RepoBuilder(ws / "repo.git")
    a, b = Branch(repo, "a"), Branch(repo, "b")
    a.put(tree(("001-operator.md", "go a")))
    b.put(tree(("001-operator.md", "go b")))
    repo.finish()
    out = tmp_path / "out"
    export(ws, out=out)
    commit_file(ws / "repo.git", "agents/b", "messages/002-claude-fable-5.json",
                j({"content": [{"type": "text", "text": "ok"}]}), T0_GIT + 600)
    again = export(ws, out=out)
    assert again.conversations_read == 1 and again.conversations_kept == 1
    assert_same(read_parquet(out).tables, ma.load(ws).tables)
    subprocess.run(["git", "--git-dir", str(ws / "repo.git"), "update-ref", "refs/heads/agents/b",
                    repo_sha(ws, "agents/b~1")], check=True)
    rewound = export(ws, out=out)
    assert rewound.conversations_read == 1
    assert_same(read_parquet(out).tables, ma.load(ws).tables)


def repo_sha(ws: Path, rev: str) -> str:
    return subprocess.run(["git", "--git-dir", str(ws / "repo.git"), "rev-parse", rev],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_full_re_export_reads_everything(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    assert export(home, out=out, incremental=False).conversations_read == 3


def test_iter_batches_gives_the_load_tables_in_pieces(samples: Path) -> None:
    batches = list(iter_batches(samples, batch_conversations=2))
    assert max(len(b.conversations) for b in batches) <= 2
    loaded = ma.load(samples).tables
    for name in TABLES:
        joined = pa.concat_tables([b.tables[name] for b in batches])
        assert joined.equals(loaded[name]), name


# ---------------------------------------------------------------------------------- atomic


def _export_command(home: Path, out: Path) -> list[str]:
    code = ("import sys; from murmur_analysis.export import export; "
            "export(sys.argv[1], out=sys.argv[2], batch_conversations=1, incremental=False)")
    return [sys.executable, "-c", code, str(home), str(out)]


def _snapshot(out: Path) -> dict[str, Any]:
    """What a reader sees: through the library, and through pyarrow reading each table folder."""
    tables = read_parquet(out).tables
    by_folder = {name: rows(ds.dataset(out / name, partitioning="hive").to_table()) for name in TABLES}
    return {"library": {n: rows(t) for n, t in tables.items()}, "folders": by_folder}


def _staged(out: Path) -> list[Path]:
    """The files a running export has staged so far (none once its staging folder is switched in)."""
    try:
        return list((out / ".export").glob("staging-*/**/*.parquet"))
    except FileNotFoundError:  # renamed into place while we looked
        return []


@pytest.mark.slow
def test_a_killed_export_leaves_the_previous_one_whole(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=6, lines=3)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    old = _snapshot(out)
    for r in range(6):  # the next export would hold other rows
        append(rec(home, r), [msg("assistant", T0 + 9000 + r, n=90)])
    settle(home)
    export(home, out=tmp_path / "reference")
    new = _snapshot(tmp_path / "reference")
    assert new != old
    # The hook pauses the export after each file it writes, so the kill lands after exactly k
    # staged files (k = 0: before the first), whatever the machine's speed; no timing decides it.
    env = {**os.environ, "MURMUR_ANALYSIS_EXPORT_FILE_HOOK": "0.2"}
    outcomes: Counter[str] = Counter()
    for k in (0, 1, 2, 3, 5, 8, 13, 1000):
        proc = subprocess.Popen(_export_command(home, out), env=env)
        staged: list[Path] = []
        while proc.poll() is None:
            staged = _staged(out)
            if len(staged) >= k and (k > 0 or list((out / ".export").glob("staging-*"))):
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
        proc.wait()
        outcomes["killed while writing files"] += proc.returncode == -signal.SIGKILL and bool(staged)
        seen = _snapshot(out)  # opens, and is one export or the other, never a mix
        assert seen in (old, new)
        outcomes["old" if seen == old else "new"] += 1
        if seen == new:
            break
    assert outcomes["killed while writing files"] >= 3, outcomes  # the kills landed mid-export
    assert outcomes["old"] >= 3 and outcomes["new"] == 1, outcomes  # the last export ran to its end
    export(home, out=out)  # the next export clears what killed ones left
    assert not [p for p in (out / ".export").iterdir() if p.name.startswith("staging-")]
    assert _snapshot(out) == new


def test_two_exports_into_one_folder_at_once_is_an_export_error(tmp_path: Path) -> None:
    from murmur_analysis.export.layout import Output

    out = tmp_path / "out"
    with Output(out), pytest.raises(ma.ExportError, match="another export"):
        export(home_with(tmp_path), out=out)


def test_another_price_data_version_makes_every_row_again(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    mine = {"my-model": {"input_mtok": 1, "output_mtok": 2}}
    again = export(home, out=out, prices=mine)
    assert again.conversations_read == 3 and again.files_kept == 0
    for path in (out / ".export" / "current").rglob("*.parquet"):
        stamp = orjson.loads(pq.read_schema(path).metadata[b"murmur_analysis"])["price_data_version"]
        assert stamp == ma.pricing.price_data_version(mine) and "+user:" in stamp


def test_a_file_written_as_the_export_starts_is_read_again_next_time(tmp_path: Path) -> None:
    flex = tmp_path / "flex"
    shutil.copytree(REPO / "data" / "samples" / "flexigpt", flex, copy_function=shutil.copy)  # times: now
    out = tmp_path / "out"
    export(flex, out=out)
    # Files modified around the export are trusted next time only: a file changed while it was
    # read would otherwise look unchanged forever. All six files are read again (the sample's
    # two unreadable ones too, which add no rows).
    assert export(flex, out=out).conversations_read == 6
    settle(flex)
    export(flex, out=out)
    assert export(flex, out=out).conversations_read == 0


def test_a_changed_trace_reads_its_home_again(tmp_path: Path) -> None:
    from murmur_home import ev, inference, trace

    home = home_with(tmp_path, n=2)
    work = tmp_path / "work"
    trace(work, [ev("session_start", T0, task="t")])
    settle(home)
    settle(work)
    out = tmp_path / "out"
    options = {"murmur": {"sessions": [str(work)]}}
    export(home, out=out, options=options)
    assert export(home, out=out, options=options).conversations_read == 0
    trace(work, [ev("session_start", T0, task="t"), inference(T0 + 5, "t", 1)])
    settle(work)
    assert export(home, out=out, options=options).conversations_read == 2
    assert_same(read_parquet(out).tables, ma.load(home, options=options).tables)


# ---------------------------------------------------------------------------------- property

operations = st.lists(st.tuples(st.sampled_from(["append", "rewrite", "remove", "add", "nothing"]),
                                st.integers(min_value=0, max_value=3), st.integers(min_value=1, max_value=3)),
                      min_size=1, max_size=5)


@settings(max_examples=max(15, settings.default.max_examples // 6),
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operations, st.integers(min_value=1, max_value=3))
def test_incremental_exports_equal_a_fresh_load_after_any_changes(
    tmp_path_factory: Any, ops: list[tuple[str, int, int]], batch: int
) -> None:
    tmp = tmp_path_factory.mktemp("inc")
    home = home_with(tmp, n=3, lines=2)
    out = tmp / "out"
    clock = T0 // 1000
    stamp = {"n": 0}

    def touch(path: Path) -> None:  # distinct old times: a change is a change, and none is racy
        stamp["n"] += 1
        os.utime(path, (clock + stamp["n"], clock + stamp["n"]))

    for path in home.rglob("*.jsonl"):
        touch(path)
    export(home, out=out, batch_conversations=batch)
    serial = 100
    for op, r, k in ops:
        path = rec(home, r)
        serial += 10
        if op == "append" and path.exists():
            append(path, [msg("user", T0 + serial + i, n=serial + i) for i in range(k)])
            touch(path)
        elif op == "rewrite" and path.exists():
            tmp_file = path.with_name("tmp.jsonl")
            tmp_file.write_text("".join(line(msg("assistant", T0 + serial + i, n=serial + i)) + "\n" for i in range(k)))
            os.replace(tmp_file, path)
            touch(path)
        elif op == "remove" and path.exists():
            shutil.rmtree(path.parent)
        elif op == "add" and not path.exists():
            record(home, "bot", f"ctx-{r}", [msg("user", T0 + serial + i, n=serial + i) for i in range(k)])
            touch(path)
        result = export(home, out=out, batch_conversations=batch)
        assert_same(read_parquet(out).tables, ma.load(home).tables)
        assert result.conversations_read <= 1  # only what the operation changed is read


def test_a_failed_export_leaves_no_staging_folder_and_the_previous_export(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    out = tmp_path / "out"
    export(home, out=out)
    before = _snapshot(out)
    with pytest.raises(FileNotFoundError):
        export(home, tmp_path / "missing", out=out)
    assert not [p for p in (out / ".export").iterdir() if p.name.startswith("staging-")]
    assert _snapshot(out) == before


def test_a_lost_file_of_the_previous_export_is_written_again_from_the_input(tmp_path: Path) -> None:
    home = home_with(tmp_path)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    lost = next((out / ".export" / "current" / "messages").rglob("*.parquet"))
    lost.unlink()
    result = export(home, out=out)
    assert [why for _, why in result.damaged] == ["it is gone"]
    assert result.conversations_read == 3
    assert_same(read_parquet(out).tables, ma.load(home).tables)


# ---------------------------------------------------------------------------------- appended lines

_CALLS = ["c0", "c1", "c2", "c3"]
pieces = st.one_of(
    st.tuples(st.just("user"), st.integers(0, 0)),
    st.tuples(st.just("assistant"), st.integers(0, 0)),
    st.tuples(st.just("calls"), st.integers(1, 2)),
    st.tuples(st.just("result"), st.integers(0, len(_CALLS))),
    # a result block in an assistant line: one run of one side holds both calls and results
    st.tuples(st.just("result_block"), st.integers(0, len(_CALLS))),
    st.tuples(st.sampled_from(["blank", "garbage", "header", "partial", "bad_utf8", "no_role"]), st.integers(0, 0)),
)


def _piece(kind: str, k: int, serial: int) -> bytes:
    from murmur_home import call, header, text, tool

    ms = T0 + serial
    if kind == "user":
        return (line(msg("user", ms, text(f"u{serial}"), n=serial)) + "\n").encode()
    if kind == "assistant":
        return (line(msg("assistant", ms, text(f"a{serial}"), n=serial)) + "\n").encode()
    if kind == "calls":
        blocks = [call(_CALLS[(serial + i) % len(_CALLS)]) for i in range(k)]
        return (line(msg("assistant", ms, text("calling"), *blocks, n=serial)) + "\n").encode()
    if kind == "result":
        call_id = _CALLS[k] if k < len(_CALLS) else None
        return (line(tool(ms, call_id, body=f"r{serial}", is_error=serial % 3 == 0, n=serial)) + "\n").encode()
    if kind == "result_block":
        block = _result_block(_CALLS[k] if k < len(_CALLS) else "c-none", f"r{serial}")
        return (line(msg("assistant", ms, block, n=serial)) + "\n").encode()
    if kind == "blank":
        return b"\n"
    if kind == "garbage":
        return b"{not json\n"
    if kind == "header":
        return (line(header()) + "\n").encode()
    if kind == "partial":
        return line(msg("user", ms, text("half"), n=serial)).encode()[:10]  # a line still being written
    if kind == "bad_utf8":
        return b'{"role":"user","content":"\xff"}\n'
    return b'{"content":"no role"}\n'


def _result_block(call_id: str, body: str = "ok") -> dict[str, Any]:
    """A tool result block, as a message line other than a tool line holds one."""
    return {"content": [{"text": body, "type": "text"}], "tool_use_id": call_id, "type": "tool_result"}


def _ordered(tables: dict[str, pa.Table]) -> dict[str, list[Any]]:
    """Each conversation's tool_calls and messages rows, in the order they were written."""
    out: dict[str, list[Any]] = {}
    for name, columns in (("tool_calls", ["call_id", "status", "called_seq", "result_seq"]), ("messages", ["seq"])):
        for r in tables[name].select(["conversation_id", *columns]).to_pylist():
            out.setdefault(f"{name} {r.pop('conversation_id')}", []).append(r)
    return out


@settings(max_examples=max(20, settings.default.max_examples // 4), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 1), st.lists(pieces, min_size=0, max_size=5)), min_size=1, max_size=5),
       st.lists(pieces, min_size=0, max_size=4), st.sampled_from([16 << 20, 200, 400]))
def test_exports_of_records_that_grew_in_any_way_equal_a_fresh_load(
    tmp_path_factory: Any, appends: list[tuple[int, list[tuple[str, int]]]], start: list[tuple[str, int]],
    range_bytes: int,
) -> None:
    # A small range length writes each record a range of lines at a time.
    with mock.patch.object(export_module, "RANGE_BYTES", range_bytes):
        _grow(tmp_path_factory, appends, start)


def _grow(tmp_path_factory: Any, appends: list[tuple[int, list[tuple[str, int]]]],
          start: list[tuple[str, int]]) -> None:
    tmp = tmp_path_factory.mktemp("grow")
    home = home_with(tmp, n=2, lines=2)
    out = tmp / "out"
    stamp = {"n": 0}

    def touch(path: Path) -> None:  # distinct old times: settled, and never racy
        stamp["n"] += 1
        os.utime(path, (T0 // 1000 + stamp["n"], T0 // 1000 + stamp["n"]))

    serial = 100
    for kind, k in start:
        serial += 1
        with rec(home, 0).open("ab") as f:
            f.write(_piece(kind, k, serial))
    for path in home.rglob("*.jsonl"):
        touch(path)
    export(home, out=out, batch_conversations=1)
    for r, added in appends:
        path = rec(home, r)
        with path.open("ab") as f:
            for kind, k in added:
                serial += 1
                f.write(_piece(kind, k, serial))
        touch(path)
        result = export(home, out=out, batch_conversations=1)
        exported, loaded = read_parquet(out).tables, ma.load(home).tables
        assert_same(exported, loaded)
        assert _ordered(exported) == _ordered(loaded)
        assert result.conversations_read + result.conversations_appended <= 1
        hypothesis.event("appended" if result.conversations_appended else "read" if result.conversations_read
                         else "kept")


def _count_scans(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the files the record scan reads from now on (whole records, or scratch copies of ranges)."""
    import murmur_analysis.sources.murmur.append as append_module
    import murmur_analysis.sources.murmur.source as source_module

    scanned: list[int] = []

    def counting(real: Any) -> Any:
        def scan(paths: list[str], text: bool = True) -> Any:
            scanned.extend(os.path.getsize(p) for p in paths)
            return real(paths, text)
        return scan

    monkeypatch.setattr(source_module, "scan_records", counting(source_module.scan_records))
    monkeypatch.setattr(append_module, "scan_records", counting(append_module.scan_records))
    return scanned


def test_a_grown_record_has_only_its_appended_bytes_decoded_and_an_earlier_call_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from murmur_home import call, text, tool

    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", [msg("user", T0, text("go")), msg("assistant", T0 + 1, call("c1"), n=1)])
    record(home, "bot", "ctx-1", [msg("user", T0 + 2, text("other"), n=2)])
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    added = [tool(T0 + 3, "c1", body="done", n=3), msg("assistant", T0 + 4, text("ok"), n=4)]
    size = path.stat().st_size
    append(path, added)
    settle(home)
    scanned = _count_scans(monkeypatch)
    result = export(home, out=out)
    assert result.conversations_appended == 1 and result.conversations_read == 0
    assert scanned == [path.stat().st_size - size]  # the appended bytes, nothing else
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert exported["tool_calls"].select(["call_id", "status", "called_seq", "result_seq"]).to_pylist() == [
        {"call_id": "c1", "status": "ok", "called_seq": 1, "result_seq": 2}]
    scanned.clear()
    assert export(home, out=out).conversations_kept == 2 and scanned == []  # what is kept is not read


def test_a_grown_record_joined_to_a_trace_is_read_whole(tmp_path: Path) -> None:
    from murmur_home import ev, trace

    home = home_with(tmp_path, n=1)
    work = tmp_path / "work"
    trace(work, [ev("session_start", T0, capsule_name="bot", context_id=None),
                 ev("task_start", T0 + 1, task_id="t", context_id="ctx-0")])
    settle(home)
    settle(work)
    out = tmp_path / "out"
    options = {"murmur": {"sessions": [str(work)]}}
    export(home, out=out, options=options)
    append(rec(home, 0), [msg("user", T0 + 5000, n=50)])
    settle(home)
    result = export(home, out=out, options=options)
    assert result.conversations_read == 1 and result.conversations_appended == 0
    assert_same(read_parquet(out).tables, ma.load(home, options=options).tables)


def test_a_record_left_mid_line_is_read_whole_once_it_grows(tmp_path: Path) -> None:
    home = home_with(tmp_path, n=1)
    path = rec(home, 0)
    with path.open("a") as f:
        f.write('{"role":"us')
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    with path.open("a") as f:
        f.write('er","content":"now whole"}\n')
    settle(home)
    result = export(home, out=out)
    assert result.conversations_read == 1 and result.conversations_appended == 0
    assert_same(read_parquet(out).tables, ma.load(home).tables)
    append(path, [msg("user", T0 + 9000, n=90)])
    settle(home)
    assert export(home, out=out).conversations_appended == 1
    assert_same(read_parquet(out).tables, ma.load(home).tables)


@pytest.mark.parametrize("added", ["result_for_a_call_answered_before", "call_after_a_result_with_no_call",
                                   "header_first"])
def test_appends_the_walk_cannot_continue_exactly_read_the_record_whole(tmp_path: Path, added: str) -> None:
    from murmur_home import call, header, text, tool

    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", [msg("user", T0, text("go")), msg("assistant", T0 + 1, call("c1"), n=1),
                                         tool(T0 + 2, "c1", n=2),
                                         msg("assistant", T0 + 3, _result_block("c9"), n=3)])
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    tail = {
        # a result for a call answered before: the walk's state knows the ids called before by
        # their hashes only, so "called before" (a duplicate_result) may be a collision
        "result_for_a_call_answered_before": [tool(T0 + 4, "c1", n=4)],
        # the last run (assistant) goes on with a call, and a result of its earlier part has no
        # call yet: the run's calls open before its results, so this call answers that result
        "call_after_a_result_with_no_call": [msg("assistant", T0 + 4, call("c9"), n=4)],
        # only line 1 can be the header: read alone, the appended bytes' first line would be taken for it
        "header_first": [header(), msg("user", T0 + 4, n=4)],
    }[added]
    append(path, tail)
    settle(home)
    result = export(home, out=out)
    assert result.conversations_read == 1 and result.conversations_appended == 0
    assert_same(read_parquet(out).tables, ma.load(home).tables)


@pytest.mark.parametrize("reuse", [False, True])
def test_a_long_record_is_written_a_range_at_a_time_and_equals_a_fresh_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reuse: bool
) -> None:
    from murmur_home import call, text, tool

    values: list[Any] = []
    for i in range(40):  # each call answered by the next line; with ``reuse``, ids come back
        call_id = f"c{i % 3 if reuse else i}"
        values += [msg("user", T0 + 10 * i, text(f"ask {i}"), n=3 * i),
                   msg("assistant", T0 + 10 * i + 1, text("calling"), call(call_id), n=3 * i + 1),
                   tool(T0 + 10 * i + 2, call_id, body="x" * (i % 7), is_error=i % 5 == 0, n=3 * i + 2)]
    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", values)
    settle(home)
    scanned = _count_scans(monkeypatch)
    monkeypatch.setattr(export_module, "RANGE_BYTES", 1000)
    out = tmp_path / "out"
    export(home, out=out)
    size = path.stat().st_size
    # the calls still open go from range to range exactly (ids and rows): reused ids too
    assert len(scanned) > 5 and max(scanned) < size / 4 and sum(scanned) == size
    monkeypatch.undo()
    assert_same(read_parquet(out).tables, ma.load(home).tables)
    append(path, [msg("user", T0 + 9000, text("more"), n=900)])
    settle(home)
    assert export(home, out=out).conversations_appended == 1
    assert_same(read_parquet(out).tables, ma.load(home).tables)


@pytest.mark.parametrize("added", ["reused_call_id", "reused_open_call_id"])
def test_appends_that_call_an_id_again_have_only_their_bytes_read(tmp_path: Path, added: str) -> None:
    from murmur_home import call, text, tool

    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", [msg("user", T0, text("go")), msg("assistant", T0 + 1, call("c1"), n=1),
                                         tool(T0 + 2, "c1", n=2), msg("assistant", T0 + 3, call("c2"), n=3)])
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    tail = {
        # a call id called and answered before: its result answers the new call
        "reused_call_id": [tool(T0 + 4, "c2", n=4), msg("assistant", T0 + 5, call("c1"), n=5),
                           tool(T0 + 6, "c1", n=6)],
        # a call id still open: the first result answers the earlier call, the second the new one
        "reused_open_call_id": [msg("user", T0 + 4, n=4), msg("assistant", T0 + 5, call("c2"), n=5),
                                tool(T0 + 6, "c2", body="first", n=6), tool(T0 + 7, "c2", body="second", n=7)],
    }[added]
    append(path, tail)
    settle(home)
    result = export(home, out=out)
    assert result.conversations_appended == 1 and result.conversations_read == 0
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)


@pytest.mark.parametrize("shape", ["tool_results", "calls", "orphans"])
def test_appends_that_go_on_a_run_of_one_side_have_only_their_bytes_read(tmp_path: Path, shape: str) -> None:
    from murmur_home import call, text, tool

    start, added = {
        # the tool run goes on: an earlier call answered, a result with no call
        "tool_results": ([msg("assistant", T0 + 1, call("c1"), call("c2"), n=1), tool(T0 + 2, "c1", n=2)],
                         [tool(T0 + 3, "c2", n=3), tool(T0 + 4, "c9", n=4)]),
        # the assistant run goes on with a call, then results for both
        "calls": ([msg("assistant", T0 + 1, call("c1"), n=1)],
                  [msg("assistant", T0 + 2, call("c2"), n=2), tool(T0 + 3, "c2", n=3), tool(T0 + 4, "c1", n=4)]),
        # a run of results with no call goes on with more of them
        "orphans": ([tool(T0 + 1, "c8", n=1)], [tool(T0 + 2, "c9", n=2), tool(T0 + 3, "c8", n=3)]),
    }[shape]
    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", [msg("user", T0, text("go")), *start])
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    append(path, added)
    settle(home)
    result = export(home, out=out)
    assert result.conversations_appended == 1 and result.conversations_read == 0
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)


def _one_side_run(shape: str) -> list[Any]:
    """A record that is one long run of one side after its first line (or two, for ``calls_then_results``)."""
    from murmur_home import call, text, tool

    values: list[Any] = [msg("user", T0, text("go"))]
    n = 60
    if shape == "calls":  # every call left unanswered
        values += [msg("assistant", T0 + i, text(f"step {i}"), call(f"c{i}"), n=i) for i in range(1, n)]
    elif shape == "results":  # results no call names
        values += [tool(T0 + i, f"c{i}", body="x" * (i % 7), is_error=i % 5 == 0, n=i) for i in range(1, n)]
    elif shape == "calls_then_results":  # a run of calls, then a run of their results, last call first
        values += [msg("assistant", T0 + i, call(f"c{i}"), n=i) for i in range(1, n)]
        values += [tool(T0 + n + i, f"c{n - i}", body=f"r{i}", n=n + i) for i in range(1, n)]
    else:  # "mixed": results with no call yet, then the calls that answer them, all on the assistant side
        values += [msg("assistant", T0 + i, _result_block(f"c{i}"), n=i) for i in range(1, n)]
        values += [msg("assistant", T0 + n + i, call(f"c{i}"), n=n + i) for i in range(1, n)]
    return values


@pytest.mark.parametrize("shape", ["calls", "results", "calls_then_results", "mixed"])
def test_a_long_run_of_one_side_is_written_a_range_at_a_time_and_equals_a_fresh_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", _one_side_run(shape))
    settle(home)
    scanned = _count_scans(monkeypatch)
    monkeypatch.setattr(export_module, "RANGE_BYTES", 1000)
    out = tmp_path / "out"
    export(home, out=out)
    size = path.stat().st_size
    if shape == "mixed":
        # a later call of the run answers an earlier result of it: no range can be walked alone
        assert scanned[-1] == size
    else:  # no range reads the run whole: each is about the range length
        assert len(scanned) > 5 and max(scanned) < size / 4 and sum(scanned) == size
    monkeypatch.undo()
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)
    assert exported["orphans"].to_pylist() == loaded["orphans"].to_pylist()


def test_a_range_ends_where_a_new_run_begins_when_one_is_near(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from murmur_home import call, text, tool

    import murmur_analysis.sources.murmur.append as append_module

    values: list[Any] = []
    for i in range(600):  # runs of 1, 4 and 4 lines
        n = 9 * i
        values += [msg("user", T0 + n, text(f"ask {i}"), n=n)]
        values += [msg("assistant", T0 + n + 1 + j, call(f"c{i}-{j}"), n=n + 1 + j) for j in range(4)]
        values += [tool(T0 + n + 5 + j, f"c{i}-{j}", body="y" * 40, n=n + 5 + j) for j in range(4)]
    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", values)
    settle(home)
    firsts: list[bytes] = []
    real = append_module.scan_records

    def scan(paths: list[str], text: bool = True) -> Any:
        firsts.extend(Path(p).read_bytes().split(b"\n", 1)[0] for p in paths)
        return real(paths, text)

    monkeypatch.setattr(append_module, "scan_records", scan)
    monkeypatch.setattr(export_module, "RANGE_BYTES", 64 * 2000)  # a new run is looked for in 2,000 bytes
    out = tmp_path / "out"
    export(home, out=out)
    lines = path.read_bytes().split(b"\n")
    assert len(firsts) > 2
    for first in firsts[1:]:  # each range starts a run: the line before it is of another side
        at = lines.index(first)
        assert orjson.loads(lines[at - 1])["role"] != orjson.loads(first)["role"]
    monkeypatch.undo()
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)


def test_a_line_longer_than_the_look_for_a_line_start_is_kept_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from murmur_home import text, tool

    values: list[Any] = [msg("user", T0, text("go"))]
    values += [tool(T0 + i, f"c{i}", body="z" * (200_000 if i == 20 else 30), n=i) for i in range(1, 41)]
    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", values)
    settle(home)
    scanned = _count_scans(monkeypatch)
    monkeypatch.setattr(export_module, "RANGE_BYTES", 1000)
    out = tmp_path / "out"
    export(home, out=out)
    # the range that holds the long line ends after it; the others are about the range length
    assert len(scanned) > 4 and sum(scanned) == path.stat().st_size and sorted(scanned)[-2] < 2000
    monkeypatch.undo()
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)


@pytest.mark.parametrize("version", ["earlier", "other_pairing_format"])
def test_a_resume_point_of_another_version_is_read_whole_once(tmp_path: Path, version: str) -> None:
    import base64
    import json

    from murmur_home import call, text, tool

    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", [msg("user", T0, text("go")), msg("assistant", T0 + 1, call("c1"), n=1),
                                         tool(T0 + 2, "c1", n=2)])
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    state = out / ".export" / "current" / "state.json"
    doc = json.loads(state.read_text())
    for unit in doc["units"].values():
        point = unit["resume"]
        if version == "earlier":  # as an earlier version wrote it: no walk state, the last run's side and looseness
            del point["pairing"]
            point.update(side="tool", run_loose=False)
        else:  # the walk state's bytes in a format version this one does not read
            data = bytearray(base64.b64decode(point["pairing"]))
            data[4] += 1
            point["pairing"] = base64.b64encode(bytes(data)).decode()
    state.write_text(json.dumps(doc))
    append(path, [tool(T0 + 3, "c9", n=3)])
    settle(home)
    result = export(home, out=out)
    assert result.conversations_read == 1 and result.conversations_appended == 0
    assert_same(read_parquet(out).tables, ma.load(home).tables)
    append(path, [tool(T0 + 4, "c8", n=4)])
    settle(home)
    assert export(home, out=out).conversations_appended == 1  # the whole read left a point of this version
    assert_same(read_parquet(out).tables, ma.load(home).tables)


def test_a_result_for_a_call_answered_in_an_earlier_range_reads_the_record_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from murmur_home import call, text, tool

    values: list[Any] = []
    for i in range(40):
        values += [msg("user", T0 + 10 * i, text(f"ask {i}"), n=3 * i),
                   msg("assistant", T0 + 10 * i + 1, call(f"c{i}"), n=3 * i + 1),
                   tool(T0 + 10 * i + 2, f"c{i}", body="x" * (i % 7), n=3 * i + 2)]
    values.append(tool(T0 + 1000, "c0", body="again", n=900))  # c0 was answered in the first range
    home = tmp_path / "home"
    path = record(home, "bot", "ctx-0", values)
    settle(home)
    scanned = _count_scans(monkeypatch)
    monkeypatch.setattr(export_module, "RANGE_BYTES", 1000)
    out = tmp_path / "out"
    export(home, out=out)
    # the walk's state knows earlier ranges' ids by their hashes only: taken back, and read whole
    assert len(scanned) > 5 and scanned[-1] == path.stat().st_size
    monkeypatch.undo()
    exported, loaded = read_parquet(out).tables, ma.load(home).tables
    assert_same(exported, loaded)
    assert _ordered(exported) == _ordered(loaded)
    assert "duplicate_result" in exported["tool_calls"].column("status").to_pylist()


_IDS = ["c0", "c1", "c2"]
entry_pieces = st.one_of(
    st.tuples(st.sampled_from(["user", "assistant"]), st.integers(0, 0)),
    st.tuples(st.just("calls"), st.integers(1, 2)),  # one or two calls, ids from _CALLS by serial
    st.tuples(st.just("result"), st.integers(0, len(_CALLS))),  # a tool line; the last: no call id
    st.tuples(st.just("result_block"), st.integers(0, len(_CALLS))),  # a result on the assistant side
)


@settings(max_examples=max(20, settings.default.max_examples // 4), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(entry_pieces, max_size=8), st.lists(st.lists(entry_pieces, min_size=1, max_size=6), min_size=1,
                                                     max_size=3),
       st.sampled_from([16 << 20, 300]))
def test_an_incremental_export_after_any_appends_equals_a_full_export_of_the_final_record(
    tmp_path_factory: Any, start: list[tuple[str, int]], appends: list[list[tuple[str, int]]], range_bytes: int,
) -> None:
    tmp = tmp_path_factory.mktemp("appends")
    home = tmp / "home"
    path = record(home, "bot", "ctx-0", [])
    serial = 0
    with path.open("ab") as f:
        for kind, k in start:
            serial += 1
            f.write(_piece(kind, k, serial))
    out = tmp / "out"
    for n, added in enumerate([[], *appends]):
        with path.open("ab") as f:
            for kind, k in added:
                serial += 1
                f.write(_piece(kind, k, serial))
        os.utime(path, (T0 // 1000 + n, T0 // 1000 + n))  # distinct old times: settled, and never racy
        with mock.patch.object(export_module, "RANGE_BYTES", range_bytes):  # a small one: a range at a time
            result = export(home, out=out)
        if n:
            hypothesis.event("appended" if result.conversations_appended else "read whole")
        full = tmp / f"full-{n}"
        export(home, out=full, incremental=False)
        incremental, whole = read_parquet(out).tables, read_parquet(full).tables
        assert set(incremental) == set(whole)
        for name, table in whole.items():  # every row, in the same order
            if name == "diagnostics":  # rows of no conversation (the home's) are in files of their own
                assert rows(incremental[name]) == rows(table)
                continue
            assert incremental[name].to_pylist() == table.to_pylist(), name


def test_an_export_with_a_progress_bar_keeps_what_did_not_change(tmp_path: Path) -> None:
    # The CLI exports with progress on: the conversations its bar wraps are copies of the ones
    # the export decided to read, and their fingerprints must still reach the state.
    home = tmp_path / "samples"
    shutil.copytree(REPO / "data" / "samples", home, symlinks=True)
    settle(home)
    out = tmp_path / "out"
    told: list[str] = []
    first = export(home, out=out, progress=lambda kind, text: told.append(kind))
    again = export(home, out=out, progress=lambda kind, text: told.append(kind))
    assert told and first.conversations_read > 0
    assert again.conversations_read == 0 and again.conversations_kept == first.conversations_read


def test_a_name_that_is_not_utf8_exports_and_is_kept_unchanged(tmp_path: Path) -> None:
    folder = os.fsencode(tmp_path / "home" / "conversations" / "bot") + b"/ctx\xff"
    os.makedirs(folder)
    record = folder + b"/conversation.jsonl"
    with open(record, "w") as f:
        f.write('{"role":"user","content":"hi","id":"msg_019b76dab4a37fc195492044b948c159"}\n')
    past = time.time() - 3600
    os.utime(record, (past, past))
    out = tmp_path / "out"
    first = export(tmp_path / "home", out=out)
    again = export(tmp_path / "home", out=out)
    assert (first.conversations_read, again.conversations_read, again.conversations_kept) == (1, 0, 1)
    conversations = read_parquet(out).conversations
    assert conversations["conversation_id"].tolist() == ["bot/ctx\\xff"]
    assert conversations["conversation_id_bytes"].tolist() == [b"bot/ctx\xff"]


def test_an_unchanged_re_export_starts_no_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = home_with(tmp_path, n=4)
    settle(home)
    out = tmp_path / "out"
    export(home, out=out)
    calls: list[list[str]] = []
    import murmur_analysis.sources.murmur.source as source_module

    real = source_module.scan_records

    def scan(paths: list[str], text: bool = True) -> Any:
        calls.append(paths)
        return real(paths, text)

    monkeypatch.setattr(source_module, "scan_records", scan)
    assert export(home, out=out).conversations_read == 0
    assert calls == []  # not even an empty one: each starts the engine's threads


def test_records_that_end_at_a_line_end_are_kept_when_they_settle(tmp_path: Path) -> None:
    """Settling changes only what an unterminated last line reads as: a whole record is not read again."""
    home = home_with(tmp_path, n=3)
    torn = rec(home, 2)
    torn.write_bytes(torn.read_bytes() + b'{"role":"assistant","con')  # a line still being written
    recent = time.time() - 1.5  # outside the racy second, inside the settle time
    for path in home.rglob("*"):
        os.utime(path, (recent, recent))
    out = tmp_path / "out"
    options = {"murmur": {"settle_seconds": 2.0}}
    export(home, out=out, options=options)
    time.sleep(0.6)  # now every record has settled
    again = export(home, out=out, options=options)
    assert again.conversations_read == 1  # only the torn one: its last line now counts as unreadable
    assert_same(read_parquet(out).tables, ma.load(home, options=options).tables)


def test_a_record_appended_to_just_before_the_export_is_read_on(tmp_path: Path) -> None:
    """Lines appended a moment before the export (the file changed within the run's racy
    window) are still read on from the point: only the fingerprint the state records is left
    unknown, so the next export reads the record whole once, and both equal a fresh load."""
    home = tmp_path / "home"
    path = record(home, "bot", "ctx", [msg("user", T0), msg("assistant", T0 + 1, n=1)])
    old = T0 / 1000
    os.utime(path, (old, old))
    out = tmp_path / "out"
    export(home, out=out)
    append(path, [msg("user", T0 + 2, n=2), msg("assistant", T0 + 3, n=3)])  # now: within the window
    grown = export(home, out=out)
    assert (grown.conversations_appended, grown.conversations_read) == (1, 0)
    assert_same(read_parquet(out).tables, ma.load(home).tables)
    again = export(home, out=out)
    assert (again.conversations_appended, again.conversations_read) == (0, 1)
    assert_same(read_parquet(out).tables, ma.load(home).tables)
