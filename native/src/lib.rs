//! `murmur_analysis.engine._native`: the toolkit's decode engine.
//!
//! Every decision about a murmur record line is made here, by serde_json itself (the parser
//! murmur reads its records with), so the cursor's pages and the loaded tables agree with murmur
//! by construction. See `line.rs` for the line rules and `lines.rs` for the one engine that reads
//! every line-delimited format (murmur, Claude Code, Codex: `formats/`) into columns on every core.

mod blocks;
mod buffer;
mod columns;
mod files;
mod formats;
mod gitlog;
mod handoff;
mod json;
mod line;
mod lines;
mod pair;
mod uuid7;

use std::borrow::Cow;
use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::exceptions::PyTypeError;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyList, PyLong, PyString, PyTuple};
use rayon::prelude::*;
use serde_json::Value;

use crate::blocks::{FieldType, KindSpec, Spec};
use crate::buffer::{Buffer, IntoBuffer};
use crate::columns::{bytes_of, Ints, Strings};
use crate::handoff::{Col, Named};
use crate::formats::murmur::{self, Murmur};
use crate::line::{decide, decide_in, Kind};

/// Run `work` on a thread pool made for this call alone, so that no thread outlives it. A
/// process forked after a load (multiprocessing, Dask's fork workers, a test dropping its
/// privileges) then holds no global pool whose threads did not come along, which would hang.
fn in_pool<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    match rayon::ThreadPoolBuilder::new().build() {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
extern "C" {
    fn malloc_trim(pad: usize) -> std::os::raw::c_int;
}

/// Return to the system the heap memory a scan freed (glibc's `malloc_trim`; elsewhere nothing),
/// once its columns were handed to Python: `out`.
///
/// A scan's pool threads parse into pieces of columns that are joined and freed; glibc keeps
/// what they freed in each thread's arena, and the tables built next allocate through
/// pyarrow's own allocator (jemalloc), which cannot reuse it. Left there, it stays resident
/// under every table built after the scan: about 120 MiB at the peak of loading a 1.2 GB record.
/// Trimming takes a few milliseconds, so a scan of less than [`TRIMMED`] bytes (one session
/// file a conversation handle reads again) leaves it to the allocator.
fn release_freed<T>(read: u64, out: T) -> T {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if read >= TRIMMED {
        // SAFETY: malloc_trim only releases free memory of the allocator's own arenas.
        unsafe {
            malloc_trim(0);
        }
    }
    out
}

/// The bytes a scan reads from which what it freed is returned to the system.
const TRIMMED: u64 = 64 << 20;

fn to_py(py: Python<'_>, value: &Value) -> PyObject {
    match value {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py(py),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_py(py)
            } else if let Some(u) = n.as_u64() {
                u.into_py(py)
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_py(py)
            }
        }
        Value::String(s) => s.into_py(py),
        Value::Array(items) => PyList::new(py, items.iter().map(|v| to_py(py, v))).into_py(py),
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_py(py, v)).expect("a str key");
            }
            dict.into_py(py)
        }
    }
}

fn from_py(obj: &PyAny) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.downcast::<PyLong>().is_ok() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        // serde_json reads an integer beyond 64 bits as a double
        return Ok(serde_json::Number::from_f64(obj.extract::<f64>()?).map_or(Value::Null, Value::Number));
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        return Ok(serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_owned()));
    }
    if let Ok(items) = obj.downcast::<PyList>() {
        return items.iter().map(from_py).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    if let Ok(items) = obj.downcast::<PyTuple>() {
        return items.iter().map(from_py).collect::<PyResult<Vec<_>>>().map(Value::Array);
    }
    if let Ok(dict) = obj.downcast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in dict {
            let key = k.downcast::<PyString>().map_err(|_| PyTypeError::new_err("a JSON object key must be a str"))?;
            map.insert(key.to_str()?.to_owned(), from_py(v)?);
        }
        return Ok(Value::Object(map));
    }
    Err(PyTypeError::new_err(format!("{} is not a JSON value", obj.get_type().name()?)))
}

/// to_json(value) -> str: serde_json's `to_string` of a JSON-shaped Python value (keys sorted,
/// compact, numbers and escapes as serde_json writes them).
///
/// Raises:
///     TypeError: the value holds something JSON cannot.
#[pyfunction]
fn to_json(value: &PyAny) -> PyResult<String> {
    Ok(from_py(value)?.to_string())
}

/// lower_value(line) -> (role, content, id, source_id): `lower` of a line already parsed.
#[pyfunction]
fn lower_value(value: &PyDict) -> PyResult<(String, String, Option<String>, Option<String>)> {
    match from_py(value)? {
        Value::Object(map) if line::is_message(&Value::Object(map.clone())) => Ok(line::lower(&map)),
        _ => Err(PyValueError::new_err("not a message")),
    }
}

/// read_files(paths) -> list[bytes | None]: each path's bytes when it is a regular file read
/// whole, else `None` (nothing there, not a regular file, unreadable: the caller's careful
/// reader looks again and reports it); every file on the pool's threads, the GIL released.
#[pyfunction]
fn read_files<'py>(py: Python<'py>, paths: Vec<&[u8]>) -> Vec<PyObject> {
    use std::os::unix::ffi::OsStrExt;
    let paths: Vec<std::path::PathBuf> =
        paths.iter().map(|b| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b))).collect();
    let read = py.allow_threads(|| in_pool(|| files::many(&paths)));
    read.into_iter().map(|d| d.map_or_else(|| py.None(), |d| PyBytes::new(py, &d).into_py(py))).collect()
}

/// decide_line(line, first) -> int: what one record line is (0 blank, 1 message, 2 header,
/// 3 not a message, 4 invalid UTF-8). `line` excludes its "\n" and the "\r" of a "\r\n";
/// `first` is true for line 1 (the only line that can be the header).
#[pyfunction]
fn decide_line(line: &[u8], first: bool) -> u8 {
    decide_in(line, first, &bumpalo::Bump::new()).0 as u8
}

/// The bytes of a buffer exported to a call, read in place; `what` is the error for a buffer
/// that is not contiguous.
fn held_bytes<'b>(buffer: &'b pyo3::buffer::PyBuffer<u8>, what: &'static str) -> PyResult<&'b [u8]> {
    if !buffer.is_c_contiguous() {
        return Err(PyTypeError::new_err(what));
    }
    // SAFETY: the buffer is exported for as long as `buffer` is held (its owner, a bytearray,
    // array or bytes, cannot be resized or freed meanwhile) and is C-contiguous bytes of
    // `len_bytes()`.
    Ok(unsafe { std::slice::from_raw_parts(buffer.buf_ptr() as *const u8, buffer.len_bytes()) })
}

