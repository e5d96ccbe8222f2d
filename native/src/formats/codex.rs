//! Codex CLI rollout lines (`sessions/YYYY/MM/DD/rollout-….jsonl`): one row per object line.
//!
//! A current line is the envelope `{timestamp, type, payload}` (`type` one of `session_meta`,
//! `turn_context`, `response_item`, `compacted`, `event_msg`, or a newer kind kept by name). A
//! generation-1 legacy line has no envelope: a bare `SessionMeta` (`{id, timestamp, …}`, no
//! `type`), a bare `ResponseItem` (`{"type":"message",…}`) or a `{"record_type":"state"}` line;
//! it is read into the same columns (`type` `session_meta`, `response_item` or `state`, its
//! whole object as the payload, no line time, `legacy` 1).
//!
//! What a row holds, by kind:
//!
//! * every line: `ts_us` (the envelope time), `type`, `payload_type`, and `payload_hash`, a
//!   64-bit hash of the kind and of the payload's canonical JSON (keys sorted, the last
//!   of duplicate keys, envelope time left out): two lines with equal hashes carry the same
//!   item, however their times were stamped (a fork's copied prefix).
//! * `session_meta`: `id`, `meta_ts_us`, `id_us` (the UUIDv7 time of `id`), `cwd`,
//!   `originator`, `cli_version`, `source` (its string, or `subagent`), `subagent` (the
//!   subagent kind: `review`, `compact`, `thread_spawn`, `other`), `parent_thread_id` and
//!   `depth` (of a `thread_spawn`), `spawn_call_id`, `forked_from_id`, `model_provider`.
//! * `turn_context`: `model`, `cwd`, `turn_id`, `turn_us`; `event_msg/task_started`: `turn_id`,
//!   `turn_us`, `context_window`.
//! * a message (`message` = 1: the response items and `compacted`, never their `event_msg`
//!   mirrors): `side` (`user`, `assistant`, `system` for a developer message, `tool` for a tool
//!   output), `role`, the block kinds, `n_blocks`, `text_chars`, `text` (text blocks joined
//!   with `\n`), `reasoning` (reasoning parts joined with `\n`), `title` (a user message's
//!   first line, unless it is an injected context block), `call_id`, `name`, `status`.
//! * a message's blocks are its item's [`Part`]s, read here alone: the rows' kinds, texts and
//!   tool events are made of them, and so are a conversation handle's blocks
//!   ([`line_parts`], `_native.codex_blocks`). A text part (`input_text`, `output_text`,
//!   `text`) is text where its `text` is a string or absent (empty); one whose `text` is
//!   anything else is kept whole under its `type`, as any other part. A reasoning item with no
//!   text part is redacted only if its `encrypted_content` is a string (Codex writes `null`
//!   when there is none). A `compacted` item's block is its `message`, when it is a string.
//! * tool calls and outputs with a `call_id` make tool events (`function_call`,
//!   `custom_tool_call` and `local_shell_call` a call; `function_call_output` and
//!   `custom_tool_call_output` a result); without one, the item's kind is its `type` and it
//!   has no text characters. A call's input is its `arguments` as written (JSON text; a value
//!   that is no string, as JSON text), a freeform `input` or a shell call's `action`. A
//!   result's error flag is inferred from its output
//!   only: a structured shell output's `metadata.exit_code`, a freeform `Exit code: N` header
//!   (`is_error` = N != 0, `exit_code` N), `exec command rejected by user` (an error), an
//!   object output's `success`; else null, never assumed ok.
//! * `event_msg/token_count`: `info` (1 an object, 0 null or absent), the `total_*` and
//!   `last_*` counters (ccusage's aliases read too), `context_window`, `model`.
//! * `event_msg/exec_command_end`: `call_id`, `exit_code`; `turn_aborted`: `reason`.

use std::borrow::Cow;

use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;

use crate::json::{Json, View};
use crate::lines::{at, int, iso_us, joined, text, Event, Format, Row, Text};
use crate::uuid7::uuid7_ms;

/// Codex's rollout JSONL.
pub struct Codex;

