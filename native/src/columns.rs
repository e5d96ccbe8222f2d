//! Arrow-layout column buffers (validity bitmap, offsets, values) built by the scan.

/// A nullable UTF-8 column in Arrow's layout (32-bit offsets).
#[derive(Default)]
pub struct Strings {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub valid: Vec<bool>,
}

impl Strings {
    /// An empty column with room for `rows` values of `bytes` bytes in all.
    pub fn with_capacity(rows: usize, bytes: usize) -> Strings {
        Strings { offsets: Vec::with_capacity(rows + 1), data: Vec::with_capacity(bytes), valid: Vec::with_capacity(rows) }
    }

    pub fn push(&mut self, value: Option<&str>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        if let Some(s) = value {
            self.data.extend_from_slice(s.as_bytes());
        }
        self.offsets.push(self.data.len() as i32);
        self.valid.push(value.is_some());
    }

    /// Push the texts joined with newlines ([`join_into`], written in place), or a null when
    /// there are none.
    pub fn push_joined<'a>(&mut self, texts: impl IntoIterator<Item = &'a str>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let any = join_into(&mut self.data, texts);
        self.offsets.push(self.data.len() as i32);
        self.valid.push(any);
    }

    /// Push a present value that `write` appends to the data; returns what `write` returns.
    pub fn push_written<R>(&mut self, write: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let out = write(&mut self.data);
        self.offsets.push(self.data.len() as i32);
        self.valid.push(true);
        out
    }

    /// The column of `at`'s rows: row `r` is this column's row `at[r]` (null where `None`).
    ///
    /// When each row of this column is named at most once (the pairing of a record's events:
    /// a text is a call's input or a result's text, taken by one row or none), the texts are
    /// moved within this column's own buffer, each to where its row's text begins, and only a
    /// text that comes later than one it must make room for is set aside meanwhile. When the
    /// rows named ascend (results in call order), nothing is set aside; when they come nearly
    /// in order (a parallel call answered first), little is. Otherwise the texts are copied.
    pub fn gather(mut self, at: &[Option<i64>]) -> Strings {
        let n = self.len();
        let mut taker = vec![usize::MAX; n]; // the row that takes each text
        let mut once = true;
        for (r, k) in at.iter().enumerate() {
            if let Some(k) = *k {
                let slot = &mut taker[k as usize];
                once &= *slot == usize::MAX;
                *slot = r;
            }
        }
        let mut out = Strings::with_capacity(at.len(), 0);
        if !once {
            for k in at {
                out.push(k.and_then(|k| self.get(k as usize)));
            }
            return out;
        }
        let span = |offsets: &[i32], k: usize| (offsets[k] as usize, offsets[k + 1] as usize);
        // Texts `passed..` still stand where they were written, at or after `end`; a text
        // before `passed` that a later row takes is in `aside`.
        let mut aside: std::collections::HashMap<usize, Vec<u8>> = std::collections::HashMap::new();
        let (mut passed, mut end) = (0usize, 0usize);
        out.offsets.push(0);
        for (r, k) in at.iter().enumerate() {
            let k = match *k {
                Some(k) => k as usize,
                None => {
                    out.valid.push(false);
                    out.offsets.push(end as i32);
                    continue;
                }
            };
            let (start, stop) = span(&self.offsets, k);
            let len = stop - start;
            // Before `end..end + len` is written over, what stands there and is taken later is set aside.
            while passed < n && (self.offsets[passed] as usize) < end + len {
                if passed != k && taker[passed] != usize::MAX && taker[passed] > r {
                    let (s, e) = span(&self.offsets, passed);
                    aside.insert(passed, self.data[s..e].to_vec());
                }
                passed += 1;
            }
            match aside.remove(&k) {
                Some(text) => self.data[end..end + len].copy_from_slice(&text),
                None if start != end => self.data.copy_within(start..stop, end), // leftward: start > end
                None => {}
            }
            end += len;
            out.valid.push(self.valid[k]);
            out.offsets.push(end as i32);
        }
        self.data.truncate(end);
        out.data = self.data;
        out
    }

    /// Row `i`'s text, `None` when null.
    pub fn get(&self, i: usize) -> Option<&str> {
        let (start, end) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        self.valid[i].then(|| std::str::from_utf8(&self.data[start..end]).expect("UTF-8 pushed"))
    }

    pub fn len(&self) -> usize {
        self.valid.len()
    }

    pub fn extend(&mut self, other: Strings) {
        if other.valid.is_empty() {
            return;
        }
        if self.valid.is_empty() {
            *self = other; // the first piece: moved, not copied
            return;
        }
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let base = self.data.len() as i32;
        self.offsets.extend(other.offsets[1..].iter().map(|o| o + base));
        self.data.extend_from_slice(&other.data);
        self.valid.extend(other.valid);
    }
}

