"""murmur spend: the API the driver spoke, estimates kept apart, session spend in no conversation.

Traces are built as murmur's observability schema writes them: ``task_id`` is null on events
outside any task (the on-session-end hooks run after the task loop), ``compaction`` carries the
runtime's cl100k estimates, and a task appends to ``<capsule>/<context-id>`` by default.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
from murmur_home import T0, ev, inference, msg, record, text, trace

import murmur_analysis as ma


def _home(tmp_path: Path, model: str, *usage: dict[str, Any], tail: list[dict[str, Any]] | None = None,
          session_ctx: str | None = None) -> Path:
    home = tmp_path / "home"
    values = [msg("user", T0 + 10)]
    events = [ev("session_start", T0, capsule_name="bot", model=model, context_id=session_ctx),
              ev("task_start", T0 + 1, task_id="A", context_id="ctx")]
    for n, counters in enumerate(usage):
        at = T0 + 20 + 10 * n
        events.append(inference(at, "A", n, input_tokens=1850, output_tokens=20, **counters))
        values.append(msg("assistant", at + 1, text(f"answer {n}"), n=n + 1))
    events.append(ev("task_end", T0 + 500, task_id="A", exit_status="ok"))
    events += tail or []
    events.append(ev("session_end", T0 + 900, exit_status="ok"))
    record(home, "bot", "ctx", values)
    trace(home / "sessions" / "ses_1", events)
    return home


OPENAI_COUNTERS = {"input_tokens_actual": 1900, "output_tokens_actual": 22, "cached_tokens": 1536}


def test_the_driver_route_decides_the_counter_rule_not_the_model(tmp_path: Path) -> None:
    u = ma.load(_home(tmp_path, "openrouter/anthropic/claude-sonnet-4", OPENAI_COUNTERS)).usage.iloc[0]
    # OpenRouter speaks the OpenAI API: the prompt counter already holds the cached slice.
    assert (u["input_total_tokens"], u["input_tokens"], u["cache_read_tokens"]) == (1900, 364, 1536)
    assert (u["accounting"], u["provider_source"]) == ("openai", "runtime")


def test_a_rule_read_off_a_bare_model_name_is_marked_as_a_guess(tmp_path: Path) -> None:
    counters = {"input_tokens_actual": 400, "output_tokens_actual": 22, "cached_tokens": 1536,
                "cache_write_tokens": 0}
    u = ma.load(_home(tmp_path, "claude-sonnet-4", counters)).usage.iloc[0]
    assert (u["input_total_tokens"], u["accounting"], u["provider_source"]) == (1936, "anthropic", "model_name")
    v = ma.load(_home(tmp_path / "x", "mystery-7b", OPENAI_COUNTERS)).usage.iloc[0]
    assert v["accounting"] == "openai" and pd.isna(v["provider_source"])


def test_compaction_estimates_stay_out_of_context_tokens(tmp_path: Path) -> None:
    home = _home(tmp_path, "gpt-4.1", OPENAI_COUNTERS)
    path = home / "sessions" / "ses_1" / "trace.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines.insert(3, json.dumps(ev("compaction", T0 + 25, task_id="A", turn=1, tokens_before=81501,
                                  tokens_after=334)) + "\n")
    path.write_text("".join(lines))
    growth = ma.load(home).growth
    comp = growth[growth["event"] == "compaction"].iloc[0]
    assert (comp["tokens_before"], comp["tokens_after"]) == (81501, 334)
    assert pd.isna(comp["context_tokens"])
    # the message rows hold provider counts only: the prompt of 1900 plus the 22 generated
    assert list(growth[growth["event"] == "message"]["context_tokens"].dropna()) == [1922]


def test_spend_outside_any_task_belongs_to_the_session(tmp_path: Path) -> None:
    hook = {"input_tokens": 300, "output_tokens": 40, "input_tokens_actual": 310, "output_tokens_actual": 41,
            "origin": "hook:on-session-end", "model": "gpt-4.1-mini", "turn": 0, "decision": "text"}
    after = [ev("inference", T0 + 600, task_id=None, **hook)]
    for ctx in (None, "ctx"):  # a session whose tasks each mint a context, and one bound to one context
        corpus = ma.load(_home(tmp_path / str(ctx), "gpt-4.1", OPENAI_COUNTERS, tail=after, session_ctx=ctx))
        usage = corpus.usage
        mine = usage[usage["conversation_id"] == "bot/ctx"]
        assert list(mine["input_total_tokens"]) == [1900]
        session = usage[usage["conversation_id"].isna()]
        assert list(session["input_total_tokens"]) == [310] and list(session["session_id"]) == ["ses_1"]
        assert corpus.conversations.iloc[0]["tokens"] == 1900 + 22
        assert len(corpus.diagnostics) == 0


def test_a_task_is_counted_in_one_conversation_at_most(tmp_path: Path) -> None:
    home = _home(tmp_path, "gpt-4.1", OPENAI_COUNTERS)
    # A second store on the same context id, with no session on hand.
    record(home, "other-bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 21, text("hi"), n=1)])
    corpus = ma.load(home)
    by_conv = corpus.usage.groupby("conversation_id").size().to_dict()
    assert by_conv == {"bot/ctx": 1}
    tokens = corpus.conversations.set_index("conversation_id")["tokens"]
    assert tokens["bot/ctx"] == 1922 and pd.isna(tokens["other-bot/ctx"])


def test_a_record_named_by_no_session_still_takes_the_tasks_no_record_claims(tmp_path: Path) -> None:
    home = _home(tmp_path, "gpt-4.1", OPENAI_COUNTERS)
    (home / "conversations" / "bot").rename(home / "conversations" / "renamed-store")
    usage = ma.load(home).usage
    assert list(usage["conversation_id"]) == ["renamed-store/ctx"]


def test_wrongly_typed_counters_are_null_with_a_diagnostics_row(tmp_path: Path) -> None:
    counters = {"input_tokens_actual": "1900", "output_tokens_actual": 7777777, "cached_tokens": 8888888}
    home = _home(tmp_path, "gpt-4.1", counters)
    path = home / "sessions" / "ses_1" / "trace.jsonl"  # numbers no 64-bit writer makes
    path.write_text(path.read_text().replace("7777777", str(2**70)).replace("8888888", str(2**64 - 1)))
    corpus = ma.load(home)
    u = corpus.usage.iloc[0]
    assert u[["input_total_tokens", "output_tokens", "cache_read_tokens"]].isna().all()
    diags = corpus.diagnostics
    assert list(diags["kind"]) == ["bad_usage"] * 3
    assert {d.split("counter ")[1].split(" ")[0] for d in diags["detail"]} == {
        "input_tokens_actual", "output_tokens_actual", "cached_tokens"}


def test_responses_with_no_counters_are_counted_beside_tokens(tmp_path: Path) -> None:
    estimate_only: dict[str, Any] = {}
    home = _home(tmp_path, "gpt-4.1", OPENAI_COUNTERS, estimate_only)
    path = home / "conversations" / "bot" / "ctx" / "conversation.jsonl"
    with path.open("a") as f:  # an answer no inference of the trace accounts for
        f.write(json.dumps(msg("assistant", T0 + 400, text("late"), n=9)) + "\n")
    conv = ma.load(home).conversations.iloc[0]
    assert conv["tokens"] == 1922 and conv["unreported_responses"] == 2


def test_a_timestamp_no_datetime_holds_is_a_null_time_not_a_failed_load(tmp_path: Path) -> None:
    home = tmp_path / "home"
    far = 10**17  # Unix ms past year 9999
    record(home, "bot", "ctx", [msg("user", T0 + 10), msg("assistant", T0 + 21, text("hi"), n=1)])
    trace(home / "sessions" / "ses_1", [
        ev("session_start", T0, capsule_name="bot", model="gpt-4.1"),
        ev("task_start", T0 + 1, task_id="A", context_id="ctx"),
        inference(far, "A", 0, input_tokens=10, output_tokens=2, **OPENAI_COUNTERS),
        ev("task_end", T0 + 500, task_id="A", exit_status="ok"),
    ])
    usage = ma.load(home).usage
    assert len(usage) == 1 and usage.iloc[0]["input_total_tokens"] == 1900
    assert pd.isna(usage.iloc[0]["created_at"])
