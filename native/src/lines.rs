//! The one engine for line-delimited formats: a file read in blocks from a point, its lines
//! split on `\n` and decided in parallel by serde_json, and every line a format keeps turned
//! into one row of the columns that format declares.
//!
//! A format is a declaration ([`Format`]): its line rule (which parsed lines are rows, whether
//! line 1 may be a header), the names of its integer and string columns, what one parsed line
//! puts into them (a row, its block kinds, its tool events, a title it offers its file, a code
//! it reports), and whether its tool events are paired while the file is read. Everything else
//! is this engine's: reading, deciding lines, order, diagnostics, where a later read goes on
//! from, the pairing walk. Claude Code, Codex and murmur are formats of it (`formats/`); a new
//! JSONL runtime is a new `impl Format`, not a second scanner.
//!
//! The line rule is [`crate::line::decide_by`]'s: a line is split on `\n` alone (a raw U+2028
//! inside a string is part of the line; a terminated line loses a final `\r`), a blank line
//! (`str::trim` empty) is skipped, and a line is a row iff serde_json parses it into a value the
//! format keeps (by default, any object). A line that is not UTF-8, does not parse, or is not
//! kept is reported (a diagnostic code of [`crate::line`]), never guessed at.
//!
//! A file is read a block of [`BLOCK`] bytes at a time; a block's lines are decided on every
//! core in pieces, while the block before is joined to the file's rows (and its tool events
//! walked, for a format that pairs them).

use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;
use rayon::prelude::*;

use crate::columns::{join_into, Ints, Strings};
use crate::json::{Count, Json, Sorted, View};
use crate::line::{skipped, spans, Kind, PieceLines};
use crate::pair;

/// Bytes read from a file per step; lines are decided in parallel within a step.
pub const BLOCK: usize = 32 << 20;
/// The smallest piece of a step handed to one thread.
const PIECE: usize = 1 << 20;

/// A text a row hands over, written once, straight into its column.
#[derive(Clone, Debug)]
pub enum Text<'a> {
    /// a text as it stands (borrowed from the line, or made)
    Str(Cow<'a, str>),
    /// texts joined with newlines (none: no text)
    Joined(Vec<&'a str>),
    /// a JSON value as serde_json writes its `Value` (keys sorted: [`Sorted`])
    Json(&'a Json<'a>),
}

impl Text<'_> {
    /// The text's length in bytes, without writing it (`None`: no text).
    fn len(&self) -> Option<usize> {
        match self {
            Text::Str(s) => Some(s.len()),
            Text::Joined(parts) if parts.is_empty() => None,
            Text::Joined(parts) => Some(parts.iter().map(|p| p.len()).sum::<usize>() + parts.len() - 1),
            Text::Json(value) => {
                let mut count = Count::default();
                serde_json::to_writer(&mut count, &Sorted(value)).expect("a parsed value serializes");
                Some(count.0)
            }
        }
    }

    /// Push the text into `col` (a null when there is none); its length in bytes.
    fn push_into(&self, col: &mut Strings) -> Option<usize> {
        match self {
            Text::Str(s) => {
                col.push(Some(s));
                Some(s.len())
            }
            Text::Joined(parts) => {
                let before = col.data.len();
                col.push_joined(parts.iter().copied());
                (!parts.is_empty()).then(|| col.data.len() - before)
            }
            Text::Json(value) => Some(col.push_written(|out| {
                let start = out.len();
                serde_json::to_writer(&mut *out, &Sorted(value)).expect("a parsed value serializes");
                out.len() - start
            })),
        }
    }
}

/// One tool event of a row: a call (`call`) or a result, in block order. Its strings borrow
/// the line's parsed tree where they stand in it whole (ids, names, a result of one text); its
/// text is written once, by the engine, into its side's column.
#[derive(Clone, Debug, Default)]
pub struct Event<'a> {
    pub call: bool,
    /// 0: a client tool (its call and result are separate blocks), 1: a server tool
    pub kind: u8,
    pub id: Cow<'a, str>,
    pub name: Option<Cow<'a, str>>,
    pub is_error: Option<bool>,
    pub chars: Option<i64>,
    /// a call's input (its length in bytes is the event's input size, whether texts are kept
    /// or not), a result's text; kept only when texts are
    pub text: Option<Text<'a>>,
}

