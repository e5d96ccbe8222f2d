//! A JSON value parsed by serde_json's own parser into an arena: no allocation per value.
//!
//! [`parse`] deserializes through exactly the parser calls `serde_json::from_str::<Value>`
//! makes (`deserialize_any` for every value, map keys through the same string parser, elements
//! and entries one by one, then `end` for trailing content), and its visitor, like `Value`'s,
//! accepts every value the parser produces. So [`parse`] succeeds exactly when
//! `serde_json::from_str::<Value>(line)` does: the recursion limit, number range, escapes,
//! surrogates, control characters and trailing content are all checked by the same code. Only
//! what is built differs: strings without escapes are borrowed from the line, and every array,
//! object and string with escapes (its unescaped text) lives in a [`Bump`] arena the caller
//! resets between lines, so a line's tree costs no `malloc` and no `free`. An object keeps its entries in order; looking a
//! key up takes the last one, as `Value`'s map does.
//!
//! [`Lines`] parses the lines of one text with one deserializer, as serde_json's own stream of
//! values does, so the buffer serde_json unescapes strings into grows once per text instead of
//! once per line; it decides every line exactly as [`parse`] of that line alone does.

use std::cell::Cell;
use std::fmt;

use bumpalo::collections::Vec as BumpVec;
use bumpalo::Bump;
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::de::StrRead;
use serde_json::{Number, StreamDeserializer, Value};

/// A parsed JSON value whose strings borrow from the input where they can, its arrays and
/// objects held by an arena.
#[derive(Debug, Clone)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(&'a str),
    Array(&'a [Json<'a>]),
    Object(&'a [(&'a str, Json<'a>)]),
}

/// `text` parsed as `serde_json::from_str::<Value>(text)` parses it, its tree in `arena`.
pub fn parse<'a>(text: &'a str, arena: &'a Bump) -> serde_json::Result<Json<'a>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = In(arena).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// JSON's whitespace, as serde_json skips it between tokens and after a value.
fn json_space(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| matches!(b, b' ' | b'\n' | b'\t' | b'\r'))
}

/// The lines of one text, each parsed as [`parse`] parses it alone, by one deserializer that
/// goes on from line to line (serde_json's `StreamDeserializer`, whose scratch buffer is kept).
///
/// A line parsed alone succeeds exactly when, read in the stream from where the line before
/// ended (only JSON whitespace between), a value is read that ends within the line and only
/// whitespace follows it there: the parser reads the same bytes in the same order, and a
/// parse that needs a byte past the line's end would have met the end of the text alone (an
/// error), while a value that ends at the line's end ends there either way (a number stops at
/// the end of the text as it stops at `\n` or `\r`). Anything else (an error, a value running
/// into the next line, content after the value, a line that does not start where the stream
/// stands) drops the stream, and the next line starts a new one.
pub struct Lines<'t> {
    text: &'t str,
    /// the stream and the offset in `text` it starts at
    stream: Option<(usize, StreamDeserializer<'t, StrRead<'t>, Top<'t>>)>,
    /// where the stream stands for the next line: only whitespace lies between its position and here
    ready: usize,
}

impl<'t> Lines<'t> {
    pub fn new(text: &'t str) -> Lines<'t> {
        Lines { text, stream: None, ready: 0 }
    }

    /// The line `text[start..end]` (without its `\n`) parsed as `parse(&text[start..end])`
    /// parses it, its tree in `arena`; `None` where that fails. Lines are given in order.
    pub fn parse<'b>(&mut self, start: usize, end: usize, arena: &'b Bump) -> Option<Json<'b>>
    where
        't: 'b,
    {
        let bytes = self.text.as_bytes();
        let goes_on = self.stream.is_some() && self.ready <= start && json_space(&bytes[self.ready..start]);
        if !goes_on {
            self.stream = Some((start, serde_json::Deserializer::from_str(&self.text[start..]).into_iter()));
        }
        let (base, stream) = self.stream.as_mut().expect("a stream was just made");
        LENT.with(|lent| lent.set(arena as *const Bump));
        let read = stream.next();
        LENT.with(|lent| lent.set(std::ptr::null()));
        if let Some(Ok(Top(value))) = read {
            let after = *base + stream.byte_offset();
            if after <= end && json_space(&bytes[after..end]) {
                self.ready = end;
                return Some(value);
            }
        }
        self.stream = None;
        None
    }
}

thread_local! {
    /// The arena [`Lines::parse`] lends the value it reads, for that one read.
    static LENT: Cell<*const Bump> = Cell::new(std::ptr::null());
}

/// A value read by [`Lines`]' stream, its tree in the arena lent for the read.
struct Top<'a>(Json<'a>);

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Top<'de>, D::Error> {
        let arena = LENT.with(Cell::get);
        assert!(!arena.is_null(), "a line is read by Lines::parse, which lends the arena");
        // SAFETY: `Lines::parse` lends a `&'b Bump` for the one read that lands here and
        // returns the value read as a `Json<'b>` (shortened: `Json` is covariant), so nothing
        // built in the arena is reached beyond that borrow; the stream keeps no value.
        let arena: &'de Bump = unsafe { &*arena };
        In(arena).deserialize(d).map(Top)
    }
}

