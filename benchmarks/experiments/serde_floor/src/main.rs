//! Experiment: the least time serde_json itself takes to parse every line of some JSONL files.
//!
//! The files are read into memory first (not timed) and cut into pieces of about 8 MiB at line
//! ends, so one large file keeps every core busy as the engine's pieces do. Each non-blank line
//! is then parsed on every core, best of three:
//!
//! * into nothing (`serde::de::IgnoredAny`): serde_json checks the line and builds nothing. No
//!   reader that decides lines with serde_json can take less;
//! * into a `serde_json::Value` tree: what a reader that first builds a tree per line pays.
//!
//! Beside the `lines decided only` rows of `benchmarks/RESULTS.md` (the engine's decision of the
//! same files in memory, its tree included), this tells what a tree-less reader could gain.
//!
//!     cargo run --release --config 'source.crates-io.replace-with="debian"' \
//!         --config 'source.debian.directory="/usr/share/cargo/registry"' --config net.offline=true \
//!         -- FILE...

use rayon::prelude::*;
use serde::de::IgnoredAny;
use std::time::Instant;

const PIECE: usize = 8 << 20;

fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = if rest.len() <= PIECE {
            rest.len()
        } else {
            rest[PIECE..].find('\n').map_or(rest.len(), |i| PIECE + i + 1)
        };
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

fn lines(piece: &str) -> impl Iterator<Item = &str> {
    piece.lines().filter(|l| !l.trim().is_empty())
}

fn best<F: Fn() -> usize>(run: F) -> (usize, f64) {
    let mut found = (0, f64::INFINITY);
    for _ in 0..3 {
        let t = Instant::now();
        let n = run();
        found = (n, found.1.min(t.elapsed().as_secs_f64()));
    }
    found
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: serde-floor FILE...");
        std::process::exit(2);
    }
    let data: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}"))).collect();
    let texts: Vec<&str> = data.iter().zip(&files).map(|(d, f)| {
        std::str::from_utf8(d).unwrap_or_else(|e| panic!("{f} is not UTF-8: {e}"))
    }).collect();
    let all: Vec<&str> = texts.iter().flat_map(|t| pieces(t)).collect();
    let bytes: usize = data.iter().map(Vec::len).sum();
    let (read, nothing) = best(|| {
        all.par_iter().map(|p| lines(p).filter(|l| serde_json::from_str::<IgnoredAny>(l).is_ok()).count()).sum()
    });
    let (_, tree) = best(|| {
        all.par_iter().map(|p| lines(p).filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()).count()).sum()
    });
    println!("{} files, {:.0} MB, {} lines serde_json reads, {} threads", files.len(), bytes as f64 / 1e6, read,
             rayon::current_num_threads());
    println!("into nothing (IgnoredAny): {nothing:.3} s");
    println!("into a Value tree:         {tree:.3} s");
}
