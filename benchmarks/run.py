"""The side-by-side benchmarks: this toolkit and the baselines on the same data, in one run.

``make bench`` runs this file. It generates the corpora it needs (``generate.py``; skipped when
up to date), runs every scenario's tools each in fresh processes (``measure.py``), prints a
markdown table per scenario with wall time, peak memory and the toolkit's ratio to each
baseline, checks the targets, and writes ``benchmarks/RESULTS.md``.

    python benchmarks/run.py                      # full scale (~3 GB of data, ~15 min)
    python benchmarks/run.py --scale small        # a quick run (~1 min)
    python benchmarks/run.py --only big-load --repeat 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import DATA, SCALES, Paths, ensure, keys_option, paths  # noqa: E402
from measure import Measurement, measure  # noqa: E402
from scenarios import cli_script, record_files  # noqa: E402

PANDAS_SLICE_ABOVE = 256 << 20  # bytes; bigger inputs run pandas on a tenth and scale up
TOOLKIT = "murmur-analysis"
EXPORT_FULL = "murmur-analysis export (full)"
EXPORT_UNCHANGED = "murmur-analysis export (unchanged input)"
EXPORT_APPENDED = "murmur-analysis export (after appending 1%)"
EXPORT_4X = "murmur-analysis export (full, 4x input)"
EXPORT_4X_LONG = "murmur-analysis export (full, record 4x as long)"
#: The one-run scenario's rows: the record made one run of each side.
RUN_SIDES = {"assistant": "assistant lines", "tool": "tool lines"}
ENGINE = f"{TOOLKIT} engine"
#: Every line parsed by serde_json and decided, nothing derived, the files in memory; and the
#: files read alone: together, what this design's load cannot skip.
DECIDED = f"{ENGINE} (lines decided only)"
READ = "files read alone"
#: A fresh interpreter that imports what a daily report needs, and exits.
IMPORTS = f"{TOOLKIT} imports alone"
CCUSAGE = "ccusage daily --json"
CCUSAGE_CODEX = "ccusage-codex daily --json"


@dataclass
class Tool:
    """One tool of a scenario."""

    name: str
    target: str
    kwargs: dict[str, Any]
    toolkit: bool = False
    needs: str | None = None  # the toolkit source this row needs ("murmur", "litany")
    scale_by: float = 1.0  # > 1: measured on a slice, wall and memory above the base scaled up
    note: str = ""
    repeat: int | None = None
    result: Measurement = field(default_factory=Measurement)

    @property
    def wall(self) -> float | None:
        w = self.result.wall_s
        return None if w is None or not self.result.ok else w * self.scale_by

    @property
    def peak(self) -> float | None:
        m = self.result
        if m.peak_mb is None or not m.ok:
            return None
        if self.scale_by == 1.0 or m.base_mb is None:
            return m.peak_mb
        return m.base_mb + (m.peak_mb - m.base_mb) * self.scale_by


@dataclass
class Scenario:
    """A dataset and the tools run on it."""

    key: str
    title: str
    input_desc: str
    input_bytes: int | None
    tools: list[Tool]

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)

    def toolkit(self) -> Tool | None:
        return next((t for t in self.tools if t.toolkit), None)


# ---------------------------------------------------------------------------------------------
# Scenarios


def _size(path: Path) -> int:
    return path.stat().st_size


def _tree_bytes(files: list[str]) -> int:
    return sum(os.path.getsize(f) for f in files)


def _pandas(files: list[str], slice_files: list[str], full_bytes: int, mode: str) -> Tool | None:
    if mode == "skip":
        return None
    if mode == "full" or full_bytes <= PANDAS_SLICE_ABOVE:
        return Tool("pandas.read_json(lines=True)", "scenarios:pandas_read_json", {"files": files}, repeat=1)
    factor = full_bytes / _tree_bytes(slice_files)
    return Tool("pandas.read_json(lines=True)", "scenarios:pandas_read_json", {"files": slice_files}, repeat=1,
                scale_by=factor, note=f"run on the first {100 / factor:.0f}% of the input, scaled x{factor:.1f}")


def _session_files(home: Path) -> list[str]:
    return [str(f) for f in home.rglob("*.jsonl")] if home.exists() else []


def _claude_daily(key: str, home: Path, what: str, first_run: bool) -> Scenario:
    """Daily usage of a Claude Code home beside ccusage's, with the engine's share and the floor's parts."""
    files = _session_files(home)
    size = _tree_bytes(files)
    first = [Tool(f"{TOOLKIT} (first run)", "scenarios:process_toolkit_daily", {"home": str(home), "warm": False},
                  needs="claude_code", note="the same, with an empty cache folder: genai-prices' table loaded")]
    return Scenario(
        key, f"Daily token usage of {what}, whole processes (start, imports, read, report)",
        f"{len(files):,} sessions, {size / 1e6:,.0f} MB", size, [
            Tool(TOOLKIT, "scenarios:process_toolkit_daily", {"home": str(home)}, toolkit=True, needs="claude_code",
                 note='python -c: ma.load(home), ma.metrics.token_usage(corpus, freq="D"); the prices an earlier '
                      "process asked for remembered"),
            *(first if first_run else []),
            Tool(CCUSAGE, "scenarios:process_ccusage_daily", {"home": str(home)},
                 note="ccusage 18.0.11 daily --json --offline, CLAUDE_CONFIG_DIR=home"),
            Tool(ENGINE, "scenarios:engine_scan_lines", {"format": "claude_code", "files": files},
                 needs="claude_code", note="the native line scan alone (every session line into columns), "
                                           "imports excluded"),
            *_floor_parts(files, "claude_code"),
            _imports(),
        ])