/// Append `texts` to `out` joined with newlines (`model.joined_text`); whether there were any.
pub fn join_into<'a>(out: &mut Vec<u8>, texts: impl IntoIterator<Item = &'a str>) -> bool {
    let mut any = false;
    for text in texts {
        if any {
            out.push(b'\n');
        }
        out.extend_from_slice(text.as_bytes());
        any = true;
    }
    any
}

/// A nullable 64-bit integer column.
#[derive(Default)]
pub struct Ints {
    pub values: Vec<i64>,
    pub valid: Vec<bool>,
}

impl Ints {
    /// An empty column with room for `rows` values.
    pub fn with_capacity(rows: usize) -> Ints {
        Ints { values: Vec::with_capacity(rows), valid: Vec::with_capacity(rows) }
    }

    pub fn push(&mut self, value: Option<i64>) {
        self.values.push(value.unwrap_or(0));
        self.valid.push(value.is_some());
    }

    pub fn extend(&mut self, other: Ints) {
        self.values.extend(other.values);
        self.valid.extend(other.valid);
    }
}

/// Validity flags packed as an Arrow bitmap (LSB first).
pub fn bitmap(valid: &[bool]) -> Vec<u8> {
    let mut out = vec![0u8; (valid.len() + 7) / 8];
    for (i, _) in valid.iter().enumerate().filter(|(_, v)| **v) {
        out[i / 8] |= 1 << (i % 8);
    }
    out
}

/// Little-endian bytes of a slice of plain numbers.
pub fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: plain integers, read as bytes for the length of the slice.
    unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, std::mem::size_of_val(values)) }
}

#[cfg(test)]
mod tests {
    use super::Strings;

    fn column(texts: &[Option<&str>]) -> Strings {
        let mut s = Strings::default();
        for t in texts {
            s.push(*t);
        }
        s
    }

    fn rows(s: &Strings) -> Vec<Option<String>> {
        (0..s.len()).map(|i| s.get(i).map(str::to_owned)).collect()
    }

    /// Whatever `at` is, the gathered column holds row `at[r]`'s text in row `r`, in valid Arrow
    /// layout (offsets from 0, never decreasing, ending at the data's length).
    #[test]
    fn gather_takes_the_rows_named() {
        let texts = [Some("alpha"), None, Some(""), Some("δέλτα"), Some("e"), Some("ffff")];
        let cases: Vec<Vec<Option<i64>>> = vec![
            vec![Some(0), Some(1), Some(2), Some(3), Some(4), Some(5)], // every row in order
            vec![Some(0), None, Some(3), Some(5)],                     // gaps: rows no one takes
            vec![None, Some(4), None],                                 // one row, after a gap
            vec![Some(3), Some(0), Some(5)],                           // out of order: moved, one set aside
            vec![Some(5), Some(4), Some(3), Some(2), Some(1), Some(0)], // reversed
            vec![Some(1), Some(0), None, Some(4), Some(3)],            // pairs answered out of order
            vec![Some(2), Some(2)],                                    // twice: copied
            vec![None, None],
            vec![],
        ];
        for at in cases {
            let got = column(&texts).gather(&at);
            let want: Vec<Option<String>> =
                at.iter().map(|k| k.and_then(|k| texts[k as usize]).map(str::to_owned)).collect();
            assert_eq!(rows(&got), want, "at = {at:?}");
            if !at.is_empty() {
                assert_eq!(got.offsets[0], 0);
                assert!(got.offsets.windows(2).all(|w| w[0] <= w[1]), "at = {at:?}");
                assert_eq!(*got.offsets.last().unwrap() as usize, got.data.len(), "at = {at:?}");
            }
        }
    }

    /// Every order of every subset of a column's rows, with nulls between: the same texts as a copy.
    #[test]
    fn gather_any_order() {
        let texts: Vec<Option<String>> =
            (0..7).map(|i| if i == 2 { None } else { Some("x".repeat(i * 3) + &i.to_string()) }).collect();
        let mut seed = 12345u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let mut order: Vec<usize> = (0..texts.len()).filter(|_| next() % 3 != 0).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            let mut at: Vec<Option<i64>> = Vec::new();
            for k in order {
                if next() % 4 == 0 {
                    at.push(None);
                }
                at.push(Some(k as i64));
            }
            let refs: Vec<Option<&str>> = texts.iter().map(|t| t.as_deref()).collect();
            let got = column(&refs).gather(&at);
            let want: Vec<Option<String>> = at.iter().map(|k| k.and_then(|k| texts[k as usize].clone())).collect();
            assert_eq!(rows(&got), want, "at = {at:?}");
            assert_eq!(*got.offsets.last().unwrap() as usize, got.data.len());
        }
    }
}
