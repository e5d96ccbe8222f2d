"""The explorer reads like a transcript, pages through the cursor core and never renders transcript
text as markup."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from murmur_home import T0, call, msg, record, text, tool
from murmur_lines import id_at, write_record

import murmur_analysis as ma
from murmur_analysis.frames import FrameBuilder
from murmur_analysis.widgets import EMPTY_CORPUS, Explorer, conversation_options


def test_explorer_pages_newest_first_and_escapes(tmp_path: Path) -> None:
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
    assert '"type"' not in explorer.view.value  # text as text, not its JSON
    assert "messages 5–6 of 6" in explorer.status.value
    assert explorer.newer.disabled and not explorer.older.disabled
    explorer.go_older()
    view = explorer.view.value
    assert view.index("message 4") < view.index("message 3")  # newest first
    explorer.go_older()
    assert "message 1" in explorer.view.value and explorer.older.disabled
    explorer.go_newer()
    explorer.go_newer()
    assert "&lt;script&gt;" in explorer.view.value and explorer.newer.disabled


def test_tool_calls_show_their_input_and_failed_results_are_highlighted(tmp_path: Path) -> None:
    record(tmp_path, "bot", "ctx", [
        msg("user", T0, text("list the files")),
        msg("assistant", T0 + 10, call("call_1", "shell", {"cmd": "ls <dir>"})),
        tool(T0 + 20, "call_1", body="permission denied", is_error=True),
    ])
    explorer = Explorer(ma.load(tmp_path / "conversations"))
    view = explorer.view.value
    assert "tool call" in view and "<b>shell</b>" in view and "ls &lt;dir&gt;" in view
    newest, call_message, _user = view.split('class="murmur-message"')[1:]
    assert "permission denied" in newest and "#ffebe9" in newest and ">error</b>" in newest
    assert "#ffebe9" not in call_message


def test_each_message_shows_its_time_model_and_tokens(samples: Path) -> None:
    corpus = ma.load(samples / "murmur")
    explorer = Explorer(corpus)
    explorer.picker.value = ("murmur", "support-bot/ctx-billing")
    view = explorer.view.value
    assert "claude-sonnet-4-5" in view and "2026-01-01 00:00:03 UTC" in view
    usage = corpus.usage
    last = usage[usage["conversation_id"] == "support-bot/ctx-billing"].sort_values("seq").iloc[-1]
    assert f"in {last['input_total_tokens']:,}" in view and f"out {last['output_tokens']:,}" in view


def test_search_finds_and_marks_the_messages_that_mention_it(tmp_path: Path) -> None:
    record(tmp_path, "bot", "ctx", [
        msg("user", T0, text("Where is the <Invoice>?")),
        msg("assistant", T0 + 10, text("nothing here")),
        msg("assistant", T0 + 20, call("call_1", "lookup", {"q": "invoice 7"})),
    ])
    explorer = Explorer(ma.load(tmp_path / "conversations"))
    explorer.search.value = "invoice"
    view = explorer.view.value
    assert "2 of 3 messages mention" in explorer.status.value
    assert "&lt;<mark>Invoice</mark>&gt;" in view and "<mark>invoice</mark> 7" in view
    assert "nothing here" not in view
    explorer.search.value = ""
    assert "nothing here" in explorer.view.value


def test_an_empty_corpus_says_so() -> None:
    corpus = ma.Corpus(FrameBuilder().finish(), {})  # what a load finding nothing would hold
    explorer = Explorer(corpus)
    assert EMPTY_CORPUS in explorer.view.value and explorer.older.disabled and explorer.newer.disabled


def test_conversations_are_picked_by_title_source_and_time_newest_first(samples: Path) -> None:
    corpus = ma.load(samples)
    options = conversation_options(corpus)
    assert len(options) == len(corpus.conversation_ids()) > 10
    label = dict((v, k) for k, v in options)[("murmur", "support-bot/ctx-billing")]
    assert label == "My invoice for March shows two charges for the Pro plan. Ca… — murmur — 2026-01-01 00:00 UTC"
    times = corpus.conversations.set_index(["source", "conversation_id"])["last_at"]
    ordered = [times[v] for _, v in options]
    known = [t for t in ordered if not pd.isna(t)]
    assert known == sorted(known, reverse=True)
    assert all("time not reported" in k for k, v in options[len(known):])
    assert {v[0] for _, v in conversation_options(corpus, "litany")} == {"litany"}


@pytest.mark.parametrize("source", ["murmur", "litany", "flexigpt", "dispatch"])
def test_every_sample_conversation_renders(samples: Path, source: str) -> None:
    corpus = ma.load(samples)
    explorer = Explorer(corpus)
    explorer.source.value = source
    for _label, value in explorer.picker.options:
        explorer.picker.value = value
        assert "newest first" in explorer.status.value or "no messages" in explorer.status.value
        assert "murmur-message" in explorer.view.value
