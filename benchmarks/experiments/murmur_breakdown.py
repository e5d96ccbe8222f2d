"""Experiment: where ``ma.load`` spends its time on one murmur record, stage by stage.

Each stage runs the stages before it again, so the differences are the stage's own cost:

1. read + split lines (the floor any reader pays);
2. + ``orjson.loads`` per line;
3. + the murmur source's decoding into ``Entry`` objects (drained, nothing kept);
4. + the frame builder: row tuples, pairing, growth, and the Arrow batches it converts every
   64k rows;
5. the whole ``ma.load`` (+ the last batches, the tables, the corpus).

    python benchmarks/experiments/murmur_breakdown.py RECORD [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import orjson

import murmur_analysis as ma
from murmur_analysis.sources import Diagnostics, get_source
from murmur_analysis.tables.frames import FrameBuilder


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("record", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    path: Path = args.record

    def split() -> None:
        with open(path, "rb") as f:
            while chunk := f.read(8 << 20):
                chunk.split(b"\n")

    def parse() -> None:
        loads = orjson.loads
        with open(path, "rb") as f:
            for line in f:
                loads(line)

    def entries() -> None:
        src = get_source("murmur")
        for conv in src.open(path, Diagnostics("murmur")):
            for _ in conv.entries:
                pass

    def rows() -> None:
        src = get_source("murmur")
        builder = FrameBuilder()
        for conv in src.open(path, Diagnostics("murmur")):
            builder.add(conv)

    def whole() -> None:
        ma.load(path, source="murmur")

    stages = [("read + split lines", split), ("+ orjson.loads", parse), ("+ Entry decoding (source)", entries),
              ("+ frame builder: rows, pairing, growth, Arrow batches", rows), ("+ finish: ma.load", whole)]
    whole()  # imports, pyarrow's time zone database
    previous = 0.0
    size = path.stat().st_size / 1e6
    print(f"{path} ({size:,.0f} MB), best of {args.repeat}")
    print("| stage | cumulative s | stage s | share |")
    print("|---|---:|---:|---:|")
    results = [(name, best(fn, args.repeat)) for name, fn in stages]
    total = results[-1][1]
    for name, t in results:
        print(f"| {name} | {t:.2f} | {t - previous:.2f} | {(t - previous) / total:.0%} |")
        previous = t


if __name__ == "__main__":
    main()
