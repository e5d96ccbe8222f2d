//! Claude Code session lines (`projects/<project>/<session>.jsonl`): one row per object line.
//!
//! Every object line is a row, whatever its `type` (`user`, `assistant`, `system`, `summary`,
//! `ai-title`, `attachment`, `progress`, ...): the source decides what each becomes. The
//! envelope, the Anthropic message inside `message` (or, in old sessions, `role`/`content` at
//! the top level), its content blocks, its `usage`, and the metadata of compaction, summary and
//! title lines are read here; nothing is counted or deduplicated (that needs every file of a load).
//!
//! Content blocks are read by the Messages API's block rules (`wire.block_rules("anthropic")`,
//! handed over as a [`Spec`]), the rules a conversation handle decodes them by.

use std::borrow::Cow;

use bumpalo::collections::Vec as BumpVec;

use crate::blocks::Spec;
use crate::json::{Json, View};
use crate::lines::{at, flag, iso_us, joined, text, Format, Row};

/// Claude Code's session JSONL, its content blocks read by `spec`.
pub struct ClaudeCode {
    pub spec: Spec,
}

/// The usage counters, in the order of the `u_*` integer columns and of the bits of `u_bad`.
const COUNTERS: &[(&[&str], usize)] = &[
    (&["input_tokens"], I_INPUT),
    (&["output_tokens"], I_INPUT + 1),
    (&["cache_read_input_tokens"], I_INPUT + 2),
    (&["cache_creation_input_tokens"], I_INPUT + 3),
    (&["cache_creation", "ephemeral_5m_input_tokens"], I_INPUT + 4),
    (&["cache_creation", "ephemeral_1h_input_tokens"], I_INPUT + 5),
];

const INTS: &[&str] = &[
    "ts_us",
    "is_sidechain",
    "is_meta",
    "is_compact_summary",
    "is_api_error",
    "n_blocks",
    "text_chars",
    // usage (present: `has_usage` 1)
    "has_usage",
    "u_input",
    "u_output",
    "u_cache_read",
    "u_cache_creation",
    "u_cache_5m",
    "u_cache_1h",
    "has_cache_breakdown",
    "u_bad",
    // compact_boundary
    "pre_tokens",
    "post_tokens",
    // 64-bit FNV-1a keys of `uuid` and `message.id`: what an export keeps of a file to tell, without
    // reading it again, whether lines another file grew by are copies or replays of its own
    "uuid_key",
    "msg_key",
];
const I_TS: usize = 0;
const I_SIDECHAIN: usize = 1;
const I_META: usize = 2;
const I_COMPACT_SUMMARY: usize = 3;
const I_API_ERROR: usize = 4;
const I_BLOCKS: usize = 5;
const I_CHARS: usize = 6;
const I_HAS_USAGE: usize = 7;
const I_INPUT: usize = 8;
const I_BREAKDOWN: usize = 14;
const I_BAD: usize = 15;
const I_PRE: usize = 16;
const I_POST: usize = 17;
const I_UUID_KEY: usize = 18;
const I_MSG_KEY: usize = 19;

const STRS: &[&str] = &[
    "type",
    "subtype",
    "uuid",
    "parent_uuid",
    "logical_parent_uuid",
    "session_id",
    "cwd",
    "version",
    "agent_id",
    "request_id",
    "msg_id",
    "role",
    "model",
    "stop_reason",
    "service_tier",
    "speed",
    "text",
    "reasoning",
    "compact_trigger",
    "summary",
    "leaf_uuid",
    "ai_title",
    "result_agent_id",
    "message_kind",
    "first_text",
];
const S_TYPE: usize = 0;
const S_SUBTYPE: usize = 1;
const S_UUID: usize = 2;
const S_PARENT: usize = 3;
const S_LOGICAL_PARENT: usize = 4;
const S_SESSION: usize = 5;
const S_CWD: usize = 6;
const S_VERSION: usize = 7;
const S_AGENT: usize = 8;
const S_REQUEST: usize = 9;
const S_MSG_ID: usize = 10;
const S_ROLE: usize = 11;
const S_MODEL: usize = 12;
const S_STOP: usize = 13;
const S_TIER: usize = 14;
const S_SPEED: usize = 15;
const S_TEXT: usize = 16;
const S_REASONING: usize = 17;
const S_TRIGGER: usize = 18;
const S_SUMMARY: usize = 19;
const S_LEAF: usize = 20;
const S_TITLE: usize = 21;
const S_RESULT_AGENT: usize = 22;
const S_MESSAGE_KIND: usize = 23;
const S_FIRST_TEXT: usize = 24;

/// How much of a line's first text line is kept for a title, whether texts are kept or not.
const TITLE_CHARS: usize = 200;

