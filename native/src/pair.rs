//! The pairing walk of the assembly core (litany's `drop_orphans` rule), over tool events.
//!
//! Entries come in position order, grouped into runs of the same side (one run per message,
//! [`MessageRuns`]). When a run closes, its calls open first (a message's own calls count
//! before its results), then each result answers the oldest open call with its id, or is a
//! `duplicate_result` (the id was called and already answered) or an `orphan_result` (never
//! called before): the orphans assembly drops. Rows come in the order calls and orphan results
//! are met.
//!
//! A provider-run (server) call needs no result item of its own: OpenAI's web search writes
//! none, and Google's grounding writes one `ws_output` for every search of the turn
//! (inference-go `groundingToWebSearchOutputs`). So a server call starts `ok`, not
//! `unanswered`, and a server result naming no open call answers the calls of its message that
//! have no result yet; `error` comes only from a result's own error flag.
//!
//! A walk can stop and go on later ([`Saved`]): a record that grew is walked on from the state
//! its earlier read left, over the appended entries alone, and gives the rows a walk of the
//! whole record gives. The state keeps the calls still open exactly (ids and rows) and every id
//! called as a 64-bit hash, so it stays small; a result whose id only the hashes may know, and
//! a run going on across the stop in a way the closed part cannot be walked on from, make the
//! walk [`Pairer::exact`] false (the caller then walks the whole record).

use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

/// rustc's Fx hash: a multiply and a rotate per word. The walk hashes every call id a few
/// times (open calls, ids called), and SipHash, the default, took a few percent of a large
/// record's scan. Not proof against ids chosen to collide, which a runtime's own call ids are not.
#[derive(Default, Clone, Copy)]
pub struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl Fx {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<Fx>>;
type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<Fx>>;

/// Row statuses, in `STATUSES` order.
pub const STATUSES: [&str; 6] = ["ok", "error", "unanswered", "orphan_result", "duplicate_result", "unknown"];
const OK: u8 = 0;
const ERROR: u8 = 1;
const UNANSWERED: u8 = 2;
const UNKNOWN: u8 = 5;
const ORPHAN: u8 = 3;
const DUPLICATE: u8 = 4;

/// The message-run rule: consecutive entries of one side are one message, and a new message
/// starts at every change of side. Every grouping of entries into messages calls [`MessageRuns::next`].
#[derive(Clone, Debug)]
pub struct MessageRuns {
    /// the 0-based message index of the last entry seen (-1 before any)
    pub index: i64,
    /// the side of the last entry seen
    pub side: Option<String>,
}

impl Default for MessageRuns {
    fn default() -> Self {
        MessageRuns { index: -1, side: None }
    }
}

impl MessageRuns {
    /// The message index of the next entry, of `side`.
    pub fn next(&mut self, side: &str) -> i64 {
        if self.side.as_deref() != Some(side) {
            self.index += 1;
            match &mut self.side {
                Some(last) => {
                    last.clear();
                    last.push_str(side);
                }
                None => self.side = Some(side.to_owned()),
            }
        }
        self.index
    }
}

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

    /// A row for a result that no call of these rows takes: an orphan or duplicate, or the
    /// answer to a call of the rows before a restored walk (`status` then `ok` or `error`).
    fn push_result(&mut self, e: Event, message: i64, status: u8) {
        self.call_id.push(e.id);
        self.name.push(None);
        self.kind.push(e.kind);
        self.called_seq.push(None);
        self.result_seq.push(Some(e.position));
        self.called_message.push(None);
        self.result_message.push(Some(message));
        self.status.push(status);
        self.is_error.push(e.is_error);
        self.input.push(None);
        self.result_chars.push(e.chars);
        self.input_bytes.push(None);
        self.input_text.push(None);
        self.result_text.push(e.text);
    }

    /// Append `other`'s rows.
    pub fn extend(&mut self, other: &Rows) {
        self.call_id.extend_from_slice(&other.call_id);
        self.name.extend_from_slice(&other.name);
        self.kind.extend_from_slice(&other.kind);
        self.called_seq.extend_from_slice(&other.called_seq);
        self.result_seq.extend_from_slice(&other.result_seq);
        self.called_message.extend_from_slice(&other.called_message);
        self.result_message.extend_from_slice(&other.result_message);
        self.status.extend_from_slice(&other.status);
        self.is_error.extend_from_slice(&other.is_error);
        self.input.extend_from_slice(&other.input);
        self.result_chars.extend_from_slice(&other.result_chars);
        self.input_bytes.extend_from_slice(&other.input_bytes);
        self.input_text.extend_from_slice(&other.input_text);
        self.result_text.extend_from_slice(&other.result_text);
    }
}