def _codex_daily(p: Paths) -> Scenario:
    """Daily usage of the Codex home beside ccusage-codex's, less the re-emitted events it counts again."""
    codex = str(p.codex_home)
    files = [str(f) for f in p.codex_home.rglob("*.jsonl")] if p.codex_home.exists() else []
    manifest = p.root / "manifest.json"
    info = json.loads(manifest.read_text()).get("codex-home", {}).get("info", {}) if manifest.exists() else {}
    recounted = info.get("reemitted", {})
    return Scenario(
        "codex-daily", "Daily token usage of a Codex home, whole processes (start, imports, read, report)",
        f"{len(files)} rollouts, {_tree_bytes(files) / 1e6:,.0f} MB", _tree_bytes(files), [
            Tool(TOOLKIT, "scenarios:process_toolkit_codex_daily", {"home": codex}, toolkit=True, needs="codex",
                 note='python -c: ma.load(home), ma.metrics.token_usage(corpus, freq="D"); input = '
                      "input_total_tokens (cached included), output = output + reasoning, as ccusage-codex shows; "
                      "the prices an earlier process asked for remembered"),
            Tool(f"{TOOLKIT} (first run)", "scenarios:process_toolkit_codex_daily", {"home": codex, "warm": False},
                 needs="codex", note="the same, with an empty cache folder: genai-prices' table loaded"),
            Tool(CCUSAGE_CODEX, "scenarios:process_ccusage_codex_daily", {"home": codex, "recounted": recounted},
                 note="@ccusage/codex 18.0.11 daily --json --offline --timezone UTC, CODEX_HOME=home; its inputTokens "
                      f"include cached tokens; totals shown less the {recounted.get('events', 0)} re-emitted "
                      "token_count events it counts again (ccusage#1288)"),
            Tool(ENGINE, "scenarios:engine_scan_lines", {"format": "codex", "files": files}, needs="codex",
                 note="the native line scan alone (every rollout line into columns), imports excluded"),
            *_floor_parts(files, "codex"),
            _imports(),
        ])


def _floor_parts(files: list[str], needs: str) -> list[Tool]:
    """The rows a floor is made of: every line decided (the files already in memory), and the files read alone."""
    return [
        Tool(DECIDED, "scenarios:engine_decide", {"files": files}, needs=needs,
             note="every line parsed by serde_json and decided (murmur's line rule, as a cold first page decides a "
                  "record), nothing derived, on every core; the files read into memory before the clock starts "
                  "and laid end to end"),
        Tool(READ, "scenarios:files_read", {"files": files},
             note="every file read once, a block of the engine's size at a time into a reused buffer, files side by "
                  "side on every core"),
    ]


def _imports() -> Tool:
    """A whole process that only starts, imports what ``ma.load`` and a pandas frame need, and exits."""
    return Tool(IMPORTS, "scenarios:process_command", {"argv": ["-c", IMPORT_LINE]},
                note=f"python -c '{IMPORT_LINE}': the start, imports and exit every whole-process run pays")


#: The imports of a whole-process daily report: the toolkit, Arrow, and pandas for the frame it returns.
IMPORT_LINE = "import murmur_analysis, pyarrow, pandas"


