"""What a conversation handle shows must be what the tables count: one check for every source
whose tables the native engine builds while its handles decode the same lines again in Python."""

from __future__ import annotations

from typing import Any

import pandas as pd

import murmur_analysis as ma
from murmur_analysis.core.blocks import block_kind, message_text, reasoning_text, text_chars


def _value(v: Any) -> Any:
    return None if pd.isna(v) else v


def assert_handle_matches_tables(corpus: ma.Corpus, conversation_id: str, source: str) -> None:
    """The one conversation of ``corpus``: its handle's entries and tool calls agree with its table rows.

    Block kinds, text characters, sides, ``text`` and ``reasoning_text`` message by message, and
    each tool call's id and status.
    """
    handle = corpus.conversation(conversation_id, source=source)
    entries = handle.entries
    m = corpus.messages
    assert [[block_kind(b) for b in e.blocks] for e in entries] == [list(k) for k in m["block_kinds"]]
    assert [text_chars(e.blocks) for e in entries] == m["text_chars"].tolist()
    assert [e.side for e in entries] == m["role"].tolist()
    assert [message_text(e.blocks) for e in entries] == [_value(v) for v in m["text"]]
    assert [reasoning_text(e.blocks) for e in entries] == [_value(v) for v in m["reasoning_text"]]
    calls = corpus.tool_calls
    assert [(c.call_id, c.status) for c in handle.tool_calls()] == list(zip(calls["call_id"], calls["status"],
                                                                            strict=True))
