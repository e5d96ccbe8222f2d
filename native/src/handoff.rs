//! How scanned columns leave for Python: each column in the layout Arrow reads, and the columns
//! of many records joined into one set per group, so Python wraps every column once for a group
//! of records instead of once per record, and each record's columns are slices of it.

use pyo3::prelude::*;
use rayon::prelude::*;

use crate::buffer::IntoBuffer;
use crate::columns::{bitmap, Ints, Strings};

/// Columns of strings holding more bytes than this stay as their records' parts (by default).
pub const PART_BYTES: usize = 8 << 20;

/// One column of a scan, before it becomes Python buffers.
pub enum Col {
    /// plain 64-bit values (no nulls)
    I64(Vec<i64>),
    /// plain 32-bit values (no nulls)
    I32(Vec<i32>),
    /// plain bytes (no nulls)
    U8(Vec<u8>),
    /// a list column's offsets (one more than its rows, from 0)
    Offsets(Vec<i32>),
    /// nullable 64-bit integers
    Ints(Ints),
    /// nullable booleans, held as 0 and 1
    Bools(Ints),
    /// nullable strings
    Strs(Strings),
    /// the strings that are a list column's values: always joined, since the list's offsets
    /// (an [`Col::Offsets`] column) count them across the group
    Values(Strings),
    /// a column of strings left as its records' parts (see [`join`])
    Parts(Vec<Col>),
}

impl Col {
    /// How far this column's 32-bit offsets reach (0 for a column without offsets).
    pub fn reach(&self) -> usize {
        match self {
            Col::Strs(s) | Col::Values(s) => s.data.len(),
            Col::Offsets(o) => o.last().copied().unwrap_or(0) as usize,
            _ => 0,
        }
    }

    /// The columns `parts` (the same column of consecutive records) as one, each part's rows
    /// after the rows of the one before; sizes are known first, so every vector is allocated
    /// once. Strings of more than `part_bytes` in all stay parts: joining them would copy
    /// most of what was read, and a column that large costs little to take part by part. A
    /// column of one record is that record's, moved (a single large record is most of a load).
    pub fn concat(mut parts: Vec<Col>, part_bytes: usize) -> Col {
        if parts.len() == 1 && !(matches!(parts[0], Col::Strs(_)) && parts[0].reach() > part_bytes) {
            return parts.pop().expect("one part");
        }
        macro_rules! each {
            ($variant:ident) => {
                parts
                    .into_iter()
                    .map(|c| match c {
                        Col::$variant(v) => v,
                        _ => unreachable!("a column is joined with the same column of the next record"),
                    })
                    .collect()
            };
        }
        match parts.first() {
            None => Col::I64(Vec::new()),
            Some(Col::I64(_)) => Col::I64(plain(each!(I64))),
            Some(Col::I32(_)) => Col::I32(plain(each!(I32))),
            Some(Col::U8(_)) => Col::U8(plain(each!(U8))),
            Some(Col::Offsets(_)) => Col::Offsets(offsets(each!(Offsets))),
            Some(Col::Ints(_)) => Col::Ints(nullable(each!(Ints))),
            Some(Col::Bools(_)) => Col::Bools(nullable(each!(Bools))),
            Some(Col::Strs(_)) if parts.iter().map(Col::reach).sum::<usize>() > part_bytes => Col::Parts(parts),
            Some(Col::Strs(_)) => Col::Strs(strings(each!(Strs))),
            Some(Col::Values(_)) => Col::Values(strings(each!(Values))),
            Some(Col::Parts(_)) => unreachable!("parts are made by joining"),
        }
    }

    /// The column as Python buffers: a buffer for a plain column, `(validity, values)` for a
    /// nullable number, `(validity, offsets, data)` for strings. The vectors are moved, not copied.
    pub fn into_py(self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(match self {
            Col::I64(v) => v.into_buffer(py)?.into_py(py),
            Col::I32(v) => v.into_buffer(py)?.into_py(py),
            Col::U8(v) => v.into_buffer(py)?.into_py(py),
            Col::Offsets(v) => (if v.is_empty() { vec![0] } else { v }).into_buffer(py)?.into_py(py),
            Col::Ints(c) => (bitmap(&c.valid).into_buffer(py)?, c.values.into_buffer(py)?).into_py(py),
            Col::Bools(c) => {
                let values: Vec<bool> = c.values.iter().map(|v| *v != 0).collect();
                (bitmap(&c.valid).into_buffer(py)?, bitmap(&values).into_buffer(py)?).into_py(py)
            }
            Col::Strs(s) | Col::Values(s) => {
                let offsets = if s.offsets.is_empty() { vec![0] } else { s.offsets };
                (bitmap(&s.valid).into_buffer(py)?, offsets.into_buffer(py)?, s.data.into_buffer(py)?).into_py(py)
            }
            Col::Parts(parts) => parts.into_iter().map(|p| p.into_py(py)).collect::<PyResult<Vec<_>>>()?.into_py(py),
        })
    }
}

