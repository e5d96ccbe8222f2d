"""Claude Code: session transcripts (JSONL) under a config dir's ``projects/``.

- :mod:`.layout`: where the files live (config dirs, projects, sessions, subagents).
- :mod:`.usage`: which lines are the model responses, each counted once over a load.
- :mod:`.whole`: every file of a load as one table, for what is decided over all of them at once.
- :mod:`.pieces`: the load's rows as message columns, tool events, compactions, titles and
  rewinds, cut into each file's share.
- :mod:`.source`: the source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.lazy import names_from

if TYPE_CHECKING:
    from .layout import default_homes
    from .source import ClaudeCodeSource

__all__ = ["ClaudeCodeSource", "default_homes"]

#: Where each name lives, imported when first used: detection loads the layout (:mod:`.layout`) alone.
__getattr__ = names_from(__name__, {"ClaudeCodeSource": ".source", "default_homes": ".layout"})
