"""The measured callables: this toolkit through its public API, and each baseline.

Every function here takes JSON-able keyword arguments, does its setup (imports, warm-up) and
returns the zero-argument callable :mod:`measure` times. The callable returns a small summary
(row counts) so a run that did no work shows up in the results.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generate import SAFE_GIT, safe_git_env
from measure import PEAK_KEY

Summary = dict[str, Any]
Timed = Callable[[], Summary]


def record_files(home: str, limit_fraction: float = 1.0) -> list[str]:
    """The ``conversation.jsonl`` files under a murmur home, sorted; the first fraction of them."""
    files = sorted(str(p) for p in Path(home).glob("*/*/conversation.jsonl"))
    if limit_fraction < 1.0:
        files = files[: max(1, int(len(files) * limit_fraction))]
    return files


# ---------------------------------------------------------------------------------------------
# murmur-analysis, through the public API only


def _imported() -> None:
    """Setup: what a first ``ma.load`` imports (pandas, pyarrow, the sources, the price data), as a
    baseline's setup imports its library; ``import murmur_analysis`` alone imports none of it."""
    import murmur_analysis.corpus  # noqa: F401
    from murmur_analysis.core.pricing import Pricer
    from murmur_analysis.sources import registry

    registry()
    Pricer().rates("gpt-4o", "openai", None, 1)  # genai-prices' table, which the first priced load reads


def toolkit_load(path: str, tables: list[str], source: str | None = None, text: bool = True) -> Timed:
    """``ma.load(path).tables[...]``: the whole pipeline to Arrow tables (``text=False``: lean)."""
    import murmur_analysis as ma

    _imported()

    def run() -> Summary:
        corpus = ma.load(path, source=source, text=text)
        return {name: corpus.tables[name].num_rows for name in tables}

    return run


def toolkit_first_page(record: str, index: bool = False) -> Timed:
    """``ma.read_messages(record, limit=100)`` in a fresh process: the cold first page.

    The process gets a cache folder of its own: empty (no persisted line index, so the record is
    parsed), or, with ``index``, holding the index an earlier process left (a current index).
    """
    import sys
    import tempfile

    os.environ["MURMUR_ANALYSIS_CACHE"] = tempfile.mkdtemp(prefix="bench-cache-")
    if index:
        subprocess.run([sys.executable, "-c", "import sys, murmur_analysis as ma; ma.read_messages(sys.argv[1])",
                        record], check=True)
    import murmur_analysis as ma

    def run() -> Summary:
        page = ma.read_messages(record, limit=100)
        return {"messages": len(page.messages), "total": page.total, "next": page.next_cursor}

    return run


def toolkit_walk(record: str) -> Timed:
    """``ma.walk(record)``: every message, newest first, a page at a time."""
    import murmur_analysis as ma

    def run() -> Summary:
        n = chars = 0
        for message in ma.walk(record):
            n += 1
            chars += len(message.content)
        return {"messages": n, "content_chars": chars}

    return run


def toolkit_warm_page(record: str, prime_first_page: bool = True) -> Timed:
    """The first page again after a whole walk in the same process.

    With ``prime_first_page`` the process has also read a first page (the default reader's
    cache holds the record); without it only ``ma.walk`` ran, which shows whether a walk warms
    the reader ``ma.read_messages`` uses.
    """
    import murmur_analysis as ma

    if prime_first_page:
        ma.read_messages(record, limit=100)
    for _ in ma.walk(record):
        pass

    def run() -> Summary:
        page = ma.read_messages(record, limit=100)
        return {"messages": len(page.messages), "total": page.total}

    return run