/// index_lines(data, limit, base, first) -> (starts, ends, skipped, header, lines, parsed_to,
/// bad_utf8): the record reader's index of `data[..limit]` (whole lines of a record found at
/// offset `base`): the
/// absolute offsets of its message lines as int64 bytes, the lines skipped and reported as
/// (1-based line within `data`, terminated), the header line's span, the number of lines,
/// the offset just past the last "\n" (or `base`), and whether a line is not UTF-8.
///
/// `data` is any contiguous bytes-like object (`bytes`, or a `bytearray` a reader fills again
/// for each stretch); it is held, unresizable, for the call.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn index_lines<'py>(
    py: Python<'py>,
    data: pyo3::buffer::PyBuffer<u8>,
    limit: usize,
    base: usize,
    first: bool,
) -> PyResult<(&'py PyBytes, &'py PyBytes, Vec<(usize, bool)>, Option<(usize, usize)>, usize, usize, bool)> {
    // Nothing else writes the buffer while the record reader decides it (its next stretch is
    // read into another buffer).
    let whole = held_bytes(&data, "index_lines reads a contiguous buffer")?;
    let data = &whole[..limit.min(whole.len())];
    let decided = py.allow_threads(|| in_pool(|| line::decide_all(data, first)));
    let (mut starts, mut ends, mut skipped) = (Vec::new(), Vec::new(), Vec::new());
    let (mut header, mut parsed_to, mut bad) = (None, base, false);
    for (n, &(s, e, next, kind)) in decided.iter().enumerate() {
        let terminated = next > e && data[next - 1] == b'\n';
        if terminated {
            parsed_to = base + next;
        }
        match kind {
            Kind::Blank => {}
            Kind::Message => {
                starts.push((base + s) as i64);
                ends.push((base + e) as i64);
            }
            Kind::Header => header = Some((s, e)),
            Kind::NotMessage => skipped.push((n + 1, terminated)),
            Kind::BadUtf8 => bad = true,
        }
    }
    Ok((
        PyBytes::new(py, bytes_of(&starts)),
        PyBytes::new(py, bytes_of(&ends)),
        skipped,
        header,
        decided.len(),
        parsed_to,
        bad,
    ))
}

/// index_coherent(starts, ends, skipped, size) -> bool: whether a persisted line index can
/// describe a file of `size` bytes, whatever its bytes: its message lines (`starts`, `ends`:
/// native int64 offsets, as many of each) each end at or after their start, each starts after
/// the one before ends, and all lie within the file; its runs of skipped lines (`skipped`:
/// int64 pairs of first line and length) are of lines from 1, at least one long, each after
/// the one before. Each column is given as bytes (any bytes-like object of format `B`).
#[pyfunction]
fn index_coherent(
    starts: pyo3::buffer::PyBuffer<u8>,
    ends: pyo3::buffer::PyBuffer<u8>,
    skipped: pyo3::buffer::PyBuffer<u8>,
    size: i64,
) -> PyResult<bool> {
    let what = "an index column is not contiguous";
    let (first, last, runs) = (held_bytes(&starts, what)?, held_bytes(&ends, what)?, held_bytes(&skipped, what)?);
    if first.len() % 8 != 0 || first.len() != last.len() || runs.len() % 16 != 0 {
        return Ok(false);
    }
    // Read in place, aligned or not: an index of a million lines is 16 MB of offsets.
    fn int(c: &[u8]) -> i64 {
        i64::from_ne_bytes(c.try_into().expect("8 bytes"))
    }
    fn ints(b: &[u8]) -> impl DoubleEndedIterator<Item = i64> + '_ {
        b.chunks_exact(8).map(int)
    }
    let ordered = ints(first).zip(ints(last)).all(|(s, e)| s <= e) && ints(first).skip(1).zip(ints(last)).all(|(s, e)| s > e);
    let within = ints(first).next().map_or(true, |s| s >= 0) && ints(last).next_back().map_or(true, |e| e <= size);
    let pairs = || runs.chunks_exact(16).map(|p| (int(&p[..8]), int(&p[8..])));
    let runs_ok = pairs().all(|(line, n)| line >= 1 && n >= 1)
        && pairs().zip(pairs().skip(1)).all(|(a, b)| b.0 > a.0.saturating_add(a.1));
    Ok(ordered && within && runs_ok)
}

