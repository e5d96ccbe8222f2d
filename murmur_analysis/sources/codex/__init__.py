"""OpenAI Codex CLI rollouts: ``$CODEX_HOME`` (else ``~/.codex``), ``sessions/`` and ``archived_sessions/``.

See :mod:`.source` for what a conversation is, :mod:`.decode` for the tables' rows,
:mod:`.usage` for the token rule and :mod:`.fork` for a fork's copied prefix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.lazy import names_from

if TYPE_CHECKING:
    from .source import CodexSource

__all__ = ["CodexSource"]

#: Where each name lives, imported when first used: detection loads the layout (:mod:`.layout`) alone.
__getattr__ = names_from(__name__, {"CodexSource": ".source"})
