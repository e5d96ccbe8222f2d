"""``murmur-analysis``: the command line. One library call per command; one progress bar on stderr.

Exit status: 0 ok; 1 the data had problems (diagnostics rows) and ``--strict`` was given;
2 a usage error (bad arguments, a path no source reads, unreadable prices); 130 interrupted
(Ctrl-C, SIGINT); 141 the reader of stdout went away (``... | head -1``), silently, as a shell
reports a command that SIGPIPE stopped.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import re
import sys
from collections.abc import Iterator, Sequence
from datetime import date, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..analysis.kinds import BREAKDOWN_KINDS, CCUSAGE_KINDS, KINDS, TEXTLESS_KINDS, WEEKDAYS
from ..core.paths import user_path
from ..core.version import __version__
from ..errors import MurmurAnalysisError

if TYPE_CHECKING:
    import pyarrow as pa

    from ..analysis.reports import Report
    from ..corpus import Corpus

# Each command imports what it needs when it runs: ``--help`` and ``page`` load no pandas.

__all__ = ["main"]

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}|\d{8}")


@contextlib.contextmanager
def _reading(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """The load arguments common to every command that reads sources, with one progress bar."""
    from ..loading.progress import ProgressBar

    if not args.paths:
        from ..sources import default_paths

        args.paths = [str(p) for p in default_paths(args.source)]
    options: dict[str, dict[str, Any]] = {}
    if getattr(args, "sessions", None):
        options["murmur"] = {"sessions": args.sessions}
    bar = None if args.quiet else ProgressBar(args.paths, disable=None, source=args.source, options=options)
    try:
        yield {"source": args.source, "options": options, "progress": bar, "prices": args.prices,
               "text": not args.no_text}
    finally:
        if bar is not None:
            bar.close()


def _load(args: argparse.Namespace) -> Corpus:
    from ..corpus import load

    with _reading(args) as how:
        return load(*args.paths, **how)


def _strict(args: argparse.Namespace, corpus: Corpus | int) -> int:
    """``EXIT_DATA`` where ``--strict`` was given and there are diagnostics rows (a corpus, or their count)."""
    rows = corpus if isinstance(corpus, int) else corpus.tables["diagnostics"].num_rows
    if args.strict and rows:
        print(f"murmur-analysis: {rows} diagnostics row(s); run `murmur-analysis diagnostics` on the same "
              "sources to see them", file=sys.stderr)
        return EXIT_DATA
    return EXIT_OK


def _notes(corpus: Corpus) -> None:
    """One line on stderr for each murmur home whose records loaded without a session trace."""
    from ..sources.murmur.source import NO_SESSION_TRACES

    diag = corpus.diagnostics
    for path in diag.loc[diag["kind"] == NO_SESSION_TRACES, "path"]:
        print(f"murmur-analysis: note: {path}: no session traces found, and murmur keeps token usage in them "
              "(outside ~/.murmur): pass --sessions DIR (a session work dir)", file=sys.stderr)


def _emit(report: Report, args: argparse.Namespace, empty: str | None = None,
          **more: Any) -> None:
    """Print ``report`` as JSON, CSV or a table fitted to the terminal (``empty``: a table's text for no rows)."""
    import orjson

    from ..analysis import reports
    from .render import csv_text, render, terminal_width

    if args.json:
        doc = reports.json_document(report) | more
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif args.csv:
        sys.stdout.write(csv_text(report))
    elif empty is not None and report.rows.empty:
        print(empty)
    else:
        table = render(report, None if args.wide else terminal_width(), compact=args.compact)
        print(table.text)
        if table.left_out:
            print(f"murmur-analysis: note: left out to fit {table.width} columns: {', '.join(table.left_out)} "
                  "(--wide shows them)", file=sys.stderr)


def _report_notes(report: Report) -> None:
    for note in report.diagnostics:
        print(f"murmur-analysis: note: {note.detail}", file=sys.stderr)


def cmd_summary(args: argparse.Namespace) -> int:
    """Print what a set of sources holds."""
    from ..analysis import reports

    corpus = _load(args)
    diag = corpus.tables["diagnostics"].num_rows
    report = reports.summary(corpus)
    _emit(report, args, "no conversations found", diagnostics=diag)
    if not (args.json or args.csv):
        print(f"\ndiagnostics: {diag} row(s)" + (" (see `murmur-analysis diagnostics`)" if diag else ""))
    _notes(corpus)
    _report_notes(report)
    return _strict(args, diag + len(report.diagnostics))


def _date(text: str) -> date:
    """``YYYY-MM-DD`` or ``YYYYMMDD`` (ccusage's form), nothing else."""
    if _DAY.fullmatch(text):
        with contextlib.suppress(ValueError):
            return date.fromisoformat(text if "-" in text else f"{text[:4]}-{text[4:6]}-{text[6:]}")
    raise argparse.ArgumentTypeError(f"{text!r} is not a date; write YYYY-MM-DD or YYYYMMDD")


def _zone(text: str) -> str:
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a time zone; write e.g. UTC or Europe/Berlin") from None
    return text


def cmd_report(args: argparse.Namespace) -> int:
    """Print one report."""
    from ..analysis import reports

    if args.breakdown and args.kind not in BREAKDOWN_KINDS:
        args.parser.error(f"--breakdown splits spend per model in the {', '.join(BREAKDOWN_KINDS)} "
                          f"reports; the {args.kind} report has none")
    if args.start_of_week is not None and args.kind != "weekly":
        args.parser.error(f"--start-of-week is for the weekly report, not {args.kind}")
    if args.ccusage_json and args.kind not in CCUSAGE_KINDS:
        args.parser.error(f"--ccusage-json writes the reports ccusage has ({', '.join(CCUSAGE_KINDS)}), "
                          f"not {args.kind}")
    if args.since and args.until and args.since > args.until:
        raise MurmurAnalysisError(f"--since {args.since} is after --until {args.until}", hint="swap them")
    if args.kind in TEXTLESS_KINDS:  # they show spend alone: a lean load gives the same rows
        args.no_text = True
    corpus = _load(args)
    # ccusage lists every row's models, so its JSON needs the per-model split
    breakdown = args.breakdown or (args.ccusage_json and args.kind in BREAKDOWN_KINDS)
    report = reports.build(corpus, args.kind, since=args.since, until=args.until, tz=args.timezone,
                           breakdown=breakdown, order=args.order, start_of_week=args.start_of_week or "sunday")
    if args.ccusage_json:
        import orjson

        from ..analysis.ccusage import ccusage_document

        sys.stdout.write(orjson.dumps(ccusage_document(report), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        _emit(report, args)
    _notes(corpus)
    _report_notes(report)
    return _strict(args, corpus.tables["diagnostics"].num_rows + len(report.diagnostics))


def cmd_diagnostics(args: argparse.Namespace) -> int:
    """Print every diagnostics row."""
    from ..analysis import metrics, reports

    corpus = _load(args)
    rows = metrics.arrow_frame(corpus.diagnostics[["source", "kind", "path", "line", "detail"]])
    _emit(reports.Report("diagnostics", rows, {}, ["source", "kind"]), args, "no diagnostics: everything was read")
    return _strict(args, corpus)


def _folder(text: str) -> str:
    """``--out``'s value: a folder name, never empty (an empty one would mean the working folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path names no folder")
    return text


def cmd_export(args: argparse.Namespace) -> int:
    """Export every table as Parquet, a batch of conversations at a time, switched in whole."""
    from ..export import export

    with _reading(args) as how:
        result = export(*args.paths, out=args.out, incremental=not args.full, **how)
    for name, path in result.paths().items():
        print(f"{name:17} {result.rows[name]:>9} rows  {path}")
    print(f"generation {result.generation}: {result.conversations_read} conversation(s) read, "
          f"{result.conversations_appended} read on from where the previous export stopped, "
          f"{result.conversations_kept} kept from the previous export; "
          f"{result.files_written} file(s) written, {result.files_kept} kept")
    for relative, why in result.damaged:
        print(f"murmur-analysis: {relative} of the previous export was damaged ({why}); its conversations were "
              "read again from the input", file=sys.stderr)
    return _strict(args, result.rows.get("diagnostics", 0))


#: Load arguments that mean nothing for an export read back (its rows were made when it was written).
_LOAD_ONLY = {"source": "--source", "sessions": "--sessions", "prices": "--prices", "no_text": "--no-text"}


def _sql_corpus(args: argparse.Namespace) -> Corpus:
    """The corpus SRC... names: an export folder read back (``read_parquet``), else the sources loaded."""
    from ..corpus import read_parquet
    from ..export.layout import Output

    exports = [p for p in args.paths if p and Output(p).is_export()]
    if not exports:
        return _load(args)
    if len(args.paths) > 1:
        raise MurmurAnalysisError(f"{exports[0]} is an export: an export folder is queried alone",
                                  hint="name one export folder, or sources only")
    given = [flag for name, flag in _LOAD_ONLY.items() if getattr(args, name)]
    if given:
        raise MurmurAnalysisError(f"{', '.join(given)} apply to loading sources, not to the export {exports[0]}",
                                  hint="its rows were made when it was exported")
    corpus: Corpus = read_parquet(exports[0])
    return corpus


def _text(value: Any) -> str:
    """A value of a query's result with no form of its own in a table or JSON, as text."""
    import pyarrow as pa

    if isinstance(value, pa.MonthDayNano):  # an INTERVAL, as DuckDB writes one
        parts = [f"{value.months} months"] * bool(value.months) + [f"{value.days} days"] * bool(value.days)
        if value.nanoseconds or not parts:
            parts.append(str(timedelta(microseconds=value.nanoseconds // 1000)))
        return " ".join(parts)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _json_value(value: Any) -> Any:
    """A value of a query's result orjson does not write itself, as JSON."""
    if isinstance(value, Decimal):  # DuckDB's HUGEINT sums and decimals
        if value == value.to_integral_value() and -(2**63) <= value < 2**63:
            return int(value)
        return float(value) if value.is_finite() else None
    return _text(value)


def _printable(result: pa.Table) -> pa.Table:
    """The result with each column pandas has no dtype for (an INTERVAL, a UNION) as text."""
    import pandas as pd
    import pyarrow as pa

    for i, f in enumerate(result.schema):
        try:
            pd.ArrowDtype(f.type).type  # noqa: B018 - raises for a type pandas cannot hold
        except NotImplementedError:
            texts = [None if v is None else _text(v) for v in result.column(i).to_pylist()]
            result = result.set_column(i, f.name, pa.array(texts, pa.string()))
    return result


def cmd_sql(args: argparse.Namespace) -> int:
    """Run a SQL query over the tables of a corpus or of an export and print its result."""
    import orjson

    from ..analysis import reports
    from ..tables.columns import to_pandas
    from .render import QUERY

    corpus = _sql_corpus(args)
    result = corpus.sql_arrow(args.query)
    if args.json:
        doc = {"columns": result.column_names, "rows": result.to_pylist()}
        sys.stdout.write(orjson.dumps(doc, default=_json_value, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        report = reports.Report(QUERY, to_pandas(_printable(result)))
        _emit(report, args, f"no rows ({', '.join(result.column_names)})")
    return _strict(args, corpus)


#: The notes ``page`` prints about skipped lines before it only counts the rest.
_PAGE_NOTES = 20


def cmd_page(args: argparse.Namespace) -> int:
    """Print one page of a murmur record, newest first."""
    import orjson

    from ..sources.murmur import read_messages

    page = read_messages(args.record, args.cursor, args.limit)
    if args.json:
        doc = {
            "messages": [
                {"role": m.role, "content": m.content, "id": m.id, "source_id": m.source_id} for m in page.messages
            ],
            "next_cursor": page.next_cursor,
            "total": page.total,
        }
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for m in page.messages:
            text = m.content if len(m.content) <= 100 else m.content[:97] + "..."
            print(f"{m.role:9} {m.id or '-':36} {text}")
        print(f"next_cursor: {page.next_cursor or '(none: this page reached the oldest message)'}  total: {page.total}")
    if not page.total and not os.path.exists(user_path(args.record)):  # murmur serves a missing record as empty
        print(f"murmur-analysis: no record at {user_path(args.record)} (an empty page, as murmur serves it)",
              file=sys.stderr)
    shown = page.reports[:_PAGE_NOTES]
    for report in shown:
        print(f"note: {report.path}:{report.line}: {report.detail}", file=sys.stderr)
    if len(page.reports) > len(shown):
        print(f"note: and {len(page.reports) - len(shown):,} more line(s) of this record were skipped "
              "(`murmur-analysis diagnostics --source murmur RECORD` lists every one)", file=sys.stderr)
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """Show or clear the cache folder."""
    from ..core import cache

    if args.action == "path":
        print(cache.cache_dir())
    elif args.action == "info":
        info = cache.cache_info()
        print(f"path     {info.path}")
        print(f"indexes  {info.indexes}")
        print(f"prices   {info.prices}")
        print(f"bytes    {info.bytes}")
    else:
        removed = cache.clear_cache()
        print(f"removed {removed} file(s) from {cache.cache_dir()}")
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    """List the registered sources."""
    from .. import list_sources

    for name, description in list_sources().items():
        print(f"{name:10} {description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs test)."""
    parser = argparse.ArgumentParser(
        prog="murmur-analysis",
        description="Read AI agents' conversations (Claude Code, Codex, murmur, litany, FlexiGPT, dispatch) "
                    "into tables.",
        epilog="exit status: 0 ok, 1 data problems (with --strict), 2 usage error, 130 interrupted, "
               "141 the reader of stdout went away (| head)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_summary(sub)
    _add_export(sub)
    _add_report(sub)
    _add_diagnostics(sub)
    _add_sql(sub)
    _add_page(sub)
    _add_cache(sub)
    _add_sources(sub)
    return parser


_FITTING = ("A table fits the terminal (COLUMNS, or its width): long text is cut with …, then columns "
            "are left out (a note on stderr names them; never a key or the cost). Written to a file or "
            "a pipe, nothing is cut.")


def _add_load_args(p: argparse.ArgumentParser) -> None:
    """Add the arguments of every command that loads sources: what to read, and how."""
    p.add_argument("paths", nargs="*", metavar="SRC",
                   help="a file or folder of any runtime (detected); none: every default home found "
                        "(~/.claude and ~/.config/claude, ~/.codex, or CLAUDE_CONFIG_DIR and CODEX_HOME)")
    p.add_argument("--source", metavar="NAME",
                   help="read only this runtime's data (see `sources`): its part of a folder of several, "
                        "and a path it does not recognise as its own")
    p.add_argument("--sessions", action="append", metavar="DIR",
                   help="a murmur session work dir or trace holding token usage (repeatable)")
    p.add_argument("--prices", metavar="CSV",
                   help="your own prices: columns model, input_mtok, output_mtok, cache_read_mtok, "
                        "cache_write_mtok (USD per million tokens)")
    p.add_argument("--no-text", action="store_true",
                   help="leave the text columns null (messages.text, tool_calls.input, ...): a leaner load "
                        "(the spend reports, daily to models, always load so: they show no text)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar on stderr")
    p.add_argument("--strict", action="store_true", help="exit 1 when anything could not be read")


def _add_output_args(p: argparse.ArgumentParser, fitting: bool = False, ccusage: bool = False) -> None:
    """Add how a command prints: JSON, CSV, or (``fitting``) a table fitted to the terminal, wide or compact.

    ``ccusage`` adds ``--ccusage-json``: JSON with ccusage's field names.
    """
    out = p.add_mutually_exclusive_group()
    out.add_argument("-j", "--json", action="store_true", help="print JSON instead of a table (every value)")
    if ccusage:
        out.add_argument("--ccusage-json", action="store_true",
                         help="print JSON with ccusage's field names (inputTokens, totalCost, modelBreakdowns, "
                              f"...), so scripts written for ccusage read it ({', '.join(CCUSAGE_KINDS)})")
    out.add_argument("--csv", action="store_true", help="print CSV instead of a table (every value)")
    if fitting:  # a table fitted to the terminal (render.render)
        out.add_argument("--wide", action="store_true",
                         help="show every column and every value whole, however wide the terminal")
        out.add_argument("--compact", action="store_true",
                         help="only the key columns, input, output and cost (as ccusage's compact table)")


def _add_summary(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``summary`` command and its arguments."""
    p = sub.add_parser("summary", help="print conversations, messages, tool errors, orphans and tokens per source",
                       description="Load SRC... and print one line per source. " + _FITTING)
    _add_load_args(p)
    _add_output_args(p, fitting=True)
    p.set_defaults(func=cmd_summary)


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``export`` command and its arguments."""
    p = sub.add_parser("export", help="write every table as a hive-partitioned Parquet dataset",
                       description="Load SRC... and write <DIR>/<table>/source=<source>/part-<batch>.parquet, "
                                   "switched in whole (a killed export leaves the previous one intact). "
                                   "<DIR>/_manifest.json names the files. Exporting again into the same DIR "
                                   "reads only the conversations whose files or branches changed. DIR must be "
                                   "new, empty, or an earlier export's folder, and no input may be in it or hold "
                                   "it: nothing the export did not write is ever deleted or moved.")
    _add_load_args(p)
    p.add_argument("--out", required=True, metavar="DIR", type=_folder,
                   help="output folder: new, empty, or an earlier export's (the previous export in it is "
                        "replaced whole)")
    p.add_argument("--full", action="store_true",
                   help="read every conversation again instead of keeping unchanged ones' rows")
    p.set_defaults(func=cmd_export)


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` command and its arguments."""
    p = sub.add_parser("report", help=f"print a ccusage-style report: {', '.join(KINDS)}",
                       description="Load SRC... and print one report with totals; costs in USD. " + _FITTING,
                       epilog="exit status: 0 ok, 1 data problems (with --strict), 2 usage error")
    p.add_argument("kind", choices=KINDS, metavar="KIND", help=f"one of: {', '.join(KINDS)}")
    _add_load_args(p)
    p.add_argument("-s", "--since", type=_date, metavar="DATE",
                   help="first day kept (inclusive): YYYY-MM-DD or YYYYMMDD")
    p.add_argument("-u", "--until", type=_date, metavar="DATE",
                   help="last day kept (inclusive): YYYY-MM-DD or YYYYMMDD")
    p.add_argument("-z", "--timezone", type=_zone, default="UTC", metavar="TZ",
                   help="time zone that days, weeks and months are cut in and times are shown in; the "
                        "headers name it (default UTC)")
    p.add_argument("-b", "--breakdown", action="store_true",
                   help=f"split each row's spend per model ({', '.join(BREAKDOWN_KINDS)}; the other "
                        "reports refuse it)")
    p.add_argument("-o", "--order", choices=["asc", "desc"], default="asc",
                   help="asc: oldest first (default), desc: newest first (the other reports: by name)")
    p.add_argument("-w", "--start-of-week", choices=WEEKDAYS, metavar="DAY",
                   help="the day the weekly report's weeks start on (default sunday, as ccusage's)")
    _add_output_args(p, fitting=True, ccusage=True)
    p.set_defaults(func=cmd_report, parser=p)


def _add_diagnostics(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``diagnostics`` command and its arguments."""
    p = sub.add_parser("diagnostics", help="print everything that could not be read, one row each",
                       description="Load SRC... and print the diagnostics table. " + _FITTING,
                       epilog="exit status: 0 ok, 1 rows found (with --strict), 2 usage error")
    _add_load_args(p)
    _add_output_args(p, fitting=True)
    p.set_defaults(func=cmd_diagnostics)


def _add_sql(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sql`` command and its arguments."""
    p = sub.add_parser("sql", help="run a SQL query (DuckDB) over the tables of SRC..., or of an export",
                       description="Load SRC... (or read back the export folder SRC, alone) and run QUERY over "
                                   "its tables with DuckDB, each by its name: messages, tool_calls, usage, orphans, "
                                   "growth, steps, conversations, diagnostics, and the sources' own tables. Times "
                                   "are UTC. The result is printed as a table, or as JSON or CSV. " + _FITTING,
                       epilog="exit status: 0 ok, 1 data problems (with --strict), 2 usage error or a query "
                              "DuckDB refused")
    p.add_argument("query", metavar="QUERY",
                   help='the SQL, e.g. "select source, count(*) as calls from tool_calls group by source"')
    _add_load_args(p)
    _add_output_args(p, fitting=True)
    p.set_defaults(func=cmd_sql)


def _add_page(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``page`` command and its arguments."""
    p = sub.add_parser("page", help="print one page of a murmur record, newest first (murmur's read-messages)",
                       description="Page RECORD exactly as murmur's host serves read-messages.")
    p.add_argument("record", metavar="RECORD", help="a conversation.jsonl")
    p.add_argument("--cursor", help="the next_cursor of the previous page (mc_<n>)")
    p.add_argument("--limit", type=int, default=100, help="messages per page, clamped to 1..100 (default 100)")
    p.add_argument("--json", action="store_true", help="print the page as JSON")
    p.set_defaults(func=cmd_page)


def _add_cache(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``cache`` command and its arguments."""
    p = sub.add_parser("cache", help="show or clear the cache of record line indexes and remembered prices",
                       description="The cache folder keeps the line index of each big murmur record, so a fresh "
                       "process pages it without parsing it all, and the prices genai-prices gave for the models "
                       "and days priced so far, so a fresh process prices them without loading its whole table. "
                       "It is $MURMUR_ANALYSIS_CACHE, or the user cache folder (e.g. ~/.cache/murmur-analysis). "
                       "Everything in it is safe to delete.")
    p.add_argument("action", choices=["path", "info", "clear"],
                   help="path: print the folder; info: count the indexes, the price files and their bytes; "
                        "clear: delete them")
    p.set_defaults(func=cmd_cache)


def _add_sources(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``sources`` command and its arguments."""
    p = sub.add_parser("sources", help="list the registered sources, built-in and plugins",
                       description="List every registered source.")
    p.set_defaults(func=cmd_sources)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Ctrl-C ends it with :data:`EXIT_INTERRUPTED` and one line on stderr; a reader of stdout that went
    away (``| head -1``) ends it with :data:`EXIT_BROKEN_PIPE` and nothing on stderr. Neither prints
    a traceback.
    """
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a reader gone away shows here, while it can still be handled
    except KeyboardInterrupt:
        _interrupt_handled()
        with contextlib.suppress(OSError):
            print("murmur-analysis: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE


def _interrupt_handled() -> None:
    """Clear CPython's mark of a Ctrl-C nobody handled: this one was, and the exit status says so.

    CPython marks a ``KeyboardInterrupt`` that ends code it runs from a string (``exec`` of a
    string, as every dataclass and named tuple is made while a module is imported), whoever
    catches it later. Run as ``python -m``, a process so marked kills itself with SIGINT at exit
    instead of exiting with the status it was given. Running code from a string again clears
    the mark (CPython resets it before every such run).
    """
    exec("pass", {})  # a constant, run for its effect on the mark


def console() -> NoReturn:
    """The ``murmur-analysis`` command: :func:`main` on the process's arguments, then the process ends.

    What the run made is frozen out of the garbage collector first (:func:`gc.freeze`): the
    interpreter's shutdown then frees it without collecting it again, about 0.15 s less for a
    report over a 200 MB home. :func:`main` itself leaves the collector as it found it.
    """
    status = main()
    gc.freeze()
    sys.exit(status)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; SRC paths may come after options too (``report daily --json ~/.claude``).

    SRC may be left out (every default home is read), and argparse then takes the paths as
    given before the first option; paths after an option are added here.
    """
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and isinstance(getattr(args, "paths", None), list) and not any(e.startswith("-") for e in extra):
        args.paths.extend(extra)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _run(argv: Sequence[str] | None) -> int:
    args = _parse(argv)
    try:
        return int(args.func(args))
    except MurmurAnalysisError as err:
        # The library's hints name its API (source=, ma.list_sources()); errors carry the CLI's words too.
        print(f"murmur-analysis: error: {err}" + (f" ({err.cli_hint})" if err.cli_hint else ""), file=sys.stderr)
        return EXIT_USAGE
    except FileNotFoundError as err:
        print(f"murmur-analysis: error: {err} (check the path)", file=sys.stderr)
        return EXIT_USAGE


def _discard_stdout() -> None:
    """Point stdout at the null device: what is still buffered for the closed pipe is dropped.

    Else the interpreter's own last flush, on its way out, would fail again and say so on stderr.
    """
    with contextlib.suppress(OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


if __name__ == "__main__":
    sys.exit(main())