/// parse(line) -> object: the line as serde_json reads it, as Python values.
///
/// Raises:
///     ValueError: serde_json refuses the line (or it is not UTF-8).
#[pyfunction]
fn parse(py: Python<'_>, line: &[u8]) -> PyResult<PyObject> {
    let text = std::str::from_utf8(line).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let value: Value = serde_json::from_str(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(to_py(py, &value))
}

/// header(line) -> dict | None: line 1 as murmur reads its record header (its struct, written
/// back with serde: `type`, `capsule`, `created_ms` and `truncated` when there is a marker), or
/// None when murmur would not read it as one.
#[pyfunction]
fn header(py: Python<'_>, line: &[u8]) -> Option<PyObject> {
    let found = line::header(std::str::from_utf8(line).ok()?)?;
    serde_json::to_value(found).ok().map(|v| to_py(py, &v))
}

/// lower(line) -> (role, content, id, source_id): the lifecycle message murmur hands a hook.
///
/// Raises:
///     ValueError: the line is not a message.
#[pyfunction]
fn lower(line: &[u8]) -> PyResult<(String, String, Option<String>, Option<String>)> {
    match decide(line, false) {
        (Kind::Message, Some(Value::Object(map))) => Ok(line::lower(&map)),
        _ => Err(PyValueError::new_err("not a message line")),
    }
}

/// uuid7_field(id) -> int | None: the 48-bit Unix-ms field of the UUIDv7 ending `id`, whatever
/// year it names (`None`: not a UUIDv7). Whether a time can hold it is the caller's to decide.
#[pyfunction]
fn uuid7_field(id: &str) -> Option<u64> {
    uuid7::uuid7_field(id.as_bytes())
}

/// A dialect's block rules, as `wire.block_rules` hands them over: (tags {tag: kind}, fields
/// {kind: [(wire key, required, is_str)]}, text kinds, string kind, call kind, result kind,
/// unknown kind, reasoning kind, text keys {kind: wire key}, server call kind, server result
/// kind, a tool result's default error flag).
type SpecArgs = (
    HashMap<String, String>,
    HashMap<String, Vec<(String, bool, bool)>>,
    Vec<String>,
    String,
    String,
    String,
    String,
    String,
    HashMap<String, String>,
    String,
    String,
    Option<bool>,
);

fn spec_of(args: SpecArgs, keep_text: bool) -> Spec {
    let (
        tags,
        fields,
        text_kinds,
        string_kind,
        call_kind,
        result_kind,
        unknown_kind,
        reasoning_kind,
        text_keys,
        server_call_kind,
        server_result_kind,
        result_error,
    ) = args;
    let mut spec = Spec {
        string_kind,
        call_kind,
        result_kind,
        unknown_kind,
        reasoning_kind,
        server_call_kind,
        server_result_kind,
        result_error,
        keep_text,
        ..Spec::default()
    };
    let mut names: Vec<String> = tags.values().cloned().collect();
    names.sort();
    names.dedup();
    for name in &names {
        let f = fields.get(name).cloned().unwrap_or_default();
        spec.kinds.push(KindSpec {
            name: name.clone(),
            fields: f
                .into_iter()
                .map(|(n, req, is_str)| (n, req, if is_str { FieldType::Str } else { FieldType::Any }))
                .collect(),
            counts_text: text_kinds.contains(name),
            text_key: text_keys.get(name).cloned().unwrap_or_else(|| "text".to_owned()),
        });
    }
    for (tag, kind) in tags {
        let i = names.iter().position(|n| *n == kind).expect("a listed kind");
        spec.tags.insert(tag, i);
    }
    spec
}

/// What a scanned record leaves besides its columns.
struct Left {
    rows: usize,
    events: usize,
    pairs: usize,
    lines: i64,
    diags: Vec<(i64, u8)>,
    title: Option<String>,
    header: Option<Vec<u8>>,
    error: Option<String>,
    pair_summary: (usize, usize, Vec<String>),
    pair_state: Option<pair::Saved>,
}

/// A record's rows (read by the murmur format) as the columns Python reads them by
/// (`ScannedGroup` in `_native.pyi`), and what else it leaves.
fn record_columns(mut r: lines::Rows) -> (Named, Left) {
    use std::mem::take;
    let walked = r.walked.take().unwrap_or_default();
    let p = walked.pairs;
    // The pairing's columns first, its texts read from the events' texts: each side's texts
    // are gathered while the other columns are made (a large record's pairing has hundreds of
    // thousands of rows, all made after its last block is read).
    let (ev_input, ev_result) = (take(&mut r.ev_input_text), take(&mut r.ev_result_text));
    let ((input_text, result_text), mut out) = rayon::join(
        || rayon::join(|| ev_input.gather(&p.input_text), || ev_result.gather(&p.result_text)),
        || paired_columns("pair_", (0..p.len()).map(|i| (&p, i))),
    );
    let pairs = p.len();
    drop(p);
    out.extend(paired_texts("pair_", Col::Strs(input_text), Col::Strs(result_text)));
    let mut int = |i: usize| take(&mut r.ints[i]);
    let (created_ms, n_blocks, text_chars) = (int(murmur::CREATED_MS), int(murmur::N_BLOCKS), int(murmur::TEXT_CHARS));
    let mut string = |i: usize| Col::Strs(take(&mut r.strs[i]));
    let (id, role, source_id) = (string(murmur::ID), string(murmur::ROLE), string(murmur::SOURCE_ID));
    let (text, reasoning) = (string(murmur::TEXT), string(murmur::REASONING));
    let micros = Ints { values: created_ms.values.iter().map(|ms| ms * 1000).collect(), valid: created_ms.valid.clone() };
    let left = Left {
        rows: r.rows(),
        events: r.ev_row.len(),
        pairs,
        lines: r.lines,
        diags: take(&mut r.diags),
        title: r.title.take(),
        header: r.header.take(),
        error: r.error.take(),
        pair_summary: walked.summary,
        pair_state: walked.state,
    };
    out.extend([
        ("line", Col::I64(take(&mut r.line_no))),
        ("created_us", Col::Ints(micros)),
        ("created_ms", Col::Ints(created_ms)),
        ("id", id),
        ("role", role),
        ("source_id", source_id),
        // every message has its block count and text characters: plain columns
        ("n_blocks", Col::I32(n_blocks.values.iter().map(|&n| n as i32).collect())),
        ("text_chars", Col::I64(text_chars.values)),
        ("kinds_offsets", Col::Offsets(take(&mut r.kinds_offsets))),
        ("kinds", Col::Values(take(&mut r.kinds))),
        ("text", text),
        ("reasoning_text", reasoning),
        ("ev_text_at", Col::I64(walked.text_at)),
    ].map(|(k, col)| (k.to_owned(), col)));
    out.extend(event_columns(&mut r));
    (out, left)
}

/// The tool event columns every format hands over (`ev_row`, `ev_call`, `ev_id`, `ev_name`,
/// `ev_error`, `ev_chars`, `ev_bytes`), moved out of `r`.
fn event_columns(r: &mut lines::Rows) -> Named {
    use std::mem::take;
    [
        ("ev_row", Col::I64(take(&mut r.ev_row))),
        ("ev_call", Col::U8(take(&mut r.ev_call))),
        ("ev_id", Col::Strs(take(&mut r.ev_id))),
        ("ev_name", Col::Strs(take(&mut r.ev_name))),
        ("ev_error", Col::Ints(take(&mut r.ev_error))),
        ("ev_chars", Col::Ints(take(&mut r.ev_chars))),
        ("ev_bytes", Col::Ints(take(&mut r.ev_bytes))),
    ]
    .into_iter()
    .map(|(k, col)| (k.to_owned(), col))
    .collect()
}

/// Pairing rows as the PAIRED columns but the texts, each named `prefix` + its name: the one
/// conversion of `pair::Rows` for the scan's pairing and the pairing walk's alike. `rows` are
/// `(rows, index)` in row order; [`paired_texts`] names the text columns.
fn paired_columns<'r>(prefix: &str, rows: impl Iterator<Item = (&'r pair::Rows, usize)> + Clone) -> Named {
    // Sizes first, so each column is allocated once (a large record has hundreds of thousands of rows).
    let (mut n, mut id_bytes, mut name_bytes) = (0, 0, 0);
    for (p, i) in rows.clone() {
        n += 1;
        id_bytes += p.call_id[i].len();
        name_bytes += p.name[i].as_deref().map_or(0, str::len);
    }
    let (mut call_id, mut name) = (Strings::with_capacity(n, id_bytes), Strings::with_capacity(n, name_bytes));
    let (mut kind, mut status) = (Strings::with_capacity(n, 6 * n), Strings::with_capacity(n, 7 * n));
    let ints = || Ints::with_capacity(n);
    let (mut called, mut result, mut is_error, mut chars, mut input_bytes) = (ints(), ints(), ints(), ints(), ints());
    for (p, i) in rows {
        call_id.push(Some(&p.call_id[i]));
        name.push(p.name[i].as_deref());
        kind.push(Some(if p.kind[i] == 0 { "client" } else { "server" }));
        status.push(Some(pair::STATUSES[p.status[i] as usize]));
        called.push(p.called_seq[i]);
        result.push(p.result_seq[i]);
        is_error.push(p.is_error[i].map(i64::from));
        chars.push(p.result_chars[i]);
        input_bytes.push(p.input_bytes[i]);
    }
    [
        ("call_id", Col::Strs(call_id)),
        ("tool_name", Col::Strs(name)),
        ("kind", Col::Strs(kind)),
        ("status", Col::Strs(status)),
        ("called_seq", Col::Ints(called)),
        ("result_seq", Col::Ints(result)),
        ("is_error", Col::Bools(is_error)),
        ("result_chars", Col::Ints(chars)),
        ("input_bytes", Col::Ints(input_bytes)),
    ]
    .into_iter()
    .map(|(k, col)| (format!("{prefix}{k}"), col))
    .collect()
}

