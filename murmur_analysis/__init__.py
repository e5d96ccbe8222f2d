"""murmur-analysis: read AI agents' conversations into Arrow tables and pandas frames.

One cursor core (murmur's newest-first paging) and one assembly core (litany's grouping, tool
pairing and orphan dropping) serve every runtime: murmur records, litany git transcripts,
FlexiGPT conversation stores and dispatch sessions.

Example:
    >>> import murmur_analysis as ma
    >>> corpus = ma.load("data/samples")  # doctest: +SKIP
    >>> page = ma.read_messages("conversation.jsonl", limit=10)  # doctest: +SKIP
"""

from __future__ import annotations

from .assembly import Assembled, ToolCall, assemble, drop_orphans, pair_tools, transcript
from .corpus import ConversationHandle, Corpus, load
from .cursor import Page, PageMessage, RecordReader, read_messages, walk
from .diagnostics import Diagnostic
from .errors import (
    ExportError,
    GitError,
    MurmurAnalysisError,
    NoSourceError,
    ReadMessagesError,
    SourceError,
    UnknownConversationError,
    UnknownSourceError,
)
from .model import Entry, Message, Usage
from .samples import data_paths, sample_data
from .sources.base import Source
from .sources.litany import assemble_commit

__version__ = "0.1.0"


def sources() -> dict[str, str]:
    """The registered sources, built-in and plugins, as ``name -> description``."""
    from .sources import registry

    return {name: cls.description for name, cls in registry().items()}


__all__ = [
    "Assembled",
    "ConversationHandle",
    "Corpus",
    "Diagnostic",
    "Entry",
    "ExportError",
    "GitError",
    "Message",
    "MurmurAnalysisError",
    "NoSourceError",
    "Page",
    "PageMessage",
    "ReadMessagesError",
    "RecordReader",
    "Source",
    "SourceError",
    "ToolCall",
    "UnknownConversationError",
    "UnknownSourceError",
    "Usage",
    "assemble",
    "assemble_commit",
    "data_paths",
    "drop_orphans",
    "load",
    "pair_tools",
    "read_messages",
    "sample_data",
    "sources",
    "transcript",
    "walk",
]
