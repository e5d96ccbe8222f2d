"""FlexiGPT: one pretty JSON file per conversation, in month partitions of a store.

- :mod:`.decode`: one conversation file decoded (blocks, usage per provider preset).
- :mod:`.source`: the source: stores, partitions and files, newest first.
"""

from .decode import api_of, decode, normalize_usage
from .source import FlexiGPTSource

__all__ = ["FlexiGPTSource", "api_of", "decode", "normalize_usage"]