/// The PAIRED text columns, in row order (the texts, or where they are), named as [`paired_columns`] names the rest.
fn paired_texts(prefix: &str, input_text: Col, result_text: Col) -> Named {
    vec![(format!("{prefix}input_text"), input_text), (format!("{prefix}result_text"), result_text)]
}

/// Named columns into `d`, as Python buffers.
fn columns_into(py: Python<'_>, d: &PyDict, cols: Named) -> PyResult<()> {
    for (key, col) in cols {
        d.set_item(key, col.into_py(py)?)?;
    }
    Ok(())
}

/// The first of each record's rows among a group's, and the end: `counts` cumulated from 0.
fn starts_of(counts: impl Iterator<Item = usize>) -> Vec<i64> {
    let mut out = vec![0i64];
    for n in counts {
        out.push(out.last().copied().unwrap_or(0) + n as i64);
    }
    out
}

/// One group of records, joined (`ScannedGroup` in `_native.pyi`): their columns once, where
/// each record's rows, events and pairing rows start, and per record what else it left.
fn group_dict<'py>(py: Python<'py>, cols: Named, left: Vec<Left>) -> PyResult<&'py PyDict> {
    let d = PyDict::new(py);
    d.set_item("records", left.len())?;
    d.set_item("row_starts", starts_of(left.iter().map(|l| l.rows)).into_buffer(py)?)?;
    d.set_item("event_starts", starts_of(left.iter().map(|l| l.events)).into_buffer(py)?)?;
    d.set_item("pair_starts", starts_of(left.iter().map(|l| l.pairs)).into_buffer(py)?)?;
    columns_into(py, d, cols)?;
    let mut lines = Vec::with_capacity(left.len());
    let (mut diags, mut titles, mut errors, mut summaries, mut states) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut headers: Vec<Option<PyObject>> = Vec::new();
    for l in left {
        lines.push(l.lines);
        diags.push(l.diags);
        titles.push(l.title);
        headers.push(l.header.as_ref().map(|h| PyBytes::new(py, h).into_py(py)));
        errors.push(l.error);
        summaries.push(l.pair_summary);
        states.push(Py::new(py, PyPairState { inner: l.pair_state })?);
    }
    d.set_item("lines", lines)?;
    d.set_item("diagnostics", diags)?;
    d.set_item("title", titles)?;
    d.set_item("header", headers)?;
    d.set_item("error", errors)?;
    d.set_item("pair_summary", summaries)?;
    d.set_item("pair_state", states)?;
    Ok(d)
}

/// scan_records(paths, spec, text, block_bytes=None, part_bytes=None) -> list[dict]: every record
/// decided and derived into columns, all records and all cores at once with the GIL released;
/// the records' columns joined into groups of consecutive records (one group unless a group's
/// strings would pass 32-bit offsets), each a dict of Arrow buffers. `text` false leaves the
/// text columns null (a lean scan). `block_bytes` reads in blocks of that many bytes, and
/// `part_bytes` leaves a column of strings of more bytes than that as the records' parts (the
/// engine's own sizes when `None`; what the columns hold is the same at any size).
#[pyfunction(block_bytes = "None", part_bytes = "None")]
#[pyo3(text_signature = "(paths, spec, text, block_bytes=None, part_bytes=None)")]
fn scan_records(
    py: Python<'_>,
    paths: Vec<&[u8]>,
    spec: SpecArgs,
    text: bool,
    block_bytes: Option<usize>,
    part_bytes: Option<usize>,
) -> PyResult<Vec<PyObject>> {
    use std::os::unix::ffi::OsStrExt;
    let format = Murmur { spec: spec_of(spec, text) };
    // Paths come as the file system's bytes (os.fsencode): a name that is not UTF-8 is read as it is.
    let paths: Vec<std::path::PathBuf> =
        paths.iter().map(|b| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b))).collect();
    let block = block_bytes.unwrap_or(lines::BLOCK).max(1);
    let (runs, left): (Vec<(usize, Named)>, Vec<Left>) = py.allow_threads(|| {
        in_pool(|| {
            let (named, left): (Vec<Named>, Vec<Left>) =
                paths.par_iter().map(|p| record_columns(lines::read(&format, p, 0, 1, text, block))).unzip();
            (handoff::join(named, part_bytes.unwrap_or(handoff::PART_BYTES)), left)
        })
    });
    let mut left = left.into_iter();
    let mut groups = Vec::with_capacity(runs.len());
    for (count, cols) in runs {
        groups.push(group_dict(py, cols, left.by_ref().take(count).collect())?.into_py(py));
    }
    Ok(release_freed(u64::MAX, groups))
}

