"""Claude Code: session transcripts (JSONL) under a config dir's ``projects/``.

- :mod:`.layout`: where the files live (config dirs, projects, sessions, subagents).
- :mod:`.usage`: which lines are the model responses, each counted once over a load.
- :mod:`.pieces`: one file's rows as message columns, tool events, compactions and a title.
- :mod:`.source`: the source.
"""

from .layout import default_homes
from .source import ClaudeCodeSource

__all__ = ["ClaudeCodeSource", "default_homes"]
