//! The bulk scan: many records at once, each read in blocks, each block decided line by line on
//! every core, and every message line turned into one row of typed columns.

use std::fs::File;

use rayon::prelude::*;
use crate::json::{Count, Json, Sorted, View};

use crate::blocks::{py_space, Event, Spec};
use crate::columns::{Ints, Strings};
use bumpalo::Bump;

use crate::line::{decide_in, skipped, spans, Kind, MISSING_CALL_ID};
use crate::lines::{blocks_of, cut, reason};
use crate::pair;
use crate::uuid7::uuid7_ms;

/// One record's columns (or a piece of them, before pieces are joined in order).
#[derive(Default)]
pub struct Columns {
    pub lines: i64,
    pub line_no: Vec<i64>,
    pub created_ms: Ints,
    pub id: Strings,
    pub role: Strings,
    pub source_id: Strings,
    pub n_blocks: Vec<i32>,
    pub text_chars: Vec<i64>,
    pub kinds_offsets: Vec<i32>,
    pub kinds: Strings,
    /// text blocks' text joined with newlines (`messages.text`)
    pub text: Strings,
    /// reasoning blocks' text joined with newlines (`messages.reasoning_text`)
    pub reasoning: Strings,
    pub ev_row: Vec<i64>,
    pub ev_call: Vec<u8>,
    pub ev_id: Strings,
    pub ev_name: Strings,
    pub ev_error: Ints,
    pub ev_chars: Ints,
    pub ev_bytes: Ints,
    /// the calls' inputs as serde's text, in event order (written once, here)
    pub call_text: Strings,
    /// the results' texts, in event order
    pub result_text: Strings,
    /// each event's index in its own text column (`call_text` or `result_text`)
    pub ev_text_idx: Vec<i64>,
    pub diags: Vec<(i64, u8)>,
    pub title: Option<String>,
    pub header: Option<Vec<u8>>,
    pub error: Option<String>,
    /// the pairing of the record's tool events (the assembly core's walk), once read whole
    pub pairs: pair::Rows,
    /// calls made, calls in error, client orphans dropped (`pair::Pairer::summary`)
    pub pair_summary: (usize, usize, Vec<String>),
    /// what the walk leaves for a walk of lines appended later
    pub pair_state: Option<pair::Saved>,
    /// where each event's text is among the pairing's texts: row `r`'s input is `r`, its
    /// result text `pairs + r` (-1: none)
    pub ev_text_at: Vec<i64>,
}

impl Columns {
    fn rows(&self) -> usize {
        self.line_no.len()
    }

    /// Append the rows of the piece that follows this one.
    fn join(&mut self, other: Columns) {
        let rows = self.rows() as i64;
        let lines = self.lines;
        self.lines += other.lines;
        self.line_no.extend(other.line_no.iter().map(|n| n + lines));
        self.created_ms.extend(other.created_ms);
        self.id.extend(other.id);
        self.role.extend(other.role);
        self.source_id.extend(other.source_id);
        self.n_blocks.extend(other.n_blocks);
        self.text_chars.extend(other.text_chars);
        if self.kinds_offsets.is_empty() {
            self.kinds_offsets.push(0);
        }
        let base = *self.kinds_offsets.last().unwrap();
        self.kinds_offsets.extend(other.kinds_offsets.iter().skip(1).map(|o| o + base));
        self.kinds.extend(other.kinds);
        self.text.extend(other.text);
        self.reasoning.extend(other.reasoning);
        self.ev_row.extend(other.ev_row.iter().map(|r| r + rows));
        self.ev_call.extend(&other.ev_call);
        self.ev_id.extend(other.ev_id);
        self.ev_name.extend(other.ev_name);
        self.ev_error.extend(other.ev_error);
        self.ev_chars.extend(other.ev_chars);
        self.ev_bytes.extend(other.ev_bytes);
        let (calls, results) = (self.call_text.len() as i64, self.result_text.len() as i64);
        self.ev_text_idx.extend(
            other.ev_text_idx.iter().zip(&other.ev_call).map(|(i, &c)| i + if c == 1 { calls } else { results }),
        );
        self.call_text.extend(other.call_text);
        self.result_text.extend(other.result_text);
        self.diags.extend(other.diags.iter().map(|(n, c)| (n + lines, *c)));
        if self.title.is_none() {
            self.title = other.title;
        }
        if self.header.is_none() {
            self.header = other.header;
        }
    }