def _linked_home(source: Path, dest: Path, copies: int) -> list[Path]:
    """``copies`` copies of a murmur home's records under ``dest``: the first hard-linked, the others copied.

    Each copy's record folders get a suffix, so every copy's conversations are distinct (a file
    reached through two hard links is the same data, which a load reads once).
    """
    records: list[Path] = []
    for k in range(copies):
        for file in sorted(source.glob("*/*/conversation.jsonl")):
            target = dest / "conversations" / f"{file.parent.parent.name}-{k}" / file.parent.name / file.name
            target.parent.mkdir(parents=True, exist_ok=True)
            if k == 0:
                os.link(file, target)
            else:  # a copy: one file reached through two links is loaded once
                shutil.copyfile(file, target)
                os.utime(target, ns=(file.stat().st_atime_ns, file.stat().st_mtime_ns))
            records.append(target)
    return records


def _own_copies(records: list[Path], fraction: float) -> list[Path]:
    """The first ``fraction`` of the records, each made a file of its own (a copy, with the linked original's times).

    They can then be appended to in place, as murmur's runtime does, without changing the
    generated data the other copies link to.
    """
    changed = records[: max(1, round(len(records) * fraction))]
    for record in changed:
        st = record.stat()
        data = record.read_bytes()
        record.unlink()
        record.write_bytes(data)
        os.utime(record, ns=(st.st_atime_ns, st.st_mtime_ns))
    return changed


def _append(changed: list[Path], donors_from: list[Path], lines: int) -> int:
    """Append ``lines`` message lines in all, taken from ``donors_from``, to the ``changed`` records, in place.

    The runtime appends messages, never a record header, so header lines are not taken.
    """
    donors = (line for r in donors_from for line in r.read_bytes().splitlines(keepends=True)
              if b'"murmur.record"' not in line and line.strip())
    per = max(1, round(lines / len(changed)))
    added = 0
    for record in changed:
        with open(record, "ab") as f:
            for _ in range(per):
                f.write(next(donors))
                added += 1
    return added


def _lines(records: list[Path]) -> int:
    return sum(r.read_bytes().count(b"\n") for r in records)


def _one_side(record: Path, side: str) -> None:
    """Make ``record`` (a copy of its own, no link) one run of ``side``: its lines of that role, repeated to its size.

    Each repetition's tool call ids are its own (``call<k>_``), as in a record made longer. Read
    and written a line at a time, so the setup leaves no memory behind for the measured call.
    """
    import orjson

    size = record.stat().st_size
    mine = record.with_name("one-side.jsonl")
    with open(record, "rb") as src, open(mine, "wb") as dst:
        for line in src:
            if line.strip() and orjson.loads(line).get("role") == side:
                dst.write(line)
    record.unlink()
    written = k = 0
    with open(record, "wb") as f:
        while written < size and mine.stat().st_size:
            with open(mine, "rb") as src:
                for line in src:
                    f.write(line if k == 0 else line.replace(b'"call_', b'"call%d_' % k))
                    written += len(line)
                    if written >= size:
                        break
            k += 1
    mine.unlink()


def _home_copy(home: str, scratch: str, name: str, copies: int = 1, length: int = 1,
               side: str | None = None) -> tuple[Path, list[Path]]:
    """A copy of ``home`` under ``scratch/name`` (see :func:`toolkit_export`): its folder and its records."""
    root = Path(scratch) / name
    shutil.rmtree(root, ignore_errors=True)
    records = _linked_home(Path(home), root / "home", copies)
    if length > 1:
        for record in records:
            data = record.read_bytes()
            record.unlink()
            with open(record, "wb") as f:
                for k in range(length):  # each copy's tool calls get ids of their own
                    f.write(data if k == 0 else data.replace(b'"call_', b'"call%d_' % k))
    if side is not None:
        for record in records:
            _one_side(record, side)
    return root, records


def toolkit_load_copy(home: str, scratch: str, tables: list[str], side: str | None = None) -> Timed:
    """``ma.load`` of a copy of ``home`` made in setup; with ``side``, each record made one run of that side."""
    import murmur_analysis as ma

    root, _ = _home_copy(home, scratch, f"load-{side}-{Path(home).parent.name}", side=side)

    def run() -> Summary:
        corpus = ma.load(root / "home")
        return {name: corpus.tables[name].num_rows for name in tables}

    return run


