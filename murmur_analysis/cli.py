"""``murmur-analysis``: the command line. One library call per command; progress on stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import orjson

from . import __version__, cache, load, read_messages, sources
from .corpus import Corpus
from .errors import MurmurAnalysisError

__all__ = ["main"]


def _progress(quiet: bool) -> object:
    if quiet:
        return None
    count = 0

    def report(event: str, detail: str) -> None:
        nonlocal count
        if event == "source":
            print(f"reading {detail}", file=sys.stderr)
        elif event == "entries":
            print(f"  {detail}", file=sys.stderr)
        else:
            count += 1
            if count % 100 == 0:
                print(f"  {count} conversations", file=sys.stderr)

    return report


def _load(args: argparse.Namespace) -> Corpus:
    progress = _progress(args.quiet)
    return load(*args.paths, source=args.source, progress=progress)  # type: ignore[arg-type]


def cmd_summary(args: argparse.Namespace) -> int:
    """Print what a set of sources holds."""
    corpus = _load(args)
    conv = corpus.tables["conversations"].to_pandas()
    diag = corpus.tables["diagnostics"].num_rows
    if conv.empty:
        print("no conversations found")
        return 0
    grouped = conv.groupby("source")
    by_source = grouped.agg(
        conversations=("conversation_id", "count"),
        messages=("messages", "sum"),
        tool_calls=("tool_calls", "sum"),
        tool_errors=("tool_errors", "sum"),
        orphans=("orphans", "sum"),
    )
    by_source["tokens"] = grouped["tokens"].sum(min_count=1).astype("Int64")  # null where nobody reported tokens
    by_source["error_rate"] = (by_source.tool_errors / by_source.tool_calls.where(by_source.tool_calls > 0)).round(3)
    print(by_source.to_string())
    print(f"\ndiagnostics: {diag} row(s)" + (" (see corpus.diagnostics)" if diag else ""))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Export every table as Parquet."""
    corpus = _load(args)
    written = corpus.to_parquet(args.out)
    for name, path in written.items():
        print(f"{name:14} {corpus.tables[name].num_rows:>9} rows  {path}")
    return 0


def cmd_page(args: argparse.Namespace) -> int:
    """Print one page of a murmur record, newest first."""
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
    for report in page.reports:
        print(f"note: {report.path}:{report.line}: {report.detail}", file=sys.stderr)
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """Show or clear the cache folder."""
    if args.action == "path":
        print(cache.cache_dir())
    elif args.action == "info":
        info = cache.cache_info()
        print(f"path     {info.path}")
        print(f"indexes  {info.indexes}")
        print(f"bytes    {info.bytes}")
    else:
        removed = cache.clear_cache()
        print(f"removed {removed} file(s) from {cache.cache_dir()}")
    return 0


def cmd_sources(args: argparse.Namespace) -> int:
    """List the registered sources."""
    for name, description in sources().items():
        print(f"{name:10} {description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used by the docs test)."""
    parser = argparse.ArgumentParser(
        prog="murmur-analysis",
        description="Read AI agents' conversations (murmur, litany, FlexiGPT, dispatch) into tables.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add_load_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("paths", nargs="+", metavar="SRC", help="a file or folder of any runtime (detected)")
        p.add_argument("--source", help="force this source instead of detecting (see `sources`)")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")

    p = sub.add_parser("summary", help="print conversations, messages, tool errors, orphans and tokens per source",
                       description="Load SRC... and print one line per source.")
    add_load_args(p)
    p.set_defaults(func=cmd_summary)

    p = sub.add_parser("export", help="write every table as a hive-partitioned Parquet dataset",
                       description="Load SRC... and write <DIR>/<table>/source=<source>/part-0.parquet.")
    add_load_args(p)
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created; partitions replaced)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("page", help="print one page of a murmur record, newest first (murmur's read-messages)",
                       description="Page RECORD exactly as murmur's host serves read-messages.")
    p.add_argument("record", metavar="RECORD", help="a conversation.jsonl")
    p.add_argument("--cursor", help="the next_cursor of the previous page (mc_<n>)")
    p.add_argument("--limit", type=int, default=100, help="messages per page, clamped to 1..100 (default 100)")
    p.add_argument("--json", action="store_true", help="print the page as JSON")
    p.set_defaults(func=cmd_page)

    p = sub.add_parser("cache", help="show or clear the cache of record line indexes",
                       description="The cache folder keeps the line index of each big murmur record, so a fresh "
                       "process pages it without parsing it all. It is $MURMUR_ANALYSIS_CACHE, or the user cache "
                       "folder (e.g. ~/.cache/murmur-analysis). Everything in it is safe to delete.")
    p.add_argument("action", choices=["path", "info", "clear"],
                   help="path: print the folder; info: count the indexes and their bytes; clear: delete them")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("sources", help="list the registered sources, built-in and plugins",
                       description="List every registered source.")
    p.set_defaults(func=cmd_sources)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MurmurAnalysisError as err:
        print(f"murmur-analysis: error: {err}", file=sys.stderr)
        if err.hint:
            print(f"hint: {err.hint}", file=sys.stderr)
        return 2
    except FileNotFoundError as err:
        print(f"murmur-analysis: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