const INTS: &[&str] = &[
    "ts_us", "legacy", "message", "n_blocks", "text_chars", "exit_code", "is_error", "info",
    "total_input", "total_cached", "total_output", "total_reasoning", "total_tokens",
    "last_input", "last_cached", "last_output", "last_reasoning", "last_tokens",
    "context_window", "depth", "payload_hash", "meta_ts_us", "id_us", "turn_us",
];
const STRS: &[&str] = &[
    "type", "payload_type", "side", "role", "id", "cwd", "originator", "cli_version", "source",
    "subagent", "parent_thread_id", "spawn_call_id", "forked_from_id", "model_provider", "model",
    "text", "reasoning", "title", "call_id", "name", "status", "reason", "turn_id",
];

// Column indexes (the order above).
const TS: usize = 0;
const LEGACY: usize = 1;
const MESSAGE: usize = 2;
const N_BLOCKS: usize = 3;
const TEXT_CHARS: usize = 4;
const EXIT: usize = 5;
const IS_ERROR: usize = 6;
const INFO: usize = 7;
const TOTAL: usize = 8; // five counters: input, cached, output, reasoning, tokens
const LAST: usize = 13;
const WINDOW: usize = 18;
const DEPTH: usize = 19;
const HASH: usize = 20;
const META_TS: usize = 21;
const ID_US: usize = 22;
const TURN_US: usize = 23;

const TYPE: usize = 0;
const PTYPE: usize = 1;
const SIDE: usize = 2;
const ROLE: usize = 3;
const ID: usize = 4;
const CWD: usize = 5;
const ORIGINATOR: usize = 6;
const CLI: usize = 7;
const SOURCE: usize = 8;
const SUBAGENT: usize = 9;
const PARENT: usize = 10;
const SPAWN_CALL: usize = 11;
const FORKED: usize = 12;
const PROVIDER: usize = 13;
const MODEL: usize = 14;
const TEXT: usize = 15;
const REASONING: usize = 16;
const TITLE: usize = 17;
const CALL_ID: usize = 18;
const NAME: usize = 19;
const STATUS: usize = 20;
const REASON: usize = 21;
const TURN_ID: usize = 22;

/// The envelope kinds Codex writes (a line with a `payload` is an envelope of any kind).
const KINDS: &[&str] = &["session_meta", "turn_context", "response_item", "compacted", "event_msg"];
/// A user message starting with one of these is context Codex injected, not what was asked.
const INJECTED: &[&str] = &["<environment_context>", "<user_instructions>", "<permissions instructions>",
    "# AGENTS.md instructions", "<user_shell_command>", "<turn_aborted>"];
/// The characters of a title kept by the engine (the source cuts it further).
const TITLE_CHARS: usize = 400;
/// Each counter of `TokenUsage` and the names ccusage also accepts for it.
const COUNTERS: [&[&str]; 5] = [
    &["input_tokens", "prompt_tokens", "input"],
    &["cached_input_tokens", "cache_read_input_tokens", "cached_tokens"],
    &["output_tokens", "completion_tokens", "output"],
    &["reasoning_output_tokens", "reasoning_tokens"],
    &["total_tokens"],
];

impl Format for Codex {
    fn ints(&self) -> &'static [&'static str] {
        INTS
    }
    fn strs(&self) -> &'static [&'static str] {
        STRS
    }
    fn row<'a>(&'a self, line: &'a Json<'a>, keep: bool, row: &mut Row<'a>) {
        let (kind, payload, legacy) = match envelope(line) {
            Some(found) => found,
            None => return, // no Codex line: its `type` stays null (the source names it)
        };
        if legacy {
            row.ints[LEGACY] = Some(1);
        } else {
            row.ints[TS] = text(line, "timestamp").and_then(|t| iso_us(&t));
        }
        row.ints[HASH] = Some(item_hash(&kind, payload));
        row.strs[PTYPE] = text(payload, "type");
        match kind.as_ref() {
            "session_meta" => session_meta(row, payload),
            "turn_context" => {
                row.strs[MODEL] = text(payload, "model");
                row.strs[CWD] = text(payload, "cwd");
                turn(row, payload);
            }
            "response_item" => response_item(row, payload, keep),
            "compacted" => {
                row.ints[MESSAGE] = Some(1);
                row.strs[SIDE] = Some(Cow::Borrowed("assistant"));
                let parts = compacted(payload, row.arena);
                blocks_into(row, &parts, keep);
            }
            "event_msg" => event_msg(row, payload),
            _ => {}
        }
        row.strs[TYPE] = Some(kind);
    }
}

