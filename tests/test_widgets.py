"""The explorer reads like a transcript, pages through the cursor core and never renders transcript
text as markup."""

from __future__ import annotations

import functools
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from murmur_home import T0, call, ev, inference, msg, record, text, tool, trace
from murmur_lines import id_at, write_record

import murmur_analysis as ma
from murmur_analysis.tables.frames import FrameBuilder
from murmur_analysis.ui.transcript_html import entries_html, matches, unreported
from murmur_analysis.ui.widgets import EMPTY_CORPUS, Explorer, Match, conversation_options


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
    assert "2 messages in 1 of the 1 conversations listed mention" in explorer.found.value
    assert [m.index for _, m in explorer.results.options] == [2, 0]  # newest first
    view = explorer.view.value
    assert "&lt;<mark>Invoice</mark>&gt;" in view and "<mark>invoice</mark> 7" in view
    explorer.search.value = ""
    assert explorer.results.options == () and "<mark>" not in explorer.view.value


def _two_bots(home: Path) -> None:
    """Three conversations on three days: only ``bot/old`` mentions "zebra", only ``bot/broken`` has a failed call."""
    day = 86_400_000
    record(home, "bot", "old", [msg("user", T0, text("first question")), *[
        msg("assistant", T0 + n * 10, text("the zebra crossing" if n == 3 else f"old answer {n}"), n=n)
        for n in range(1, 30)]])
    record(home, "bot", "broken", [
        msg("user", T0 + day, text("run it")),
        msg("assistant", T0 + day + 10, call("call_1", "shell", {"cmd": "make"})),
        tool(T0 + day + 20, "call_1", body="exit 2", is_error=True),
    ])
    record(home, "bot", "new", [msg("user", T0 + 2 * day, text("latest question")),
                                msg("assistant", T0 + 2 * day + 10, text("latest answer"))])


def test_search_spans_every_conversation_and_opens_the_one_found_at_that_message(tmp_path: Path) -> None:
    _two_bots(tmp_path)
    explorer = Explorer(ma.load(tmp_path / "conversations"), page_size=5)
    assert explorer.picker.value == ("murmur", "bot/new")  # the most recent conversation is shown first
    explorer.search.value = "zebra"
    assert "1 message in 1 of the 3 conversations listed mentions" in explorer.found.value
    [(label, found)] = explorer.results.options
    assert found == Match("murmur", "bot/old", 3) and "#4: the zebra crossing" in label
    assert explorer.results.value is None and explorer.picker.value == ("murmur", "bot/new")  # not opened yet
    explorer.results.value = found
    assert explorer.picker.value == ("murmur", "bot/old")
    assert "messages 1–4 of 30" in explorer.status.value  # the page whose newest message is the match
    first = explorer.view.value.split('class="murmur-message"')[1]
    assert "#4 · " in first and "the <mark>zebra</mark> crossing" in first
    explorer.go_newer()
    assert "messages 5–9 of 30" in explorer.status.value
    explorer.go_older()
    explorer.go_older()
    assert explorer.older.disabled and "messages 1–4 of 30" in explorer.status.value


def test_a_search_keeps_no_conversation_it_only_read(tmp_path: Path) -> None:
    _two_bots(tmp_path)
    corpus = ma.load(tmp_path / "conversations")
    explorer = Explorer(corpus)  # it opens the newest conversation, bot/new
    explorer.find("zebra")
    kept = {cid for _, cid in corpus.conversation_ids() if corpus.conversation(cid)._entries is not None}
    assert kept == {"bot/new"}  # the other two were read, matched against and let go
    assert corpus.conversation("bot/old").read_entries() == corpus.conversation("bot/old").entries


def test_the_has_errors_filter_lists_conversations_with_failed_tool_calls(tmp_path: Path) -> None:
    _two_bots(tmp_path)
    explorer = Explorer(ma.load(tmp_path / "conversations"))
    assert len(explorer.picker.options) == 3
    explorer.errors.value = True
    assert [v for _, v in explorer.picker.options] == [("murmur", "bot/broken")]
    assert explorer.picker.value == ("murmur", "bot/broken") and "exit 2" in explorer.view.value
    assert "1 of 3 conversations" in explorer.listed.value
    explorer.search.value = "zebra"  # the search covers the conversations listed
    assert explorer.results.options == () and "no message of the 1 conversations listed" in explorer.found.value
    explorer.errors.value = False
    assert len(explorer.results.options) == 1


