//! Claude Code session lines (`projects/<project>/<session>.jsonl`): one row per object line.

use crate::json::Json;
use crate::lines::{flag, iso_us, text, Format, Row};

/// Claude Code's session JSONL.
pub struct ClaudeCode;

const INTS: &[&str] = &["ts_us", "is_sidechain"];
const STRS: &[&str] = &["type", "uuid", "parent_uuid", "session_id"];

impl Format for ClaudeCode {
    fn ints(&self) -> &'static [&'static str] {
        INTS
    }
    fn strs(&self) -> &'static [&'static str] {
        STRS
    }
    fn row<'a>(&self, line: &'a Json<'a>, _text: bool) -> Option<Row<'a>> {
        let mut row = Row::of(self);
        row.ints[0] = text(line, "timestamp").and_then(|t| iso_us(&t));
        row.ints[1] = flag(line, "isSidechain");
        row.strs[0] = text(line, "type");
        row.strs[1] = text(line, "uuid");
        row.strs[2] = text(line, "parentUuid");
        row.strs[3] = text(line, "sessionId");
        Some(row)
    }
}
