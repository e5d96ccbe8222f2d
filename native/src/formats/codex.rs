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
//! * a text part whose `text` is no string is no text: its kind is its `type`, as any other
//!   part's; a reasoning item with no text part is redacted only if its `encrypted_content`
//!   is a string (Codex writes `null` when there is none).
//! * tool calls and outputs with a `call_id` make tool events (`function_call`,
//!   `custom_tool_call` and `local_shell_call` a call; `function_call_output` and
//!   `custom_tool_call_output` a result); without one, the item's kind is its `type` and it
//!   has no text characters. A result's error flag is inferred from its output
//!   only: a structured shell output's `metadata.exit_code`, a freeform `Exit code: N` header
//!   (`is_error` = N != 0, `exit_code` N), `exec command rejected by user` (an error), an
//!   object output's `success`; else null, never assumed ok.
//! * `event_msg/token_count`: `info` (1 an object, 0 null or absent), the `total_*` and
//!   `last_*` counters (ccusage's aliases read too), `context_window`, `model`.
//! * `event_msg/exec_command_end`: `call_id`, `exit_code`; `turn_aborted`: `reason`.

use std::borrow::Cow;

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
        let (kind, payload): (Cow<'a, str>, &'a Json<'a>) = match line.field("payload") {
            Some(payload) => {
                row.ints[TS] = text(line, "timestamp").and_then(|t| iso_us(&t));
                (text(line, "type").unwrap_or(Cow::Borrowed("")), payload)
            }
            None => match legacy_kind(line) {
                Some(kind) => {
                    row.ints[LEGACY] = Some(1);
                    (kind, line)
                }
                None => return, // no Codex line: its `type` stays null (the source names it)
            },
        };
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
                let message = text(payload, "message");
                row.ints[MESSAGE] = Some(1);
                row.strs[SIDE] = Some(Cow::Borrowed("assistant"));
                row.kinds.push(Cow::Borrowed("text"));
                row.ints[N_BLOCKS] = Some(1);
                row.ints[TEXT_CHARS] = Some(message.as_deref().map_or(0, chars));
                row.strs[TEXT] = message.filter(|_| keep);
            }
            "event_msg" => event_msg(row, payload),
            _ => {}
        }
        row.strs[TYPE] = Some(kind);
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
    if matches!(kind, "ghost_snapshot" | "compaction" | "compaction_summary") {
        return; // harness state and remote compaction: not conversation messages
    }
    row.ints[MESSAGE] = Some(1);
    row.strs[CALL_ID] = text(p, "call_id");
    row.strs[NAME] = text(p, "name");
    row.strs[STATUS] = text(p, "status");
    let side = match kind {
        "message" => {
            message(row, p, keep);
            return;
        }
        "reasoning" => {
            reasoning(row, p, keep);
            "assistant"
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            tool_call(row, p, kind);
            "assistant"
        }
        "function_call_output" | "custom_tool_call_output" => {
            tool_output(row, p, kind);
            "tool"
        }
        "tool_search_output" => {
            row.kinds.push(Cow::Borrowed("tool_search_output"));
            "tool"
        }
        other => {
            row.kinds.push(Cow::Owned(if other.is_empty() { "unknown".to_owned() } else { other.to_owned() }));
            "assistant"
        }
    };
    row.strs[SIDE] = Some(Cow::Borrowed(side));
    row.ints[N_BLOCKS] = Some(row.kinds.len() as i64);
    row.ints[TEXT_CHARS].get_or_insert(0);
}

