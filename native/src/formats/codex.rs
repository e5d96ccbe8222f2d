//! Codex CLI rollout lines (`sessions/YYYY/MM/DD/rollout-….jsonl`): one row per object line.

use crate::json::Json;
use crate::lines::{at, iso_us, text, Format, Row};

/// Codex's rollout JSONL.
pub struct Codex;

const INTS: &[&str] = &["ts_us"];
const STRS: &[&str] = &["type", "payload_type"];

impl Format for Codex {
    fn ints(&self) -> &'static [&'static str] {
        INTS
    }
    fn strs(&self) -> &'static [&'static str] {
        STRS
    }
    fn row<'a>(&self, line: &'a Json<'a>, _text: bool) -> Option<Row<'a>> {
        let mut row = Row::of(self);
        row.ints[0] = text(line, "timestamp").and_then(|t| iso_us(&t));
        row.strs[0] = text(line, "type");
        row.strs[1] = at(line, &["payload"]).and_then(|p| text(p, "type"));
        Some(row)
    }
}
