"""Experiment: DuckDB parses a murmur record; SQL builds the messages and tool_calls columns.

The other proposal in ``benchmarks/README.md``: let DuckDB's multi-threaded JSON reader do
the parsing (``read_ndjson`` with declared columns, ``content`` kept as JSON, which
``tests/test_benchmark_engines.py`` checks against a reference parse), and derive the columns
with DuckDB's JSON functions. Tool pairing here is a join on the call id, FIFO per id through
``row_number`` (exact for records where an id is called once, as murmur mints them).

``--check`` compares with the toolkit's tables column by column (needs a small record).

    python benchmarks/experiments/duckdb_murmur.py RECORD [--check]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import duckdb
import pyarrow as pa

# Characters of text: a bare-string body, or the ``text`` of every block (text and thinking).
TEXT_CHARS = ("CASE WHEN json_type(content) = 'VARCHAR' THEN length(content ->> '$') "
              "ELSE coalesce(list_sum(list_transform(json_extract_string(content, '$[*].text'), "
              "lambda x: coalesce(length(x), 0))), 0) END")
COLUMNS = ("{'role': 'VARCHAR', 'id': 'VARCHAR', 'content': 'JSON', 'tool_call_id': 'VARCHAR', "
           "'is_error': 'BOOLEAN', 'source_id': 'VARCHAR'}")


def load(path: str) -> tuple[pa.Table, pa.Table]:
    """The ``messages`` and ``tool_calls`` columns of one record."""
    con = duckdb.connect()
    literal = "'" + path.replace("'", "''") + "'"
    con.sql(f"""
        CREATE TEMP TABLE lines AS
        SELECT row_number() OVER () - 1 AS seq, *
        FROM read_ndjson({literal}, columns={COLUMNS})
        WHERE role IS NOT NULL
    """)
    messages = con.sql(f"""
        SELECT seq, id AS message_id, role,
               CASE WHEN length(id) = 36 AND id[17] = '7'
                    THEN make_timestamp(('0x' || id[5:16])::BIGINT * 1000) END AS created_at,
               CASE WHEN role = 'tool' AND tool_call_id IS NOT NULL THEN 1
                    WHEN json_type(content) = 'ARRAY' THEN json_array_length(content) ELSE 1 END AS n_blocks,
               {TEXT_CHARS} AS text_chars,
               source_id,
               CASE WHEN role = 'tool' AND tool_call_id IS NOT NULL THEN ['tool_result']
                    WHEN json_type(content) = 'ARRAY' THEN list_transform(json_extract_string(content, '$[*].type'),
                        lambda x: CASE WHEN x = 'tool_call' THEN 'tool_use' ELSE x END)
                    ELSE ['text'] END AS block_kinds
        FROM lines ORDER BY seq
    """).to_arrow_table()
    calls = con.sql(f"""
        WITH called AS (
            SELECT seq AS called_seq, b ->> 'id' AS call_id, b ->> 'name' AS tool_name,
                   strlen((b -> 'input')::VARCHAR) AS input_bytes, ord
            FROM (SELECT seq, unnest(json_extract(content, '$[*]')) AS b, generate_subscripts(
                      json_extract(content, '$[*]'), 1) AS ord
                  FROM lines WHERE role = 'assistant' AND json_type(content) = 'ARRAY')
            WHERE b ->> 'type' = 'tool_call'
        ), calls_n AS (
            SELECT *, row_number() OVER (PARTITION BY call_id ORDER BY called_seq, ord) AS n FROM called
        ), results AS (
            SELECT seq AS result_seq, tool_call_id AS call_id, is_error,
                   {TEXT_CHARS} AS result_chars,
                   row_number() OVER (PARTITION BY tool_call_id ORDER BY seq) AS n
            FROM lines WHERE role = 'tool' AND tool_call_id IS NOT NULL
        )
        SELECT coalesce(c.call_id, r.call_id) AS call_id, c.tool_name, c.called_seq, r.result_seq,
               CASE WHEN c.call_id IS NULL THEN 'orphan_result' WHEN r.call_id IS NULL THEN 'unanswered'
                    WHEN r.is_error THEN 'error' ELSE 'ok' END AS status,
               r.is_error, c.input_bytes, r.result_chars
        FROM calls_n c FULL OUTER JOIN results r ON c.call_id = r.call_id AND c.n = r.n
        ORDER BY coalesce(c.called_seq, r.result_seq), c.ord
    """).to_arrow_table()
    return messages, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("record")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    messages, calls = load(args.record)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = os.path.getsize(args.record) / 2**20
    print(f"duckdb: {wall:.2f} s, {messages.num_rows:,} messages, {calls.num_rows:,} tool calls; "
          f"peak RSS {peak:,.0f} MB; file {size:,.0f} MB")
    if args.check:
        import murmur_analysis as ma

        corpus = ma.load(args.record, source="murmur")
        want = corpus.tables["messages"]
        for name in ("seq", "message_id", "role", "n_blocks", "text_chars", "source_id", "block_kinds"):
            got = messages[name].cast(want.schema.field(name).type)
            print(f"  messages.{name}: {'equal' if got.equals(want[name]) else 'DIFFERENT'}")
        want_calls = corpus.tables["tool_calls"]
        for name in ("call_id", "tool_name", "called_seq", "result_seq", "status", "is_error", "input_bytes",
                     "result_chars"):
            got = calls[name].cast(want_calls.schema.field(name).type)
            print(f"  tool_calls.{name}: {'equal' if got.equals(want_calls[name]) else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