def toolkit_export(home: str, scratch: str, mode: str = "full", copies: int = 1, fraction: float = 0.01,
                   length: int = 1, donors: str | None = None, side: str | None = None) -> Timed:
    """``export(home, out=...)``: a full export, a re-export of unchanged input, or one after appends.

    Setup (not timed) builds a linked copy of ``home`` (``copies`` times over) in ``scratch``
    and, for ``unchanged`` and ``appended``, a first full export; ``appended`` then appends
    ``fraction`` of the lines (other records' lines) to ``fraction`` of the records, in place.
    ``length`` > 1 makes each record that many times as long (its lines repeated, with tool call
    ids of their own; a copy).
    ``donors``: a murmur home whose lines are appended (default: the other records' lines).
    ``side``: each record made one run of that side (``"assistant"``, ``"tool"``): its lines of
    that role, repeated to its size (a copy).
    """
    from murmur_analysis.export import export

    root, records = _home_copy(home, scratch, f"{mode}-{copies}-{length}-{side}-{Path(home).parent.name}", copies,
                               length, side)
    changed = _own_copies(records, fraction) if mode == "appended" else []
    out = root / "out"
    appended = 0
    if mode != "full":
        export(root / "home", out=out)
    if mode == "appended":
        given = sorted(Path(donors).rglob("conversation.jsonl")) if donors else []
        appended = _append(changed, given or [r for r in records if r not in changed],
                           round(_lines(records) * fraction))

    def run() -> Summary:
        result = export(root / "home", out=out)
        return {"messages": result.rows["messages"], "read": result.conversations_read,
                "appended": getattr(result, "conversations_appended", 0), "kept": result.conversations_kept,
                "files_written": result.files_written, "files_kept": result.files_kept, "lines_appended": appended}

    return run


def toolkit_claude_export(home: str, scratch: str, mode: str = "full", fraction: float = 0.01) -> Timed:
    """``export(home, out=)`` of a Claude Code home: a full export, a re-export of it unchanged, or one after growth.

    Setup (not timed) copies the home's sessions into ``scratch`` (copies, not links: a grown
    session is appended to in place, as Claude Code appends to a live one) and, for ``unchanged``
    and ``appended``, makes a first full export; ``appended`` then appends one more response (ids
    of its own, a copy of the session's last one) to ``fraction`` of the sessions.
    """
    import json
    import random

    from murmur_analysis.export import export

    options = {"claude_code": {"settle_seconds": 0.0}}
    root = Path(scratch) / f"claude-{mode}"
    shutil.rmtree(root, ignore_errors=True)
    sessions = []
    for file in sorted(Path(home).rglob("*.jsonl")):
        target = root / "home" / file.relative_to(home)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(file, target)
        sessions.append(target)
    out = root / "out"
    if mode != "full":
        export(root / "home", out=out, options=options)
    picked = random.Random(7).sample(sessions, max(1, round(len(sessions) * fraction)))
    grown = picked if mode == "appended" else []
    for n, session in enumerate(grown):
        st = session.stat()
        last = next(json.loads(line) for line in reversed(session.read_bytes().splitlines())
                    if b'"type":"assistant"' in line)
        last.update(uuid=f"00000000-0000-4000-8000-{n:012d}", requestId=f"req_grown_{n}")
        last["message"] = {**last["message"], "id": f"msg_grown_{n}"}
        with session.open("ab") as f:
            f.write(json.dumps(last, separators=(",", ":")).encode() + b"\n")
        os.utime(session, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))

    def run() -> Summary:
        result = export(root / "home", out=out, options=options)
        return {"messages": result.rows["messages"], "read": result.conversations_read,
                "appended": result.conversations_appended, "kept": result.conversations_kept,
                "sessions_grown": len(grown)}

    return run


# ---------------------------------------------------------------------------------------------
# Fresh processes that start and end: what a notebook's import and a command cost before any data