def build(p: Paths, pandas_mode: str) -> list[Scenario]:
    """Every scenario on the datasets at ``p``."""
    big = [str(p.big)]
    big_bytes = _size(p.big)
    small = record_files(str(p.small_home))
    small_bytes = _tree_bytes(small)
    big_mb = big_bytes / 1e6
    json_baselines = lambda files: [  # noqa: E731
        Tool("duckdb read_json_auto", "scenarios:duckdb_read_json_auto", {"files": files}),
        Tool("duckdb read_ndjson (declared columns)", "scenarios:duckdb_read_ndjson_columns", {"files": files}),
        Tool("polars.read_ndjson", "scenarios:polars_read_ndjson", {"files": files}),
        Tool("orjson.loads loop", "scenarios:orjson_loop", {"files": files}),
    ]
    engine_scan = lambda files: Tool(ENGINE, "scenarios:engine_scan", {"files": files}, needs="murmur",  # noqa: E731
                                     note="the native scan alone (lines decided, columns derived)")
    lean_load = lambda home: Tool(f"{TOOLKIT} (text=False)", "scenarios:toolkit_load",  # noqa: E731
                                  {"path": str(home), "tables": ["messages", "tool_calls"], "text": False},
                                  needs="murmur", note="ma.load(home, text=False).tables: no text columns")
    lean_scan = lambda files: Tool(f"{ENGINE} (text=False)", "scenarios:engine_scan",  # noqa: E731
                                   {"files": files, "text": False}, needs="murmur",
                                   note="the native scan alone, text columns left out")
    engine_index = lambda: Tool(ENGINE, "scenarios:engine_index", {"record": str(p.big)},  # noqa: E731
                                needs="murmur", note="the native line decision alone, over the whole record")
    litany_tables = ["messages", "tool_calls", "growth", "steps"]
    scenarios = [
        Scenario("big-load", "Big murmur record to the messages and tool_calls tables",
                 f"1 record, {big_mb:,.0f} MB", big_bytes, [
                     Tool(TOOLKIT, "scenarios:toolkit_load",
                          {"path": str(p.big_home), "tables": ["messages", "tool_calls"]}, toolkit=True, needs="murmur",
                          note="ma.load(home).tables"),
                     lean_load(p.big_home),
                     engine_scan(big),
                     lean_scan(big),
                     *_floor_parts(big, "murmur"),
                     *json_baselines(big),
                     *filter(None, [_pandas(big, [str(p.big_slice)], big_bytes, pandas_mode)]),
                 ]),
        Scenario("small-load", "Many small murmur records to tables",
                 f"{len(small):,} records, {small_bytes / 1e6:,.0f} MB", small_bytes, [
                     Tool(TOOLKIT, "scenarios:toolkit_load", {"path": str(p.small_home), "tables": ["messages",
                          "tool_calls"]}, toolkit=True, needs="murmur", note="ma.load(home).tables"),
                     lean_load(p.small_home),
                     engine_scan(small),
                     lean_scan(small),
                     *_floor_parts(small, "murmur"),
                     *json_baselines(small),
                     *filter(None, [_pandas(small, record_files(str(p.small_home), 0.1), small_bytes, pandas_mode)]),
                 ]),
    ]
    for key, folder, desc in (("litany", p.litany, "one commit per transcript change"),
                              ("litany-10x", p.litany10, "each commit followed by 9 worktree-only commits")):
        scenarios.append(Scenario(key, f"litany workspace with per-commit growth ({desc})",
                                  _litany_desc(folder), None, [
                                      Tool(TOOLKIT, "scenarios:toolkit_load", {"path": str(folder),
                                           "tables": litany_tables}, toolkit=True, needs="litany",
                                           note="ma.load(workspace).tables"),
                                      Tool("git log --raw + cat-file --batch", "scenarios:git_walk",
                                           {"repo": str(folder / "repo.git")}),
                                  ]))
    record = str(p.big)
    scenarios += [
        Scenario("page-cold", "read_messages first page (limit 100), cold: a fresh process",
                 f"1 record, {big_mb:,.0f} MB", big_bytes, [
                     Tool(TOOLKIT, "scenarios:toolkit_first_page", {"record": record}, toolkit=True,
                          note="ma.read_messages(record, limit=100)"),
                     engine_index(),
                     Tool("duckdb read_json_auto", "scenarios:duckdb_read_json_auto", {"files": big},
                          note="DuckDB's full read of the record"),
                     Tool("tail: last 100 lines, orjson", "scenarios:tail_page", {"record": record},
                          note="validates nothing before the tail"),
                     Tool("orjson.loads loop", "scenarios:orjson_loop", {"files": big}),
                 ]),
        Scenario("page-indexed", "read_messages first page (limit 100), a fresh process with a current line index",
                 f"1 record, {big_mb:,.0f} MB", big_bytes, [
                     Tool(TOOLKIT, "scenarios:toolkit_first_page", {"record": record, "index": True}, toolkit=True,
                          note="ma.read_messages(record, limit=100); index left by an earlier process"),
                     Tool("tail: last 100 lines, orjson", "scenarios:tail_page", {"record": record},
                          note="validates nothing before the tail"),
                 ]),
        Scenario("walk", "read_messages whole walk (every page, newest first)",
                 f"1 record, {big_mb:,.0f} MB", big_bytes, [
                     Tool(TOOLKIT, "scenarios:toolkit_walk", {"record": record}, toolkit=True,
                          note="list(ma.walk(record))"),
                     engine_index(),
                     Tool("orjson.loads loop", "scenarios:orjson_loop", {"files": big}),
                 ]),
        Scenario("page-warm", "read_messages first page, warm: after a first page and a walk in the same process",
                 f"1 record, {big_mb:,.0f} MB", big_bytes, [
                     Tool(TOOLKIT, "scenarios:toolkit_warm_page", {"record": record}, toolkit=True,
                          note="ma.read_messages after ma.read_messages + ma.walk"),
                     Tool(f"{TOOLKIT} (after ma.walk only)", "scenarios:toolkit_warm_page",
                          {"record": record, "prime_first_page": False}, note="ma.read_messages after ma.walk"),
                     Tool(ENGINE, "scenarios:engine_index", {"record": str(p.big)}, needs="murmur",
                          note="the native line decision over the whole record: the cold work a warm page skips"),
                     Tool("tail: last 100 lines, orjson", "scenarios:tail_page", {"record": record}),
                 ]),
    ]
    first = small[0] if small else None
    scenarios.append(Scenario("startup", "Fresh processes that start and end: an import, --help, one page",
                              "one record of the small-records home (no line index)", None, [
        Tool(TOOLKIT, "scenarios:process_command", {"argv": ["-c", "import murmur_analysis"]}, toolkit=True,
             note="python -c 'import murmur_analysis'"),
        Tool(f"{TOOLKIT} --help", "scenarios:process_command", {"argv": [cli_script(), "--help"]},
             note="the command's help"),
        Tool(f"{TOOLKIT} page", "scenarios:process_command", {"argv": [cli_script(), "page", str(first)]},
             needs="murmur", note="the newest page of one record, as a table"),
        Tool("python -c pass", "scenarios:process_command", {"argv": ["-c", "pass"]},
             note="the interpreter alone: the floor of every row"),
    ]))
    claude = str(p.claude_home)
    claude_bytes = _tree_bytes(_session_files(p.claude_home))
    scenarios.append(_claude_daily("claude-daily", p.claude_home, "a Claude Code home", first_run=True))
    scenarios.append(_codex_daily(p))
    scenarios.append(_claude_daily("claude-many-daily", p.claude_many, "a Claude Code home of many short sessions",
                                   first_run=False))
    scratch = str(p.root / "export-scratch")
    claude_args = {"home": claude, "scratch": scratch}
    scenarios.append(Scenario(
        "claude-export", "Parquet export of a Claude Code home: full, unchanged, after 1% of the sessions grew",
        f"{claude_bytes / 1e6:,.0f} MB of sessions", claude_bytes, [
            Tool(EXPORT_FULL, "scenarios:toolkit_claude_export", {**claude_args, "mode": "full"}, toolkit=True,
                 needs="claude_code", note="export(home, out=) into an empty folder"),
            Tool(EXPORT_UNCHANGED, "scenarios:toolkit_claude_export", {**claude_args, "mode": "unchanged"},
                 needs="claude_code", note="the same export again"),
            Tool(EXPORT_APPENDED, "scenarios:toolkit_claude_export", {**claude_args, "mode": "appended"},
                 needs="claude_code", note="again after one more response in 1% of the sessions (the rest kept)"),
        ]))
    home = str(p.small_home)
    scenarios.append(_export("export", "Parquet export of many small murmur records: full, unchanged, appended",
                             f"{len(small):,} records, {small_bytes / 1e6:,.0f} MB", small_bytes,
                             {"home": home, "scratch": scratch}, (EXPORT_4X, "copies"),
                             ("export(home, out=) into an empty folder",
                              "again after 1% more lines on 1% of the records",
                              "full export of 4 copies of the input")))
    scenarios.append(_export("export-long", "Parquet export of one long murmur record: full, appended, 4x as long",
                             f"1 record, {big_mb:,.0f} MB", big_bytes,
                             {"home": str(p.big_home), "scratch": scratch, "donors": home}, (EXPORT_4X_LONG, "length"),
                             ("export(record, out=) into an empty folder",
                              "again after appending 1% more lines (other records' lines) to it",
                              "full export of the record 4 times as long")))
    run_args = {"home": str(p.big_home), "scratch": scratch}
    scenarios.append(Scenario(
        "export-run", "Parquet export of one long murmur record that is a single run of one side",
        f"1 record, {big_mb:,.0f} MB (the one-run records: the same size)", big_bytes, [
            Tool(EXPORT_FULL, "scenarios:toolkit_export", {**run_args, "mode": "full"}, toolkit=True,
                 needs="murmur", note="the record as generated: user, assistant and tool lines alternate"),
            *(Tool(f"{TOOLKIT} export (full, one run of {what})", "scenarios:toolkit_export",
                   {**run_args, "mode": "full", "side": side}, needs="murmur",
                   note=f"the record's {what} only, repeated to its size (call ids of their own)")
              for side, what in RUN_SIDES.items()),
            *(Tool(f"{TOOLKIT} load (one run of {what})", "scenarios:toolkit_load_copy",
                   {**run_args, "tables": ["messages", "tool_calls"], "side": side}, needs="murmur",
                   note="ma.load(home).tables of the same record")
              for side, what in RUN_SIDES.items()),
        ]))
    return scenarios