/// What a format puts into one row, column by column in the order it declared them. Its
/// vectors live in the arena the line was parsed into (no allocation of their own per line).
pub struct Row<'a> {
    pub ints: BumpVec<'a, Option<i64>>,
    pub strs: BumpVec<'a, Option<Cow<'a, str>>>,
    pub kinds: BumpVec<'a, Cow<'a, str>>,
    pub events: BumpVec<'a, Event<'a>>,
    /// a title this line offers its file: the file's is the first offered ([`Rows::title`])
    pub title: Option<&'a str>,
    /// a diagnostic code this line reports though it makes a row
    pub report: Option<u8>,
    /// the arena the line was parsed into: what a format builds for this line alone can live
    /// there too (freed with the line, never one by one)
    pub arena: &'a Bump,
}

impl<'a> Row<'a> {
    /// An empty row of `format`'s shape, in `arena`.
    fn new_in(format: &dyn Format, arena: &'a Bump) -> Row<'a> {
        Row {
            ints: bumpalo::vec![in arena; None; format.ints().len()],
            strs: bumpalo::vec![in arena; None; format.strs().len()],
            kinds: BumpVec::new_in(arena),
            events: BumpVec::new_in(arena),
            title: None,
            report: None,
            arena,
        }
    }
}

/// A line-delimited format: its line rule, its columns, and how one parsed line fills them.
pub trait Format: Sync {
    /// The integer columns' names (a boolean is an integer 0/1).
    fn ints(&self) -> &'static [&'static str];
    /// The string columns' names.
    fn strs(&self) -> &'static [&'static str];
    /// Whether a line serde_json parsed is a row: any object, unless the format says otherwise.
    fn keeps(&self, line: &Json<'_>) -> bool {
        line.is_object()
    }
    /// Whether line 1, when it is not a row, is the file's header ([`Rows::header`]): neither a
    /// row nor reported. No line is, unless the format says otherwise.
    fn header(&self, _line: &str) -> bool {
        false
    }
    /// The string column whose runs of one value are the file's messages, for a format whose
    /// tool events are paired while the file is read ([`Rows::walked`]); `None`: they are not.
    fn walks(&self) -> Option<usize> {
        None
    }
    /// Fill `row` from one line the format keeps. `text` says whether texts are kept (a lean
    /// read leaves text columns null; event texts are left out by the engine).
    fn row<'a>(&'a self, line: &'a Json<'a>, text: bool, row: &mut Row<'a>);
}

/// The pairing of a file's tool events, walked while it was read (the assembly core's walk).
#[derive(Default)]
pub struct Walked {
    pub pairs: pair::Rows,
    /// calls made, calls in error, client orphans dropped (`pair::Pairer::summary`)
    pub summary: (usize, usize, Vec<String>),
    /// what the walk leaves for a walk of lines appended later
    pub state: Option<pair::Saved>,
    /// where each event's text is among the pairing's texts: row `r`'s input is `r`, its
    /// result text `pairs + r` (-1: none)
    pub text_at: Vec<i64>,
}

/// A file's rows, columnar, in line order.
#[derive(Default)]
pub struct Rows {
    /// lines read (blank and reported ones included), counted from the first line read
    pub lines: i64,
    pub line_no: Vec<i64>,
    pub ints: Vec<Ints>,
    pub strs: Vec<Strings>,
    pub kinds_offsets: Vec<i32>,
    pub kinds: Strings,
    pub ev_row: Vec<i64>,
    pub ev_call: Vec<u8>,
    pub ev_kind: Vec<u8>,
    pub ev_id: Strings,
    pub ev_name: Strings,
    pub ev_error: Ints,
    pub ev_chars: Ints,
    pub ev_bytes: Ints,
    /// a call's input text (null at a result), and a result's text (null at a call): each
    /// side's texts lie in event order in a buffer of their own, so the pairing rows, one per
    /// call in call order, can view them where they are
    pub ev_input_text: Strings,
    pub ev_result_text: Strings,
    /// `(line, code)` of every line reported
    pub diags: Vec<(i64, u8)>,
    /// the first title a row offered (murmur's: its first user text)
    pub title: Option<String>,
    /// line 1, when the format's rule reads it as the file's header
    pub header: Option<Vec<u8>>,
    /// the pairing of the tool events, for a format that walks them as it reads
    pub walked: Option<Walked>,
    /// the byte offset after the last line that will not be read again: a torn last line (no
    /// `\n`, not a row) ends before it, so a later read from here reads it whole
    pub end: u64,
    /// bytes in the file when it was read
    pub size: u64,
    pub error: Option<String>,
}