    /// One message line's row and events.
    fn message(&mut self, spec: &Spec, value: &Json<'_>, line_no: i64) {
        let string = |key: &str| value.field(key).and_then(View::text);
        let role = string("role").unwrap_or_default();
        let id = string("id");
        let row = self.rows() as i64;
        self.line_no.push(line_no);
        self.created_ms.push(id.and_then(|s| uuid7_ms(s.as_bytes())).map(|ms| ms as i64));
        self.id.push(id);
        self.role.push(Some(role));
        self.source_id.push(string("source_id"));
        if self.kinds_offsets.is_empty() {
            self.kinds_offsets.push(0);
        }
        let content = value.field("content").filter(|c| !c.is_null());
        let blocks = content.map(|c| spec.content(c)).unwrap_or_default();
        let call_id = if role == "tool" { string("tool_call_id") } else { None };
        let is_error = if role == "tool" { value.field("is_error").and_then(Json::as_bool) } else { None };
        if role == "tool" && call_id.is_none() {
            self.diags.push((line_no, MISSING_CALL_ID));
        }
        if let Some(call_id) = call_id {
            // The tool body becomes one result block answering the call the line names.
            let chars: i64 = blocks.iter().map(|b| b.chars).sum();
            self.n_blocks.push(1);
            self.text_chars.push(chars);
            self.kinds.push(Some(&spec.result_kind));
            self.text.push(None);
            self.reasoning.push(None);
            let texts = if spec.keep_text { blocks.iter().filter_map(|b| b.text).collect() } else { Vec::new() };
            self.event(spec, row, Event::Result { id: call_id, is_error, chars, texts });
        } else {
            self.n_blocks.push(blocks.len() as i32);
            self.text_chars.push(blocks.iter().map(|b| b.chars).sum());
            for block in &blocks {
                self.kinds.push(Some(block.kind));
            }
            if spec.keep_text {
                self.text.push_joined(blocks.iter().filter_map(|b| b.text));
                self.reasoning.push_joined(blocks.iter().filter_map(|b| b.reasoning));
            } else {
                self.text.push(None);
                self.reasoning.push(None);
            }
            if role == "user" && self.title.is_none() {
                self.title = blocks
                    .iter()
                    .filter_map(|b| b.text)
                    .find(|t| t.chars().any(|c| !py_space(c)))
                    .map(str::to_owned);
            }
            for block in blocks {
                match block.event {
                    Some(Event::Result { id, is_error: own, chars, texts }) => {
                        self.event(spec, row, Event::Result { id, is_error: own.or(is_error), chars, texts })
                    }
                    Some(event) => self.event(spec, row, event),
                    None => {}
                }
            }
        }
        self.kinds_offsets.push(self.kinds.len() as i32);
    }

    /// One event's row; its text is written once, straight into its column's buffer.
    fn event(&mut self, spec: &Spec, row: i64, event: Event<'_>) {
        self.ev_row.push(row);
        match event {
            Event::Call { id, name, input } => {
                self.ev_text_idx.push(self.call_text.len() as i64);
                let bytes = match input {
                    None => {
                        self.call_text.push(None);
                        None
                    }
                    Some(value) if spec.keep_text => Some(self.call_text.push_written(|out| {
                        let start = out.len();
                        serde_json::to_writer(&mut *out, &Sorted(value)).expect("a parsed value serializes");
                        out.len() - start
                    })),
                    Some(value) => {
                        let mut count = Count::default();
                        serde_json::to_writer(&mut count, &Sorted(value)).expect("a parsed value serializes");
                        self.call_text.push(None);
                        Some(count.0)
                    }
                };
                self.ev_call.push(1);
                self.ev_id.push(Some(id));
                self.ev_name.push(Some(name));
                self.ev_error.push(None);
                self.ev_chars.push(None);
                self.ev_bytes.push(bytes.map(|n| n as i64));
            }
            Event::Result { id, is_error, chars, texts } => {
                self.ev_text_idx.push(self.result_text.len() as i64);
                self.result_text.push_joined(texts);
                self.ev_call.push(0);
                self.ev_id.push(Some(id));
                self.ev_name.push(None);
                self.ev_error.push(is_error.map(i64::from));
                self.ev_chars.push(Some(chars));
                self.ev_bytes.push(None);
            }
        }
    }
}