/// What the line rules read of a parsed value, for `Value` and [`Json`] alike.
pub trait View {
    fn field(&self, key: &str) -> Option<&Self>;
    fn has(&self, key: &str) -> bool {
        self.field(key).is_some()
    }
    fn text(&self) -> Option<&str>;
    fn is_object(&self) -> bool;
}

impl View for Value {
    fn field(&self, key: &str) -> Option<&Self> {
        self.get(key).filter(|_| self.is_object())
    }
    fn text(&self) -> Option<&str> {
        self.as_str()
    }
    fn is_object(&self) -> bool {
        Value::is_object(self)
    }
}

impl<'a> View for Json<'a> {
    fn field(&self, key: &str) -> Option<&Self> {
        match self {
            Json::Object(entries) => entries.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn text(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }
}

impl<'a> Json<'a> {
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The entries of an object with a key's later duplicates winning: each key once, at its
    /// last occurrence (what `Value`'s map holds), in the object's order.
    pub fn last_entries(&self) -> impl Iterator<Item = (&str, &Json<'a>)> {
        let entries: &[(&str, Json<'a>)] = match self {
            Json::Object(entries) => entries,
            _ => &[],
        };
        entries
            .iter()
            .enumerate()
            .filter(move |(i, (k, _))| !entries[i + 1..].iter().any(|(later, _)| later == k))
            .map(|(_, (k, v))| (*k, v))
    }
}

/// The arena a value is built in: the seed of every value and the visitor of its parse.
#[derive(Clone, Copy)]
struct In<'b>(&'b Bump);

impl<'de: 'b, 'b> DeserializeSeed<'de> for In<'b> {
    type Value = Json<'b>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'b>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'b, 'b> Visitor<'de> for In<'b> {
    type Value = Json<'b>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json<'b>, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json<'b>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json<'b>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json<'b>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'b>, E> {
        Ok(Json::Str(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json<'b>, E> {
        Ok(Json::Str(self.0.alloc_str(v)))
    }
    fn visit_string<E>(self, v: String) -> Result<Json<'b>, E> {
        Ok(Json::Str(self.0.alloc_str(&v)))
    }
    fn visit_none<E>(self) -> Result<Json<'b>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'b>, D::Error> {
        self.deserialize(d)
    }
    fn visit_unit<E>(self) -> Result<Json<'b>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'b>, A::Error> {
        let mut items = BumpVec::new_in(self.0);
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Json::Array(items.into_bump_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'b>, A::Error> {
        let mut entries = BumpVec::new_in(self.0);
        while let Some(key) = map.next_key_seed(Key(self.0))? {
            entries.push((key, map.next_value_seed(self)?));
        }
        Ok(Json::Object(entries.into_bump_slice()))
    }
}

/// A map key, read as `Value` reads one (the parser's string rules), borrowed when it can be.
#[derive(Clone, Copy)]
struct Key<'b>(&'b Bump);

impl<'de: 'b, 'b> DeserializeSeed<'de> for Key<'b> {
    type Value = &'b str;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<&'b str, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de: 'b, 'b> Visitor<'de> for Key<'b> {
    type Value = &'b str;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<&'b str, E> {
        Ok(v)
    }
    fn visit_str<E>(self, v: &str) -> Result<&'b str, E> {
        Ok(self.0.alloc_str(v))
    }
    fn visit_string<E>(self, v: String) -> Result<&'b str, E> {
        Ok(self.0.alloc_str(&v))
    }
}

/// A value serialized as its `serde_json::Value` is: an object's keys sorted (the map murmur's
/// serde_json builds is a `BTreeMap`), a key's last duplicate winning, numbers and strings by
/// serde_json's own serializer. `serde_json::to_writer(out, &Sorted(v))` writes exactly the
/// bytes of `to_string()` of the same value parsed as a `serde_json::Value`, without building
/// the `Value` or a `String`.
pub struct Sorted<'v, 'a>(pub &'v Json<'a>);

impl Serialize for Sorted<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::Str(t) => s.serialize_str(t),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                // stable: equal keys keep their order, so the last of each run is the last written
                let mut sorted: Vec<&(&str, Json<'_>)> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                let kept: Vec<_> = sorted
                    .iter()
                    .enumerate()
                    .filter(|(i, (k, _))| sorted.get(i + 1).map_or(true, |next| next.0 != *k))
                    .map(|(_, e)| *e)
                    .collect();
                let mut map = s.serialize_map(Some(kept.len()))?;
                for (k, v) in kept {
                    map.serialize_entry(*k, &Sorted(v))?;
                }
                map.end()
            }
        }
    }
}

/// A writer that only counts the bytes written to it.
#[derive(Default)]
pub struct Count(pub usize);

impl std::io::Write for Count {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{parse, Lines, Sorted};