/// A result says an error (`error`), says none (`ok`), or says nothing either way (`unknown`:
/// never taken for a success).
fn result_status(is_error: Option<bool>) -> u8 {
    match is_error {
        Some(true) => ERROR,
        Some(false) => OK,
        None => UNKNOWN,
    }
}

type Key = (u8, String);

/// The 64-bit hash a saved state files a called id under (FNV-1a over the kind and the id's
/// bytes: the same on every machine and in every version of this format).
fn id_hash(key: &Key) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in std::iter::once(key.0).chain(key.1.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// What a finished walk leaves for a walk of the entries after it (see [`Pairer::resume`]).
#[derive(Clone, Debug, Default)]
pub struct Saved {
    /// the message-run state after the last entry
    pub runs: MessageRuns,
    /// pairing rows made so far
    pub rows: usize,
    /// the calls not yet answered, by id: their rows, oldest first (the walk's own map, moved)
    open: HashMap<Key, VecDeque<usize>>,
    /// every id called, as [`id_hash`]es
    called: Hashes,
    /// the message of the last run closed (-1: none), whether a result of it was left with no
    /// call, and whether it had server events
    closed: i64,
    loose: bool,
    server: bool,
}

/// Hashes of ids, as sorted runs that merge the way a binary counter carries (a run is merged
/// into the one before it once it is half that one's length or more): adding costs
/// O(log n) per hash over all adds, a lookup is a binary search of each of at most log2(n)
/// runs, and each hash takes 8 bytes. A hash set took about twice that, and three times while
/// it grew, under a long record's export saving its walk after every range.
#[derive(Clone, Debug, Default)]
pub struct Hashes {
    runs: Vec<Vec<u64>>,
}

impl Hashes {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    pub fn contains(&self, hash: u64) -> bool {
        self.runs.iter().any(|run| run.binary_search(&hash).is_ok())
    }

    /// Add `more` (any order, repeats allowed).
    pub fn add(&mut self, mut more: Vec<u64>) {
        if more.is_empty() {
            return;
        }
        more.sort_unstable();
        more.dedup();
        self.runs.push(more);
        while let [.., before, last] = self.runs.as_slice() {
            if before.len() > 2 * last.len() {
                break;
            }
            let last = self.runs.pop().expect("two runs");
            let before = self.runs.pop().expect("two runs");
            self.runs.push(merged(&before, &last));
        }
    }

    /// Every hash, sorted, each once.
    pub fn sorted(&self) -> Vec<u64> {
        self.runs.iter().fold(Vec::new(), |all, run| merged(&all, run))
    }
}

/// Two sorted runs as one, each hash once.
fn merged(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let next = a[i].min(b[j]);
        out.push(next);
        i += usize::from(a[i] == next);
        j += usize::from(b[j] == next);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The version of [`Saved::to_bytes`]' format (a state of another version is not read).
const SAVED_VERSION: u8 = 1;
const MAGIC: &[u8; 4] = b"MAPW";

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.data.len()).ok_or("a pairing state cut short")?;
        let out = &self.data[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn text(&mut self) -> Result<String, String> {
        let n = self.u64()? as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| "a pairing state holds an id that is not UTF-8".to_owned())
    }
    fn count(&mut self, each: usize) -> Result<usize, String> {
        let n = self.u64()? as usize;
        // every item takes at least `each` bytes: a count the data cannot hold is refused before allocating
        if n.saturating_mul(each) > self.data.len() - self.at {
            return Err("a pairing state cut short".to_owned());
        }
        Ok(n)
    }
}

impl Saved {
    /// The state as bytes: version, counters, open calls (exact), called ids (hashes, sorted).
    pub fn to_bytes(&self) -> Vec<u8> {
        let called = self.called.sorted();
        let mut out = Vec::with_capacity(64 + 8 * called.len());
        let u64s = |out: &mut Vec<u8>, v: u64| out.extend_from_slice(&v.to_le_bytes());
        out.extend_from_slice(MAGIC);
        out.push(SAVED_VERSION);
        u64s(&mut out, self.runs.index as u64);
        match &self.runs.side {
            Some(side) => {
                out.push(1);
                u64s(&mut out, side.len() as u64);
                out.extend_from_slice(side.as_bytes());
            }
            None => out.push(0),
        }
        u64s(&mut out, self.rows as u64);
        u64s(&mut out, self.closed as u64);
        out.push(u8::from(self.loose) | (u8::from(self.server) << 1));
        let mut open: Vec<(&Key, &VecDeque<usize>)> = self.open.iter().collect();
        open.sort_unstable_by_key(|(_, rows)| rows[0]); // each row is one call's: the order is total
        u64s(&mut out, open.len() as u64);
        for ((kind, id), rows) in open {
            out.push(*kind);
            u64s(&mut out, id.len() as u64);
            out.extend_from_slice(id.as_bytes());
            u64s(&mut out, rows.len() as u64);
            for &r in rows {
                u64s(&mut out, r as u64);
            }
        }
        u64s(&mut out, called.len() as u64);
        for h in called {
            u64s(&mut out, h);
        }
        out
    }