/// A line's kind, its payload and whether it is a legacy line (no envelope; the payload is the
/// line itself), or `None`: no Codex line at all.
fn envelope<'a>(line: &'a Json<'a>) -> Option<(Cow<'a, str>, &'a Json<'a>, bool)> {
    match line.field("payload") {
        Some(payload) => Some((text(line, "type").unwrap_or(Cow::Borrowed("")), payload, false)),
        None => legacy_kind(line).map(|kind| (kind, line, true)),
    }
}

/// The kind of a line with no envelope (generation 1), or `None`: no Codex line at all.
fn legacy_kind<'a>(line: &'a Json<'a>) -> Option<Cow<'a, str>> {
    if line.field("record_type").is_some() {
        return Some(Cow::Borrowed("state"));
    }
    match text(line, "type") {
        Some(t) if KINDS.contains(&t.as_ref()) => None, // an envelope kind without its payload
        Some(_) => Some(Cow::Borrowed("response_item")),
        None if line.field("id").is_some() => Some(Cow::Borrowed("session_meta")),
        None => None,
    }
}

fn session_meta<'a>(row: &mut Row<'a>, p: &'a Json<'a>) {
    row.strs[ID] = text(p, "id");
    row.ints[ID_US] = row.strs[ID].as_deref().and_then(|id| uuid7_ms(id.as_bytes())).map(|ms| ms as i64 * 1000);
    row.ints[META_TS] = text(p, "timestamp").and_then(|t| iso_us(&t));
    row.strs[CWD] = text(p, "cwd");
    row.strs[ORIGINATOR] = text(p, "originator");
    row.strs[CLI] = text(p, "cli_version");
    row.strs[FORKED] = text(p, "forked_from_id");
    row.strs[PROVIDER] = text(p, "model_provider");
    row.strs[SPAWN_CALL] = text(p, "spawn_call_id");
    match p.field("source") {
        Some(Json::Str(s)) => row.strs[SOURCE] = Some(Cow::Borrowed(s.as_ref())),
        Some(source) => {
            if let Some(sub) = source.field("subagent") {
                row.strs[SOURCE] = Some(Cow::Borrowed("subagent"));
                subagent(row, sub);
            } else {
                row.strs[SOURCE] = first_key(source);
            }
        }
        None => {}
    }
}

/// A `SubAgentSource`: `"review"`, `{"other": …}`, `{"thread_spawn": {parent_thread_id, depth, …}}`.
fn subagent<'a>(row: &mut Row<'a>, sub: &'a Json<'a>) {
    if let Json::Str(s) = sub {
        row.strs[SUBAGENT] = Some(Cow::Borrowed(s.as_ref()));
        return;
    }
    row.strs[SUBAGENT] = first_key(sub);
    if let Some(spawn) = sub.field("thread_spawn") {
        row.strs[PARENT] = text(spawn, "parent_thread_id");
        row.ints[DEPTH] = int(spawn, "depth");
        if row.strs[SPAWN_CALL].is_none() {
            row.strs[SPAWN_CALL] = text(spawn, "spawn_call_id").or_else(|| text(spawn, "call_id"));
        }
    }
}

fn first_key<'a>(value: &'a Json<'a>) -> Option<Cow<'a, str>> {
    match value {
        Json::Object(entries) => entries.first().map(|(k, _)| Cow::Borrowed(k.as_ref())),
        _ => None,
    }
}

fn turn<'a>(row: &mut Row<'a>, p: &'a Json<'a>) {
    row.strs[TURN_ID] = text(p, "turn_id");
    row.ints[TURN_US] = row.strs[TURN_ID].as_deref().and_then(|id| uuid7_ms(id.as_bytes())).map(|ms| ms as i64 * 1000);
}