impl Rows {
    fn new(format: &dyn Format) -> Rows {
        Rows {
            ints: (0..format.ints().len()).map(|_| Ints::default()).collect(),
            strs: (0..format.strs().len()).map(|_| Strings::default()).collect(),
            kinds_offsets: vec![0],
            ..Rows::default()
        }
    }

    pub fn rows(&self) -> usize {
        self.line_no.len()
    }

    /// One row, of line `line_no`; `text` says whether event texts are kept.
    fn push(&mut self, row: Row<'_>, line_no: i64, text: bool) {
        let at = self.rows() as i64;
        self.line_no.push(line_no);
        for (col, value) in self.ints.iter_mut().zip(row.ints.iter()) {
            col.push(*value);
        }
        for (col, value) in self.strs.iter_mut().zip(row.strs.iter()) {
            col.push(value.as_deref());
        }
        for kind in row.kinds.iter() {
            self.kinds.push(Some(kind));
        }
        self.kinds_offsets.push(self.kinds.len() as i32);
        if let Some(code) = row.report {
            self.diags.push((line_no, code));
        }
        if self.title.is_none() {
            self.title = row.title.map(str::to_owned);
        }
        for ev in row.events.iter() {
            self.ev_row.push(at);
            self.ev_call.push(u8::from(ev.call));
            self.ev_kind.push(ev.kind);
            self.ev_id.push(Some(&ev.id));
            self.ev_name.push(ev.name.as_deref());
            self.ev_error.push(ev.is_error.map(i64::from));
            self.ev_chars.push(ev.chars);
            // Each side's texts lie in a column of their own: the event's text (when texts are
            // kept) in its side's, a null in the other's. A call's input size is its text's
            // length, kept or not.
            let (own, other) = if ev.call {
                (&mut self.ev_input_text, &mut self.ev_result_text)
            } else {
                (&mut self.ev_result_text, &mut self.ev_input_text)
            };
            let size = match &ev.text {
                Some(t) if text => t.push_into(own),
                t => {
                    own.push(None);
                    t.as_ref().filter(|_| ev.call).and_then(Text::len)
                }
            };
            other.push(None);
            self.ev_bytes.push(size.filter(|_| ev.call).map(|n| n as i64));
        }
    }

    /// Append the rows of the piece that follows this one.
    fn join(&mut self, mut other: Rows) {
        if self.lines == 0 {
            // Nothing joined yet (a file's first piece, and most files' only one): its columns
            // are moved, not copied. What the file itself knows is kept: where it ends, its
            // size, its error, and a title or header it already has.
            let title = self.title.take().or_else(|| other.title.take());
            let header = self.header.take().or_else(|| other.header.take());
            let (end, size, error, walked) = (self.end, self.size, self.error.take(), self.walked.take());
            *self = Rows { end, size, error, walked, title, header, ..other };
            return;
        }
        let rows = self.rows() as i64;
        let lines = self.lines;
        self.lines += other.lines;
        self.line_no.extend(other.line_no.iter().map(|n| n + lines));
        for (mine, theirs) in self.ints.iter_mut().zip(other.ints) {
            mine.extend(theirs);
        }
        for (mine, theirs) in self.strs.iter_mut().zip(other.strs) {
            mine.extend(theirs);
        }
        let base = *self.kinds_offsets.last().unwrap_or(&0);
        self.kinds_offsets.extend(other.kinds_offsets.iter().skip(1).map(|o| o + base));
        self.kinds.extend(other.kinds);
        self.ev_row.extend(other.ev_row.iter().map(|r| r + rows));
        self.ev_call.extend(other.ev_call);
        self.ev_kind.extend(other.ev_kind);
        self.ev_id.extend(other.ev_id);
        self.ev_name.extend(other.ev_name);
        self.ev_error.extend(other.ev_error);
        self.ev_chars.extend(other.ev_chars);
        self.ev_bytes.extend(other.ev_bytes);
        self.ev_input_text.extend(other.ev_input_text);
        self.ev_result_text.extend(other.ev_result_text);
        self.diags.extend(other.diags.iter().map(|(n, c)| (n + lines, *c)));
        if self.title.is_none() {
            self.title = other.title;
        }
        if self.header.is_none() {
            self.header = other.header;
        }
    }
}

