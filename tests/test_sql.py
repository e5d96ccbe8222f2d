"""SQL over a corpus: DuckDB over the loaded tables (or an export read back), in the API and the CLI."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pytest

import murmur_analysis as ma

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "data" / "samples"

BY_SOURCE = """
    select source, count(*) as calls, sum(result_chars) as result_chars, count(called_at) as timed,
           sum(case when status = 'error' then 1 else 0 end) as errors
    from tool_calls group by source order by source
"""


@pytest.fixture(scope="module")
def corpus() -> ma.Corpus:
    return ma.load(SAMPLES)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sql") / "out"
    ma.export_parquet(SAMPLES, out=out)
    return out


def expected_by_source(c: ma.Corpus) -> list[dict[str, Any]]:
    """BY_SOURCE, computed by pandas on the corpus's frames."""
    calls = c.tool_calls
    grouped = calls.groupby("source")
    frame = pd.DataFrame({
        "calls": grouped.size(),
        "result_chars": grouped["result_chars"].sum(min_count=1),
        "timed": grouped["called_at"].count(),
        "errors": calls.assign(e=(calls.status == "error").astype(int)).groupby("source")["e"].sum(),
    }).reset_index().sort_values("source")
    return [{k: None if pd.isna(v) else (v if isinstance(v, str) else int(v)) for k, v in r.items()}
            for r in frame.to_dict("records")]


def plain(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: None if pd.isna(v) else (v if isinstance(v, str) else int(v)) for k, v in r.items()}
            for r in frame.to_dict("records")]


def test_counts_and_sums_by_source_equal_pandas_on_the_frames(corpus: ma.Corpus) -> None:
    result = corpus.sql(BY_SOURCE)
    assert isinstance(result, pd.DataFrame)
    assert all(isinstance(t, pd.ArrowDtype) for t in result.dtypes)
    assert plain(result) == expected_by_source(corpus)
    assert len(result) == corpus.tool_calls.source.nunique() > 1


def test_a_join_and_nulls_equal_pandas(corpus: ma.Corpus) -> None:
    result = corpus.sql("""
        select c.source, count(*) as messages, sum(m.text_chars) as chars, sum(m.input_tokens) as input_tokens
        from messages m join conversations c using (source, conversation_id)
        group by c.source order by c.source
    """)
    m = corpus.messages
    grouped = m.groupby("source")
    expected = pd.DataFrame({
        "messages": grouped.size(), "chars": grouped["text_chars"].sum(min_count=1),
        "input_tokens": grouped["input_tokens"].sum(min_count=1),  # null where no message reported any
    }).reset_index()
    assert plain(result) == plain(expected)
    assert any(r["input_tokens"] is None for r in plain(result))


def test_every_table_is_queried_by_its_name(corpus: ma.Corpus) -> None:
    for name, table in corpus.tables.items():
        assert corpus.sql(f"select count(*) as n from {name}")["n"].iloc[0] == table.num_rows, name


def test_an_export_read_back_answers_alike(corpus: ma.Corpus, exported: Path) -> None:
    back = ma.read_parquet(exported)
    assert plain(back.sql(BY_SOURCE)) == expected_by_source(back) == expected_by_source(corpus)


def test_sql_arrow_gives_a_table_with_times_in_utc(corpus: ma.Corpus) -> None:
    table = corpus.sql_arrow("select source, min(called_at) as first, max(result_at) as last from tool_calls "
                             "group by source order by source")
    assert isinstance(table, pa.Table)
    assert table.schema.field("first").type == pa.timestamp("us", tz="UTC")
    calls = corpus.tool_calls
    assert table.column("first").to_pylist() == [
        None if pd.isna(v) else v.to_pydatetime() for v in calls.groupby("source")["called_at"].min().sort_index()]


def test_times_are_utc_whatever_the_local_time_zone() -> None:
    code = ("import murmur_analysis as ma; c = ma.load(ma.sample_data() / 'murmur'); "
            "t = c.sql_arrow(\"select min(created_at) as t, date_trunc('day', min(created_at)) as d from messages\"); "
            "print(t.schema.field('t').type, t.schema.field('d').type, t.column('d')[0].as_py().isoformat())")
    env = {**os.environ, "TZ": "Pacific/Kiritimati", "PYTHONPATH": str(REPO)}  # UTC+14: another day
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    first = ma.load(SAMPLES / "murmur").messages["created_at"].min()
    assert out.split() == ["timestamp[us,", "tz=UTC]", "timestamp[us,", "tz=UTC]",
                           first.floor("D").isoformat()]