    /// A state [`Saved::to_bytes`] wrote (`Err`: not one this version reads).
    pub fn from_bytes(data: &[u8]) -> Result<Saved, String> {
        let mut r = Reader { data, at: 0 };
        if r.take(4)? != MAGIC {
            return Err("not a pairing state".to_owned());
        }
        let version = r.u8()?;
        if version != SAVED_VERSION {
            return Err(format!("a pairing state of version {version} (this version reads {SAVED_VERSION})"));
        }
        let index = r.u64()? as i64;
        let side = match r.u8()? {
            0 => None,
            1 => Some(r.text()?),
            _ => return Err("a pairing state with a bad side".to_owned()),
        };
        let rows = r.u64()? as usize;
        let closed = r.u64()? as i64;
        let flags = r.u8()?;
        let n = r.count(25)?;
        let mut open = HashMap::with_capacity_and_hasher(n, Default::default());
        for _ in 0..n {
            let kind = r.u8()?;
            let id = r.text()?;
            let n = r.count(8)?;
            let waiting = (0..n).map(|_| r.u64().map(|v| v as usize)).collect::<Result<VecDeque<_>, _>>()?;
            if waiting.is_empty() || waiting.iter().any(|&w| w >= rows) {
                return Err("a pairing state with an open call past its rows".to_owned());
            }
            if open.insert((kind, id), waiting).is_some() {
                return Err("a pairing state with an open call twice".to_owned());
            }
        }
        let n = r.count(8)?;
        let mut called = Hashes::default();
        called.add((0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?);
        if r.at != data.len() {
            return Err("a pairing state with bytes after its end".to_owned());
        }
        Ok(Saved { runs: MessageRuns { index, side }, rows, open, called, closed, loose: flags & 1 != 0, server: flags & 2 != 0 })
    }
}

/// The streaming pairing walk: fed events with their run (message) index, in order.
pub struct Pairer {
    /// the rows made by this walk (the first is row `base` of the conversation)
    pub rows: Rows,
    /// one row per result that answers a call of the rows before `base`: its result fields
    pub answers: Rows,
    /// the row (of the conversation) each of `answers` answers
    pub answered: Vec<usize>,
    base: usize,
    open: HashMap<Key, VecDeque<usize>>,
    /// every id this walk called, by its [`id_hash`]: the row (of `rows`) that called it first,
    /// where the id itself is kept (no copy of it here). So `rows` stay where they are until
    /// the walk is saved: `called_here` reads a called id from its row.
    called: HashMap<u64, usize>,
    /// the first rows of ids called whose hash an id called before them has (none, in practice)
    called_more: Vec<(u64, usize)>,
    /// the ids called before `base`, as hashes
    called_before: Hashes,
    run: Vec<Event>,
    message: i64,
    started: bool,
    dropped: Vec<String>,
    closed: i64,
    loose: bool,
    server: bool,
    exact: bool,
}

impl Default for Pairer {
    fn default() -> Self {
        Pairer::resume(Saved { closed: -1, ..Saved::default() }).0
    }
}

impl Pairer {
    pub fn new() -> Self {
        Pairer::default()
    }

    /// A walk going on from `saved`, and the message-run state to index its entries with.
    pub fn resume(saved: Saved) -> (Pairer, MessageRuns) {
        let walk = Pairer {
            rows: Rows::default(),
            answers: Rows::default(),
            answered: Vec::new(),
            base: saved.rows,
            open: saved.open,
            called: HashMap::default(),
            called_more: Vec::new(),
            called_before: saved.called,
            run: Vec::new(),
            message: saved.closed,
            started: false,
            dropped: Vec::new(),
            closed: saved.closed,
            loose: saved.loose,
            server: saved.server,
            exact: true,
        };
        (walk, saved.runs)
    }

