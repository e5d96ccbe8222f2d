"""The explorer pages through the cursor core and never renders transcript text as markup."""

from __future__ import annotations

from pathlib import Path

from murmur_lines import id_at, write_record

import murmur_analysis as ma
from murmur_analysis.widgets import Explorer


def test_explorer_pages_and_escapes(tmp_path: Path) -> None:
    path = tmp_path / "conversations" / "bot" / "ctx" / "conversation.jsonl"
    values = [
        {"content": [{"text": f"message {n}", "type": "text"}], "id": id_at(n), "role": "user"} for n in range(1, 6)
    ]
    values.append({"content": [{"text": "<script>alert('x')</script>", "type": "text"}], "id": id_at(6),
                   "role": "assistant"})
    write_record(path, values)
    explorer = Explorer(ma.load(path), page_size=2)
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in explorer.view.value
    assert "<script>" not in explorer.view.value
    assert explorer.newer.disabled and not explorer.older.disabled
    explorer.go_older()
    assert "message 4" in explorer.view.value and "message 3" in explorer.view.value
    explorer.go_older()
    assert "message 1" in explorer.view.value and explorer.older.disabled
    explorer.go_newer()
    explorer.go_newer()
    assert "&lt;script&gt;" in explorer.view.value and explorer.newer.disabled


def test_explorer_lists_every_conversation_of_the_samples(samples: Path) -> None:
    corpus = ma.load(samples)
    explorer = Explorer(corpus)
    assert len(explorer.picker.options) == len(corpus.conversation_ids()) > 10
    for _label, value in explorer.picker.options:
        explorer.picker.value = value
        assert "messages;" in explorer.view.value