fn event_msg<'a>(row: &mut Row<'a>, p: &'a Json<'a>) {
    match text(p, "type").as_deref() {
        Some("token_count") => token_count(row, p),
        Some("task_started" | "turn_started") => {
            turn(row, p);
            row.ints[WINDOW] = int(p, "model_context_window");
        }
        Some("exec_command_end") => {
            row.strs[CALL_ID] = text(p, "call_id");
            row.ints[EXIT] = int(p, "exit_code");
        }
        Some("turn_aborted") => row.strs[REASON] = text(p, "reason"),
        _ => {}
    }
}

fn token_count<'a>(row: &mut Row<'a>, p: &'a Json<'a>) {
    row.strs[MODEL] = text(p, "model").or_else(|| text(p, "model_name"));
    let info = match p.field("info") {
        Some(info @ Json::Object(_)) => info,
        _ => {
            row.ints[INFO] = Some(0);
            return;
        }
    };
    row.ints[INFO] = Some(1);
    if row.strs[MODEL].is_none() {
        row.strs[MODEL] = text(info, "model").or_else(|| text(info, "model_name"));
    }
    for (base, key) in [(TOTAL, "total_token_usage"), (LAST, "last_token_usage")] {
        if let Some(usage @ Json::Object(_)) = info.field(key) {
            for (i, names) in COUNTERS.iter().enumerate() {
                row.ints[base + i] = names.iter().find_map(|n| int(usage, n));
            }
        }
    }
    row.ints[WINDOW] = int(info, "model_context_window");
}

fn response_item<'a>(row: &mut Row<'a>, p: &'a Json<'a>, keep: bool) {
    let kind = text(p, "type");
    let kind = kind.as_deref().unwrap_or("");
    if HARNESS.contains(&kind) {
        return;
    }
    row.ints[MESSAGE] = Some(1);
    row.strs[CALL_ID] = text(p, "call_id");
    row.strs[NAME] = text(p, "name");
    row.strs[STATUS] = text(p, "status");
    let role = if kind == "message" { text(p, "role") } else { None };
    row.strs[SIDE] = Some(match kind {
        "message" => match role.as_deref() {
            Some("developer" | "system") => Cow::Borrowed("system"),
            Some(r) => Cow::Owned(r.to_owned()),
            None => Cow::Borrowed("user"),
        },
        "function_call_output" | "custom_tool_call_output" | "tool_search_output" => Cow::Borrowed("tool"),
        _ => Cow::Borrowed("assistant"),
    });
    let parts = item(p, row.arena);
    blocks_into(row, &parts, keep);
    if role.as_deref() == Some("user") {
        row.strs[TITLE] = parts.iter().find_map(|b| match b {
            Part::Text(t) => Some(*t),
            _ => None,
        }).and_then(title);
    }
    row.strs[ROLE] = role;
}

/// Response items that are harness state or a remote compaction, not conversation messages.
const HARNESS: &[&str] = &["ghost_snapshot", "compaction", "compaction_summary"];
/// The part types that are text, where their `text` is a string or absent (read as empty).
const TEXTS: &[&str] = &["input_text", "output_text", "text"];
/// The reasoning part types that are reasoning text.
const REASONING_TEXTS: &[&str] = &["summary_text", "reasoning_text", "text"];