    /// Every line of `text` read by [`Lines`], beside each line parsed alone: `(ok, written)`.
    fn both_ways(text: &str) -> Vec<(Option<String>, Option<String>)> {
        let mut lines = Lines::new(text);
        let mut out = Vec::new();
        let mut start = 0;
        for line in text.split('\n') {
            let end = start + line.strip_suffix('\r').unwrap_or(line).len();
            let alone_arena = bumpalo::Bump::new();
            let alone = parse(&text[start..end], &alone_arena).ok().map(|v| serde_json::to_string(&Sorted(&v)).unwrap());
            let arena = bumpalo::Bump::new();
            let streamed = if text[start..end].trim().is_empty() {
                alone.clone() // a blank line is not parsed
            } else {
                lines.parse(start, end, &arena).map(|v| serde_json::to_string(&Sorted(&v)).unwrap())
            };
            out.push((alone, streamed));
            start += line.len() + 1;
        }
        out
    }

    #[test]
    fn lines_read_in_one_stream_are_read_as_each_alone() {
        let texts = [
            "{\"a\":1}\n{\"b\":\"x\\ny\"}\n{\"c\":[1,2]}",
            // a value that runs on into the next line, and the lines after it
            "{\"a\":\n1}\n{\"b\":2}",
            "[1,\n2]\n3\n",
            // content after a value; two values on a line
            "{\"a\":1} x\n{\"a\":1}{\"b\":2}\n{\"ok\":true}",
            // numbers and literals at a line's end, with and without \r
            "12\n-0\r\n1e5\ntrue\r\nnull\n{\"n\":1.5}\r\n",
            "12 \n 12\t\n1.\n1e\n-\n{\"x\":1}",
            // blank lines, of JSON's whitespace and of other spaces
            "{\"a\":1}\n   \n\t\n{\"b\":2}\n\u{a0}\n{\"c\":3}\n\u{3000}{\"d\":4}\n{\"e\":5}",
            // escapes: lone surrogates, a pair, a control character, an unfinished string
            "{\"s\":\"\\ud800\"}\n{\"s\":\"\\ud83d\\ude00\"}\n{\"s\":\"a\tb\"}\n{\"s\":\"abc\n\"}\n{\"s\":\"\\n\"}",
            // nesting at and past the limit, then a plain line
            &format!("{}{}\n{}{}\n{{\"k\":1}}", "[".repeat(128), "]".repeat(128), "[".repeat(129), "]".repeat(129)),
            // a BOM, trailing commas, duplicate keys, a number past f64
            "\u{feff}{\"a\":1}\n{\"a\":1,}\n{\"k\":1,\"k\":2}\n[1e309]\n{\"a\":18446744073709551616}",
            // an unterminated last line, and one cut mid-value
            "{\"a\":1}\n{\"a\":",
        ];
        for text in texts {
            for (n, (alone, streamed)) in both_ways(text).into_iter().enumerate() {
                assert_eq!(alone, streamed, "line {} of {:?}", n + 1, text);
            }
        }
    }

    #[test]
    fn lines_of_any_mix_are_read_as_each_alone() {
        // Lines glued from pieces that open, close, escape and break values, in a fixed
        // pseudo-random sequence (no crate for randomness offline).
        let pieces = [
            "{\"role\":\"user\"", "}", "{", "[", "]", ",", ":", "1", "-0.5e3", "\"a\\nb\"", "\"\\ud800\"", "\"\\u00e9\"",
            " ", "\t", "\r", "\n", "\n", "\n", "true", "nul", "\"k\":", "\u{a0}", "\u{2028}", "x", "\"",
            // whole lines, so that lines often follow lines that were read
            "\n{\"role\":\"user\",\"c\":\"a\\\"b\\n\"}\n", "\n[1,\"\\u00e9\",{}]\r\n", "\n{\"k\":\"\\t\",\"k\":[null]}  \n",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let (mut read, mut refused) = (0, 0);
        for _ in 0..3000 {
            let mut text = String::new();
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (state >> 59) as usize + 1;
            for _ in 0..len * 3 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                text.push_str(pieces[(state >> 33) as usize % pieces.len()]);
            }
            for (n, (alone, streamed)) in both_ways(&text).into_iter().enumerate() {
                assert_eq!(alone, streamed, "line {} of {:?}", n + 1, text);
                if alone.is_some() {
                    read += 1;
                } else {
                    refused += 1;
                }
            }
        }
        // the mix holds both kinds of line in numbers
        assert!(read > 3000 && refused > 3000, "{read} lines read, {refused} refused");
    }

    #[test]
    fn sorted_writes_what_value_writes() {
        let lines = [
            r#"{"b":1,"a":[true,null,1.5,-0.0,1e300,18446744073709551615,-9223372036854775808],"b":"last"}"#,
            r#"{"z":{"y":"\u00e9\ud83d\ude00\n\"","x":{}},"":[],"A":"\u0000"}"#,
            r#"[{"k":1,"k":2,"k":3},"s",0.1,123456789012345678901234567890]"#,
            r#"{"é":1,"e":2,"ÿ":3,"~":4}"#,
        ];
        for line in lines {
            let arena = bumpalo::Bump::new();
            let json = parse(line, &arena).unwrap();
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&Sorted(&json)).unwrap(), value.to_string(), "{line}");
        }
    }
}