/// Decide every line of `buf` (whole lines; the last is unterminated only at the end of the
/// file) into a piece of rows. `first` says whether `buf` starts at line 1. Returns the piece
/// and the length of a torn last line (0: none).
fn piece(format: &dyn Format, buf: &[u8], text: bool, first: bool) -> (Rows, usize) {
    let mut out = Rows::new(format);
    let mut torn = 0;
    let mut arena = Bump::new();
    let mut lines = PieceLines::new(buf);
    for span in spans(buf) {
        arena.reset();
        out.lines += 1;
        let n = out.lines;
        let line = &buf[span.start..span.end];
        let (kind, value) =
            lines.decide(&span, first && n == 1, &arena, |value| format.keeps(value), |s| format.header(s));
        match (kind, value) {
            (Kind::Message, Some(value)) => {
                let mut row = Row::new_in(format, &arena);
                format.row(&value, text, &mut row);
                out.push(row, n, text);
            }
            (Kind::Header, _) => out.header = Some(line.to_vec()),
            (Kind::NotMessage | Kind::BadUtf8, _) => {
                out.diags.push((n, skipped(kind, span.terminated)));
                torn = if span.terminated { 0 } else { buf.len() - span.start };
            }
            _ => {}
        }
    }
    (out, torn)
}

/// A file being read: the block decided last, waiting to be joined, and the pairing walk.
struct Reading<'f> {
    format: &'f dyn Format,
    text: bool,
    /// whether the next line decided is line 1
    first: bool,
    /// the pieces of the block decided last, each with its torn last line, and the block's length
    decided: Vec<(Rows, usize)>,
    len: usize,
    walk: Option<Walking>,
}

