//! The pairing walk of the assembly core (litany's `drop_orphans` rule), over tool events.
//!
//! Entries come in position order, grouped into runs of the same side (one run per message).
//! When a run closes, its calls open first (a message's own calls count before its results),
//! then each result answers the oldest open call with its id, or is a `duplicate_result` (the
//! id was called and already answered) or an `orphan_result` (never called before): the
//! orphans assembly drops. Rows come in the order calls and orphan results are met.
//!
//! A provider-run (server) call needs no result item of its own: OpenAI's web search writes
//! none, and Google's grounding writes one `ws_output` for every search of the turn
//! (inference-go `groundingToWebSearchOutputs`). So a server call starts `ok`, not
//! `unanswered`, and a server result naming no open call answers the calls of its message that
//! have no result yet; `error` comes only from a result's own error flag.

use std::collections::{HashMap, HashSet, VecDeque};

/// Row statuses, in `STATUSES` order.
pub const STATUSES: [&str; 5] = ["ok", "error", "unanswered", "orphan_result", "duplicate_result"];
const OK: u8 = 0;
const ERROR: u8 = 1;
const UNANSWERED: u8 = 2;
const ORPHAN: u8 = 3;
const DUPLICATE: u8 = 4;

/// One tool event of an entry.
#[derive(Clone, Debug)]
pub struct Event {
    pub position: i64,
    pub call: bool,
    /// 0 client, 1 server
    pub kind: u8,
    pub id: String,
    pub name: Option<String>,
    pub is_error: Option<bool>,
    pub chars: Option<i64>,
    pub input_bytes: Option<i64>,
    /// the index of the call's kept input (the caller keeps the inputs)
    pub input: Option<i64>,
    /// the index of the event's kept text (a call's input as JSON text, a result's text) in
    /// the caller's store
    pub text: Option<i64>,
}

/// One pairing row (the `ToolCall` fields).
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub call_id: Vec<String>,
    pub name: Vec<Option<String>>,
    pub kind: Vec<u8>,
    pub called_seq: Vec<Option<i64>>,
    pub result_seq: Vec<Option<i64>>,
    pub called_message: Vec<Option<i64>>,
    pub result_message: Vec<Option<i64>>,
    pub status: Vec<u8>,
    pub is_error: Vec<Option<bool>>,
    pub input: Vec<Option<i64>>,
    pub result_chars: Vec<Option<i64>>,
    pub input_bytes: Vec<Option<i64>>,
    /// the call's kept input text, by its index in the caller's store (`tool_calls.input`)
    pub input_text: Vec<Option<i64>>,
    /// the result's kept text, by its index in the caller's store (`tool_calls.result_text`)
    pub result_text: Vec<Option<i64>>,
}

impl Rows {
    pub fn len(&self) -> usize {
        self.call_id.len()
    }
}

/// The streaming pairing walk: fed events with their run (message) index, in order.
#[derive(Default)]
pub struct Pairer {
    pub rows: Rows,
    open: HashMap<(u8, String), VecDeque<usize>>,
    called: HashSet<(u8, String)>,
    run: Vec<Event>,
    message: i64,
    started: bool,
    dropped: Vec<String>,
}

impl Pairer {
    pub fn new() -> Self {
        Pairer { message: -1, ..Pairer::default() }
    }

    /// Take one event of the entry at `position` in run `message` (runs ascending).
    pub fn feed(&mut self, message: i64, event: Event) {
        if !self.started || message != self.message {
            if self.started {
                self.close_run();
            }
            self.message = message;
            self.started = true;
        }
        self.run.push(event);
    }

    /// Ids `assemble` would drop from what was fed so far, in the order met (the open run's
    /// orphans worked out without closing it).
    pub fn dropped_orphans(&self) -> Vec<String> {
        let own: HashSet<&str> =
            self.run.iter().filter(|e| e.call && e.kind == 0).map(|e| e.id.as_str()).collect();
        let mut out = self.dropped.clone();
        for e in &self.run {
            if !e.call && e.kind == 0 && !own.contains(e.id.as_str()) && !self.called.contains(&(0, e.id.clone())) {
                out.push(e.id.clone());
            }
        }
        out
    }

