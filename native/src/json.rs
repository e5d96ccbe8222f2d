//! A JSON value that borrows its strings from the line, read by serde_json's own parser.
//!
//! [`Json`] deserializes through exactly the parser calls `serde_json::Value` does
//! (`deserialize_any` for every value, map keys through the same string parser, elements and
//! entries one by one), and its visitor, like `Value`'s, accepts every value the parser
//! produces. So `serde_json::from_str::<Json>(line)` succeeds exactly when
//! `serde_json::from_str::<Value>(line)` does: the recursion limit, number range, escapes,
//! surrogates, control characters and trailing content are all checked by the same code. Only
//! what is built differs: strings without escapes are borrowed, not copied. An object keeps
//! its entries in order; looking a key up takes the last one, as `Value`'s map does.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Number, Value};

/// A parsed JSON value whose strings borrow from the input where they can.
#[derive(Debug, Clone)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// What the line rules read of a parsed value, for `Value` and [`Json`] alike.
pub trait View {
    fn field(&self, key: &str) -> Option<&Self>;
    fn has(&self, key: &str) -> bool {
        self.field(key).is_some()
    }
    fn text(&self) -> Option<&str>;
    fn is_object(&self) -> bool;
    fn is_integer(&self) -> bool;
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
    fn is_integer(&self) -> bool {
        self.is_i64() || self.is_u64()
    }
}

impl<'a> View for Json<'a> {
    fn field(&self, key: &str) -> Option<&Self> {
        match self {
            Json::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
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
    fn is_integer(&self) -> bool {
        matches!(self, Json::Number(n) if n.is_i64() || n.is_u64())
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
    /// last occurrence (what `Value`'s map holds).
    pub fn last_entries(&self) -> Vec<(&str, &Json<'a>)> {
        match self {
            Json::Object(entries) => entries
                .iter()
                .enumerate()
                .filter(|(i, (k, _))| !entries[i + 1..].iter().any(|(later, _)| later == k))
                .map(|(_, (k, v))| (k.as_ref(), v))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The same value as a `serde_json::Value`.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::Str(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(entries) => {
                let mut map = Map::new();
                for (k, v) in entries {
                    map.insert(k.to_string(), v.to_value());
                }
                Value::Object(map)
            }
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        Deserialize::deserialize(d)
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key_seed(Key)? {
            entries.push((key, map.next_value()?));
        }
        Ok(Json::Object(entries))
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

/// A map key, read as `Value` reads one (the parser's string rules), borrowed when it can be.
struct Key;

impl<'de> de::DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

/// A value serialized as its `serde_json::Value` is: an object's keys sorted (the map murmur's
/// serde_json builds is a `BTreeMap`), a key's last duplicate winning, numbers and strings by
/// serde_json's own serializer. `serde_json::to_writer(out, &Sorted(v))` writes exactly the
/// bytes of `v.to_value().to_string()`, without building the `Value` or a `String`.
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
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                // stable: equal keys keep their order, so the last of each run is the last written
                let mut sorted: Vec<&(Cow<'_, str>, Json<'_>)> = entries.iter().collect();
                sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                let kept: Vec<_> = sorted
                    .iter()
                    .enumerate()
                    .filter(|(i, (k, _))| sorted.get(i + 1).map_or(true, |next| next.0 != *k))
                    .map(|(_, e)| *e)
                    .collect();
                let mut map = s.serialize_map(Some(kept.len()))?;
                for (k, v) in kept {
                    map.serialize_entry(k.as_ref(), &Sorted(v))?;
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
    use super::{Json, Sorted};

    #[test]
    fn sorted_writes_what_value_writes() {
        let lines = [
            r#"{"b":1,"a":[true,null,1.5,-0.0,1e300,18446744073709551615,-9223372036854775808],"b":"last"}"#,
            r#"{"z":{"y":"\u00e9\ud83d\ude00\n\"","x":{}},"":[],"A":"\u0000"}"#,
            r#"[{"k":1,"k":2,"k":3},"s",0.1,123456789012345678901234567890]"#,
            r#"{"é":1,"e":2,"ÿ":3,"~":4}"#,
        ];
        for line in lines {
            let json: Json = serde_json::from_str(line).unwrap();
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&Sorted(&json)).unwrap(), value.to_string(), "{line}");
        }
    }
}