/// What a file read by a line-delimited format leaves beside its columns.
struct FileLeft {
    rows: usize,
    events: usize,
    lines: i64,
    diags: Vec<(i64, u8)>,
    end: u64,
    size: u64,
    error: Option<String>,
}

/// A file's rows (read by a line-delimited format) as the columns Python reads them by
/// (`ScannedLines` in `_native.pyi`), and what else it leaves.
fn file_columns(format: &dyn lines::Format, mut r: lines::Rows) -> (Named, FileLeft) {
    use std::mem::take;
    let left = FileLeft {
        rows: r.rows(),
        events: r.ev_row.len(),
        lines: r.lines,
        diags: take(&mut r.diags),
        end: r.end,
        size: r.size,
        error: r.error.take(),
    };
    let mut out: Named = vec![("line".to_owned(), Col::I64(take(&mut r.line_no)))];
    out.extend(format.ints().iter().zip(take(&mut r.ints)).map(|(name, col)| ((*name).to_owned(), Col::Ints(col))));
    out.extend(format.strs().iter().zip(take(&mut r.strs)).map(|(name, col)| ((*name).to_owned(), Col::Strs(col))));
    out.extend([
        ("kinds_offsets", Col::Offsets(take(&mut r.kinds_offsets))),
        ("kinds", Col::Values(take(&mut r.kinds))),
        ("ev_kind", Col::U8(take(&mut r.ev_kind))),
        ("ev_input_text", Col::Strs(take(&mut r.ev_input_text))),
        ("ev_result_text", Col::Strs(take(&mut r.ev_result_text))),
    ].map(|(k, col)| (k.to_owned(), col)));
    out.extend(event_columns(&mut r));
    (out, left)
}

/// Files read by a line-delimited format, joined into groups as records are ([`handoff::join`]):
/// one dict per group (`ScannedLines` in `_native.pyi`), in file order.
fn line_groups(py: Python<'_>, files: Vec<(Named, FileLeft)>) -> PyResult<Vec<PyObject>> {
    let (named, left): (Vec<Named>, Vec<FileLeft>) = files.into_iter().unzip();
    let runs = py.allow_threads(|| in_pool(|| handoff::join(named, handoff::PART_BYTES)));
    let mut left = left.into_iter();
    let mut groups = Vec::with_capacity(runs.len());
    for (count, cols) in runs {
        let files: Vec<FileLeft> = left.by_ref().take(count).collect();
        let d = PyDict::new(py);
        d.set_item("files", files.len())?;
        d.set_item("row_starts", starts_of(files.iter().map(|f| f.rows)).into_buffer(py)?)?;
        d.set_item("event_starts", starts_of(files.iter().map(|f| f.events)).into_buffer(py)?)?;
        columns_into(py, d, cols)?;
        d.set_item("lines", files.iter().map(|f| f.lines).collect::<Vec<_>>())?;
        d.set_item("end", files.iter().map(|f| f.end).collect::<Vec<_>>())?;
        d.set_item("size", files.iter().map(|f| f.size).collect::<Vec<_>>())?;
        let (diags, errors): (Vec<_>, Vec<_>) = files.into_iter().map(|f| (f.diags, f.error)).unzip();
        d.set_item("diagnostics", diags)?;
        d.set_item("error", errors)?;
        groups.push(d.into_py(py));
    }
    Ok(groups)
}

/// The format named `name`, reading content blocks by `rules` where it reads any.
fn line_format(name: &str, rules: Option<SpecArgs>, text: bool) -> PyResult<Box<dyn lines::Format>> {
    formats::by_name(name, rules.map(|r| spec_of(r, text))).map_err(PyValueError::new_err)
}

/// scan_lines(format, paths, starts, text, rules=None) -> list[dict]: every file of a
/// line-delimited `format` read from its `(byte offset, line number)` start into the format's
/// declared columns, all files and all cores at once with the GIL released; the files' columns
/// joined into groups of consecutive files (one group unless a group's strings would pass 32-bit
/// offsets), each a dict of Arrow buffers. `text` false leaves the text columns null (a lean read).
/// `rules`: the block rules of a format that reads content blocks (`wire.block_rules`).
#[pyfunction(rules = "None")]
#[pyo3(text_signature = "(format, paths, starts, text, rules=None)")]
fn scan_lines(
    py: Python<'_>,
    format: &str,
    paths: Vec<&[u8]>,
    starts: Vec<(u64, i64)>,
    text: bool,
    rules: Option<SpecArgs>,
) -> PyResult<Vec<PyObject>> {
    use std::os::unix::ffi::OsStrExt;
    let format = line_format(format, rules, text)?;
    let format = format.as_ref();
    if starts.len() != paths.len() {
        return Err(PyValueError::new_err("one start per path"));
    }
    let paths: Vec<std::path::PathBuf> =
        paths.iter().map(|b| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b))).collect();
    let out: Vec<(Named, FileLeft)> = py.allow_threads(|| {
        in_pool(|| {
            paths
                .par_iter()
                .zip(&starts)
                .map(|(p, &(at, n))| file_columns(format, lines::read(format, p, at, n, text, lines::BLOCK)))
                .collect()
        })
    });
    let read = out.iter().zip(&starts).map(|((_, f), &(at, _))| f.size.saturating_sub(at)).sum();
    Ok(release_freed(read, line_groups(py, out)?))
}

/// scan_data(format, datas, text, first_lines=None, rules=None) -> list[dict]: like
/// `scan_lines` (groups of the datas' columns), of whole lines already in memory (a
/// decompressed file, a range of a file), each numbered from its `first_lines` entry (default 1).
#[pyfunction(first_lines = "None", rules = "None")]
#[pyo3(text_signature = "(format, datas, text, first_lines=None, rules=None)")]
fn scan_data(
    py: Python<'_>,
    format: &str,
    datas: Vec<&[u8]>,
    text: bool,
    first_lines: Option<Vec<i64>>,
    rules: Option<SpecArgs>,
) -> PyResult<Vec<PyObject>> {
    let format = line_format(format, rules, text)?;
    let format = format.as_ref();
    let firsts = first_lines.unwrap_or_else(|| vec![1; datas.len()]);
    if firsts.len() != datas.len() {
        return Err(PyValueError::new_err("first_lines must give one line number per data"));
    }
    let out: Vec<(Named, FileLeft)> = py.allow_threads(|| {
        in_pool(|| {
            datas.par_iter().zip(&firsts).map(|(d, &n)| file_columns(format, lines::read_bytes(format, d, n, text))).collect()
        })
    });
    let read = datas.iter().map(|d| d.len() as u64).sum();
    Ok(release_freed(read, line_groups(py, out)?))
}