def process_command(argv: list[str]) -> Timed:
    """A whole process: ``argv`` (a script and its arguments, ``-c`` code) run by a fresh interpreter.

    Each run gets an empty cache folder of its own, so nothing an earlier run left is used.
    """
    import sys
    import tempfile

    def run() -> Summary:
        env = {**os.environ, "MURMUR_ANALYSIS_CACHE": tempfile.mkdtemp(prefix="bench-cache-")}
        done = subprocess.run([sys.executable, *argv], check=True, capture_output=True, env=env)
        return {"stdout_bytes": len(done.stdout)}

    return run


def cli_script() -> str:
    """The installed ``murmur-analysis`` command (the console script beside the interpreter)."""
    import sys

    return str(Path(sys.executable).parent / "murmur-analysis")


# ---------------------------------------------------------------------------------------------
# The toolkit's native engine alone: what the toolkit's own Python work adds is the difference


def engine_scan(files: list[str], text: bool = True) -> Timed:
    """The native scan behind ``ma.load``: every record decided and derived into columns."""
    from murmur_analysis.sources.murmur.record import scan_records

    def run() -> Summary:
        scanned = scan_records(files, text)
        return {"rows": sum(s.rows for s in scanned), "events": sum(s.events for s in scanned)}

    return run


def engine_scan_lines(format: str, files: list[str], text: bool = True) -> Timed:
    """The native line-delimited scan behind a ``claude_code`` or ``codex`` load: every line into columns.

    The files' rows are taken joined, as a load takes them (no file's own slice is made).
    """
    from pathlib import Path

    from murmur_analysis.sources.lines import joined, scan_lines

    paths = [Path(f) for f in files]
    if paths:
        joined(scan_lines(format, paths[:1], text=text))  # what a first scan imports, imported in setup

    def run() -> Summary:
        whole = joined(scan_lines(format, paths, text=text))  # every file's rows at once, as a load takes them
        return {"rows": whole.table.num_rows, "events": whole.events.num_rows}

    return run


def engine_index(record: str) -> Timed:
    """The native line decision behind a cold ``ma.read_messages``: every line of the record.

    The record is read as the reader reads it, a chunk at a time into one buffer filled again,
    and each chunk's lines are decided before the next is read (the reader reads the next one
    meanwhile).
    """
    from murmur_analysis.sources.murmur.reader import _CHUNK
    from murmur_analysis.sources.murmur.record import index_lines

    def run() -> Summary:
        size = os.path.getsize(record)
        buffer = bytearray(_CHUNK)
        offset = messages = 0
        with open(record, "rb", buffering=0) as f, memoryview(buffer) as view:
            while offset < size:
                got = os.preadv(f.fileno(), [view[: min(_CHUNK, size - offset)]], offset)
                if not got:
                    break
                cut = got if offset + got >= size else buffer.rfind(b"\n", 0, got) + 1
                if not cut:
                    raise ValueError("a line longer than the reader's chunk: not a benchmark record")
                messages += len(index_lines(buffer, cut, offset, offset == 0).starts) // 8
                offset += cut
        return {"messages": messages}

    return run


def engine_decide(files: list[str]) -> Timed:
    """Every line of every file parsed by serde_json and decided, nothing derived; the files already in memory.

    This is the part of an exact load that the engine's design cannot skip: each line is read
    by serde_json into a tree and decided, to be kept or reported. It runs murmur's line rule
    (the decision a cold first page makes,
    :func:`~murmur_analysis.sources.murmur.record.index_lines`) on every core; any JSONL costs
    serde_json the same parse. The files are read before the clock starts and laid end to end
    (each ending with a newline), so that many small files are decided in one call, as a load
    decides them, not one call and one thread pool each; reading them is :func:`files_read`'s
    row (the engine reads a block while it decides the one before, so the two rows' sum is more
    than a load must pay). serde_json alone, with no tree, needs less: ``experiments/serde_floor/``.
    """
    from murmur_analysis.sources.murmur.record import index_lines

    parts = []
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        parts.append(data if not data or data.endswith(b"\n") else data + b"\n")
    held = b"".join(parts)
    del parts

    def run() -> Summary:
        return {"files": len(files), "lines": index_lines(held, len(held), 0, True).lines}

    return run


