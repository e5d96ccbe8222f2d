//! The line rule, decided by serde_json itself: of every line-delimited format the engine reads
//! (`lines.rs`), and of murmur's record reader.
//!
//! A line is split on `\n` alone (a terminated line loses a final `\r`: murmur's `str::lines()`),
//! a blank line (`str::trim` empty) is skipped, and a line is parsed by serde_json; a format says
//! which parsed lines are its rows and whether line 1 may be its header ([`decide_by`]).
//! Everything else is reported, never guessed at: the codes below.
//!
//! murmur's rule: murmur reads a record with `read_to_string`, walks `str::lines()`, skips blank
//! lines and keeps a line iff `serde_json::from_str::<Value>(line)` succeeds and the value is an
//! object whose `role` is a string ([`is_message`]); line 1 may be its header ([`header`]). The
//! cursor's record reader ([`decide`], [`decide_all`]) and the murmur format of the engine
//! (`formats/murmur.rs`) both decide by it.

use serde_json::{Map, Value};

use bumpalo::Bump;
use rayon::prelude::*;

use crate::json::{self, Json, View};
use crate::lines::cut;

/// What one line is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Empty or whitespace only (`str::trim` is empty): skipped silently.
    Blank = 0,
    /// A line the format keeps: murmur's message (a JSON object with a string `role`), another
    /// format's object.
    Message = 1,
    /// Line 1 only: the file's header (murmur's `murmur.record` line): not a row, not reported.
    Header = 2,
    /// Anything else serde_json reads or refuses: not a row, reported.
    NotMessage = 3,
    /// Not valid UTF-8 (murmur's `read_to_string` fails on the whole record).
    BadUtf8 = 4,
}

/// Diagnostic codes of the lines a read reports (the Python side words them).
pub const NOT_MESSAGE: u8 = 1;
pub const PARTIAL_LINE: u8 = 2;
pub const BAD_UTF8: u8 = 3;
pub const BAD_UTF8_PARTIAL: u8 = 4;
/// A murmur tool message that names no `tool_call_id` (a row, reported too).
pub const MISSING_CALL_ID: u8 = 5;

/// The diagnostic code of a line that is skipped and reported.
pub fn skipped(kind: Kind, terminated: bool) -> u8 {
    match (kind, terminated) {
        (Kind::BadUtf8, true) => BAD_UTF8,
        (Kind::BadUtf8, false) => BAD_UTF8_PARTIAL,
        (_, true) => NOT_MESSAGE,
        (_, false) => PARTIAL_LINE,
    }
}

/// The header line's `type`.
pub const HEADER_TYPE: &str = "murmur.record";
/// The marker key of the tool envelope murmur builds for a tool message.
pub const TOOL_MARKER: &str = "__murmur_tool_msg__";

/// The bytes of one line as murmur's `str::lines()` yields it: a terminated line loses a final
/// `\r` (`"\r\n"` ends a line too); an unterminated last line is kept as it is.
pub fn trim_line(line: &[u8], terminated: bool) -> &[u8] {
    if terminated && line.last() == Some(&b'\r') {
        &line[..line.len() - 1]
    } else {
        line
    }
}

/// murmur's truncation marker (`capsule-runtime`'s `TruncationMarker`), field for field.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TruncationMarker {
    pub dropped: u64,
    pub oldest_surviving_id: String,
    pub last_dropped_id: String,
    pub at_ms: u64,
}

/// murmur's record header (`capsule-runtime`'s `RecordHeader`), field for field. murmur reads
/// line 1 into this struct with serde's derive, so whatever derive accepts is a header (unknown
/// fields ignored, the array form `["murmur.record","c",1]`, a `null` marker) and whatever it
/// refuses is not (a duplicate field, a negative or fractional `created_ms`, a marker missing a
/// field), exactly as murmur decides.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RecordHeader {
    #[serde(rename = "type")]
    pub kind: String,
    pub capsule: String,
    pub created_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<TruncationMarker>,
}

/// Line 1 read as murmur reads its header: `Some` iff serde's derive reads it into
/// [`RecordHeader`] and its `type` is `murmur.record`.
pub fn header(text: &str) -> Option<RecordHeader> {
    let header: RecordHeader = serde_json::from_str(text).ok()?;
    if header.kind == HEADER_TYPE {
        Some(header)
    } else {
        None
    }
}

/// Whether a parsed value is a message: an object carrying a string `role`.
pub fn is_message<V: View>(value: &V) -> bool {
    value.is_object() && value.field("role").map_or(false, |v| v.text().is_some())
}

/// Whether line 1 is murmur's header.
pub fn is_header(text: &str) -> bool {
    header(text).is_some()
}

/// Decide one record line by murmur's rule (without its `\n`; see [`trim_line`]). A message or
/// header comes back with its parsed value as a `serde_json::Value`.
pub fn decide(line: &[u8], first: bool) -> (Kind, Option<Value>) {
    decide_by(line, first, |text| serde_json::from_str::<Value>(text).ok(), is_message, is_header)
}

/// [`decide`], the value parsed into `arena` as a [`Json`] that borrows from the line (the same
/// parser decides either way).
pub fn decide_in<'a>(line: &'a [u8], first: bool, arena: &'a Bump) -> (Kind, Option<Json<'a>>) {
    decide_by(line, first, |text| json::parse(text, arena).ok(), is_message, is_header)
}

