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

    pub fn offsets_or_empty(&self) -> Vec<i32> {
        if self.offsets.is_empty() {
            vec![0]
        } else {
            self.offsets.clone()
        }
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