def test_the_date_filter_keeps_the_conversations_active_between_its_days(tmp_path: Path) -> None:
    _two_bots(tmp_path)
    explorer = Explorer(ma.load(tmp_path / "conversations"))
    explorer.since.value = date(2026, 1, 2)
    assert [v[1] for _, v in explorer.picker.options] == ["bot/new", "bot/broken"]
    explorer.until.value = date(2026, 1, 2)
    assert [v[1] for _, v in explorer.picker.options] == ["bot/broken"]
    explorer.since.value = None
    assert [v[1] for _, v in explorer.picker.options] == ["bot/broken", "bot/old"]
    explorer.until.value = date(2025, 12, 31)
    assert explorer.picker.options == () and "No conversation matches these filters" in explorer.view.value


_SAMPLES = Path(__file__).resolve().parent.parent / "data" / "samples"


@functools.cache
def _sample_corpus() -> ma.Corpus:
    return ma.load(_SAMPLES)


@given(since=st.none() | st.dates(date(2025, 5, 1), date(2026, 5, 1)),
       until=st.none() | st.dates(date(2025, 5, 1), date(2026, 5, 1)), errors=st.booleans())
@settings(max_examples=40)
def test_the_filters_list_exactly_the_conversations_that_pass_them(since: date | None, until: date | None,
                                                                   errors: bool) -> None:
    corpus = _sample_corpus()
    listed = {v for _, v in conversation_options(corpus, errors=errors, since=since, until=until)}
    for row in corpus.conversations.itertuples():
        first = row.first_at if not pd.isna(row.first_at) else row.last_at
        timed = not pd.isna(row.last_at)
        keep = ((not errors or (not pd.isna(row.tool_errors) and row.tool_errors > 0))
                and (since is None or (timed and row.last_at.date() >= since))
                and (until is None or (timed and first.date() <= until)))
        assert ((row.source, row.conversation_id) in listed) == keep, (row.conversation_id, since, until, errors)


@given(query=st.sampled_from(["pytest", "invoice", "the", "zstd", "error", "nothing-like-this"]))
@settings(max_examples=6)
def test_a_search_finds_every_message_that_mentions_it_and_no_other(query: str) -> None:
    corpus = _sample_corpus()
    explorer = Explorer(corpus)
    found, cut = explorer.find(query)
    expected = [(s, c, n) for _, (s, c) in conversation_options(corpus)
                for n, e in reversed(list(enumerate(corpus.conversation(c, source=s).entries))) if matches(e, query)]
    assert [(m.source, m.conversation_id, m.index) for m in found] == expected[:50]
    assert cut == (len(expected) > 50)


def test_model_written_markup_is_text_everywhere(tmp_path: Path) -> None:
    evil = "<script>alert('x')</script>"
    record(tmp_path, "bot", "ctx", [msg("user", T0, text(evil)), msg("assistant", T0 + 10, text(f"said {evil}"))])
    explorer = Explorer(ma.load(tmp_path / "conversations"))
    assert explorer.picker.options[0][0].startswith(evil)  # a label is text: the widget shows it as written
    explorer.search.value = "<script>"
    shown = explorer.view.value + explorer.found.value + explorer.status.value + explorer.listed.value
    assert "<script>" not in shown
    assert "<mark>&lt;script&gt;</mark>alert(&#x27;x&#x27;)&lt;/script&gt;" in explorer.view.value
    assert "“&lt;script&gt;”" in explorer.found.value
    assert all(label.endswith(evil) or evil in label for label, _ in explorer.results.options)


