//! serde_oracle: what murmur's host makes of each line of a conversation record.
//!
//! The rules are murmur's (`capsule-runtime/src/conversation.rs`, `agent.rs`), applied with the
//! real serde_json:
//!
//! * the whole file is read with `std::fs::read_to_string` (one invalid UTF-8 byte fails the
//!   read, and the record is unavailable);
//! * it is split with `str::lines` (`\n`, or `\r\n`); a line whose `trim()` is empty is blank;
//! * a line is a message iff `serde_json::from_str::<Value>` succeeds and `role` is a string;
//! * line 1 that is not a message may be the record header (`RecordHeader`);
//! * a message is lowered as `to_wit_messages` lowers it (content text, tool envelope, id,
//!   source id).
//!
//! Usage: `serde_oracle FILE...` prints, per file, one JSON line per record line and a final
//! `{"end":true,...}` line. Without arguments it reads file paths from stdin, one per line, and
//! answers each as it arrives (flushing after the `end` line), so one process serves a test run.

use std::io::{BufRead, Write};

use serde_json::{json, Value};

const TOOL_MARKER: &str = "__murmur_tool_msg__";
const RECORD_HEADER_TYPE: &str = "murmur.record";

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct TruncationMarker {
    dropped: u64,
    oldest_surviving_id: String,
    last_dropped_id: String,
    at_ms: u64,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct RecordHeader {
    #[serde(rename = "type")]
    kind: String,
    capsule: String,
    created_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    truncated: Option<TruncationMarker>,
}

fn parse_header(line: &str) -> Option<RecordHeader> {
    let header: RecordHeader = serde_json::from_str(line).ok()?;
    (header.kind == RECORD_HEADER_TYPE).then_some(header)
}

fn parse_message_line(line: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(line).ok()?;
    value.get("role").and_then(Value::as_str).is_some().then_some(value)
}

fn lower(m: &Value) -> Value {
    let role = m.get("role").and_then(Value::as_str).unwrap_or_default().to_string();
    let content = if role == "tool" {
        json!({
            TOOL_MARKER: true,
            "tool_call_id": m.get("tool_call_id").cloned().unwrap_or(Value::Null),
            "is_error": m.get("is_error").cloned().unwrap_or(Value::Null),
            "body": m.get("content").cloned().unwrap_or(Value::Null),
        })
        .to_string()
    } else {
        m.get("content").map(|c| c.to_string()).unwrap_or_default()
    };
    json!({
        "role": role,
        "content": content,
        "id": m.get("id").and_then(Value::as_str),
        "source_id": m.get("source_id").and_then(Value::as_str),
    })
}

fn answer(path: &str, out: &mut impl Write) -> std::io::Result<()> {
    let raw = match std::fs::read_to_string(path) {
        Ok(raw) => raw,
        Err(err) => {
            let end = json!({"end": true, "total": 0, "error": err.to_string()});
            return writeln!(out, "{end}");
        }
    };
    let mut total = 0u64;
    for (index, line) in raw.lines().enumerate() {
        let number = index + 1;
        let verdict = if line.trim().is_empty() {
            json!({"line": number, "verdict": "blank"})
        } else if let Some(message) = parse_message_line(line) {
            total += 1;
            let mut v = lower(&message);
            v["line"] = json!(number);
            v["verdict"] = json!("message");
            v
        } else if let Some(header) = (number == 1).then(|| parse_header(line)).flatten() {
            json!({"line": number, "verdict": "header", "header": header})
        } else {
            json!({"line": number, "verdict": "skipped"})
        };
        writeln!(out, "{verdict}")?;
    }
    writeln!(out, "{}", json!({"end": true, "total": total, "error": null}))
}

fn main() -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        for path in &args {
            answer(path, &mut out)?;
        }
        return out.flush();
    }
    for path in std::io::stdin().lock().lines() {
        answer(&path?, &mut out)?;
        out.flush()?;
    }
    Ok(())
}