    /// What the conversation row counts: calls made, calls whose result is an error, and the
    /// client orphans assembly drops (in the order met). Call after [`Pairer::finish`].
    pub fn summary(&self) -> (usize, usize, Vec<String>) {
        let made = self.rows.called_seq.iter().filter(|s| s.is_some()).count();
        let errors = (0..self.rows.len())
            .filter(|&i| self.rows.called_seq[i].is_some() && self.rows.status[i] == ERROR)
            .count();
        (made, errors, self.dropped.clone())
    }

    /// Close the last run; the rows.
    pub fn finish(&mut self) -> &Rows {
        if self.started {
            self.close_run();
            self.started = false;
        }
        &self.rows
    }

    fn close_run(&mut self) {
        if self.run.is_empty() {
            return;
        }
        let message = self.message;
        let run = std::mem::take(&mut self.run);
        let rows = &mut self.rows;
        for e in run.iter().filter(|e| e.call) {
            let key = (e.kind, e.id.clone());
            self.open.entry(key.clone()).or_default().push_back(rows.len());
            self.called.insert(key);
            rows.call_id.push(e.id.clone());
            rows.name.push(e.name.clone());
            rows.kind.push(e.kind);
            rows.called_seq.push(Some(e.position));
            rows.result_seq.push(None);
            rows.called_message.push(Some(message));
            rows.result_message.push(None);
            rows.status.push(if e.kind == 0 { UNANSWERED } else { OK });
            rows.is_error.push(None);
            rows.input.push(e.input);
            rows.result_chars.push(None);
            rows.input_bytes.push(e.input_bytes);
            rows.input_text.push(e.text);
            rows.result_text.push(None);
        }
        for e in run.into_iter().filter(|e| !e.call) {
            let key = (e.kind, e.id);
            let rows = &mut self.rows;
            if let Some(waiting) = self.open.get_mut(&key) {
                let row = waiting.pop_front().expect("an open call");
                if waiting.is_empty() {
                    self.open.remove(&key);
                }
                rows.result_seq[row] = Some(e.position);
                rows.result_message[row] = Some(message);
                rows.is_error[row] = e.is_error;
                rows.result_chars[row] = e.chars;
                rows.result_text[row] = e.text;
                rows.status[row] = if e.is_error == Some(true) { ERROR } else { OK };
                continue;
            }
            if key.0 == 1 && self.answer_turn(message, e.position, e.is_error) {
                continue;
            }
            let rows = &mut self.rows;
            let status = if self.called.contains(&key) { DUPLICATE } else { ORPHAN };
            if status == ORPHAN && key.0 == 0 {
                self.dropped.push(key.1.clone());
            }
            rows.call_id.push(key.1);
            rows.name.push(None);
            rows.kind.push(key.0);
            rows.called_seq.push(None);
            rows.result_seq.push(Some(e.position));
            rows.called_message.push(None);
            rows.result_message.push(Some(message));
            rows.status.push(status);
            rows.is_error.push(e.is_error);
            rows.input.push(None);
            rows.result_chars.push(e.chars);
            rows.input_bytes.push(None);
            rows.input_text.push(None);
            rows.result_text.push(e.text);
        }
    }

    /// A server result naming no open call: it answers the server calls of `message` that have
    /// no result yet. Whether there were any.
    fn answer_turn(&mut self, message: i64, position: i64, is_error: Option<bool>) -> bool {
        let rows = &mut self.rows;
        let waiting: Vec<usize> = (0..rows.len())
            .filter(|&i| {
                rows.kind[i] == 1
                    && rows.called_message[i] == Some(message)
                    && rows.called_seq[i].is_some()
                    && rows.result_seq[i].is_none()
            })
            .collect();
        for &i in &waiting {
            rows.result_seq[i] = Some(position);
            rows.result_message[i] = Some(message);
            rows.is_error[i] = is_error;
            rows.status[i] = if is_error == Some(true) { ERROR } else { OK };
            let key = (1u8, rows.call_id[i].clone());
            if let Some(open) = self.open.get_mut(&key) {
                open.retain(|&row| row != i);
                if open.is_empty() {
                    self.open.remove(&key);
                }
            }
        }
        !waiting.is_empty()
    }
}