def files_read(files: list[str]) -> Timed:
    """Every file read once, a block at a time into a buffer each thread reuses, files side by side on every core.

    The reading an exact load cannot skip, in the engine's block (``BLOCK``); what is read is not looked at.
    """
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from murmur_analysis.engine import _native

    local = threading.local()

    def one(path: str) -> int:
        if not hasattr(local, "view"):
            local.view = memoryview(bytearray(_native.BLOCK))
        read = 0
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(local.view):
                read += n
        return read

    def run() -> Summary:
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            return {"files": len(files), "bytes": sum(pool.map(one, files))}

    return run


# ---------------------------------------------------------------------------------------------
# Baselines: what a user would otherwise reach for


def pandas_read_json(files: list[str]) -> Timed:
    """``pandas.read_json(lines=True)`` per file, concatenated."""
    import pandas as pd

    def run() -> Summary:
        frames = [pd.read_json(f, lines=True) for f in files]
        frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
        return {"rows": len(frame), "columns": len(frame.columns)}

    return run


def polars_read_ndjson(files: list[str]) -> Timed:
    """``polars.read_ndjson`` over every file in one call, ``content`` declared a string.

    Left to infer, polars refuses a record whose tool bodies are sometimes a string and
    sometimes a list (and infers a multi-file schema from the first file only); declared a
    string, nested content is re-serialized by polars, not always correctly
    (pola-rs/polars#26574, see tests/test_benchmark_engines.py).
    """
    import polars as pl

    def run() -> Summary:
        frame = pl.read_ndjson(files, schema_overrides={"content": pl.String}, infer_schema_length=None)
        return {"rows": frame.height, "columns": frame.width}

    return run


def _arrow(relation: Any) -> Any:
    """A DuckDB relation as a ``pa.Table`` (the method's name changed across DuckDB releases).

    A relation (``con.sql``), not a DB-API result: DuckDB copies the rows once more for the latter.
    """
    for name in ("to_arrow_table", "arrow"):
        method = getattr(relation, name, None)
        if method is not None:
            return method()
    raise AttributeError("this DuckDB cannot return Arrow tables")


def _sql_list(files: list[str]) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"


def duckdb_read_json_auto(files: list[str]) -> Timed:
    """DuckDB ``read_json_auto`` to an Arrow table (schema inferred, no tool pairing)."""
    import duckdb

    con = duckdb.connect()

    def run() -> Summary:
        table = _arrow(con.sql(f"SELECT * FROM read_json_auto({_sql_list(files)}, union_by_name=true)"))
        return {"rows": table.num_rows, "columns": table.num_columns}

    return run


MURMUR_COLUMNS = {"role": "VARCHAR", "id": "VARCHAR", "content": "JSON", "tool_call_id": "VARCHAR",
                  "is_error": "BOOLEAN", "source_id": "VARCHAR"}


def duckdb_read_ndjson_columns(files: list[str]) -> Timed:
    """DuckDB ``read_ndjson`` with the murmur columns declared (``content`` kept as JSON text)."""
    import duckdb

    con = duckdb.connect()
    columns = "{" + ", ".join(f"'{k}': '{v}'" for k, v in MURMUR_COLUMNS.items()) + "}"

    def run() -> Summary:
        table = _arrow(con.sql(f"SELECT * FROM read_ndjson({_sql_list(files)}, columns={columns})"))
        return {"rows": table.num_rows, "columns": table.num_columns}

    return run


def orjson_loop(files: list[str]) -> Timed:
    """``orjson.loads`` on every line, results dropped: the single-core parse floor."""
    import orjson

    loads = orjson.loads

    def run() -> Summary:
        n = 0
        for name in files:
            with open(name, "rb") as f:
                for line in f:
                    if line.strip():
                        loads(line)
                        n += 1
        return {"rows": n}

    return run


