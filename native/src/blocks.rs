//! What the tables derive from a message's content blocks: kinds, text characters, tool events
//! (read by the murmur format, `formats/murmur.rs`, and Claude Code's, `formats/claude.rs`).
//!
//! The block rules are not written here: they are a dialect's tables in
//! `murmur_analysis/core/wire.py` (`_TAGS`, `_SPECS`, `_KEYS`, the text kinds; `block_rules`),
//! handed over as a [`Spec`] when a scan starts. This module only interprets them the way
//! `block_from_wire` does.

use std::borrow::Cow;
use std::collections::HashMap;

use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;

use crate::json::{Json, View};
use crate::lines::{Event, Text};

/// How a field of a modelled block is typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Any,
    Str,
}

/// One modelled block kind.
#[derive(Clone, Debug)]
pub struct KindSpec {
    pub name: String,
    /// (wire key, required, type)
    pub fields: Vec<(String, bool, FieldType)>,
    pub counts_text: bool,
    /// the wire key of its text (`text`, or a dialect's own: the Messages API's `thinking`)
    pub text_key: String,
}

/// The block rules of one dialect, as `wire.py` states them.
#[derive(Clone, Debug, Default)]
pub struct Spec {
    /// wire tag -> index into `kinds`
    pub tags: HashMap<String, usize>,
    pub kinds: Vec<KindSpec>,
    /// the kind of a bare string block (text)
    pub string_kind: String,
    /// the kind of a client tool call (its `id`, `name`, `input` make a call event)
    pub call_kind: String,
    /// the kind of a client tool result (decoded by its own rule)
    pub result_kind: String,
    /// the kind of a block not modelled
    pub unknown_kind: String,
    /// the kind whose text is reasoning (`reasoning_text`)
    pub reasoning_kind: String,
    /// the kind of a provider-run tool's call (its `id`, `name`, `input` make a server call
    /// event); empty when the dialect has none
    pub server_call_kind: String,
    /// the kind of a provider-run tool's result (a `*_tool_result` tag not modelled otherwise);
    /// empty when the dialect models none
    pub server_result_kind: String,
    /// what a client tool result that writes no `is_error` says
    pub result_error: Option<bool>,
    /// whether the text columns are kept (texts are left out of a lean read)
    pub keep_text: bool,
}

/// One decoded block: its kind, text characters, and what a title or a pairing needs.
pub struct Block<'a> {
    pub kind: &'a str,
    pub chars: i64,
    /// a decoded text block's text
    pub text: Option<&'a str>,
    /// a decoded reasoning block's text
    pub reasoning: Option<&'a str>,
    pub event: Option<Event<'a>>,
}

fn chars(s: &str) -> i64 {
    s.chars().count() as i64
}