impl Format for ClaudeCode {
    fn ints(&self) -> &'static [&'static str] {
        INTS
    }
    fn strs(&self) -> &'static [&'static str] {
        STRS
    }
    fn row<'a>(&'a self, line: &'a Json<'a>, keep: bool, row: &mut Row<'a>) {
        envelope(row, line);
        // The message: `message` when it is an object, else the old top-level role/content shape.
        let message = line.field("message");
        row.strs[S_MESSAGE_KIND] = Some(Cow::Borrowed(match message {
            None => "absent",
            Some(Json::Object(_)) => "object",
            Some(Json::Null) => "null",
            Some(_) => "other",
        }));
        let body = match message {
            Some(m @ Json::Object(_)) => Some(m),
            _ if line.has("role") || line.has("content") => Some(line),
            _ => None,
        };
        if let Some(m) = body {
            if !std::ptr::eq(m, line) {
                row.strs[S_MSG_ID] = text(m, "id");
                row.strs[S_MODEL] = text(m, "model");
                row.strs[S_STOP] = text(m, "stop_reason");
            }
            row.strs[S_ROLE] = text(m, "role");
            content(&self.spec, row, m.field("content"), keep);
            if let Some(u @ Json::Object(_)) = m.field("usage") {
                usage(row, u);
            }
        }
        row.ints[I_UUID_KEY] = row.strs[S_UUID].as_deref().map(key);
        row.ints[I_MSG_KEY] = row.strs[S_MSG_ID].as_deref().map(key);
    }
}

/// A string's 64-bit FNV-1a hash, as a signed integer: stable across runs and machines.
fn key(s: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h as i64
}

/// The envelope fields every kind of line may carry, and the metadata lines' own.
fn envelope<'a>(row: &mut Row<'a>, line: &'a Json<'a>) {
    row.ints[I_TS] = text(line, "timestamp").and_then(|t| iso_us(&t));
    row.ints[I_SIDECHAIN] = flag(line, "isSidechain");
    row.ints[I_META] = flag(line, "isMeta");
    row.ints[I_COMPACT_SUMMARY] = flag(line, "isCompactSummary");
    row.ints[I_API_ERROR] = flag(line, "isApiErrorMessage");
    for (i, key) in [
        (S_TYPE, "type"),
        (S_SUBTYPE, "subtype"),
        (S_UUID, "uuid"),
        (S_PARENT, "parentUuid"),
        (S_LOGICAL_PARENT, "logicalParentUuid"),
        (S_SESSION, "sessionId"),
        (S_CWD, "cwd"),
        (S_VERSION, "version"),
        (S_AGENT, "agentId"),
        (S_REQUEST, "requestId"),
        (S_SUMMARY, "summary"),
        (S_LEAF, "leafUuid"),
        (S_TITLE, "aiTitle"),
    ] {
        row.strs[i] = text(line, key);
    }
    if let Some(meta) = line.field("compactMetadata") {
        row.ints[I_PRE] = counter(meta.field("preTokens")).0;
        row.ints[I_POST] = counter(meta.field("postTokens")).0;
        row.strs[S_TRIGGER] = text(meta, "trigger");
    }
    row.strs[S_RESULT_AGENT] = at(line, &["toolUseResult"]).and_then(|r| text(r, "agentId"));
}

/// A token counter: an integer in `0..=i64::MAX`, else null; the flag says a value was written
/// that is not one (a string, a float, a negative or too large a number; `null` is not reported).
fn counter(value: Option<&Json<'_>>) -> (Option<i64>, bool) {
    match value {
        None | Some(Json::Null) => (None, false),
        Some(Json::Number(n)) => match n.as_i64() {
            Some(v) if v >= 0 => (Some(v), false),
            _ => (None, true),
        },
        Some(_) => (None, true),
    }
}

fn usage<'a>(row: &mut Row<'a>, u: &'a Json<'a>) {
    row.ints[I_HAS_USAGE] = Some(1);
    let mut bad = 0i64;
    for (bit, (path, col)) in COUNTERS.iter().enumerate() {
        let (value, wrong) = counter(at(u, path));
        row.ints[*col] = value;
        if wrong {
            bad |= 1 << bit;
        }
    }
    row.ints[I_BREAKDOWN] = Some(i64::from(matches!(u.field("cache_creation"), Some(Json::Object(_)))));
    row.ints[I_BAD] = Some(bad);
    row.strs[S_TIER] = text(u, "service_tier");
    row.strs[S_SPEED] = text(u, "speed");
}

/// The first line of `texts` that is not blank, trimmed and cut to [`TITLE_CHARS`] characters:
/// a conversation's title, read whether its texts are kept or not.
fn first_text(texts: &[&str]) -> Option<Cow<'static, str>> {
    let line = texts.iter().flat_map(|t| t.split('\n')).map(str::trim).find(|l| !l.is_empty())?;
    Some(Cow::Owned(line.chars().take(TITLE_CHARS).collect()))
}

/// The content: block kinds, text and reasoning, text characters, tool events. A string is one
/// text block, a list is blocks; anything else holds none.
fn content<'a>(spec: &'a Spec, row: &mut Row<'a>, content: Option<&'a Json<'a>>, keep: bool) {
    let blocks = match content {
        Some(c @ (Json::Str(_) | Json::Array(_))) => spec.content(c, row.arena),
        _ => BumpVec::new_in(row.arena),
    };
    let texts: Vec<&str> = blocks.iter().filter_map(|b| b.text).collect();
    row.ints[I_BLOCKS] = Some(blocks.len() as i64);
    row.ints[I_CHARS] = Some(blocks.iter().map(|b| b.chars).sum());
    row.strs[S_FIRST_TEXT] = first_text(&texts);
    if keep {
        row.strs[S_TEXT] = joined(texts.iter().copied());
        row.strs[S_REASONING] = joined(blocks.iter().filter_map(|b| b.reasoning));
    }
    for block in blocks {
        row.kinds.push(Cow::Borrowed(block.kind));
        if let Some(event) = block.event {
            row.events.push(event);
        }
    }
}
