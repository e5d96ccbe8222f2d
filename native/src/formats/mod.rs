//! The line-delimited formats the engine reads, each a declaration of its line rule, its columns
//! and what one line puts into them ([`crate::lines::Format`]).

pub mod claude;
pub mod codex;
pub mod murmur;

use crate::blocks::Spec;
use crate::lines::Format;

/// The format named `name` (`claude_code`, `codex`; murmur's is made with its block rules:
/// [`murmur::Murmur`]). Claude Code's reads content blocks by the block rules `spec` (its
/// dialect's, `wire.block_rules("anthropic")`); a format that reads none ignores it.
pub fn by_name(name: &str, spec: Option<Spec>) -> Result<Box<dyn Format>, String> {
    match name {
        "claude_code" => match spec {
            Some(spec) => Ok(Box::new(claude::ClaudeCode { spec })),
            None => Err("the claude_code format reads content blocks by block rules: none were given".to_owned()),
        },
        "codex" => Ok(Box::new(codex::Codex)),
        _ => Err(format!("no line format {name:?}")),
    }
}