fn message<'a>(row: &mut Row<'a>, p: &'a Json<'a>, keep: bool) {
    let role = text(p, "role");
    row.strs[SIDE] = Some(match role.as_deref() {
        Some("developer" | "system") => Cow::Borrowed("system"),
        Some(r) => Cow::Owned(r.to_owned()),
        None => Cow::Borrowed("user"),
    });
    let mut texts: Vec<&str> = Vec::new();
    if let Some(Json::Array(blocks)) = p.field("content") {
        for block in blocks.iter() {
            match text(block, "type").as_deref() {
                Some("input_text" | "output_text" | "text") if block.field("text").map_or(true, |t| t.text().is_some()) => {
                    row.kinds.push(Cow::Borrowed("text"));
                    texts.push(block.field("text").and_then(View::text).unwrap_or(""));
                }
                Some("input_image") => row.kinds.push(Cow::Borrowed("image")),
                Some(other) => row.kinds.push(Cow::Owned(other.to_owned())),
                None => row.kinds.push(Cow::Borrowed("unknown")),
            }
        }
    } else if let Some(Json::Str(s)) = p.field("content") {
        row.kinds.push(Cow::Borrowed("text"));
        texts.push(s);
    }
    row.ints[N_BLOCKS] = Some(row.kinds.len() as i64);
    row.ints[TEXT_CHARS] = Some(texts.iter().map(|t| chars(t)).sum());
    if role.as_deref() == Some("user") {
        row.strs[TITLE] = texts.first().and_then(|t| title(t));
    }
    row.strs[ROLE] = role;
    if keep {
        row.strs[TEXT] = joined(texts.iter().copied());
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

fn reasoning<'a>(row: &mut Row<'a>, p: &'a Json<'a>, keep: bool) {
    let mut texts: Vec<&str> = Vec::new();
    for key in ["summary", "content"] {
        if let Some(Json::Array(parts)) = p.field(key) {
            for part in parts.iter() {
                if let Some("summary_text" | "reasoning_text" | "text") = text(part, "type").as_deref() {
                    row.kinds.push(Cow::Borrowed("thinking"));
                    texts.push(part.field("text").and_then(View::text).unwrap_or(""));
                }
            }
        }
    }
    if texts.is_empty() && p.field("encrypted_content").and_then(View::text).is_some() {
        row.kinds.push(Cow::Borrowed("redacted_thinking"));
    }
    row.ints[TEXT_CHARS] = Some(texts.iter().map(|t| chars(t)).sum());
    if keep {
        row.strs[REASONING] = joined(texts.iter().copied());
    }
}

fn tool_call<'a>(row: &mut Row<'a>, p: &'a Json<'a>, kind: &str) {
    // a call with no call id calls nothing: its block is what its type says
    row.kinds.push(if row.strs[CALL_ID].is_some() { Cow::Borrowed("tool_use") } else { Cow::Owned(kind.to_owned()) });
    // function_call: `arguments` is JSON text as written; custom: a freeform `input`, as a JSON
    // string; a shell call: its `action`, as JSON text (keys sorted)
    let input = match kind {
        "function_call" => text(p, "arguments").map(Text::Str),
        "custom_tool_call" => p.field("input").map(Text::Json),
        _ => at(p, &["action"]).map(Text::Json),
    };
    let id = match row.strs[CALL_ID].clone() {
        Some(id) => id,
        None => return,
    };
    let name = row.strs[NAME].clone().or_else(|| (kind == "local_shell_call").then(|| Cow::Borrowed("local_shell")));
    row.events.push(Event {
        call: true,
        kind: 0,
        id,
        name,
        is_error: None,
        chars: None,
        text: input,
    });
}

fn tool_output<'a>(row: &mut Row<'a>, p: &'a Json<'a>, kind: &str) {
    // an output with no call id answers nothing: its block is what its type says, with no text
    let id = match row.strs[CALL_ID].clone() {
        Some(id) => id,
        None => {
            row.kinds.push(Cow::Owned(kind.to_owned()));
            row.ints[TEXT_CHARS] = Some(0);
            return;
        }
    };
    row.kinds.push(Cow::Borrowed("tool_result"));
    let (body, success) = match p.field("output") {
        Some(Json::Object(_)) => {
            let out = p.field("output").expect("an output");
            (out.field("content"), out.field("success").and_then(Json::as_bool))
        }
        other => (other, None),
    };
    let body: Option<Cow<'a, str>> = match body {
        Some(Json::Str(s)) => Some(Cow::Borrowed(s.as_ref())),
        Some(Json::Array(items)) => {
            let texts: Vec<&str> = items.iter()
                .filter(|i| matches!(text(i, "type").as_deref(), Some("input_text" | "output_text" | "text")))
                .filter_map(|i| i.field("text").and_then(View::text))
                .collect();
            joined(texts)
        }
        _ => None,
    };
    let (exit, inferred) = body.as_deref().map_or((None, None), outcome);
    let is_error = inferred.or_else(|| success.map(|ok| !ok));
    row.ints[EXIT] = exit;
    row.ints[IS_ERROR] = is_error.map(i64::from);
    let n = body.as_deref().map(chars);
    row.ints[TEXT_CHARS] = Some(n.unwrap_or(0));
    row.events.push(Event {
        call: false,
        kind: 0,
        id,
        name: None,
        is_error,
        chars: n,
        text: body.map(Text::Str),
    });
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