def _export(key: str, what: str, desc: str, size: int, args: dict[str, Any], four: tuple[str, str],
            notes: tuple[str, str, str]) -> Scenario:
    """An export scenario: full, unchanged, appended, and full at 4x (``four``: its name and the argument made 4)."""
    def tool(name: str, mode: str, n: int, note: str) -> Tool:
        return Tool(name, "scenarios:toolkit_export", {**args, "mode": mode, four[1]: n},
                    toolkit=mode == "full" and n == 1, needs="murmur", note=note)

    return Scenario(key, what, desc, size, [
        tool(EXPORT_FULL, "full", 1, notes[0]),
        tool(EXPORT_UNCHANGED, "unchanged", 1, "the same export again"),
        tool(EXPORT_APPENDED, "appended", 1, notes[1]),
        tool(four[0], "full", 4, notes[2]),
    ])


def _litany_desc(folder: Path) -> str:
    manifest = json.loads((folder.parents[2] / "manifest.json").read_text())
    info = manifest["litany-10x" if folder.parents[1].name == "litany-10x" else "litany"]["info"]
    agents = len(list((folder / "steps").iterdir())) if (folder / "steps").exists() else 0
    return f"{agents} branches, {info['commits']:,} commits, {info['pack_bytes'] / 1e6:,.1f} MB packed"