/// A value of a parsed line as Python values, as [`to_py`] makes them of a `Value` (an object's
/// keys in the order written, a repeated key's last value).
fn json_py(py: Python<'_>, value: &json::Json<'_>) -> PyObject {
    use json::Json;
    match value {
        Json::Null => py.None(),
        Json::Bool(b) => b.into_py(py),
        Json::Number(n) => to_py(py, &Value::Number(n.clone())),
        Json::Str(s) => s.into_py(py),
        Json::Array(items) => PyList::new(py, items.iter().map(|v| json_py(py, v))).into_py(py),
        Json::Object(entries) => {
            let dict = PyDict::new(py);
            for (k, v) in entries.iter() {
                dict.set_item(k, json_py(py, v)).expect("a str key");
            }
            dict.into_py(py)
        }
    }
}

/// A Codex block as the tuple `codex_blocks` hands over.
fn codex_part(py: Python<'_>, part: &formats::codex::Part<'_>) -> PyObject {
    use formats::codex::Part;
    match part {
        Part::Text(t) => ("text", *t).into_py(py),
        Part::Image(url) => ("image", url.map(|u| json_py(py, u))).into_py(py),
        Part::Thinking(t) => ("thinking", *t).into_py(py),
        Part::Redacted(data) => ("redacted_thinking", *data).into_py(py),
        Part::Call { id, name, input } => {
            let input = match input {
                // JSON text as written: its value where serde_json reads one, else the text itself
                Some(lines::Text::Str(s)) => match serde_json::from_str::<Value>(s) {
                    Ok(value) => to_py(py, &value),
                    Err(_) => s.as_ref().into_py(py),
                },
                Some(lines::Text::Json(value)) => json_py(py, value),
                Some(lines::Text::Joined(parts)) => parts.join("\n").into_py(py),
                None => py.None(),
            };
            ("tool_use", id.as_ref(), name.as_deref(), input).into_py(py)
        }
        Part::Output { id, texts, is_error, .. } => {
            ("tool_result", id.as_ref(), PyList::new(py, texts.iter()), *is_error).into_py(py)
        }
        Part::Other { value, .. } => ("unknown", json_py(py, value)).into_py(py),
    }
}

/// codex_blocks(lines) -> list[list[tuple] | None]: each Codex line's blocks, read by the rules
/// the `codex` format reads its rows by (`formats/codex.rs`, [`formats::codex::line_parts`]):
/// `("text", str)`, `("image", image_url)`, `("thinking", str)`, `("redacted_thinking", data)`,
/// `("tool_use", call_id, name | None, input)`, `("tool_result", call_id, [text, ...], is_error)`,
/// `("unknown", value)`. `None` for a line serde_json does not read as an object.
#[pyfunction]
fn codex_blocks(py: Python<'_>, lines: Vec<&[u8]>) -> Vec<Option<Vec<PyObject>>> {
    let mut arena = bumpalo::Bump::new();
    lines
        .iter()
        .map(|line| {
            arena.reset();
            let text = std::str::from_utf8(line).ok()?;
            let value = json::parse(text, &arena).ok().filter(|v| matches!(v, json::Json::Object(_)))?;
            let value = arena.alloc(value);
            Some(formats::codex::line_parts(value, &arena).iter().map(|p| codex_part(py, p)).collect())
        })
        .collect()
}

/// line_columns(format) -> (ints, strs): the integer and string columns `format` declares.
#[pyfunction]
fn line_columns(format: &str) -> PyResult<(Vec<&'static str>, Vec<&'static str>)> {
    let format = formats::by_name(format, Some(Spec::default())).map_err(PyValueError::new_err)?;
    Ok((format.ints().to_vec(), format.strs().to_vec()))
}

/// messages(data, first) -> (list[(line, value)], list[(line, code)]): the message lines of
/// `data` (whole lines of a record, from line 1 when `first`) parsed by serde_json as Python
/// values, and the lines skipped and reported (the codes of `line`).
#[pyfunction]
fn messages(py: Python<'_>, data: &[u8], first: bool) -> (Vec<(i64, PyObject)>, Vec<(i64, u8)>) {
    type Decided = (i64, Kind, Option<Value>, bool);
    let decided: Vec<Decided> = py.allow_threads(|| in_pool(|| {
        let pieces = lines::cut(data, data.len());
        let per_piece: Vec<Vec<Decided>> = pieces
            .par_iter()
            .enumerate()
            .map(|(i, &(s, e))| {
                line::spans(&data[s..e])
                    .enumerate()
                    .map(|(n, span)| {
                        let (kind, value) =
                            decide(&data[s + span.start..s + span.end], first && i == 0 && n == 0);
                        (n as i64 + 1, kind, value, span.terminated)
                    })
                    .collect()
            })
            .collect();
        let mut base = 0;
        let mut out = Vec::new();
        for piece in per_piece {
            let lines = piece.len() as i64;
            out.extend(piece.into_iter().map(|(n, k, v, t)| (n + base, k, v, t)));
            base += lines;
        }
        out
    }));
    let mut values = Vec::new();
    let mut diags = Vec::new();
    for (n, kind, value, terminated) in decided {
        match (kind, value) {
            (Kind::Message, Some(v)) => values.push((n, to_py(py, &v))),
            (Kind::NotMessage | Kind::BadUtf8, _) => diags.push((n, line::skipped(kind, terminated))),
            _ => {}
        }
    }
    (values, diags)
}

/// message_runs(sides, index, side) -> list[int]: the message index of each entry of `sides`
/// (the message-run rule, `pair::MessageRuns`), going on from the last entry's `index` and
/// `side` (-1 and None before any).
#[pyfunction]
fn message_runs(sides: Vec<&str>, index: i64, side: Option<String>) -> Vec<i64> {
    let mut runs = pair::MessageRuns { index, side };
    sides.into_iter().map(|s| runs.next(s)).collect()
}

/// What a finished pairing walk leaves for a walk of the entries after it (`pair::Saved`).
/// A walk resumed from it takes it over: it can be used once.
#[pyclass(name = "PairState")]
struct PyPairState {
    inner: Option<pair::Saved>,
}

