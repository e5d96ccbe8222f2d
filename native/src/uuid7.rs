//! The mint time inside a UUIDv7 id.
//!
//! An id ends with a UUIDv7 in simple (32 hex) or dashed form (each of the four dashes
//! optional), at the start of the id or after a `_` (`msg_01a0…`). Its first 48 bits are the
//! Unix-millisecond mint time, and its version nibble is 7. A time past the last millisecond of
//! year 9999 is no time (no datetime can hold it).

/// The last millisecond a UTC datetime can hold (9999-12-31T23:59:59.999).
pub const MAX_MS: u64 = 253_402_300_799_999;

fn hex(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}

/// The Unix-ms time of the UUIDv7 that ends `id`, or `None` (not a UUIDv7, or a time past year 9999).
pub fn uuid7_ms(id: &[u8]) -> Option<u64> {
    uuid7_field(id).filter(|&ms| ms <= MAX_MS)
}

/// The 48-bit Unix-ms field of the UUIDv7 that ends `id`, whatever year it names, or `None`
/// when `id` is not a UUIDv7.
pub fn uuid7_field(id: &[u8]) -> Option<u64> {
    // Walk back from the end: 12 hex, -?, 4 hex, -?, 7 + 3 hex, -?, 4 hex, -?, 8 hex.
    let mut i = id.len();
    let mut take = |n: usize, dash: bool| -> Option<usize> {
        if dash && i > 0 && id[i - 1] == b'-' {
            i -= 1;
        }
        if i < n || !id[i - n..i].iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        i -= n;
        Some(i)
    };
    take(12, false)?;
    take(4, true)?;
    let version = take(4, true)?;
    let mid = take(4, true)?;
    let head = take(8, true)?;
    if id[version] != b'7' {
        return None;
    }
    if head > 0 && id[head - 1] != b'_' {
        return None;
    }
    let mut ms = 0u64;
    for &b in id[head..head + 8].iter().chain(&id[mid..mid + 4]) {
        ms = ms * 16 + hex(b)?;
    }
    Some(ms)
}