/// One content block of a message item, as the engine reads it. A row's block kinds, texts and
/// tool events are made of these, and so are a conversation handle's blocks ([`line_parts`]):
/// the rules of what an item holds are written here alone.
pub enum Part<'a> {
    /// a text part, a string content, a compacted item's message
    Text(&'a str),
    /// an `input_image` part: its `image_url`
    Image(Option<&'a Json<'a>>),
    /// a reasoning summary or content part's text (empty where it is no string)
    Thinking(&'a str),
    /// a reasoning item with no text part: its `encrypted_content`
    Redacted(&'a str),
    /// a call with a `call_id`: its input as written (`arguments` JSON text; a freeform `input`
    /// or a shell call's `action` as a value)
    Call { id: Cow<'a, str>, name: Option<Cow<'a, str>>, input: Option<Text<'a>> },
    /// an output with a `call_id`: its text parts, and what they say of how the tool ended
    Output { id: Cow<'a, str>, texts: BumpVec<'a, &'a str>, is_error: Option<bool>, exit: Option<i64> },
    /// anything else, kept whole under its kind (its `type`, else `unknown`)
    Other { kind: Cow<'a, str>, value: &'a Json<'a> },
}

impl<'a> Part<'a> {
    /// The block kind the tables list.
    pub fn kind(&self) -> Cow<'a, str> {
        Cow::Borrowed(match self {
            Part::Text(_) => "text",
            Part::Image(_) => "image",
            Part::Thinking(_) => "thinking",
            Part::Redacted(_) => "redacted_thinking",
            Part::Call { .. } => "tool_use",
            Part::Output { .. } => "tool_result",
            Part::Other { kind, .. } => return kind.clone(),
        })
    }
}

/// The blocks of a line: a response item's or a compacted item's (none for any other line).
pub fn line_parts<'a>(line: &'a Json<'a>, arena: &'a Bump) -> BumpVec<'a, Part<'a>> {
    match envelope(line) {
        Some((kind, p, _)) if kind == "response_item" && !HARNESS.contains(&text(p, "type").as_deref().unwrap_or("")) => {
            item(p, arena)
        }
        Some((kind, p, _)) if kind == "compacted" => compacted(p, arena),
        _ => BumpVec::new_in(arena),
    }
}

/// A compacted item's block: its `message`, when it is a string.
fn compacted<'a>(p: &'a Json<'a>, arena: &'a Bump) -> BumpVec<'a, Part<'a>> {
    let mut out = BumpVec::new_in(arena);
    if let Some(message) = p.field("message").and_then(View::text) {
        out.push(Part::Text(message));
    }
    out
}

/// A part that is text: its text (empty where absent), else `None`.
fn text_part<'a>(part: &'a Json<'a>) -> Option<&'a str> {
    match part.field("type").and_then(View::text) {
        Some(t) if TEXTS.contains(&t) => match part.field("text") {
            None => Some(""),
            Some(value) => value.text(),
        },
        _ => None,
    }
}

/// The kind of a part kept whole: its `type`, else `unknown`.
fn other<'a>(value: &'a Json<'a>) -> Part<'a> {
    let kind = match value.field("type").and_then(View::text) {
        Some(t) if !t.is_empty() => Cow::Borrowed(t),
        _ => Cow::Borrowed("unknown"),
    };
    Part::Other { kind, value }
}

/// A response item's blocks.
fn item<'a>(p: &'a Json<'a>, arena: &'a Bump) -> BumpVec<'a, Part<'a>> {
    let mut out = BumpVec::new_in(arena);
    let kind = p.field("type").and_then(View::text).unwrap_or("");
    let id = text(p, "call_id");
    match kind {
        "message" => match p.field("content") {
            Some(Json::Array(parts)) => {
                for part in parts.iter() {
                    out.push(match text_part(part) {
                        Some(t) => Part::Text(t),
                        None if part.field("type").and_then(View::text) == Some("input_image") => {
                            Part::Image(part.field("image_url"))
                        }
                        None => other(part),
                    });
                }
            }
            Some(Json::Str(s)) => out.push(Part::Text(s)),
            _ => {}
        },
        "reasoning" => {
            for key in ["summary", "content"] {
                if let Some(Json::Array(parts)) = p.field(key) {
                    for part in parts.iter() {
                        if part.field("type").and_then(View::text).is_some_and(|t| REASONING_TEXTS.contains(&t)) {
                            out.push(Part::Thinking(part.field("text").and_then(View::text).unwrap_or("")));
                        }
                    }
                }
            }
            if out.is_empty() {
                if let Some(data) = p.field("encrypted_content").and_then(View::text) {
                    out.push(Part::Redacted(data));
                }
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => out.push(match id {
            // a call with no call id calls nothing: it is kept whole under its type
            None => other(p),
            Some(id) => Part::Call {
                id,
                name: text(p, "name").or_else(|| (kind == "local_shell_call").then_some(Cow::Borrowed("local_shell"))),
                input: match kind {
                    "function_call" => p.field("arguments").map(|a| match a {
                        Json::Str(s) => Text::Str(Cow::Borrowed(*s)),
                        value => Text::Json(value),
                    }),
                    "custom_tool_call" => p.field("input").map(Text::Json),
                    _ => at(p, &["action"]).map(Text::Json),
                },
            },
        }),
        "function_call_output" | "custom_tool_call_output" => out.push(match id {
            // an output with no call id answers nothing: it is kept whole under its type
            None => other(p),
            Some(id) => output(id, p, arena),
        }),
        _ => out.push(other(p)),
    }
    out
}

/// An output answering `id`: the text of its `output` (a string, text parts, or an object's
/// `content`), and its error flag as the text says, else as an object's `success` says.
fn output<'a>(id: Cow<'a, str>, p: &'a Json<'a>, arena: &'a Bump) -> Part<'a> {
    let (body, success) = match p.field("output") {
        Some(out @ Json::Object(_)) => (out.field("content"), out.field("success").and_then(Json::as_bool)),
        other => (other, None),
    };
    let mut texts = BumpVec::new_in(arena);
    match body {
        Some(Json::Str(s)) => texts.push(*s),
        Some(Json::Array(items)) => texts.extend(items.iter().filter_map(text_part)),
        _ => {}
    }
    let (exit, inferred) = joined(texts.iter().copied()).as_deref().map_or((None, None), outcome);
    Part::Output { id, texts, is_error: inferred.or_else(|| success.map(|ok| !ok)), exit }
}

/// A message row's block kinds, block count, text characters, texts and tool events, from its blocks.
fn blocks_into<'a>(row: &mut Row<'a>, parts: &[Part<'a>], keep: bool) {
    let mut texts: Vec<&'a str> = Vec::new();
    let mut thoughts: Vec<&'a str> = Vec::new();
    let mut n: i64 = 0;
    for part in parts {
        row.kinds.push(part.kind());
        match part {
            Part::Text(t) => {
                texts.push(t);
                n += chars(t);
            }
            Part::Thinking(t) => {
                thoughts.push(t);
                n += chars(t);
            }
            Part::Call { id, name, input } => row.events.push(Event {
                call: true,
                kind: 0,
                id: id.clone(),
                name: name.clone(),
                is_error: None,
                chars: None,
                text: input.clone(),
            }),
            Part::Output { id, texts: body, is_error, exit } => {
                let own = (!body.is_empty()).then(|| body.iter().map(|t| chars(t)).sum::<i64>());
                n += own.unwrap_or(0);
                row.ints[EXIT] = *exit;
                row.ints[IS_ERROR] = is_error.map(i64::from);
                row.events.push(Event {
                    call: false,
                    kind: 0,
                    id: id.clone(),
                    name: None,
                    is_error: *is_error,
                    chars: own,
                    text: match body.as_slice() {
                        [] => None,
                        [one] => Some(Text::Str(Cow::Borrowed(*one))),
                        many => Some(Text::Joined(many.to_vec())),
                    },
                });
            }
            Part::Image(_) | Part::Redacted(_) | Part::Other { .. } => {}
        }
    }
    row.ints[N_BLOCKS] = Some(row.kinds.len() as i64);
    row.ints[TEXT_CHARS] = Some(n);
    if keep {
        row.strs[TEXT] = joined(texts.iter().copied());
        row.strs[REASONING] = joined(thoughts.iter().copied());
    }
}

/// A user text's first non-blank line (cut to `TITLE_CHARS`), unless it is injected context.
fn title(t: &str) -> Option<Cow<'static, str>> {
    let t = t.trim_start();
    if t.is_empty() || INJECTED.iter().any(|p| t.starts_with(p)) {
        return None;
    }
    let line = t.lines().next().unwrap_or("");
    Some(Cow::Owned(line.chars().take(TITLE_CHARS).collect()))
}

/// What a tool output's text says of how the tool ended: `(exit code, is_error)`.
///
/// A structured shell output is the JSON text `{"output":…, "metadata":{"exit_code":N, …}}`; a
/// freeform one starts `Exit code: N`; a command the user refused is `exec command rejected by
/// user`. Anything else says nothing (null, never assumed ok).
fn outcome(s: &str) -> (Option<i64>, Option<bool>) {
    if s.starts_with('{') {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(s) {
            if let Some(code) = v.get("metadata").and_then(|m| m.get("exit_code")).and_then(serde_json::Value::as_i64) {
                return (Some(code), Some(code != 0));
            }
        }
    }
    if let Some(rest) = s.strip_prefix("Exit code: ") {
        let digits: &str = rest.split(|c: char| c == '\n' || c == '\r').next().unwrap_or("").trim();
        if let Ok(code) = digits.parse::<i64>() {
            return (Some(code), Some(code != 0));
        }
    }
    if s.trim() == "exec command rejected by user" || s.starts_with("exec command rejected by user") {
        return (None, Some(true));
    }
    (None, None)
}

fn chars(s: &str) -> i64 {
    s.chars().count() as i64
}

/// A 64-bit hash of a line's kind and of its payload's canonical form.
fn item_hash(kind: &str, payload: &Json<'_>) -> i64 {
    let mut h = Canonical(0xcbf2_9ce4_8422_2325);
    h.bytes(kind.as_bytes());
    h.byte(0);
    h.value(payload);
    h.0 as i64
}

/// A hash of a JSON value's canonical form (tagged, length-prefixed, keys sorted), 8 bytes per step.
struct Canonical(u64);

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;
const SALT: u64 = 0x243f_6a88_85a3_08d3;

impl Canonical {
    /// One 64-bit word folded in: a full 64x64->128 multiply, its halves folded together.
    fn word(&mut self, w: u64) {
        let m = u128::from(self.0 ^ w ^ SALT) * u128::from(MIX);
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
    fn byte(&mut self, b: u8) {
        self.word(u64::from(b) | 0x100);
    }
    fn bytes(&mut self, bs: &[u8]) {
        let mut chunks = bs.chunks_exact(8);
        for c in &mut chunks {
            self.word(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut tail = [0u8; 8];
            tail[..rest.len()].copy_from_slice(rest);
            self.word(u64::from_le_bytes(tail));
        }
    }
    fn len(&mut self, n: usize) {
        self.word(n as u64);
    }
    fn value(&mut self, v: &Json<'_>) {
        match v {
            Json::Null => self.byte(b'n'),
            Json::Bool(b) => self.byte(if *b { b't' } else { b'f' }),
            Json::Number(n) => {
                self.byte(b'#');
                let s = n.to_string();
                self.len(s.len());
                self.bytes(s.as_bytes());
            }
            Json::Str(s) => {
                self.byte(b'"');
                self.len(s.len());
                self.bytes(s.as_bytes());
            }
            Json::Array(items) => {
                self.byte(b'[');
                self.len(items.len());
                items.iter().for_each(|i| self.value(i));
            }
            Json::Object(_) => {
                let mut entries: Vec<_> = v.last_entries().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                self.byte(b'{');
                self.len(entries.len());
                for (k, item) in entries {
                    self.len(k.len());
                    self.bytes(k.as_bytes());
                    self.value(item);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::outcome;

    #[test]
    fn outcomes() {
        assert_eq!(outcome("Exit code: 0\nWall time: 0.1 seconds\nOutput:\nok"), (Some(0), Some(false)));
        assert_eq!(outcome("Exit code: 2\nOutput:\n"), (Some(2), Some(true)));
        assert_eq!(outcome(r#"{"output":"x","metadata":{"exit_code":1,"duration_seconds":0.2}}"#), (Some(1), Some(true)));
        assert_eq!(outcome("exec command rejected by user"), (None, Some(true)));
        assert_eq!(outcome("patched a.txt"), (None, None));
        assert_eq!(outcome(r#"{"output":"x"}"#), (None, None));
    }
}