impl PyPairState {
    fn held(&self) -> PyResult<&pair::Saved> {
        self.inner.as_ref().ok_or_else(|| PyValueError::new_err("this pairing state was taken by a walk"))
    }
}

#[pymethods]
impl PyPairState {
    /// The state before any entry.
    #[new]
    fn new() -> Self {
        PyPairState { inner: Some(pair::Pairer::new().save(pair::MessageRuns::default())) }
    }

    /// to_bytes() -> bytes: the state in its versioned format.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<&'py PyBytes> {
        Ok(PyBytes::new(py, &self.held()?.to_bytes()))
    }

    /// from_bytes(data) -> PairState: a state `to_bytes` wrote.
    ///
    /// Raises:
    ///     ValueError: not a state of the version this build reads.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        pair::Saved::from_bytes(data).map(|s| PyPairState { inner: Some(s) }).map_err(PyValueError::new_err)
    }

    /// The pairing rows made before it.
    #[getter]
    fn rows(&self) -> PyResult<usize> {
        Ok(self.held()?.rows)
    }

    /// The message-run state after the last entry: (message index, side), (-1, None) before any.
    #[getter]
    fn runs(&self) -> PyResult<(i64, Option<String>)> {
        let runs = &self.held()?.runs;
        Ok((runs.index, runs.side.clone()))
    }
}

/// The pairing walk of the assembly core, fed tool events as columns (see `pair.rs`).
#[pyclass(name = "Pairer")]
struct PyPairer {
    inner: pair::Pairer,
    /// whether `save` moved the walk's state out
    saved: bool,
}

impl PyPairer {
    /// `Err` once `save` moved the walk's state out.
    fn live(&self) -> PyResult<()> {
        if self.saved {
            return Err(PyValueError::new_err("this pairing walk was saved: it goes on in the state it left"));
        }
        Ok(())
    }
}

#[pymethods]
impl PyPairer {
    /// A walk from the first entry, or going on from `state` (which it takes over).
    #[new]
    fn new(state: Option<PyRefMut<'_, PyPairState>>) -> PyResult<Self> {
        let inner = match state {
            None => pair::Pairer::new(),
            Some(mut state) => {
                state.held()?;
                pair::Pairer::resume(state.inner.take().expect("held")).0
            }
        };
        Ok(PyPairer { inner, saved: false })
    }

    /// feed(positions, messages, call, kind, ids, names, errors, chars, input_bytes, inputs, texts):
    /// events in order, each with its entry's position and run (message) index; `kind` 0 is
    /// client, 1 server; `inputs` the index of each call's kept input, if any; `texts` the index
    /// of each event's kept text (a call's input as JSON text, a result's text), if any: the
    /// caller keeps the inputs and texts, the walk only where they are.
    #[allow(clippy::too_many_arguments)]
    fn feed(
        &mut self,
        positions: Vec<i64>,
        messages: Vec<i64>,
        call: Vec<bool>,
        kind: Vec<u8>,
        ids: Vec<String>,
        names: Vec<Option<String>>,
        errors: Vec<Option<bool>>,
        chars: Vec<Option<i64>>,
        input_bytes: Vec<Option<i64>>,
        inputs: Option<Vec<Option<i64>>>,
        texts: Option<Vec<Option<i64>>>,
    ) -> PyResult<()> {
        self.live()?;
        let n = ids.len();
        if [positions.len(), messages.len(), call.len(), kind.len(), names.len(), errors.len(), chars.len(),
            input_bytes.len()]
            .iter()
            .any(|&m| m != n)
        {
            return Err(PyValueError::new_err("event columns of different lengths"));
        }
        for (i, id) in ids.into_iter().enumerate() {
            let event = pair::Event {
                position: positions[i],
                call: call[i],
                kind: kind[i],
                id,
                name: names[i].clone(),
                is_error: errors[i],
                chars: chars[i],
                input_bytes: input_bytes[i],
                input: inputs.as_ref().and_then(|v| v[i]),
                text: texts.as_ref().and_then(|v| v[i]),
            };
            self.inner.feed(messages[i], event);
        }
        Ok(())
    }

    /// The ids assembly would drop from what was fed so far, in the order met.
    fn dropped_orphans(&self) -> Vec<String> {
        self.inner.dropped_orphans()
    }

    /// finish() -> dict of columns: close the last run; every row (the ToolCall fields, each
    /// text as the index `feed` was given for it), then one row per result answering a call of
    /// the rows before a resumed walk (`answered` names those calls' rows), the counts
    /// (`summary`) and whether the walk is `exact`.
    fn finish(&mut self, py: Python<'_>) -> PyResult<PyObject> {
        self.live()?;
        self.inner.finish();
        let summary = self.inner.summary();
        // the answers after the rows (copied only when there are any: a resumed walk)
        let rows: Cow<'_, pair::Rows> = if self.inner.answers.len() == 0 {
            Cow::Borrowed(&self.inner.rows)
        } else {
            let mut all = self.inner.rows.clone();
            all.extend(&self.inner.answers);
            Cow::Owned(all)
        };
        let d = PyDict::new(py);
        d.set_item("call_id", &rows.call_id)?;
        d.set_item("tool_name", &rows.name)?;
        let kinds: Vec<&str> = rows.kind.iter().map(|k| if *k == 0 { "client" } else { "server" }).collect();
        d.set_item("kind", kinds)?;
        d.set_item("called_seq", &rows.called_seq)?;
        d.set_item("result_seq", &rows.result_seq)?;
        d.set_item("called_message", &rows.called_message)?;
        d.set_item("result_message", &rows.result_message)?;
        let statuses: Vec<&str> = rows.status.iter().map(|s| pair::STATUSES[*s as usize]).collect();
        d.set_item("status", statuses)?;
        d.set_item("is_error", &rows.is_error)?;
        d.set_item("input", &rows.input)?;
        d.set_item("result_chars", &rows.result_chars)?;
        d.set_item("input_bytes", &rows.input_bytes)?;
        d.set_item("input_text", &rows.input_text)?;
        d.set_item("result_text", &rows.result_text)?;
        d.set_item("summary", summary)?;
        d.set_item("answered", &self.inner.answered)?;
        d.set_item("exact", self.inner.exact())?;
        Ok(d.into_py(py))
    }

    /// finish_arrow_many(walks) -> dict: like `finish` of every walk at once, their rows one after
    /// the other as one set of PAIRED columns (`call_id`, `tool_name`, `kind`, `called_seq`,
    /// `result_seq`, `status`, `is_error`, `result_chars`, `input_bytes`, and `input_text`,
    /// `result_text` as the texts' indexes) in Arrow buffers (no Python object per row),
    /// `row_starts` (where each walk's rows begin, and the end), and per walk its `summary`,
    /// `answered` and `exact` (lists).
    #[staticmethod]
    fn finish_arrow_many(py: Python<'_>, walks: Vec<PyRefMut<'_, Self>>) -> PyResult<PyObject> {
        Ok(finish_walks(py, walks)?.into_py(py))
    }

    /// save(index, side) -> PairState: after `finish`, what a walk of the entries after these
    /// needs, with the message-run state after the last entry (`index`, `side`). The walk's
    /// open calls move into the state: it is saved once.
    ///
    /// Raises:
    ///     ValueError: the walk was saved already.
    fn save(&mut self, index: i64, side: Option<String>) -> PyResult<PyPairState> {
        self.live()?;
        self.saved = true;
        Ok(PyPairState { inner: Some(self.inner.save(pair::MessageRuns { index, side })) })
    }
}