/// The line rule, whatever the parsed value is built as: `parse` is serde_json's parse of the
/// text, `keeps` says which parsed values are rows, and `header` whether line 1 (`first`), when
/// it is not a row, is the file's header. A row or header comes back with its parsed value.
pub fn decide_by<'a, V: View>(
    line: &'a [u8],
    first: bool,
    parse: impl FnOnce(&'a str) -> Option<V>,
    keeps: impl FnOnce(&V) -> bool,
    header: impl FnOnce(&str) -> bool,
) -> (Kind, Option<V>) {
    match std::str::from_utf8(line) {
        Ok(text) => decide_text(text, first, parse, keeps, header),
        Err(_) => (Kind::BadUtf8, None),
    }
}

/// [`decide_by`] of a line already known to be UTF-8.
fn decide_text<'a, V: View>(
    text: &'a str,
    first: bool,
    parse: impl FnOnce(&'a str) -> Option<V>,
    keeps: impl FnOnce(&V) -> bool,
    header: impl FnOnce(&str) -> bool,
) -> (Kind, Option<V>) {
    if text.trim().is_empty() {
        return (Kind::Blank, None);
    }
    match parse(text) {
        Some(value) if keeps(&value) => (Kind::Message, Some(value)),
        Some(value) if first && header(text) => (Kind::Header, Some(value)),
        _ => (Kind::NotMessage, None),
    }
}

/// The lifecycle `message` murmur hands a hook: `(role, content, id, source_id)`.
///
/// `content` is serde_json's `to_string` of the line's `content` (`""` without the key); for a
/// `tool` message it is that of the envelope
/// `{"__murmur_tool_msg__":true,"body":…,"is_error":…,"tool_call_id":…}`.
pub fn lower(map: &Map<String, Value>) -> (String, String, Option<String>, Option<String>) {
    let role = map.get("role").and_then(Value::as_str).unwrap_or_default().to_owned();
    let content = if role == "tool" {
        let mut envelope = Map::new();
        envelope.insert(TOOL_MARKER.to_owned(), Value::Bool(true));
        envelope.insert("body".to_owned(), map.get("content").cloned().unwrap_or(Value::Null));
        envelope.insert("is_error".to_owned(), map.get("is_error").cloned().unwrap_or(Value::Null));
        envelope.insert("tool_call_id".to_owned(), map.get("tool_call_id").cloned().unwrap_or(Value::Null));
        Value::Object(envelope).to_string()
    } else {
        map.get("content").map(Value::to_string).unwrap_or_default()
    };
    let string = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_owned);
    (role, content, string("id"), string("source_id"))
}

/// The lines of one piece of a file, decided in order by [`decide_by`]'s rule: by one
/// serde_json stream ([`json::Lines`]) when the piece is UTF-8 throughout, else line by line.
pub struct PieceLines<'t> {
    buf: &'t [u8],
    stream: Option<(&'t str, json::Lines<'t>)>,
}

impl<'t> PieceLines<'t> {
    pub fn new(buf: &'t [u8]) -> PieceLines<'t> {
        PieceLines { buf, stream: std::str::from_utf8(buf).ok().map(|text| (text, json::Lines::new(text))) }
    }

    /// Decide the line at `span` (the lines of the piece in order), its value parsed into `arena`.
    pub fn decide<'b>(
        &mut self,
        span: &Span,
        first: bool,
        arena: &'b Bump,
        keeps: impl FnOnce(&Json<'b>) -> bool,
        header: impl FnOnce(&str) -> bool,
    ) -> (Kind, Option<Json<'b>>)
    where
        't: 'b,
    {
        let (start, end) = (span.start, span.end);
        match self.stream.as_mut() {
            Some((text, lines)) => {
                decide_text(&text[start..end], first, |_| lines.parse(start, end, arena), keeps, header)
            }
            None => decide_by(&self.buf[start..end], first, |text| json::parse(text, arena).ok(), keeps, header),
        }
    }
}

/// One line of a buffer: `[start, end)` without its `\n` (and without the `\r` of a `"\r\n"`).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    pub terminated: bool,
}

/// The lines of `buf`, in order. A final stretch with no `\n` is an unterminated line.
pub fn spans(buf: &[u8]) -> impl Iterator<Item = Span> + '_ {
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        if pos >= buf.len() {
            return None;
        }
        let start = pos;
        match memchr::memchr(b'\n', &buf[pos..]) {
            Some(i) => {
                pos = start + i + 1;
                let end = start + trim_line(&buf[start..start + i], true).len();
                Some(Span { start, end, terminated: true })
            }
            None => {
                pos = buf.len();
                Some(Span { start, end: buf.len(), terminated: false })
            }
        }
    })
}

/// Every line of `buf[..len]` as `(start, end, next, kind)`, decided in parallel: `end` excludes
/// the `\n` (and the `\r` of a `"\r\n"`), `next` is where the following line starts. `first`
/// says whether `buf` starts at line 1. The record reader's index is built from these.
pub fn decide_all(buf: &[u8], first: bool) -> Vec<(usize, usize, usize, Kind)> {
    let pieces = cut(buf, buf.len());
    let decided: Vec<Vec<(usize, usize, usize, Kind)>> = pieces
        .par_iter()
        .enumerate()
        .map(|(i, &(s, e))| {
            let mut arena = Bump::new();
            let mut lines = PieceLines::new(&buf[s..e]);
            spans(&buf[s..e])
                .enumerate()
                .map(|(n, span)| {
                    let line1 = first && i == 0 && n == 0;
                    let (kind, _) = lines.decide(&span, line1, &arena, is_message, is_header);
                    arena.reset();
                    let next = if span.terminated {
                        s + memchr::memchr(b'\n', &buf[s + span.end..e]).map_or(e - s, |j| span.end + j + 1)
                    } else {
                        e
                    };
                    (s + span.start, s + span.end, next, kind)
                })
                .collect()
        })
        .collect();
    decided.into_iter().flatten().collect()
}
