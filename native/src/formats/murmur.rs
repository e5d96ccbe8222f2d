//! murmur records (`conversations/<capsule>/<context>/conversation.jsonl`): one row per message.
//!
//! The line rule is murmur's own ([`crate::line`]): a line is a row iff serde_json parses it
//! into an object with a string `role`, and line 1 may be the `murmur.record` header (kept as
//! the file's header, neither a row nor reported). A row holds the message's `id` and its
//! UUIDv7 time (`created_ms`), `role`, `source_id`, and what its blocks give under the block
//! rules of `wire.py` ([`Spec`]): their kinds, `n_blocks`, `text_chars`, `text` and
//! `reasoning_text` (joined with `\n`), and its tool events. A `tool` message with a
//! `tool_call_id` is one result block answering that call (its body's texts are the result's
//! text); one without is reported (`MISSING_CALL_ID`) and read as text. The first user message
//! with a text that is not blank offers the record's title. Tool events are paired while the
//! record is read (a message is a run of one `role`).

use std::borrow::Cow;

use bumpalo::collections::Vec as BumpVec;

use crate::blocks::{py_space, Spec};
use crate::json::{Json, View};
use crate::line::{is_header, is_message, MISSING_CALL_ID};
use crate::lines::{joined, Event, Format, Row, Text};
use crate::uuid7::uuid7_ms;

/// murmur's record JSONL, under the block rules `spec` states.
pub struct Murmur {
    pub spec: Spec,
}

/// The integer columns, by the names the scan hands them over by.
pub const CREATED_MS: usize = 0;
pub const N_BLOCKS: usize = 1;
pub const TEXT_CHARS: usize = 2;
const INTS: &[&str] = &["created_ms", "n_blocks", "text_chars"];

/// The string columns.
pub const ID: usize = 0;
pub const ROLE: usize = 1;
pub const SOURCE_ID: usize = 2;
pub const TEXT: usize = 3;
pub const REASONING: usize = 4;
const STRS: &[&str] = &["id", "role", "source_id", "text", "reasoning_text"];

impl Format for Murmur {
    fn ints(&self) -> &'static [&'static str] {
        INTS
    }
    fn strs(&self) -> &'static [&'static str] {
        STRS
    }
    fn keeps(&self, line: &Json<'_>) -> bool {
        is_message(line)
    }
    fn header(&self, line: &str) -> bool {
        is_header(line)
    }
    fn walks(&self) -> Option<usize> {
        Some(ROLE)
    }
    fn row<'a>(&'a self, line: &'a Json<'a>, keep: bool, row: &mut Row<'a>) {
        let spec = &self.spec;
        let string = |key: &str| line.field(key).and_then(View::text);
        let role = string("role").unwrap_or_default();
        let id = string("id");
        row.ints[CREATED_MS] = id.and_then(|s| uuid7_ms(s.as_bytes())).map(|ms| ms as i64);
        row.strs[ID] = id.map(Cow::Borrowed);
        row.strs[ROLE] = Some(Cow::Borrowed(role));
        row.strs[SOURCE_ID] = string("source_id").map(Cow::Borrowed);
        let content = line.field("content").filter(|c| !c.is_null());
        let blocks = content.map_or_else(|| BumpVec::new_in(row.arena), |c| spec.content(c, row.arena));
        let call_id = if role == "tool" { string("tool_call_id") } else { None };
        let is_error = if role == "tool" { line.field("is_error").and_then(Json::as_bool) } else { None };
        if role == "tool" && call_id.is_none() {
            row.report = Some(MISSING_CALL_ID);
        }
        if let Some(call_id) = call_id {
            // The tool body becomes one result block answering the call the line names.
            let chars: i64 = blocks.iter().map(|b| b.chars).sum();
            row.ints[N_BLOCKS] = Some(1);
            row.ints[TEXT_CHARS] = Some(chars);
            row.kinds.push(Cow::Borrowed(&spec.result_kind));
            let texts = if keep { blocks.iter().filter_map(|b| b.text).collect() } else { Vec::new() };
            row.events.push(Event {
                id: Cow::Borrowed(call_id),
                is_error,
                chars: Some(chars),
                text: Some(Text::Joined(texts)),
                ..Event::default()
            });
            return;
        }
        row.ints[N_BLOCKS] = Some(blocks.len() as i64);
        row.ints[TEXT_CHARS] = Some(blocks.iter().map(|b| b.chars).sum());
        for block in &blocks {
            row.kinds.push(Cow::Borrowed(block.kind));
        }
        if keep {
            row.strs[TEXT] = joined(blocks.iter().filter_map(|b| b.text));
            row.strs[REASONING] = joined(blocks.iter().filter_map(|b| b.reasoning));
        }
        if role == "user" {
            row.title = blocks.iter().filter_map(|b| b.text).find(|t| t.chars().any(|c| !py_space(c)));
        }
        for block in blocks {
            if let Some(mut event) = block.event {
                if !event.call {
                    event.is_error = event.is_error.or(is_error);
                }
                row.events.push(event);
            }
        }
    }
}