impl<'f> Reading<'f> {
    fn new(format: &'f dyn Format, text: bool, first: bool) -> Reading<'f> {
        let walk = format.walks().map(|side| Walking { side, ..Walking::default() });
        Reading { format, text, first, decided: Vec::new(), len: 0, walk }
    }

    /// Decide the whole lines of `buf` on every core while the block before is joined to `out`.
    ///
    /// Lines shorter than a piece in all (the line a block's end cut, handed on alone before
    /// the next block's lines) are decided here, as one more piece of the block before: the
    /// block before is then joined beside the next block's decision, not before it.
    fn block(&mut self, buf: &[u8], out: &mut Rows) {
        if buf.len() < PIECE && !self.decided.is_empty() {
            // Lines came before (the block decided last): these do not start at line 1.
            debug_assert!(!self.first);
            self.decided.push(piece(self.format, buf, self.text, false));
            self.len += buf.len();
            return;
        }
        let pieces = cut(buf, buf.len());
        let (format, text, first) = (self.format, self.text, self.first);
        let (decided, len, walk) = (std::mem::take(&mut self.decided), self.len, &mut self.walk);
        let decide = |(i, &(s, e)): (usize, &(usize, usize))| piece(format, &buf[s..e], text, first && i == 0);
        let (now, ()) = rayon::join(
            || pieces.par_iter().enumerate().map(decide).collect(),
            || take(out, decided, len, walk.as_mut()),
        );
        self.decided = now;
        self.len = buf.len();
        if !buf.is_empty() {
            self.first = false;
        }
    }

    /// Join the block decided last and close the walk.
    fn finish(mut self, out: &mut Rows) {
        take(out, std::mem::take(&mut self.decided), self.len, self.walk.as_mut());
        if let Some(walk) = self.walk {
            out.walked = Some(walk.finish(out));
        }
    }
}

/// Join a block's decided pieces to `out`, moving its `end` past them (before a torn last
/// line), and walk their tool events.
fn take(out: &mut Rows, decided: Vec<(Rows, usize)>, len: usize, walk: Option<&mut Walking>) {
    if decided.is_empty() {
        return;
    }
    let mut torn = 0;
    for (part, t) in decided {
        out.join(part);
        torn = t;
    }
    out.end += (len - torn) as u64;
    if let Some(walk) = walk {
        walk.take(out);
    }
}

/// One file read from byte `start` (a line's start) to its size now, in blocks of `block`
/// bytes, each block's lines decided on every core. Line numbers count from `first_line` (the
/// number of `start`'s line; line 1 may be the format's header). A file that cannot be opened
/// or read gives its `error`.
pub fn read(
    format: &dyn Format,
    path: &std::path::Path,
    start: u64,
    first_line: i64,
    text: bool,
    block: usize,
) -> Rows {
    let mut out = Rows::new(format);
    out.end = start;
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(err) => {
            out.error = Some(format!("could not open: {}", reason(&err)));
            return out;
        }
    };
    out.size = match file.metadata() {
        Ok(meta) => meta.len(),
        Err(err) => {
            out.error = Some(format!("read failed: {}", reason(&err)));
            return out;
        }
    };
    if start > 0 {
        if let Err(err) = file.seek(SeekFrom::Start(start)) {
            out.error = Some(format!("read failed: {}", reason(&err)));
            return out;
        }
    }
    let remaining = out.size.saturating_sub(start) as usize;
    let mut reading = Reading::new(format, text, first_line == 1);
    let error = blocks(&mut file, remaining, block, |buf| reading.block(buf, &mut out));
    reading.finish(&mut out);
    if error.is_some() {
        out.error = error;
    }
    numbered(out, first_line)
}

/// Whole lines of data already in memory (a decompressed file), read as [`read`] reads a file.
pub fn read_bytes(format: &dyn Format, data: &[u8], first_line: i64, text: bool) -> Rows {
    let mut out = Rows::new(format);
    out.size = data.len() as u64;
    let mut reading = Reading::new(format, text, first_line == 1);
    reading.block(data, &mut out);
    reading.finish(&mut out);
    numbered(out, first_line)
}

/// The rows' line numbers counted from `first_line`.
fn numbered(mut out: Rows, first_line: i64) -> Rows {
    if first_line != 1 {
        for n in out.line_no.iter_mut() {
            *n += first_line - 1;
        }
        for (n, _) in out.diags.iter_mut() {
            *n += first_line - 1;
        }
    }
    out
}

/// The pairing walk of a file's tool events, fed block by block as the blocks are joined: a
/// message (run) is a stretch of rows of one value of the format's side column
/// ([`pair::MessageRuns`]), and a row's position is its index.
#[derive(Default)]
struct Walking {
    /// the string column of each row's side
    side: usize,
    runs: pair::MessageRuns,
    walk: pair::Pairer,
    /// each row's message index
    messages: Vec<i64>,
    /// events fed so far
    events: usize,
}

impl Walking {
    /// Walk the tool events of the rows joined to `out` since the last call. An event's text
    /// is known to the walk by the event's index (its place in its side's text column).
    fn take(&mut self, out: &Rows) {
        let sides = &out.strs[self.side];
        for i in self.messages.len()..out.rows() {
            self.messages.push(self.runs.next(sides.get(i).unwrap_or_default()));
        }
        let text = |col: &Strings, i: usize| col.get(i).unwrap_or_default().to_owned();
        for i in self.events..out.ev_row.len() {
            let row = out.ev_row[i];
            let call = out.ev_call[i] == 1;
            let event = pair::Event {
                position: row,
                call,
                kind: out.ev_kind[i],
                id: text(&out.ev_id, i),
                name: if call { Some(text(&out.ev_name, i)) } else { None },
                is_error: out.ev_error.valid[i].then(|| out.ev_error.values[i] != 0),
                chars: out.ev_chars.valid[i].then(|| out.ev_chars.values[i]),
                input_bytes: out.ev_bytes.valid[i].then(|| out.ev_bytes.values[i]),
                input: None,
                text: Some(i as i64),
            };
            self.walk.feed(self.messages[row as usize], event);
        }
        self.events = out.ev_row.len();
    }

