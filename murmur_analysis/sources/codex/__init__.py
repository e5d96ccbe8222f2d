"""OpenAI Codex CLI rollouts: ``$CODEX_HOME`` (else ``~/.codex``), ``sessions/`` and ``archived_sessions/``.

See :mod:`.source` for what a conversation is, :mod:`.decode` for the tables' rows,
:mod:`.usage` for the token rule and :mod:`.fork` for a fork's copied prefix.
"""

from __future__ import annotations

from .source import CodexSource

__all__ = ["CodexSource"]