def tail_page(record: str, lines: int = 100) -> Timed:
    """Read the last ``lines`` lines from the end of the file and parse them (no validation of the rest)."""
    import orjson

    def run() -> Summary:
        with open(record, "rb") as f:
            f.seek(0, os.SEEK_END)
            end = f.tell()
            buf = b""
            pos = end
            while pos > 0 and buf.count(b"\n") <= lines:
                step = min(1 << 20, pos)
                pos -= step
                f.seek(pos)
                buf = f.read(step) + buf
        tail = [x for x in buf.split(b"\n") if x.strip()][-lines:]
        parsed = [orjson.loads(x) for x in reversed(tail)]
        return {"messages": len(parsed)}

    return run


def git_walk(repo: str) -> Timed:
    """Plain git plumbing: one ``git log --raw -z`` over every agent branch, then one
    ``git cat-file --batch`` reading each ``messages/`` blob once, parsing the JSON ones.

    Per commit it counts the ``messages/`` files added or changed, so it sees every commit.
    """
    import orjson

    env = safe_git_env()

    def run() -> Summary:
        log = subprocess.run(
            [*SAFE_GIT, "--git-dir", repo, "log", "--raw", "-z", "--no-abbrev", "--no-renames",
             "--format=%x01%H %P", "--branches=agents/*"],
            env=env, capture_output=True, check=True,
        ).stdout
        blobs: dict[str, str] = {}
        commits = changes = 0
        tokens = log.split(b"\0")
        i = 0
        while i < len(tokens):
            tok = tokens[i].lstrip(b"\n")
            if tok.startswith(b"\x01"):
                commits += 1
            elif tok.startswith(b":"):
                path = tokens[i + 1].decode()
                i += 1
                fields = tok.split()
                if path.startswith("messages/") and fields[4] != b"D":
                    changes += 1
                    blobs.setdefault(fields[3].decode(), path)
            i += 1
        proc = subprocess.Popen([*SAFE_GIT, "--git-dir", repo, "cat-file", "--batch"], env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        shas = list(blobs)

        def feed() -> None:
            assert proc.stdin is not None
            proc.stdin.write("".join(s + "\n" for s in shas).encode())
            proc.stdin.close()

        writer = threading.Thread(target=feed)
        writer.start()
        out = proc.stdout
        parsed = nbytes = 0
        for sha in shas:
            header = out.readline().split()
            size = int(header[2])
            data = out.read(size)
            out.read(1)
            nbytes += size
            if blobs[sha].endswith(".json"):
                orjson.loads(data)
            else:
                data.decode()
            parsed += 1
        writer.join()
        proc.wait()
        return {"commits": commits, "message_changes": changes, "blobs": parsed, "bytes": nbytes}

    return run


# ---------------------------------------------------------------------------------------------
# Whole processes on a Claude Code home: this toolkit's daily token usage beside ccusage's

PEERS = Path(__file__).resolve().parent.parent / "tests" / "peers" / "node_modules" / ".bin"

#: A fresh interpreter: import, load the home, the daily token usage (what `report daily` computes).
_DAILY = """
import json, sys
import murmur_analysis as ma
corpus = ma.load(sys.argv[1])
daily = ma.metrics.token_usage(corpus, by=(), freq="D")
total = lambda c: int(daily[c].fillna(0).sum())
print(json.dumps({"days": len(daily), "input": total("input_tokens"), "output": total("output_tokens"),
                  "cache_read": total("cache_read_tokens"), "cache_write": total("cache_write_tokens")}))
"""


def _process(script: str, home: str, warm: bool = True) -> Timed:
    """A whole process: a fresh interpreter running ``script`` on ``home``; the JSON it prints.

    The process has a cache folder of its own. With ``warm``, one process ran in it first (not
    timed), as a user's earlier report did: it left the prices it asked genai-prices for; else
    the folder is empty, as on a first run.
    """
    import json
    import sys
    import tempfile

    env = {**os.environ, "MURMUR_ANALYSIS_CACHE": tempfile.mkdtemp(prefix="bench-cache-")}
    if warm:
        subprocess.run([sys.executable, "-c", script, home], check=True, capture_output=True, env=env)

    def run() -> Summary:
        proc = subprocess.Popen([sys.executable, "-c", script, home], stdout=subprocess.PIPE, text=True, env=env)
        out = proc.stdout.read() if proc.stdout is not None else ""
        _, status, usage = os.wait4(proc.pid, 0)  # its own peak: the warm-up above was a larger child, perhaps
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, proc.args)
        summary: Summary = json.loads(out)
        return {**summary, PEAK_KEY: usage.ru_maxrss / 1024}

    return run