def test_duckdb_is_imported_only_for_a_query() -> None:
    code = ("import sys, murmur_analysis as ma; c = ma.load(ma.sample_data() / 'murmur'); "
            "print('duckdb' in sys.modules); c.sql('select 1'); print('duckdb' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == ["False", "True"]


def test_a_query_duckdb_refuses_is_a_query_error(corpus: ma.Corpus) -> None:
    with pytest.raises(ma.QueryError) as caught:
        corpus.sql("selec count(*) from messages")
    err = caught.value
    assert isinstance(err, ma.MurmurAnalysisError)
    assert "syntax error" in str(err) and "\n" not in str(err)
    assert err.excerpt is not None and err.excerpt.startswith("LINE 1:")
    assert err.hint is not None and all(name in err.hint for name in corpus.tables)
    with pytest.raises(ma.QueryError, match="nowhere"):
        corpus.sql("select * from nowhere")


def test_names_are_the_tables_never_python_variables(corpus: ma.Corpus) -> None:
    frame_of_mine = corpus.messages  # noqa: F841 - DuckDB would scan it by its name if let
    with pytest.raises(ma.QueryError, match="frame_of_mine"):
        corpus.sql("select count(*) from frame_of_mine")


def test_a_repeated_name_is_numbered_and_a_statement_without_rows_is_empty(corpus: ma.Corpus) -> None:
    assert list(corpus.sql("select 1 as a, 2 as a, 3 as a").columns) == ["a", "a_1", "a_2"]
    assert corpus.sql("create table mine as select 1 as x; select x from mine")["x"].tolist() == [1]
    assert corpus.sql("set threads = 1").empty
    assert "mine" not in corpus.tables and corpus.sql("select count(*) as n from messages")["n"].iloc[0] > 0


# -- command line ----------------------------------------------------------------------------------

def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", *args], capture_output=True, text=True,
                          env=env, check=False)


@pytest.mark.parametrize("where", ["sources", "export"])
def test_cli_json_and_csv_equal_pandas_on_the_frames(corpus: ma.Corpus, exported: Path, where: str) -> None:
    src = str(SAMPLES) if where == "sources" else str(exported)
    expected = expected_by_source(corpus)
    done = cli("sql", BY_SOURCE, src, "-q", "--json")
    assert done.returncode == 0, done.stderr
    doc = orjson.loads(done.stdout)
    assert doc["columns"] == ["source", "calls", "result_chars", "timed", "errors"]
    assert doc["rows"] == expected
    done = cli("sql", BY_SOURCE, src, "-q", "--csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert rows == [{k: "" if v is None else str(v) for k, v in r.items()} for r in expected]


def test_cli_prints_a_table_as_the_reports_do(corpus: ma.Corpus) -> None:
    from murmur_analysis.analysis.reports import Report
    from murmur_analysis.ui.render import table_text

    done = cli("sql", BY_SOURCE, str(SAMPLES), "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout == table_text(Report("query", corpus.sql(BY_SOURCE))) + "\n"
    header, _rule, *lines = done.stdout.splitlines()
    assert header.split() == ["source", "calls", "result_chars", "timed", "errors"]
    assert [line.split()[0] for line in lines] == [r["source"] for r in expected_by_source(corpus)]


def test_cli_json_writes_times_intervals_and_big_sums() -> None:
    done = cli("sql", "select min(called_at) as first, max(result_at - called_at) as longest, "
                      "sum(result_chars) * 0 + 2::hugeint * 10000000000000000000 as big from tool_calls",
               str(SAMPLES / "murmur"), "-q", "--json")
    assert done.returncode == 0, done.stderr
    [row] = orjson.loads(done.stdout)["rows"]
    calls = ma.load(SAMPLES / "murmur").tool_calls
    assert row["first"] == calls["called_at"].min().isoformat()
    longest = (calls["result_at"] - calls["called_at"]).max()
    assert row["longest"] == str(longest.to_pytimedelta())
    assert row["big"] == 2e19


def test_cli_query_error_is_one_line_and_exit_2() -> None:
    done = cli("sql", "selec 1", str(SAMPLES / "murmur"), "-q")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("murmur-analysis: error: Parser Error: syntax error")
    assert len(done.stderr.splitlines()) == 1 and "tool_calls" in done.stderr


def test_cli_an_export_is_queried_alone_and_without_load_options(exported: Path) -> None:
    for args in ([str(exported), str(SAMPLES / "murmur")], [str(exported), "--prices", "x.csv"]):
        done = cli("sql", "select 1", *args, "-q")
        assert done.returncode == 2 and done.stdout == "", args
        assert len(done.stderr.splitlines()) == 1 and str(exported) in done.stderr


def test_cli_no_rows_names_the_columns() -> None:
    done = cli("sql", "select call_id, status from tool_calls where false", str(SAMPLES / "murmur"), "-q")
    assert done.returncode == 0 and done.stdout == "no rows (call_id, status)\n"


def test_the_sql_table_fits_the_terminal_and_keeps_the_querys_own_column_names(samples: Path) -> None:
    query = "select source, conversation_id, title, cost_usd from conversations order by cost_usd desc nulls last"
    env = {**os.environ, "COLUMNS": "60"}
    proc = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "sql", query, str(samples)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["source", "conversation_id", "title", "cost_usd"]
    assert all(len(line) <= 60 for line in lines)
    wide = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "sql", query, str(samples), "--wide"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert max(len(line) for line in wide.stdout.splitlines()) > 60