# ---------------------------------------------------------------------------------------------
# Running and reporting


def available_sources() -> tuple[set[str], str]:
    """The toolkit's registered sources in this checkout (asked of a fresh interpreter)."""
    proc = subprocess.run([sys.executable, "-c", "import json, murmur_analysis as ma; print(json.dumps(list("
                           "ma.list_sources())))"], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return set(), f"murmur_analysis does not import: {tail}"
    return set(json.loads(proc.stdout)), ""


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _fmt_ratio(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.2f}x" if x < 100 else f"{x:,.0f}x"


def _summary(m: Measurement) -> str:
    if not m.ok:
        return ""
    return ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in m.summary.items())


def scenario_table(s: Scenario) -> str:
    """The markdown table of one scenario."""
    kit = s.toolkit()
    kit_wall = kit.wall if kit else None
    lines = [
        f"### {s.key}: {s.title}",
        "",
        f"Input: {s.input_desc}.",
        "",
        "| tool | wall s | peak MB | peak / input | toolkit ÷ tool | output | note |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for t in s.tools:
        m = t.result
        if not m.ok:
            lines.append(f"| {t.name} | {m.error or 'not run'} | - | - | - | | {t.note} |")
            continue
        peak = t.peak
        per_input = f"{peak * 2**20 / s.input_bytes:.2f}" if peak and s.input_bytes else "-"
        note = t.note
        if t.toolkit:
            ratio = "1.00x (itself)"
        elif t.name == ENGINE:  # the engine's share of the toolkit's time
            ratio = "-"
            if kit_wall and t.wall:
                note = f"{note}; engine ÷ toolkit {_fmt_ratio(t.wall / kit_wall)}"
        elif t.name.startswith(TOOLKIT):  # another toolkit variant: no baseline
            ratio = "-"
        else:
            ratio = _fmt_ratio(kit_wall / t.wall if kit_wall and t.wall else None)
        scaled = " (est.)" if t.scale_by != 1.0 else ""
        lines.append(f"| {t.name} | {_fmt_s(t.wall)}{scaled} | {peak:,.0f}{scaled} | {per_input} | {ratio} | "
                     f"{_summary(m)} | {note} |")
    if s.tool(ENGINE) is None:
        lines += ["", f"{ENGINE}: not in this table; this source does not read through the native engine."]
    lines += ["", "toolkit ÷ tool: the toolkit's wall time over this tool's (above 1: the toolkit is slower)."]
    return "\n".join(lines)


def _wall(by_key: dict[str, Scenario], key: str, name: str) -> float | None:
    """The best wall time of tool ``name`` in scenario ``key``, when it ran."""
    s = by_key.get(key)
    t = s.tool(name) if s else None
    return t.wall if t else None


@dataclass
class Target:
    """One target of the issue, checked against the measurements."""

    scenario: str
    what: str
    goal: str
    measured: str
    met: bool | None


def check_targets(by_key: dict[str, Scenario]) -> list[Target]:
    """Every target the issue sets, with what was measured."""
    out: list[Target] = []

    def wall(key: str, name: str) -> float | None:
        return _wall(by_key, key, name)

    kit = wall("big-load", TOOLKIT)
    duck = wall("big-load", "duckdb read_json_auto")
    pandas = wall("big-load", "pandas.read_json(lines=True)")
    big = by_key.get("big-load")
    kit_tool = big.toolkit() if big else None
    peak = kit_tool.peak if kit_tool else None

    def rel(a: float | None, b: float | None) -> float | None:
        return a / b if a is not None and b else None

    r = rel(kit, duck)
    out.append(Target("big-load", "wall vs DuckDB read_json_auto", "<= 1.0x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.0))
    r = rel(wall("big-load", f"{TOOLKIT} (text=False)"), duck)
    out.append(Target("big-load", "text=False, wall vs DuckDB read_json_auto", "<= 0.7x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r <= 0.7))
    r = rel(pandas, kit)
    out.append(Target("big-load", "speed-up over pandas.read_json", ">= 15x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r >= 15))
    # With text on, the output is most of the file: the goal is the output plus a bounded window.
    r = peak * 2**20 / big.input_bytes if peak and big and big.input_bytes else None
    out.append(Target("big-load", "peak memory / file size", "<= 1.5x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.5))
    lean = next((t for t in big.tools if t.name == f"{TOOLKIT} (text=False)"), None) if big else None
    r = lean.peak * 2**20 / big.input_bytes if lean and lean.peak and big and big.input_bytes else None
    out.append(Target("big-load", "text=False, peak memory / file size", "<= 1.2x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.2))
    r = rel(wall("small-load", TOOLKIT), wall("small-load", "duckdb read_ndjson (declared columns)"))
    out.append(Target("small-load", "wall vs DuckDB read_ndjson (declared columns)", "<= 1.0x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.0))
    r = rel(wall("small-load", "pandas.read_json(lines=True)"), wall("small-load", TOOLKIT))
    out.append(Target("small-load", "speed-up over pandas.read_json", ">= 15x",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r >= 15))
    one, ten = wall("litany", TOOLKIT), wall("litany-10x", TOOLKIT)
    r = rel(ten, one)
    out.append(Target("litany-10x", "cost at 10x the commits, same content", "flat (<= 1.25x)",
                      _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.25))
    for key in ("litany", "litany-10x"):
        r = rel(wall(key, TOOLKIT), wall(key, "git log --raw + cat-file --batch"))
        out.append(Target(key, "wall vs the git plumbing walk", "<= 2x",
                          _fmt_ratio(r) if r else "not measured", None if r is None else r <= 2))
    for name, goal, limit in ((TOOLKIT, "import murmur_analysis, fresh process", 0.15),
                              (f"{TOOLKIT} --help", "murmur-analysis --help, fresh process", 0.3),
                              (f"{TOOLKIT} page", "murmur-analysis page RECORD, fresh process", 0.3)):
        w = wall("startup", name)
        out.append(Target("startup", goal, f"<= {limit} s", f"{w:.3f} s" if w is not None else "not measured",
                          None if w is None else w <= limit))
    w = wall("page-warm", TOOLKIT)
    out.append(Target("page-warm", "first page, warm cache", "well under 1 s (<= 0.25 s)",
                      f"{w:.4f} s" if w is not None else "not measured", None if w is None else w <= 0.25))
    i = wall("page-indexed", TOOLKIT)
    out.append(Target("page-indexed", "first page, fresh process, current line index", "<= 0.2 s",
                      f"{i:.3f} s" if i is not None else "not measured", None if i is None else i <= 0.2))
    r = rel(wall("page-cold", TOOLKIT), wall("page-cold", "duckdb read_json_auto"))
    for limit in (1.5, 0.25):  # the first goal, and the one set once the import no longer cost the time
        out.append(Target("page-cold", "first page, fresh process, no index, vs DuckDB's full read", f"<= {limit}x",
                          _fmt_ratio(r) if r else "not measured", None if r is None else r <= limit))
    for key, four in (("export", EXPORT_4X), ("export-long", EXPORT_4X_LONG), ("claude-export", None)):
        full = wall(key, EXPORT_FULL)
        for name, goal, limit in ((EXPORT_UNCHANGED, "<= 5% of a full export", 0.05),
                                  (EXPORT_APPENDED, "<= 15% of a full export", 0.15)):
            r = rel(wall(key, name), full)
            out.append(Target(key, f"re-export, {name.split('(')[1].rstrip(')')}", goal,
                              f"{r:.1%}" if r is not None else "not measured", None if r is None else r <= limit))
        if four is None:
            continue
        ex = by_key.get(key)
        one_x, four_x = (ex.tool(EXPORT_FULL), ex.tool(four)) if ex else (None, None)
        r = rel(four_x.peak if four_x else None, one_x.peak if one_x else None)
        what = "the input" if key == "export" else "the record's length"
        out.append(Target(key, f"peak memory at 4x {what} / at 1x", "<= 1.2x",
                          _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.2))
    for key, peer in (("claude-daily", CCUSAGE), ("codex-daily", CCUSAGE_CODEX), ("claude-many-daily", CCUSAGE)):
        daily = by_key.get(key)
        kit_daily, peer_daily = (daily.toolkit(), daily.tool(peer)) if daily else (None, None)
        r = rel(kit_daily.wall if kit_daily else None, peer_daily.wall if peer_daily else None)
        same = bool(kit_daily and peer_daily and kit_daily.result.summary == peer_daily.result.summary)
        out.append(Target(key, f"whole process vs {peer} (same daily totals)", "<= 0.1x",
                          (_fmt_ratio(r) + ("" if same else " (totals differ)")) if r else "not measured",
                          None if r is None else (r <= 0.1 and same)))
        first = daily.tool(f"{TOOLKIT} (first run)") if daily else None
        if key == "claude-many-daily":  # a first run is measured on the other homes
            continue
        r = rel(first.wall if first else None, peer_daily.wall if peer_daily else None)
        same = bool(first and peer_daily and first.result.summary == peer_daily.result.summary)
        out.append(Target(key, f"the same, a first run (empty cache folder) vs {peer}", "<= 0.1x",
                          (_fmt_ratio(r) + ("" if same else " (totals differ)")) if r else "not measured",
                          None if r is None else (r <= 0.1 and same)))
    run = by_key.get("export-run")
    alternating = run.tool(EXPORT_FULL) if run else None
    for what in RUN_SIDES.values():
        one = run.tool(f"{TOOLKIT} export (full, one run of {what})") if run else None
        r = rel(one.peak if one else None, alternating.peak if alternating else None)
        out.append(Target("export-run", f"peak memory, one run of {what} / alternating", "<= 1.2x",
                          _fmt_ratio(r) if r else "not measured", None if r is None else r <= 1.2))
    return out


@dataclass
class Floor:
    """The least time an exact run of one target's work takes on this machine, beside the goal."""

    scenario: str
    goal: str
    least: str
    ratio: str
    within: bool | None  # False: the least time alone already misses the goal


def check_floors(by_key: dict[str, Scenario]) -> list[Floor]:
    """For each time goal, the floor of this design, as a ratio to the goal's reference.

    An exact load reads every file (:data:`READ`) and has every line decided by serde_json
    (:data:`DECIDED`); a whole process also starts, imports the toolkit, Arrow and pandas, and
    exits (:data:`IMPORTS`). Their sum is a floor: a goal below it is not met by making anything
    else faster. It is a generous one, since the engine reads a block while it decides the one
    before. A goal above it is not thereby within reach: the columns still have to be built.
    """
    out: list[Floor] = []

    def wall(key: str, name: str) -> float | None:
        return _wall(by_key, key, name)

    def floor(scenario: str, goal: str, parts: dict[str, float | None], ref: float | None, limit: float,
              speed_up: bool = False) -> None:
        if any(v is None for v in parts.values()) or not ref:
            out.append(Floor(scenario, goal, "not measured", "-", None))
            return
        least = sum(v for v in parts.values() if v is not None)
        r = ref / least if speed_up else least / ref
        within = r >= limit if speed_up else r <= limit
        what = " + ".join(f"{name} {v:.3f} s" for name, v in parts.items())
        out.append(Floor(scenario, goal, f"{least:.3f} s ({what})", f"{r:.3f}x", within))  # 3 places: near 1.0x

    def load(key: str) -> dict[str, float | None]:
        return {"files read": wall(key, READ), "lines decided": wall(key, DECIDED)}

    for key, ref in (("big-load", "duckdb read_json_auto"), ("small-load", "duckdb read_ndjson (declared columns)")):
        floor(key, f"wall vs {ref} <= 1.0x", load(key), wall(key, ref), 1.0)
        if key == "big-load":
            floor(key, f"text=False, wall vs {ref} <= 0.7x", load(key), wall(key, ref), 0.7)
        floor(key, "speed-up over pandas.read_json >= 15x", load(key), wall(key, "pandas.read_json(lines=True)"), 15,
              speed_up=True)
    # A cold first page decides every line of the record: murmur's total and cursor count them all.
    floor("page-cold", "first page, no index, vs duckdb read_json_auto <= 0.25x", load("big-load"),
          wall("page-cold", "duckdb read_json_auto"), 0.25)
    for key, peer in (("claude-daily", CCUSAGE), ("codex-daily", CCUSAGE_CODEX), ("claude-many-daily", CCUSAGE)):
        floor(key, f"whole process vs {peer} <= 0.1x", {"imports": wall(key, IMPORTS), **load(key)}, wall(key, peer),
              0.1)
    return out


def floors_table(floors: list[Floor]) -> str:
    lines = ["| scenario | goal | least time an exact run takes here | as the goal's ratio | floor within the goal? |",
             "|---|---|---|---|---|"]
    for f in floors:
        within = "-" if f.within is None else ("yes" if f.within else "**no**")
        lines.append(f"| {f.scenario} | {f.goal} | {f.least} | {f.ratio} | {within} |")
    return "\n".join(lines)


def targets_table(targets: list[Target]) -> str:
    lines = ["| scenario | target | goal | measured | met? |", "|---|---|---|---|---|"]
    for t in targets:
        met = "-" if t.met is None else ("yes" if t.met else "**no**")
        lines.append(f"| {t.scenario} | {t.what} | {t.goal} | {t.measured} | {met} |")
    return "\n".join(lines)


def _versions() -> str:
    out = []
    for mod in ("murmur_analysis", "orjson", "pyarrow", "pandas", "polars", "duckdb"):
        try:
            out.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            out.append(f"{mod} missing")
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return ", ".join(out) + f", {git}"


def _machine() -> str:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = int(Path("/proc/meminfo").read_text().split()[1]) / 2**20
    except OSError:
        mem = float("nan")
    return f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB RAM, Python {platform.python_version()}, {platform.system()}"


def _commit() -> str:
    proc = subprocess.run(["git", "-C", str(HERE), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return proc.stdout.strip()[:90]


def compiled() -> str:
    """Byte-compile the toolkit's modules, as an installed wheel holds them; returns how it was done.

    An editable install run where ``PYTHONDONTWRITEBYTECODE`` is set (as on some CI machines)
    never writes bytecode, so every fresh process would compile every module it imports: a cost
    no installed copy pays, which a whole-process row (startup, daily usage) would count.
    """
    import compileall

    import murmur_analysis

    package = Path(murmur_analysis.__file__).parent
    ok = compileall.compile_dir(package, quiet=1, force=False)
    return (f"the toolkit's modules were byte-compiled before the run ({'done' if ok else 'some failed'}), "
            "as an installed wheel holds them")


def run(args: argparse.Namespace, log: Callable[[str], None]) -> str:
    """Run every selected scenario; returns the markdown report."""
    ensure(args.scale, only=None, data=args.data, log=lambda m: log(f"data: {m}"))
    bytecode = compiled()
    p = paths(args.scale, args.data)
    sources, why = available_sources()
    built = build(p, args.pandas)
    assert tuple(s.key for s in built) == KEYS, "KEYS names every scenario build() makes, in order"
    scenarios = [s for s in built if not args.only or s.key in args.only]
    loads: list[float] = []
    started = time.perf_counter()
    for s in scenarios:
        log(f"\n== {s.key}: {s.title} ({s.input_desc})")
        for t in s.tools:
            if t.needs and t.needs not in sources:
                t.result = Measurement(error=f"not available: no {t.needs} source in this checkout"
                                       + (f" ({why})" if why else ""))
                log(f"  {t.name}: {t.result.error}")
                continue
            loads.append(loadavg())
            t.result = measure(t.target, t.kwargs, repeat=t.repeat or args.repeat, timeout=args.timeout)
            m = t.result
            shown = f"{_fmt_s(t.wall)} s, peak {t.peak or 0:,.0f} MB" if m.ok else m.error
            log(f"  {t.name}: {shown}  [{', '.join(f'{w:.3f}' for w in m.walls)}] {_summary(m)}")
    by_key = {s.key: s for s in scenarios}
    targets = check_targets(by_key)
    busy = max(loads, default=0.0)
    report = [
        "# Benchmark results",
        "",
        f"Scale `{args.scale}` (seed 20260422), best of {args.repeat} fresh-process runs per tool (pandas: 1),"
        f" measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC in {time.perf_counter() - started:,.0f} s.",
        f"Machine: {_machine()}. Versions: {_versions()}. Toolkit at `{_commit()}`.",
        "",
        (f"**Background load:** other work ran on this machine during the run (1-minute load average up to "
         f"{busy:.1f} when a tool started, on {os.cpu_count()} cores); wall times are best-of-N to damp it, "
         "but ratios between tools measured minutes apart carry that noise."
         if busy >= 0.5 else f"The machine was otherwise idle (1-minute load average at most {busy:.1f})."),
        "",
        "Wall time is the measured call alone (interpreter start and imports excluded); peak MB is the",
        "whole process's peak resident set (VmHWM), interpreter and imports included (a whole-process",
        "scenario: the peak of the process it runs). `(est.)` rows ran",
        "on a slice and were scaled up (wall linearly, memory above the post-import baseline linearly).",
        f"Bytecode: {bytecode}.",
        "",
        "## Targets",
        "",
        targets_table(targets),
        "",
        "## Floors: what this design cannot skip",
        "",
        "An exact load reads every file and has every line decided by serde_json; a whole process also",
        "starts, imports the toolkit, Arrow and pandas (the frame a daily report returns), and exits. The",
        "rows named `files read alone`, `lines decided only` (the files already in memory) and",
        "`imports alone` measure those costs as the toolkit pays them. Their sum is the floor of this",
        "design on this machine: a goal below it is not met by making anything else faster (building the",
        "columns, the Python work). It is a generous floor, since the engine reads a block while it",
        "decides the one before. A floor within a goal does not put the goal within reach; the columns",
        "still have to be built.",
        "",
        floors_table(check_floors(by_key)),
        "",
        "## Scenarios",
        "",
    ]
    for s in scenarios:
        report += [scenario_table(s), ""]
    return "\n".join(report)


#: The scenario keys, in the order they run.
KEYS = ("big-load", "small-load", "litany", "litany-10x", "page-cold", "page-indexed", "walk", "page-warm",
        "startup", "claude-daily", "codex-daily", "claude-many-daily", "claude-export", "export", "export-long",
        "export-run")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", choices=list(SCALES), default=os.environ.get("BENCH_SCALE", "full"))
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs per tool; the best is kept")
    parser.add_argument("--pandas", choices=["slice", "full", "skip"], default="slice",
                        help="slice: inputs over 256 MB run pandas on a tenth and scale up (default)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before one run is killed")
    parser.add_argument("--only", action="extend", type=keys_option(KEYS, "scenario"), metavar="KEY[,KEY...]",
                        help=f"scenario keys (repeatable, or comma-separated): {', '.join(KEYS)}")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md", help="where the report goes ('-': nowhere)")
    args = parser.parse_args(argv)
    report = run(args, log=lambda m: print(m, flush=True))
    print("\n" + report)
    if str(args.out) != "-":
        args.out.write_text(report + "\n")
        print(f"\nwritten to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