fn plain<T: Copy>(parts: Vec<Vec<T>>) -> Vec<T> {
    let mut out = Vec::with_capacity(parts.iter().map(Vec::len).sum());
    for p in parts {
        out.extend_from_slice(&p);
    }
    out
}

fn nullable(parts: Vec<Ints>) -> Ints {
    let n = parts.iter().map(|p| p.values.len()).sum();
    let mut out = Ints::with_capacity(n);
    for p in parts {
        out.values.extend_from_slice(&p.values);
        out.valid.extend_from_slice(&p.valid);
    }
    out
}

/// List offsets joined: each part's (from 0) carried on from where the part before ends.
fn offsets(parts: Vec<Vec<i32>>) -> Vec<i32> {
    let mut out = Vec::with_capacity(1 + parts.iter().map(|p| p.len().saturating_sub(1)).sum::<usize>());
    out.push(0);
    for p in parts {
        let base = *out.last().expect("from 0");
        out.extend(p.iter().skip(1).map(|o| o + base));
    }
    out
}

fn strings(parts: Vec<Strings>) -> Strings {
    let rows: usize = parts.iter().map(Strings::len).sum();
    let mut out = Strings::with_capacity(rows, parts.iter().map(|p| p.data.len()).sum());
    out.offsets.push(0);
    for p in &parts {
        let base = out.data.len() as i32;
        out.offsets.extend(p.offsets.iter().skip(1).map(|o| o + base));
        out.valid.extend_from_slice(&p.valid);
        out.data.extend_from_slice(&p.data);
    }
    out
}

/// Named columns, in the order they were made.
pub type Named = Vec<(String, Col)>;

/// The records' columns cut into runs of consecutive records, each run's columns joined (or left
/// as parts past `part_bytes`: [`Col::concat`]): a run ends before a record whose columns would
/// take some 32-bit offsets past `i32::MAX`. `records` all name the same columns in the same order.
pub fn join(records: Vec<Named>, part_bytes: usize) -> Vec<(usize, Named)> {
    join_within(records, i32::MAX as usize, part_bytes)
}