    /// Close the walk: the file's pairing rows and summary, the state a walk of lines appended
    /// later goes on from, and where each event's text went among the rows.
    fn finish(mut self, out: &Rows) -> Walked {
        self.walk.finish();
        let summary = self.walk.summary();
        let state = Some(self.walk.save(self.runs));
        let pairs = std::mem::take(&mut self.walk.rows);
        // Each event's text went to one row (a call's input, a result's text): where, so a walk
        // resumed over these events later finds them without a second copy of every text.
        let mut text_at = vec![-1i64; out.ev_row.len()];
        for r in 0..pairs.len() {
            if let Some(i) = pairs.input_text[r] {
                text_at[i as usize] = r as i64;
            }
            if let Some(i) = pairs.result_text[r] {
                text_at[i as usize] = (pairs.len() + r) as i64;
            }
        }
        Walked { pairs, summary, state, text_at }
    }
}

/// `[start, end)` pieces of `buf[..len]` cut after a `\n`, about `PIECE` bytes or more each.
pub fn cut(buf: &[u8], len: usize) -> Vec<(usize, usize)> {
    let threads = rayon::current_num_threads().max(1);
    let target = (len / (threads * 4)).max(PIECE);
    let mut out = Vec::new();
    let mut start = 0;
    while start < len {
        let mut end = (start + target).min(len);
        if end < len {
            end = match memchr::memchr(b'\n', &buf[end..len]) {
                Some(i) => end + i + 1,
                None => len,
            };
        }
        out.push((start, end));
        start = end;
    }
    out
}

/// Read `file` from where it stands, up to `remaining` bytes (its size when the read began: a
/// file the runtime appends to meanwhile is read as it was), a block of `block` bytes at a
/// time, and hand each block's whole lines to `each`, in order (the file's last line whole or
/// not). Returns the read error, if one ended the read early. The one block reader of the
/// engine.
///
/// The next block is read on a thread of its own while `each` works on this one; two block
/// buffers take turns, so memory stays two blocks. A line cut by a block's end is handed on
/// whole, on its own, before the next block's lines. A file of one block (most session files)
/// is read by [`whole`], on this thread.
fn blocks(file: &mut File, remaining: usize, block: usize, mut each: impl FnMut(&[u8])) -> Option<String> {
    use std::sync::mpsc::sync_channel;
    if remaining <= block {
        return whole(file, remaining, each);
    }
    let (full_tx, full_rx) = sync_channel::<Result<Vec<u8>, String>>(1);
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(2);
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut left = remaining;
            let mut made = 0; // buffers made so far: the first two are new, later ones come back
            while left > 0 {
                let mut buf = if made < 2 {
                    made += 1;
                    Vec::new()
                } else {
                    match empty_rx.recv() {
                        Ok(buf) => buf,
                        Err(_) => return, // nothing takes blocks any more
                    }
                };
                buf.resize(left.min(block), 0); // a buffer back from a full block is not filled again
                let mut filled = 0;
                let mut failed = None;
                while filled < buf.len() {
                    match file.read(&mut buf[filled..]) {
                        Ok(0) => break,
                        Ok(n) => filled += n,
                        Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(err) => {
                            failed = Some(format!("read failed: {}", reason(&err)));
                            break;
                        }
                    }
                }
                buf.truncate(filled);
                let short = filled < left.min(block);
                left -= filled;
                if filled > 0 && full_tx.send(Ok(buf)).is_err() {
                    return;
                }
                if let Some(message) = failed {
                    let _ = full_tx.send(Err(message));
                    return;
                }
                if short {
                    return; // the file ended before its size when the read began
                }
            }
        });
        let mut carry: Vec<u8> = Vec::new(); // a line begun in an earlier block
        let mut error = None;
        for got in full_rx {
            let buf = match got {
                Ok(buf) => buf,
                Err(message) => {
                    error = Some(message);
                    break;
                }
            };
            let first = memchr::memchr(b'\n', &buf);
            let last = memchr::memrchr(b'\n', &buf);
            match (first, last) {
                (Some(first), Some(last)) => {
                    if !carry.is_empty() {
                        carry.extend_from_slice(&buf[..=first]);
                        each(&carry);
                        carry.clear();
                        each(&buf[first + 1..=last]);
                    } else {
                        each(&buf[..=last]);
                    }
                    carry.extend_from_slice(&buf[last + 1..]);
                }
                _ => carry.extend_from_slice(&buf),
            }
            let _ = empty_tx.try_send(buf); // never full (two buffers); refused once the reader is done
        }
        if !carry.is_empty() {
            each(&carry);
        }
        error
    })
}