impl Spec {
    fn unknown<'a>(&'a self, value: &'a Json<'a>) -> Block<'a> {
        let kind = value.field("type").and_then(View::text).unwrap_or(&self.unknown_kind);
        Block { kind, chars: 0, text: None, reasoning: None, event: None }
    }

    /// `wire.block_from_wire(value, dialect)`, reduced to what the tables need (`arena`: the
    /// line's, for a result's own blocks).
    pub fn block<'a>(&'a self, value: &'a Json<'a>, arena: &'a Bump) -> Block<'a> {
        match value {
            Json::Str(s) => return Block { kind: &self.string_kind, chars: chars(s), text: Some(s), reasoning: None, event: None },
            Json::Object(_) => {}
            _ => return self.unknown(value),
        };
        let tag = match value.field("type").and_then(View::text) {
            Some(tag) => tag,
            None => return self.unknown(value),
        };
        let decoded = match self.tags.get(tag) {
            Some(&i) if self.kinds[i].name == self.result_kind => self.tool_result(value, None, arena),
            Some(&i) => self.modelled(&self.kinds[i], value),
            None if !self.server_result_kind.is_empty() && tag.ends_with("_tool_result") => self.server_result(value),
            None => None,
        };
        decoded.unwrap_or_else(|| self.unknown(value))
    }

    fn modelled<'a>(&'a self, spec: &'a KindSpec, map: &'a Json<'a>) -> Option<Block<'a>> {
        let mut seen = 0usize;
        for (key, value) in map.last_entries() {
            if key == "type" {
                continue;
            }
            let (required, typ) = match spec.fields.iter().find(|(name, _, _)| name == key) {
                Some((_, required, typ)) => (required, typ),
                None => continue, // an unmodelled key is kept as extra
            };
            if value.is_null() && !required {
                continue; // an optional key written as null is kept as extra
            }
            if *typ == FieldType::Str && value.text().is_none() {
                return None;
            }
            if *required {
                seen += 1;
            }
        }
        if seen != spec.fields.iter().filter(|f| f.1).count() {
            return None;
        }
        let text = if spec.counts_text || spec.name == self.string_kind {
            map.field(&spec.text_key).and_then(View::text)
        } else {
            None
        };
        let event = if spec.name == self.call_kind || spec.name == self.server_call_kind {
            let field = |k: &str| map.field(k).and_then(View::text).unwrap_or_default();
            let input = match map.field("input") {
                None | Some(Json::Null) => None,
                Some(input) => Some(input),
            };
            Some(Event {
                call: true,
                kind: u8::from(spec.name == self.server_call_kind),
                id: Cow::Borrowed(field("id")),
                name: Some(Cow::Borrowed(field("name"))),
                text: input.map(Text::Json),
                ..Event::default()
            })
        } else {
            None
        };
        Some(Block {
            kind: &spec.name,
            chars: if spec.counts_text { text.map_or(0, chars) } else { 0 },
            text: if spec.name == self.string_kind { text } else { None },
            reasoning: if spec.name == self.reasoning_kind { text } else { None },
            event,
        })
    }

    /// A client tool result (`wire._decode_tool_result`); `fallback_error` is the message's own
    /// flag, used when the block carries none.
    pub fn tool_result<'a>(
        &'a self,
        map: &'a Json<'a>,
        fallback_error: Option<bool>,
        arena: &'a Bump,
    ) -> Option<Block<'a>> {
        let id = map.field("tool_use_id")?.text()?;
        let is_error = match map.field("is_error") {
            None | Some(Json::Null) => None,
            Some(Json::Bool(b)) => Some(*b),
            Some(_) => return None,
        };
        let blocks = match map.field("content") {
            None => BumpVec::new_in(arena),
            Some(Json::Array(items)) => BumpVec::from_iter_in(items.iter().map(|b| self.block(b, arena)), arena),
            Some(v @ (Json::Str(_) | Json::Object(_))) => bumpalo::vec![in arena; self.block(v, arena)],
            Some(_) => return None,
        };
        let total = blocks.iter().map(|b| b.chars).sum();
        let texts = if self.keep_text { blocks.iter().filter_map(|b| b.text).collect() } else { Vec::new() };
        let event = Event {
            id: Cow::Borrowed(id),
            is_error: is_error.or(fallback_error).or(self.result_error),
            chars: Some(total),
            text: Some(Text::Joined(texts)),
            ..Event::default()
        };
        Some(Block { kind: &self.result_kind, chars: total, text: None, reasoning: None, event: Some(event) })
    }

    /// A provider-run tool's result (`wire._decode_server_result`): an error when its content is
    /// the provider's error object (`{"type": "…_error", …}`), else unknown; no text.
    fn server_result<'a>(&'a self, map: &'a Json<'a>) -> Option<Block<'a>> {
        let id = map.field("tool_use_id")?.text()?;
        let failed = map.field("content").and_then(|c| c.field("type")).and_then(View::text).filter(|t| t.ends_with("_error"));
        let event = Event {
            kind: 1,
            id: Cow::Borrowed(id),
            is_error: failed.map(|_| true),
            chars: Some(0),
            ..Event::default()
        };
        Some(Block { kind: &self.server_result_kind, chars: 0, text: None, reasoning: None, event: Some(event) })
    }

    /// `wire.blocks_from_wire(content, dialect)` of a message's present, non-null `content`, in
    /// the line's `arena`.
    pub fn content<'a>(&'a self, content: &'a Json<'a>, arena: &'a Bump) -> BumpVec<'a, Block<'a>> {
        match content {
            Json::Array(items) => BumpVec::from_iter_in(items.iter().map(|b| self.block(b, arena)), arena),
            Json::Str(_) => bumpalo::vec![in arena; self.block(content, arena)],
            other => bumpalo::vec![in arena; self.unknown(other)],
        }
    }
}

/// Python's `str.isspace` (what `str.strip()` removes), for the title rule.
pub fn py_space(c: char) -> bool {
    matches!(c, '\u{9}'..='\u{d}' | '\u{1c}'..='\u{20}' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
        | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}