/// [`join`], a run's offsets reaching at most `limit`.
fn join_within(records: Vec<Named>, limit: usize, part_bytes: usize) -> Vec<(usize, Named)> {
    // The runs, as counts of records: a record joins the run before while every offset fits.
    let mut counts: Vec<usize> = Vec::new();
    let mut reach: Vec<usize> = Vec::new();
    for cols in &records {
        if !counts.is_empty() && cols.iter().zip(&reach).all(|((_, c), r)| r + c.reach() <= limit) {
            *counts.last_mut().expect("a run") += 1;
            reach.iter_mut().zip(cols).for_each(|(r, (_, c))| *r += c.reach());
        } else {
            counts.push(1);
            reach = cols.iter().map(|(_, c)| c.reach()).collect();
        }
    }
    let mut records = records.into_iter();
    counts
        .into_iter()
        .map(|count| {
            let run: Vec<Named> = records.by_ref().take(count).collect();
            let names: Vec<String> = run[0].iter().map(|(k, _)| k.clone()).collect();
            // each column of the run, as the list of its records' parts
            let mut parts: Vec<Vec<Col>> = names.iter().map(|_| Vec::with_capacity(count)).collect();
            for cols in run {
                for (into, (_, col)) in parts.iter_mut().zip(cols) {
                    into.push(col);
                }
            }
            let joined: Vec<Col> = parts.into_par_iter().map(|p| Col::concat(p, part_bytes)).collect();
            (count, names.into_iter().zip(joined).collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{join, join_within, Col, Named, PART_BYTES};
    use crate::columns::{Ints, Strings};

    fn record(texts: &[Option<&str>], kinds: &[i32]) -> Named {
        let mut s = Strings::default();
        let mut n = Ints::default();
        for (i, t) in texts.iter().enumerate() {
            s.push(*t);
            n.push(t.map(|_| i as i64));
        }
        vec![("text".into(), Col::Strs(s)), ("n".into(), Col::Ints(n)), ("kinds".into(), Col::Offsets(kinds.to_vec()))]
    }

    /// Joined records read as the records one after the other: each string where it was, nulls
    /// kept, list offsets carried on from the record before.
    #[test]
    fn joined_records_are_their_rows_in_order() {
        let runs =
            join(vec![record(&[Some("ab"), None], &[0, 2, 3]), record(&[], &[]), record(&[Some("γ")], &[0, 1])], PART_BYTES);
        assert_eq!(runs.len(), 1);
        let (count, cols) = &runs[0];
        assert_eq!(*count, 3);
        match &cols[0].1 {
            Col::Strs(s) => {
                assert_eq!((0..s.len()).map(|i| s.get(i)).collect::<Vec<_>>(), vec![Some("ab"), None, Some("γ")]);
                assert_eq!(s.offsets, vec![0, 2, 2, 4]);
            }
            _ => panic!("strings"),
        }
        match &cols[1].1 {
            Col::Ints(n) => assert_eq!((n.values.clone(), n.valid.clone()), (vec![0, 0, 0], vec![true, false, true])),
            _ => panic!("ints"),
        }
        match &cols[2].1 {
            Col::Offsets(o) => assert_eq!(o, &vec![0, 2, 3, 4]),
            _ => panic!("offsets"),
        }
    }

    /// A run of one record hands over that record's columns as they are: moved, not copied.
    #[test]
    fn one_record_s_columns_are_moved() {
        let cols = record(&[Some("ab"), None, Some("γ")], &[0, 1, 3, 3]);
        let addresses: Vec<usize> = cols
            .iter()
            .map(|(_, c)| match c {
                Col::Strs(s) => s.data.as_ptr() as usize,
                Col::Ints(n) => n.values.as_ptr() as usize,
                Col::Offsets(o) => o.as_ptr() as usize,
                _ => unreachable!(),
            })
            .collect();
        let runs = join(vec![cols], PART_BYTES);
        let moved: Vec<usize> = runs[0]
            .1
            .iter()
            .map(|(_, c)| match c {
                Col::Strs(s) => s.data.as_ptr() as usize,
                Col::Ints(n) => n.values.as_ptr() as usize,
                Col::Offsets(o) => o.as_ptr() as usize,
                _ => panic!("a column of one record stays what it was"),
            })
            .collect();
        assert_eq!(moved, addresses);
        // a large text of one record is still a part, as the texts of many are
        let big = Strings { offsets: vec![0, 9], data: vec![b'x'; 9], valid: vec![true] };
        let runs = join(vec![vec![("text".to_string(), Col::Strs(big))]], 8);
        assert!(matches!(&runs[0].1[0].1, Col::Parts(p) if p.len() == 1));
    }

    /// A record whose strings would take the run's offsets past 32 bits starts a run of its own.
    #[test]
    fn a_run_ends_before_its_offsets_would_overflow() {
        let big = |len: usize| {
            let s = Strings { offsets: vec![0, len as i32], data: vec![b'x'; len], valid: vec![true] };
            vec![("text".to_string(), Col::Strs(s))]
        };
        let runs = join_within(vec![big(6), big(6), big(2), big(2), big(7)], 10, PART_BYTES);
        assert_eq!(runs.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 3, 1]);
    }

    /// Strings of more than PART_BYTES in all stay their records' parts, each as it was.
    #[test]
    fn large_strings_stay_parts() {
        let part = |len: usize| {
            let s = Strings { offsets: vec![0, len as i32], data: vec![b'x'; len], valid: vec![true] };
            vec![("text".to_string(), Col::Strs(s))]
        };
        let runs = join(vec![part(PART_BYTES / 2), part(PART_BYTES / 2 + 1)], PART_BYTES);
        match &runs[0].1[0].1 {
            Col::Parts(parts) => assert_eq!(parts.iter().map(Col::reach).collect::<Vec<_>>(),
                                            vec![PART_BYTES / 2, PART_BYTES / 2 + 1]),
            _ => panic!("parts"),
        }
        let runs = join(vec![part(PART_BYTES / 2), part(PART_BYTES / 2)], PART_BYTES);
        assert!(matches!(&runs[0].1[0].1, Col::Strs(s) if s.data.len() == PART_BYTES));
        // a list's values are joined however large: its offsets run over the group
        let values = |len: usize| {
            let s = Strings { offsets: vec![0, len as i32], data: vec![b'k'; len], valid: vec![true] };
            vec![("kinds".to_string(), Col::Values(s))]
        };
        let runs = join(vec![values(8), values(8)], 4);
        assert!(matches!(&runs[0].1[0].1, Col::Values(s) if s.data.len() == 16));
    }
}