def _traced_home(home: Path, work: Path, counted: bool = True) -> None:
    """A home whose ``bot/ctx`` a session trace in ``work`` joins; ``bot/other`` no trace joins."""
    counters = {"input_tokens_actual": 1900, "output_tokens_actual": 22} if counted else {}
    record(home, "bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 21, text("answer"))])
    record(home, "bot", "other", [msg("user", T0 + 10), msg("assistant", T0 + 30, text("a"), n=1),
                                  msg("assistant", T0 + 40, text("b"), n=2)])
    trace(work / "ses_1", [
        ev("session_start", T0, capsule_name="bot", model="gpt-4.1"),
        ev("task_start", T0 + 1, task_id="A", context_id="ctx"),
        inference(T0 + 20, "A", 0, **counters),
        ev("task_end", T0 + 500, task_id="A", exit_status="ok"),
        ev("session_end", T0 + 900, exit_status="ok"),
    ])


def test_a_murmur_home_without_traces_says_once_why_model_and_tokens_are_missing(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    _traced_home(home, work)
    explorer = Explorer(ma.load(home))  # the records alone: no session trace
    explorer.picker.value = ("murmur", "bot/other")
    view = explorer.view.value
    assert view.count("session traces") == 1 and "no session trace was loaded" in view and "sessions" in view
    assert "not reported" not in view  # not on every message
    assert "2026-01-01 00:00:00 UTC" in view  # the time each id carries is still shown

    joined = Explorer(ma.load(home, options={"murmur": {"sessions": [work]}}))
    joined.picker.value = ("murmur", "bot/other")
    assert "no session trace loaded joins this conversation" in joined.view.value
    joined.picker.value = ("murmur", "bot/ctx")
    assert "murmur-note" not in joined.view.value and "gpt-4.1" in joined.view.value


def test_a_trace_without_counters_is_named_as_the_reason(tmp_path: Path) -> None:
    _traced_home(tmp_path / "home", tmp_path / "work", counted=False)
    explorer = Explorer(ma.load(tmp_path / "home", options={"murmur": {"sessions": [tmp_path / "work"]}}))
    explorer.picker.value = ("murmur", "bot/ctx")
    assert "reports its tokens (" in explorer.view.value and "the session traces joined to it report none" in \
        explorer.view.value and "gpt-4.1" in explorer.view.value


def test_a_detail_some_messages_report_is_said_per_message(tmp_path: Path) -> None:
    record(tmp_path, "bot", "ctx", [msg("user", T0), {"content": [text("no id")], "role": "assistant"}])
    entries = ma.load(tmp_path / "conversations").conversation("bot/ctx").entries
    assert unreported(entries) == {"model", "tokens"}  # one message has a time
    view = entries_html([(1, entries[0]), (2, entries[1])], said=unreported(entries))
    assert view.count("time not reported") == 1 and "model not reported" not in view


def test_a_conversation_is_found_by_the_pair_conversation_ids_lists(samples: Path) -> None:
    corpus = ma.load(samples)
    for pair in corpus.conversation_ids():
        handle = corpus.conversation(pair)
        assert (handle.source, handle.conversation_id) == pair
    source, cid = corpus.conversation_ids()[0]
    assert corpus.conversation((source, cid), source=source).conversation_id == cid
    with pytest.raises(ma.UnknownConversationError, match="not one of source='nobody'"):
        corpus.conversation((source, cid), source="nobody")
    with pytest.raises(TypeError, match=r"a \(source, conversation_id\) pair"):
        corpus.conversation((source, cid, "x"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not int"):
        corpus.conversation(7)  # type: ignore[arg-type]


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


@pytest.mark.parametrize("source", ["murmur", "litany", "flexigpt", "dispatch", "claude_code", "codex"])
def test_every_sample_conversation_renders(samples: Path, source: str) -> None:
    corpus = ma.load(samples)
    explorer = Explorer(corpus)
    explorer.source.value = source
    for _label, value in explorer.picker.options:
        explorer.picker.value = value
        assert "newest first" in explorer.status.value or "no messages" in explorer.status.value
        assert "murmur-message" in explorer.view.value


@pytest.mark.parametrize("source", ["claude_code", "codex"])
def test_a_claude_code_or_codex_conversation_shows_its_own_texts_and_tool_calls(samples: Path, source: str) -> None:
    import html

    corpus = ma.load(samples, source=source)
    explorer = Explorer(corpus, page_size=500)
    explorer.source.value = source
    calls = corpus.tool_calls
    shown = 0
    for _label, value in explorer.picker.options:
        explorer.picker.value = value
        handle = explorer._handle()
        assert handle is not None
        messages = corpus.messages[corpus.messages["conversation_id"] == handle.conversation_id]
        texts = messages["text"].dropna()
        for said in texts[texts.str.len().between(1, 200)]:
            assert html.escape(said.splitlines()[0]) in explorer.view.value
            shown += 1
        for name in calls.loc[calls["conversation_id"] == handle.conversation_id, "tool_name"].dropna():
            assert html.escape(name) in explorer.view.value
    assert shown > 0


def test_a_page_is_sent_before_its_label_names_it(tmp_path: Path) -> None:
    """A reader, or a browser test, who sees "messages a–b of n" sees that page: the label changes last."""
    path = tmp_path / "conversations" / "bot" / "ctx" / "conversation.jsonl"
    write_record(path, [{"content": [{"text": f"message {n}", "type": "text"}], "id": id_at(n), "role": "user"}
                        for n in range(1, 6)])
    explorer = Explorer(ma.load(path), page_size=2)
    changed: list[str] = []
    explorer.view.observe(lambda _: changed.append("page"), names="value")
    explorer.status.observe(lambda _: changed.append("label"), names="value")
    explorer.go_older()
    explorer.go_newer()
    assert changed == ["page", "label", "page", "label"]