    /// What a walk of the entries after the ones fed needs; call after [`Pairer::finish`].
    ///
    /// The open calls and the hashes of the ids called before are moved out, not copied (a walk
    /// of a long run of calls saved after every range would otherwise copy all of them each
    /// time), and this walk's own ids called join them as the hashes it filed them under: the
    /// walk is spent and is not saved, fed or finished again.
    pub fn save(&mut self, runs: MessageRuns) -> Saved {
        let mut called = std::mem::take(&mut self.called_before);
        called.add(self.called.keys().copied().collect());
        Saved {
            runs,
            rows: self.base + self.rows.len(),
            open: std::mem::take(&mut self.open),
            called,
            closed: self.closed,
            loose: self.loose,
            server: self.server,
        }
    }

    /// Whether the rows are the ones a walk of every entry from the first would make: always
    /// for a walk that was not resumed. A resumed walk is not exact when a result names no open
    /// call and its id may have been called before (only its hash is known), or when the run
    /// closed last before the state was saved goes on with events the closed part cannot be
    /// walked on from: calls after one of its results was left with no call (the run's calls
    /// open before its results), or any event when it had server events (a server result
    /// answers the calls of its whole message).
    pub fn exact(&self) -> bool {
        self.exact
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

    /// Whether `key` was called: `Some(true)`, `Some(false)`, or `None` when only a hash says it may have been.
    fn was_called(&self, key: &Key) -> Option<bool> {
        if self.called_here(key, id_hash(key)) {
            Some(true)
        } else if !self.called_before.is_empty() && self.called_before.contains(id_hash(key)) {
            None
        } else {
            Some(false)
        }
    }

    /// Whether this walk called `key` (whose [`id_hash`] is `hash`).
    fn called_here(&self, key: &Key, hash: u64) -> bool {
        let is = |r: usize| self.rows.kind[r] == key.0 && self.rows.call_id[r] == key.1;
        match self.called.get(&hash) {
            None => false,
            Some(&r) => is(r) || self.called_more.iter().any(|&(h, r)| h == hash && is(r)),
        }
    }

    /// Ids `assemble` would drop from what was fed so far, in the order met (the open run's
    /// orphans worked out without closing it). An id a resumed walk's hashes may know counts
    /// as called.
    pub fn dropped_orphans(&self) -> Vec<String> {
        let own: HashSet<&str> =
            self.run.iter().filter(|e| e.call && e.kind == 0).map(|e| e.id.as_str()).collect();
        let mut out = self.dropped.clone();
        for e in &self.run {
            if !e.call && e.kind == 0 && !own.contains(e.id.as_str()) && self.was_called(&(0, e.id.clone())) == Some(false)
            {
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
        // A run closed before the walk was saved, going on now (see `exact`).
        let again = message == self.closed;
        let calls = run.iter().any(|e| e.call);
        if again && (self.server || (self.loose && calls)) {
            self.exact = false;
        }
        let mut loose = again && self.loose;
        let server = run.iter().any(|e| e.kind == 1) || (again && self.server);
        // The run's events are moved into the rows and keys (an id is copied only for each
        // map that keeps it): a large record's walk takes hundreds of thousands of them.
        let (calls, results): (Vec<Event>, Vec<Event>) = run.into_iter().partition(|e| e.call);
        for e in calls {
            let key = (e.kind, e.id);
            let row = self.base + self.rows.len();
            match self.open.get_mut(&key) {
                Some(waiting) => waiting.push_back(row),
                None => {
                    self.open.insert(key.clone(), VecDeque::from([row]));
                }
            }
            let hash = id_hash(&key);
            if !self.called_here(&key, hash) {
                match self.called.entry(hash) {
                    Entry::Vacant(first) => {
                        first.insert(row - self.base);
                    }
                    Entry::Occupied(_) => self.called_more.push((hash, row - self.base)),
                }
            }
            let rows = &mut self.rows;
            rows.call_id.push(key.1);
            rows.name.push(e.name);
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
        for mut e in results {
            let key = (e.kind, std::mem::take(&mut e.id));
            if let Some(waiting) = self.open.get_mut(&key) {
                let row = waiting.pop_front().expect("an open call");
                if waiting.is_empty() {
                    self.open.remove(&key);
                }
                if row < self.base {
                    let status = result_status(e.is_error);
                    e.id = key.1;
                    self.answers.push_result(e, message, status);
                    self.answered.push(row);
                    continue;
                }
                let (rows, row) = (&mut self.rows, row - self.base);
                rows.result_seq[row] = Some(e.position);
                rows.result_message[row] = Some(message);
                rows.is_error[row] = e.is_error;
                rows.result_chars[row] = e.chars;
                rows.result_text[row] = e.text;
                rows.status[row] = result_status(e.is_error);
                continue;
            }
            if key.0 == 1 && self.answer_turn(message, e.position, e.is_error) {
                continue;
            }
            let status = match self.was_called(&key) {
                Some(true) => DUPLICATE,
                Some(false) => ORPHAN,
                None => {
                    self.exact = false;
                    DUPLICATE
                }
            };
            if status == ORPHAN && key.0 == 0 {
                self.dropped.push(key.1.clone());
            }
            loose = true;
            e.id = key.1;
            self.rows.push_result(e, message, status);
        }
        self.closed = message;
        self.loose = loose;
        self.server = server;
    }

    /// A server result naming no open call: it answers the server calls of `message` that have
    /// no result yet (of this walk's rows: a resumed walk that goes on a run with server events
    /// is not exact). Whether there were any.
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
            rows.status[i] = result_status(is_error);
            let key = (1u8, rows.call_id[i].clone());
            if let Some(open) = self.open.get_mut(&key) {
                let row = self.base + i;
                open.retain(|&r| r != row);
                if open.is_empty() {
                    self.open.remove(&key);
                }
            }
        }
        !waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::{id_hash, Event, Hashes, Pairer, DUPLICATE, ORPHAN};

    fn event(position: i64, call: bool, id: &str) -> Event {
        Event {
            position,
            call,
            kind: 0,
            id: id.to_owned(),
            name: call.then(|| "tool".to_owned()),
            is_error: None,
            chars: None,
            input_bytes: None,
            input: None,
            text: None,
        }
    }

    /// The ids a walk called are known by their hash and checked against the row that called
    /// them: an id whose hash another id called has is not taken for called, and is known once
    /// it is called itself. (Two ids of one 64-bit hash cannot be written down here: the test
    /// files the second id's hash under the first id's row, as a collision would.)
    #[test]
    fn an_id_sharing_a_hash_is_not_taken_for_called() {
        let mut walk = Pairer::new();
        walk.feed(0, event(0, true, "call_x"));
        walk.feed(1, event(1, false, "call_x"));
        walk.feed(2, event(2, false, "call_x")); // answered already: a duplicate
        walk.feed(3, event(3, true, "other")); // closes run 2
        let y = (0u8, "call_y".to_owned());
        walk.called.insert(id_hash(&y), 0); // row 0 called call_x
        assert_eq!(walk.was_called(&y), Some(false));
        assert_eq!(walk.was_called(&(0, "call_x".to_owned())), Some(true));
        walk.feed(4, event(4, false, "call_y")); // never called: an orphan
        walk.feed(5, event(5, true, "call_y"));
        walk.feed(6, event(6, false, "call_y")); // closes run 5: call_y is called
        walk.feed(7, event(7, false, "call_y")); // and answered: a duplicate
        walk.finish();
        assert_eq!(walk.called_more.len(), 1);
        assert_eq!(walk.was_called(&y), Some(true));
        let rows = &walk.rows;
        let status = |id: &str, seq: i64| {
            (0..rows.len()).find(|&i| rows.call_id[i] == id && rows.result_seq[i] == Some(seq)).map(|i| rows.status[i])
        };
        assert_eq!(status("call_x", 2), Some(DUPLICATE));
        assert_eq!(status("call_y", 4), Some(ORPHAN));
        assert_eq!(status("call_y", 7), Some(DUPLICATE));
        let saved = walk.save(Default::default());
        assert!(saved.called.contains(id_hash(&(0, "call_x".to_owned()))));
        assert!(saved.called.contains(id_hash(&y)));
        assert!(!saved.called.contains(id_hash(&(0, "call_z".to_owned()))));
    }

    #[test]
    fn hashes_hold_what_was_added_in_few_sorted_runs() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            state >> 40 // a small range: repeats within and across adds
        };
        let (mut hashes, mut all) = (Hashes::default(), std::collections::BTreeSet::new());
        for round in 0..300 {
            let more: Vec<u64> = (0..(round * 7) % 50).map(|_| next()).collect();
            all.extend(more.iter().copied());
            hashes.add(more);
            assert!(hashes.runs.len() <= 64 - (all.len() as u64).leading_zeros() as usize + 1);
            assert!(hashes.runs.iter().all(|r| r.windows(2).all(|w| w[0] < w[1])));
        }
        assert_eq!(hashes.sorted(), all.iter().copied().collect::<Vec<_>>());
        for _ in 0..2000 {
            let h = next();
            assert_eq!(hashes.contains(h), all.contains(&h));
        }
        assert!(Hashes::default().is_empty() && !hashes.is_empty());
    }
}