def process_toolkit_daily(home: str, warm: bool = True) -> Timed:
    """A whole process: ``ma.load(home)`` and ``ma.metrics.token_usage(corpus, freq="D")``, totals printed."""
    return _process(_DAILY, home, warm)


def process_ccusage_daily(home: str) -> Timed:
    """A whole process: ``ccusage daily --json --offline`` (18.0.11) on the same home, totals read back."""
    import json

    binary = PEERS / "ccusage"
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: make peers installs ccusage")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": home}

    def run() -> Summary:
        done = subprocess.run([str(binary), "daily", "--json", "--offline", "--timezone", "UTC"], check=True,
                              capture_output=True, text=True, env=env)
        report = json.loads(done.stdout)
        totals = report["totals"]
        return {"days": len(report["daily"]), "input": totals["inputTokens"], "output": totals["outputTokens"],
                "cache_read": totals["cacheReadTokens"], "cache_write": totals["cacheCreationTokens"]}

    return run


# ---------------------------------------------------------------------------------------------
# Whole processes on a Codex home: this toolkit's daily token usage beside @ccusage/codex's

#: A fresh interpreter: the same daily usage, in the counters ccusage-codex's JSON shows (its
#: ``inputTokens`` is the whole prompt, cached included; its ``outputTokens`` holds reasoning).
_CODEX_DAILY = """
import json, sys
import murmur_analysis as ma
corpus = ma.load(sys.argv[1])
daily = ma.metrics.token_usage(corpus, by=(), freq="D")
total = lambda c: int(daily[c].fillna(0).sum())
print(json.dumps({"days": len(daily), "input": total("input_total_tokens"), "cached": total("cache_read_tokens"),
                  "output": total("output_tokens") + total("reasoning_tokens"),
                  "reasoning": total("reasoning_tokens")}))
"""


def process_toolkit_codex_daily(home: str, warm: bool = True) -> Timed:
    """A whole process: ``ma.load(home)`` and ``ma.metrics.token_usage(corpus, freq="D")`` on a Codex home."""
    return _process(_CODEX_DAILY, home, warm)


def process_ccusage_codex_daily(home: str, recounted: dict[str, int] | None = None) -> Timed:
    """A whole process: ``ccusage-codex daily --json --offline`` (18.0.11) with ``CODEX_HOME=home``.

    18.0.11 counts a re-emitted ``token_count`` (the same totals, new rate limits) again
    (ccusage#1288); ``recounted`` is what the generator re-emitted, taken off its totals so
    that the two readers' totals compare.
    """
    import json

    binary = PEERS / "ccusage-codex"
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: make peers installs @ccusage/codex")
    env = {**os.environ, "CODEX_HOME": home}
    less = recounted or {}

    def run() -> Summary:
        done = subprocess.run([str(binary), "daily", "--json", "--offline", "--timezone", "UTC"], check=True,
                              capture_output=True, text=True, env=env)
        report = json.loads(done.stdout)
        totals = report["totals"]
        return {"days": len(report["daily"]), "input": totals["inputTokens"] - less.get("input", 0),
                "cached": totals["cachedInputTokens"] - less.get("cached", 0),
                "output": totals["outputTokens"] - less.get("output", 0),
                "reasoning": totals["reasoningOutputTokens"] - less.get("reasoning", 0)}

    return run
