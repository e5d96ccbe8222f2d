"""Experiment: a murmur record straight to Arrow columns, no per-entry objects, in 1 or N processes.

A prototype of the proposal in ``benchmarks/README.md``: each line is parsed with ``orjson``
and its values go straight into column lists (no ``Entry``, no block objects, no row tuples);
lists become Arrow arrays every 64k rows. Tool pairing is a dict of open call ids. With
``--procs N`` the file is cut into N byte ranges at line boundaries, each range is read by its
own process, and the parent stitches sequence numbers and the tool pairs that cross a cut.

It reproduces the toolkit's ``messages`` and ``tool_calls`` columns for records as murmur
writes them (``--check`` compares with ``ma.load`` row for row); it is not the loader: no
diagnostics, no header line handling beyond skipping it, no trace join.

    python benchmarks/experiments/columnar_murmur.py RECORD --procs 2 [--check]
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing as mp
import os
import resource
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

BATCH = 65_536
_KIND = {"tool_call": "tool_use"}
_TEXT_KINDS = ("text", "thinking")
PENDING = "pending"


@dataclass
class Part:
    """What one byte range produced."""

    messages: pa.Table
    calls: dict[str, list[Any]]
    pending: list[int] = field(default_factory=list)  # rows of results with no call in this part
    n_messages: int = 0


def _message_schema() -> pa.Schema:
    return pa.schema([
        ("seq", pa.int64()), ("message_id", pa.string()), ("role", pa.string()),
        ("created_at", pa.timestamp("ms", tz="UTC")), ("n_blocks", pa.int32()), ("text_chars", pa.int64()),
        ("source_id", pa.string()), ("block_kinds", pa.list_(pa.string())),
    ])


def _chars(content: Any) -> int:
    if type(content) is str:
        return len(content)
    n = 0
    if type(content) is list:
        for b in content:
            if type(b) is str:
                n += len(b)
            elif type(b) is dict and b.get("type") in _TEXT_KINDS and type(b.get("text")) is str:
                n += len(b["text"])
    return n


def read_range(path: str, start: int, end: int) -> Part:
    """Columns of the message lines in ``[start, end)`` (both at line starts)."""
    schema = _message_schema()
    cols: list[list[Any]] = [[] for _ in schema]
    seq_c, id_c, role_c, at_c, nb_c, chars_c, src_c, kinds_c = cols
    batches: list[pa.RecordBatch] = []
    calls: dict[str, list[Any]] = {k: [] for k in ("call_id", "tool_name", "called_seq", "result_seq", "status",
                                                   "is_error", "input_bytes", "result_chars")}
    c_id, _, _, c_result, c_status, c_err, _, c_chars = calls.values()
    open_calls: dict[str, list[int]] = {}
    called: set[str] = set()
    pending: list[int] = []
    loads, dumps = orjson.loads, orjson.dumps
    seq = 0
    with open(path, "rb") as f:
        f.seek(start)
        remaining = end - start
        carry = b""
        while remaining > 0 or carry:
            chunk = f.read(min(8 << 20, remaining)) if remaining > 0 else b""
            remaining -= len(chunk)
            data = carry + chunk
            lines = data.split(b"\n")
            carry = lines.pop() if remaining > 0 else b""
            for raw in lines:
                if not raw:
                    continue
                d = loads(raw)
                role = d.get("role")
                if type(role) is not str:
                    continue
                mid = d.get("id")
                if type(mid) is not str:
                    mid = None
                content = d.get("content")
                seq_c.append(seq)
                id_c.append(mid)
                role_c.append(role)
                at_c.append(int(mid[4:16], 16) if mid and len(mid) == 36 and mid[16] == "7" else None)
                src = d.get("source_id")
                src_c.append(src if type(src) is str else None)
                if role == "tool" and type(d.get("tool_call_id")) is str:
                    cid = d["tool_call_id"]
                    err = d.get("is_error")
                    err = err if type(err) is bool else None
                    chars = _chars(content)
                    nb_c.append(1)
                    kinds_c.append(["tool_result"])
                    chars_c.append(chars)
                    waiting = open_calls.get(cid)
                    if waiting:
                        row = waiting.pop(0)
                        c_result[row] = seq
                        c_status[row] = "error" if err else "ok"
                        c_err[row] = err
                        c_chars[row] = chars
                    else:
                        pending.append(len(c_id))
                        for col, v in zip(calls.values(), (cid, None, None, seq, "duplicate_result" if cid in called
                                                           else PENDING, err, None, chars), strict=True):
                            col.append(v)
                elif type(content) is list:
                    nb_c.append(len(content))
                    kinds: list[str] = []
                    for b in content:
                        t = b.get("type") if type(b) is dict else "text" if type(b) is str else None
                        kinds.append(_KIND.get(t, t) if type(t) is str else "unknown")
                        if t == "tool_call" and type(b.get("id")) is str and type(b.get("name")) is str:
                            cid = b["id"]
                            called.add(cid)
                            open_calls.setdefault(cid, []).append(len(c_id))
                            for col, v in zip(calls.values(), (cid, b["name"], seq, None, "unanswered", None,
                                                               len(dumps(b["input"])) if "input" in b and b["input"]
                                                               is not None else None, None), strict=True):
                                col.append(v)
                    kinds_c.append(kinds)
                    chars_c.append(_chars(content))
                else:
                    nb_c.append(1)
                    kinds_c.append(["text" if type(content) is str else "unknown"])
                    chars_c.append(_chars(content))
                seq += 1
                if len(seq_c) >= BATCH:
                    batches.append(pa.RecordBatch.from_arrays([pa.array(c, type=fld.type) for c, fld in
                                                               zip(cols, schema, strict=True)], schema=schema))
                    for c in cols:
                        c.clear()
    batches.append(pa.RecordBatch.from_arrays([pa.array(c, type=fld.type) for c, fld in zip(cols, schema, strict=True)],
                                              schema=schema))
    return Part(pa.Table.from_batches(batches, schema=schema), calls, pending, seq)


def cuts(path: str, parts: int) -> list[tuple[int, int]]:
    """``parts`` byte ranges of the file, each starting at a line start."""
    size = os.path.getsize(path)
    bounds = [0]
    with open(path, "rb") as f:
        for i in range(1, parts):
            f.seek(size * i // parts)
            f.readline()
            bounds.append(max(f.tell(), bounds[-1]))
    bounds.append(size)
    return list(itertools.pairwise(bounds))


def _read(args: tuple[str, int, int]) -> Part:
    return read_range(*args)


def load(path: str, procs: int = 1) -> tuple[pa.Table, pa.Table]:
    """The ``messages`` and ``tool_calls`` tables of one record."""
    ranges = cuts(path, procs)
    if procs == 1:
        results = [read_range(path, *ranges[0])]
    else:
        with mp.get_context("fork").Pool(procs) as pool:
            results = pool.map(_read, [(path, a, b) for a, b in ranges])
    offset = 0
    tables = []
    merged: dict[str, list[Any]] = {k: [] for k in results[0].calls}
    open_calls: dict[str, list[int]] = {}
    called: set[str] = set()
    for part in results:
        t = part.messages
        tables.append(t.set_column(0, "seq", pc.add(t["seq"], offset)))
        base = len(merged["call_id"])
        drop: set[int] = set()
        pend = set(part.pending)
        for i in range(len(part.calls["call_id"])):
            row = {k: v[i] for k, v in part.calls.items()}
            for k in ("called_seq", "result_seq"):
                if row[k] is not None:
                    row[k] += offset
            cid = row["call_id"]
            if i in pend:  # a result this part could not pair: the parts before may hold its call
                waiting = open_calls.get(cid)
                if waiting:
                    target = waiting.pop(0)
                    merged["result_seq"][target] = row["result_seq"]
                    merged["status"][target] = "error" if row["is_error"] else "ok"
                    merged["is_error"][target] = row["is_error"]
                    merged["result_chars"][target] = row["result_chars"]
                    drop.add(i)
                    continue
                row["status"] = "duplicate_result" if cid in called else "orphan_result"
            elif row["called_seq"] is not None:
                called.add(cid)
                if row["result_seq"] is None:
                    open_calls.setdefault(cid, []).append(base + i - len(drop))
            for k, v in row.items():
                merged[k].append(v)
        offset += part.n_messages
    messages = pa.concat_tables(tables)
    return messages, pa.table(merged)


def check(path: str, messages: pa.Table, calls: pa.Table) -> None:
    """Compare with the toolkit's tables, column by column."""
    import murmur_analysis as ma

    corpus = ma.load(path, source="murmur")
    want = corpus.tables["messages"]
    for name in ("seq", "message_id", "role", "n_blocks", "text_chars", "source_id", "block_kinds"):
        got = messages[name].cast(want.schema.field(name).type)
        assert got.equals(want[name]), name
    assert messages["created_at"].cast(pa.timestamp("us", tz="UTC")).equals(want["created_at"]), "created_at"
    want_calls = corpus.tables["tool_calls"]
    for name in ("call_id", "tool_name", "called_seq", "result_seq", "status", "is_error", "input_bytes",
                 "result_chars"):
        got = calls[name].cast(want_calls.schema.field(name).type)
        assert got.equals(want_calls[name]), name
    print(f"check: {messages.num_rows:,} messages and {calls.num_rows:,} tool calls equal the toolkit's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("record")
    parser.add_argument("--procs", type=int, default=1)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    t0 = time.perf_counter()
    messages, calls = load(args.record, args.procs)
    wall = time.perf_counter() - t0
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak_kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    size = os.path.getsize(args.record) / 2**20
    print(f"{args.procs} proc: {wall:.2f} s, {messages.num_rows:,} messages, {calls.num_rows:,} tool calls; "
          f"peak RSS parent {peak_self:,.0f} MB, largest child {peak_kids:,.0f} MB; file {size:,.0f} MB")
    if args.check:
        check(args.record, messages, calls)


if __name__ == "__main__":
    main()