/// [`blocks`] for a file of at most one block: read into a buffer of its size (never filled
/// first), on this thread, and handed to `each` at once, its last line whole or not. Returns the
/// read error, after handing on what was read before it.
fn whole(file: &mut File, remaining: usize, mut each: impl FnMut(&[u8])) -> Option<String> {
    let mut buf = Vec::with_capacity(remaining);
    let error = file.take(remaining as u64).read_to_end(&mut buf).err();
    if !buf.is_empty() {
        each(&buf);
    }
    error.map(|err| format!("read failed: {}", reason(&err)))
}

pub(crate) fn reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// Texts joined with newlines, as one column value: the text itself when there is one (borrowed
/// from the line), `None` when there are none.
pub fn joined<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<Cow<'a, str>> {
    let mut parts = parts.into_iter();
    let first = parts.next()?;
    match parts.next() {
        None => Some(Cow::Borrowed(first)),
        Some(second) => {
            let mut out = Vec::new();
            join_into(&mut out, [first, second].into_iter().chain(parts));
            Some(Cow::Owned(String::from_utf8(out).expect("texts joined are UTF-8")))
        }
    }
}

/// A string field of an object (`None` when absent or not a string).
pub fn text<'a>(value: &'a Json<'a>, key: &str) -> Option<Cow<'a, str>> {
    value.field(key).and_then(View::text).map(Cow::Borrowed)
}

/// An integer field that a signed 64-bit column holds (`None` when absent, not an integer, or
/// out of `0..=i64::MAX` for `counter`).
pub fn int(value: &Json<'_>, key: &str) -> Option<i64> {
    match value.field(key) {
        Some(Json::Number(n)) => n.as_i64(),
        _ => None,
    }
}

/// A boolean field as 0/1.
pub fn flag(value: &Json<'_>, key: &str) -> Option<i64> {
    value.field(key).and_then(Json::as_bool).map(i64::from)
}

/// The path `keys` into nested objects.
pub fn at<'a>(value: &'a Json<'a>, keys: &[&str]) -> Option<&'a Json<'a>> {
    keys.iter().try_fold(value, |v, k| v.field(k))
}

/// Microseconds since the epoch (UTC) of an RFC 3339 time (`2026-07-01T10:00:01.000Z`,
/// `…+02:00`, up to nine fraction digits, truncated to microseconds); `None` for anything else.
pub fn iso_us(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d, h, mi, sec) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in(y, mo) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b[i] == b'.' {
        let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 || digits > 9 {
            return None;
        }
        let frac = num(i + 1..i + 1 + digits)?;
        micros = if digits >= 6 { frac / 10i64.pow(digits as u32 - 6) } else { frac * 10i64.pow(6 - digits as u32) };
        i += 1 + digits;
    }
    let offset = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            if oh > 23 || om > 59 {
                return None;
            }
            (oh * 60 + om) * 60 * if *sign == b'-' { -1 } else { 1 }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 86_400 + h * 3600 + mi * 60 + sec) - offset) * 1_000_000 + micros)
}

