//! The line-delimited formats the engine reads, each a declaration of its line rule, its columns
//! and what one line puts into them ([`crate::lines::Format`]).

pub mod claude;
pub mod codex;
pub mod murmur;

use crate::lines::Format;

/// The format named `name` (`claude_code`, `codex`; murmur's is made with its block rules:
/// [`murmur::Murmur`]).
pub fn by_name(name: &str) -> Option<&'static dyn Format> {
    match name {
        "claude_code" => Some(&claude::ClaudeCode),
        "codex" => Some(&codex::Codex),
        _ => None,
    }
}