/// Decide every line of `buf` (which holds whole lines; its last line is unterminated only at
/// the end of the file) into a piece of columns. `first` says whether `buf` starts at line 1.
fn piece(spec: &Spec, buf: &[u8], first: bool) -> Columns {
    let mut out = Columns::default();
    let mut arena = Bump::new();
    for span in spans(buf) {
        out.lines += 1;
        let n = out.lines;
        let (kind, value) = decide_in(&buf[span.start..span.end], first && n == 1, &arena);
        match kind {
            Kind::Blank => {}
            Kind::Message => out.message(spec, value.as_ref().expect("a message has its value"), n),
            Kind::Header => out.header = Some(buf[span.start..span.end].to_vec()),
            Kind::NotMessage | Kind::BadUtf8 => out.diags.push((n, skipped(kind, span.terminated))),
        }
        drop(value);
        arena.reset();
    }
    out
}

/// One record, read in blocks of `block` bytes; `None` for a file that could not be opened. While a block's
/// lines are decided on every core, the block before is joined to the record and walked.
pub fn record(spec: &Spec, path: &std::path::Path, block: usize) -> Columns {
    let mut out = Columns::default();
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(err) => {
            out.error = Some(format!("could not open: {}", reason(&err)));
            return out;
        }
    };
    let remaining = file.metadata().map(|m| m.len() as usize).unwrap_or(usize::MAX);
    let mut first = true;
    let mut walking = Walking::default();
    let mut decided: Vec<Columns> = Vec::new();
    let error = blocks_of(&mut file, remaining, block, |buf| {
        let pieces = cut(buf, buf.len());
        let at_first = first;
        let (now, ()) = rayon::join(
            || pieces.par_iter().enumerate().map(|(i, &(s, e))| piece(spec, &buf[s..e], at_first && i == 0)).collect(),
            || walking.take(&mut out, std::mem::take(&mut decided)),
        );
        decided = now;
        if !buf.is_empty() {
            first = false;
        }
    });
    walking.take(&mut out, decided);
    if error.is_some() {
        out.error = error;
    }
    walking.finish(&mut out);
    out
}

/// The pairing walk of a record's tool events, fed block by block as the blocks are joined
/// (the assembly core's walk): a message (run) is a stretch of rows of the same role
/// ([`pair::MessageRuns`]), and a row's position is its index.
#[derive(Default)]
struct Walking {
    runs: pair::MessageRuns,
    walk: pair::Pairer,
    /// each row's message index
    messages: Vec<i64>,
    /// events fed so far
    events: usize,
}

impl Walking {
    /// Join `parts` to `out`, in order, and walk their tool events.
    fn take(&mut self, out: &mut Columns, parts: Vec<Columns>) {
        for part in parts {
            out.join(part);
        }
        let roles = &out.role;
        for i in self.messages.len()..out.rows() {
            self.messages.push(self.runs.next(roles.get(i).unwrap_or_default()));
        }
        let text = |col: &Strings, i: usize| col.get(i).unwrap_or_default().to_owned();
        for i in self.events..out.ev_row.len() {
            let row = out.ev_row[i];
            let call = out.ev_call[i] == 1;
            let event = pair::Event {
                position: row,
                call,
                kind: 0,
                id: text(&out.ev_id, i),
                name: if call { Some(text(&out.ev_name, i)) } else { None },
                is_error: out.ev_error.valid[i].then(|| out.ev_error.values[i] != 0),
                chars: out.ev_chars.valid[i].then(|| out.ev_chars.values[i]),
                input_bytes: out.ev_bytes.valid[i].then(|| out.ev_bytes.values[i]),
                input: None,
                text: Some(out.ev_text_idx[i]),
            };
            self.walk.feed(self.messages[row as usize], event);
        }
        self.events = out.ev_row.len();
    }

    /// Close the walk: the record's pairing rows and summary, the state a walk of lines
    /// appended later goes on from, and where each event's text went among the rows.
    fn finish(mut self, out: &mut Columns) {
        self.walk.finish();
        out.pair_summary = self.walk.summary();
        out.pair_state = Some(self.walk.save(self.runs));
        out.pairs = std::mem::take(&mut self.walk.rows);
        // Each event's text went to one row (a call's input, a result's text): where, so a walk
        // resumed over these events later finds them without a second copy of every text.
        let p = &out.pairs;
        let (mut call_row, mut result_row) = (vec![-1i64; out.call_text.len()], vec![-1i64; out.result_text.len()]);
        for r in 0..p.len() {
            if let Some(j) = p.input_text[r] {
                call_row[j as usize] = r as i64;
            }
            if let Some(j) = p.result_text[r] {
                result_row[j as usize] = (p.len() + r) as i64;
            }
        }
        out.ev_text_at = (0..out.ev_row.len())
            .map(|i| {
                let j = out.ev_text_idx[i] as usize;
                if out.ev_call[i] == 1 { call_row[j] } else { result_row[j] }
            })
            .collect();
    }
}