/// Close every walk's last run; their rows (each walk's own, then its answers) as one set of
/// PAIRED columns with the texts' indexes, `row_starts`, and per walk `summary`, `answered`, `exact`.
fn finish_walks<'py>(py: Python<'py>, mut walks: Vec<PyRefMut<'_, PyPairer>>) -> PyResult<&'py PyDict> {
    for walk in walks.iter_mut() {
        walk.live()?;
        walk.inner.finish();
    }
    let walks: Vec<&PyPairer> = walks.iter().map(|w| &**w).collect();
    let all = || {
        walks.iter().flat_map(|w| {
            let (own, answers) = (&w.inner.rows, &w.inner.answers);
            (0..own.len()).map(move |i| (own, i)).chain((0..answers.len()).map(move |i| (answers, i)))
        })
    };
    let (mut input_text, mut result_text) = (Ints::default(), Ints::default());
    for (rows, i) in all() {
        input_text.push(rows.input_text[i]);
        result_text.push(rows.result_text[i]);
    }
    let d = PyDict::new(py);
    columns_into(py, d, paired_columns("", all()))?;
    columns_into(py, d, paired_texts("", Col::Ints(input_text), Col::Ints(result_text)))?;
    d.set_item("row_starts", starts_of(walks.iter().map(|w| w.inner.rows.len() + w.inner.answers.len())))?;
    d.set_item("summary", walks.iter().map(|w| w.inner.summary()).collect::<Vec<_>>())?;
    d.set_item("answered", walks.iter().map(|w| w.inner.answered.clone()).collect::<Vec<_>>())?;
    d.set_item("exact", walks.iter().map(|w| w.inner.exact()).collect::<Vec<_>>())?;
    Ok(d)
}

/// git_log(data, end, pending, before) -> (shas, times, parents, changes, pending): the whole
/// records of `git log -z --raw` output in `data[:end]` (see `gitlog.rs`).
///
/// `times` are ints, `parents` tuples of str, `changes` `(owner, path bytes, mode, blob, status)`
/// with `owner` counted over the whole output; `pending` is a change line whose path is the
/// next run's first record. `pending` in: the one the run before ended with; `before`: the
/// commits read before.
///
/// Raises:
///     ValueError: `("output" | "header", record)`, the record that is not what git log writes.
#[pyfunction]
#[allow(clippy::type_complexity)]
fn git_log<'py>(
    py: Python<'py>,
    data: &[u8],
    end: usize,
    pending: Option<&[u8]>,
    before: usize,
) -> PyResult<(&'py PyList, &'py PyList, &'py PyList, &'py PyList, Option<&'py PyBytes>)> {
    let read = gitlog::records(&data[..end.min(data.len())], pending, before).map_err(|bad| {
        let (kind, record) = match bad {
            gitlog::Bad::Output(r) => ("output", r),
            gitlog::Bad::Header(r) => ("header", r),
        };
        PyValueError::new_err((kind, PyBytes::new(py, record).to_object(py)))
    })?;
    let shas = PyList::new(py, read.headers.iter().map(|h| h.sha));
    let mut times = Vec::with_capacity(read.headers.len());
    for h in &read.headers {
        times.push(match h.time.parse::<i64>() {
            Ok(t) => t.to_object(py),
            Err(_) => py.get_type::<PyLong>().call1((h.time,))?.to_object(py), // past int64: as written
        });
    }
    let parents = PyList::new(py, read.headers.iter().map(|h| PyTuple::new(py, &h.parents)));
    let changes = PyList::new(
        py,
        read.changes.iter().map(|c| (c.owner, PyBytes::new(py, c.path), c.mode, c.blob, c.status).to_object(py)),
    );
    Ok((shas, PyList::new(py, times), parents, changes, read.pending.map(|p| PyBytes::new(py, p))))
}

#[pymodule]
fn _native(_py: Python<'_>, m: &PyModule) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decide_line, m)?)?;
    m.add_function(wrap_pyfunction!(header, m)?)?;
    m.add_function(wrap_pyfunction!(index_lines, m)?)?;
    m.add_function(wrap_pyfunction!(index_coherent, m)?)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(lower, m)?)?;
    m.add_function(wrap_pyfunction!(uuid7_field, m)?)?;
    m.add_function(wrap_pyfunction!(to_json, m)?)?;
    m.add_function(wrap_pyfunction!(lower_value, m)?)?;
    m.add_function(wrap_pyfunction!(scan_records, m)?)?;
    m.add_function(wrap_pyfunction!(messages, m)?)?;
    m.add_function(wrap_pyfunction!(scan_lines, m)?)?;
    m.add_function(wrap_pyfunction!(line_columns, m)?)?;
    m.add_function(wrap_pyfunction!(scan_data, m)?)?;
    m.add_function(wrap_pyfunction!(read_files, m)?)?;
    m.add_function(wrap_pyfunction!(message_runs, m)?)?;
    m.add_function(wrap_pyfunction!(codex_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(git_log, m)?)?;
    m.add_class::<PyPairer>()?;
    m.add_class::<PyPairState>()?;
    m.add_class::<Buffer>()?;
    m.add("BLOCK", lines::BLOCK)?;
    Ok(())
}