fn days_in(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::iso_us;

    /// Whatever the block size, every call holds whole lines (the last one of the file whole or
    /// not), and the calls in order are the file's first `remaining` bytes.
    #[test]
    fn blocks_hand_over_whole_lines_in_order() {
        let text = b"{\"a\":1}\n\n  \nlonger line than a block of a few bytes\nx\n\n\ntorn tail";
        let path = std::env::temp_dir().join(format!("ma-blocks-{}.jsonl", std::process::id()));
        std::fs::File::create(&path).unwrap().write_all(text).unwrap();
        for remaining in [0, 1, 9, 10, text.len() - 3, text.len()] {
            for block in 1..=text.len() + 1 {
                let mut file = std::fs::File::open(&path).unwrap();
                let mut calls: Vec<Vec<u8>> = Vec::new();
                let error = super::blocks(&mut file, remaining, block, |buf| calls.push(buf.to_vec()));
                assert!(error.is_none());
                assert_eq!(calls.concat(), &text[..remaining], "block {block}, remaining {remaining}");
                for (i, call) in calls.iter().enumerate() {
                    if i + 1 < calls.len() {
                        assert!(call.is_empty() || call.ends_with(b"\n"), "block {block}: a cut line {call:?}");
                    }
                }
            }
        }
        std::fs::remove_file(&path).unwrap();
    }

    /// What a read leaves, as plain values: its rows' line numbers and string columns, its
    /// reported lines, where a later read goes on from, the lines read and the file's size.
    fn read_summary(rows: &super::Rows) -> (Vec<i64>, Vec<Vec<Option<String>>>, Vec<(i64, u8)>, u64, i64, u64) {
        let strs = rows.strs.iter().map(|c| (0..c.len()).map(|i| c.get(i).map(str::to_owned)).collect()).collect();
        (rows.line_no.clone(), strs, rows.diags.clone(), rows.end, rows.lines, rows.size)
    }

    /// A file read in blocks of any size, a few bytes or several pieces (the line a block's
    /// end cuts handed on alone, then decided with the block before), gives what one block
    /// gives: the same rows, the same reported lines, and the same point to go on from before
    /// its torn last line.
    #[test]
    fn a_file_reads_the_same_at_any_block_size() {
        let format = crate::formats::codex::Codex;
        for (size, blocks) in [(20_000, vec![1, 13, 4096]), (5 << 19, vec![(1 << 20) + 7, (2 << 20) + 7])] {
            let mut text = Vec::new();
            let mut n = 0;
            while text.len() < size {
                n += 1;
                let pad = "x".repeat(n % 700);
                write!(text, "{{\"timestamp\":\"2025-01-01T00:00:00Z\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"agent_message\",\"message\":\"m{n} {pad}\"}}}}\n").unwrap();
                if n % 7 == 0 {
                    text.extend_from_slice(b"not json\n\n");
                }
            }
            text.extend_from_slice(b"{\"torn\":");
            let path = std::env::temp_dir().join(format!("ma-read-blocks-{}-{size}.jsonl", std::process::id()));
            std::fs::File::create(&path).unwrap().write_all(&text).unwrap();
            let whole = read_summary(&super::read(&format, &path, 0, 1, true, text.len() + 1));
            assert_eq!(whole.3, (text.len() - b"{\"torn\":".len()) as u64, "the torn line is read again later");
            assert!(!whole.2.is_empty());
            for block in blocks {
                let read = super::read(&format, &path, 0, 1, true, block);
                assert!(read.error.is_none());
                assert!(read_summary(&read) == whole, "{size} bytes, block {block}");
            }
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn times() {
        assert_eq!(iso_us("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(iso_us("1970-01-01T00:00:01.5Z"), Some(1_500_000));
        assert_eq!(iso_us("2026-07-01T10:00:01.000Z"), Some(1_782_900_001_000_000));
        assert_eq!(iso_us("2026-07-01T12:00:01.000+02:00"), Some(1_782_900_001_000_000));
        assert_eq!(iso_us("2026-02-30T00:00:00Z"), None);
        assert_eq!(iso_us("2026-07-01T10:00:01"), None);
    }
}
