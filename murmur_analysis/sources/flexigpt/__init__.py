"""FlexiGPT: one pretty JSON file per conversation, in month partitions of a store.

- :mod:`.decode`: one conversation file decoded (blocks, usage per provider preset).
- :mod:`.source`: the source: stores, partitions and files, newest first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.lazy import names_from

if TYPE_CHECKING:
    from .decode import api_of, decode, normalize_usage
    from .source import FlexiGPTSource

__all__ = ["FlexiGPTSource", "api_of", "decode", "normalize_usage"]

#: Where each name lives, imported when first used: detection loads the layout (:mod:`.layout`) alone.
__getattr__ = names_from(__name__, {"FlexiGPTSource": ".source", "api_of": ".decode", "decode": ".decode",
                                    "normalize_usage": ".decode"})
