//! Arrow-layout column buffers (validity bitmap, offsets, values) built by the scan.

/// A nullable UTF-8 column in Arrow's layout (32-bit offsets).
#[derive(Default)]
pub struct Strings {
    pub offsets: Vec<i32>,
    pub data: Vec<u8>,
    pub valid: Vec<bool>,
}

impl Strings {
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

    /// Push the present texts joined with newlines (`blocks::join_into`, written in place), or
    /// a null when there are none.
    pub fn push_joined<'a>(&mut self, texts: impl Iterator<Item = Option<&'a str>>) {
        if self.offsets.is_empty() {
            self.offsets.push(0);
        }
        let any = crate::blocks::join_into(&mut self.data, texts);
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
    /// When `at` names every row once and in order, as the pairing of a record's events does
    /// when its results come in call order, the data moves over as it is and only offsets are
    /// made; otherwise the texts are copied.
    pub fn gather(self, at: &[Option<i64>]) -> Strings {
        let n = self.len();
        let in_order = at.iter().flatten().enumerate().all(|(i, &k)| k == i as i64) && at.iter().flatten().count() == n;
        let mut out = Strings { offsets: Vec::with_capacity(at.len() + 1), valid: Vec::with_capacity(at.len()), data: Vec::new() };
        if !in_order {
            for k in at {
                out.push(k.and_then(|k| self.get(k as usize)));
            }
            return out;
        }
        out.offsets.push(0);
        let mut end = 0;
        for k in at {
            match k {
                Some(k) => {
                    end = self.offsets[*k as usize + 1];
                    out.valid.push(self.valid[*k as usize]);
                }
                None => out.valid.push(false),
            }
            out.offsets.push(end);
        }
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

/// A nullable 64-bit integer column.
#[derive(Default)]
pub struct Ints {
    pub values: Vec<i64>,
    pub valid: Vec<bool>,
}

impl Ints {
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
