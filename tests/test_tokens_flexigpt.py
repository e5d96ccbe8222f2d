"""FlexiGPT spend and provider-run tools, read by the SDK inference-go served each turn through.

Built from inference-go's adapters: the SDK of each provider preset
(``modelpreset/provider_*.go``), ``usageFrom*`` (what each SDK writes into ``spec.Usage``), and the
web-search outputs each adapter emits (Anthropic: ``isError`` on an error code; OpenAI
Responses: no output item; Google: ``ws_call_<n>`` calls and one ``ws_output`` per turn).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pandas as pd
from test_flexigpt import REALISTIC, store_file

import murmur_analysis as ma

USER = REALISTIC["messages"][0]


def conversation(provider: str, model: str, *assistant: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(REALISTIC)
    user = copy.deepcopy(USER)
    user["modelParam"]["name"] = model
    user["modelPresetRef"] = {"modelPresetID": "p", "providerName": provider}
    turns = [user]
    for n, fields in enumerate(assistant):
        turns.append({"createdAt": "2025-08-04T14:00:03Z", "id": f"01987561-cb00-7000-8000-00000000010{n}",
                      "role": "assistant", "status": "completed", **fields})
    doc["messages"] = turns
    return doc


def usage(total: int, cached: int, uncached: int, output: int, reasoning: int) -> dict[str, int]:
    return {"inputTokensTotal": total, "inputTokensCached": cached, "inputTokensUncached": uncached,
            "outputTokens": output, "reasoningTokens": reasoning}


def load(tmp_path: Path, doc: dict[str, Any]) -> ma.Corpus:
    store_file(tmp_path, doc)
    return ma.load(tmp_path, source="flexigpt")


def test_openrouter_serving_claude_reports_openai_counters(tmp_path: Path) -> None:
    # provider_openrouter.go: an OpenAI API; usageFromOpenAIResponse: outputTokens holds reasoning.
    doc = conversation("openrouter", "anthropic/claude-sonnet-4", {"usage": usage(3436, 1536, 1900, 400, 150)})
    u = load(tmp_path, doc).usage.iloc[0]
    assert (u["output_tokens"], u["reasoning_tokens"]) == (250, 150)
    assert (u["accounting"], u["provider_source"], u["provider"]) == ("openai", "runtime", "openrouter")


def test_gpt_oss_on_ollama_goes_through_the_anthropic_sdk(tmp_path: Path) -> None:
    # provider_ollama.go: SDKTypeAnthropic; usageFromAnthropicMessage writes ReasoningTokens = 0.
    doc = conversation("ollama", "gpt-oss:20b", {"usage": usage(700, 0, 700, 90, 0)})
    u = load(tmp_path, doc).usage.iloc[0]
    assert u["output_tokens"] == 90 and pd.isna(u["reasoning_tokens"])  # 0 means "not reported" here
    assert (u["accounting"], u["provider_source"]) == ("anthropic", "runtime")


def test_the_uncached_count_is_checked(tmp_path: Path) -> None:
    doc = conversation("openairesponses", "gpt-5-mini", {"usage": usage(900, 512, 500, 240, 128)})
    corpus = load(tmp_path, doc)
    u = corpus.usage.iloc[0]
    assert u["input_total_tokens"] == 900 and pd.isna(u["input_tokens"])
    assert list(corpus.diagnostics["kind"]) == ["bad_usage"]
    assert "uncached" in corpus.diagnostics.iloc[0]["detail"]


def test_a_turn_with_no_counters_is_counted_as_unreported(tmp_path: Path) -> None:
    doc = conversation("openairesponses", "gpt-5-mini", {"usage": usage(900, 512, 388, 240, 128)},
                       {"usage": usage(0, 0, 0, 0, 0), "status": "failed"})
    conv = load(tmp_path, doc).conversations.iloc[0]
    assert conv["tokens"] == 900 + 112 + 128 and conv["unreported_responses"] == 1


def test_wrongly_typed_counters_are_reported(tmp_path: Path) -> None:
    doc = conversation("openairesponses", "gpt-5-mini", {"usage": {**usage(900, 512, 388, 240, 128),
                                                                   "inputTokensTotal": "1900"}})
    corpus = load(tmp_path, doc)
    assert pd.isna(corpus.usage.iloc[0]["input_total_tokens"])
    assert list(corpus.diagnostics["kind"]) == ["bad_usage"]


def search_call(call_id: str, query: str) -> dict[str, Any]:
    return {"kind": "webSearchToolCall", "webSearchToolCall": {
        "type": "webSearch", "choiceID": "ws", "id": call_id, "role": "assistant", "status": "completed",
        "callID": call_id, "name": "webSearchToolChoice",
        "webSearchToolCallItems": [{"kind": "search", "searchItem": {"query": query}}]}}


def search_output(call_id: str, items: list[dict[str, Any]], is_error: bool) -> dict[str, Any]:
    return {"kind": "webSearchToolOutput", "webSearchToolOutput": {
        "type": "webSearch", "choiceID": "ws", "id": call_id, "role": "assistant", "status": "completed",
        "callID": call_id, "name": "webSearchToolChoice", "isError": is_error,
        "webSearchToolOutputItems": items}}


def test_an_anthropic_search_error_keeps_its_error_flag(tmp_path: Path) -> None:
    failed = [{"kind": "error", "errorItem": {"code": "max_uses_exceeded"}}]
    doc = conversation("anthropic", "claude-sonnet-4", {"outputs": [
        search_call("srvtoolu_1", "go release"), search_output("srvtoolu_1", failed, True)]})
    call = load(tmp_path, doc).tool_calls.iloc[0]
    assert (call["kind"], call["status"], call["is_error"]) == ("server", "error", True)


def test_a_search_the_provider_writes_no_output_for_is_not_unanswered(tmp_path: Path) -> None:
    # OpenAI Responses: a web_search_call item and no output item.
    doc = conversation("openairesponses", "gpt-5-mini", {"outputs": [search_call("ws_abc", "go release")]})
    call = load(tmp_path, doc).tool_calls.iloc[0]
    assert (call["kind"], call["status"]) == ("server", "ok") and pd.isna(call["result_seq"])


def test_googles_one_output_answers_every_search_of_the_turn(tmp_path: Path) -> None:
    found = [{"kind": "search", "searchItem": {"url": "https://go.dev/doc/devel/release", "title": "Release"}}]
    doc = conversation("googlegemini", "gemini-2.5-flash", {"outputs": [
        search_call("ws_call_0", "go release"), search_call("ws_call_1", "go 1.25"),
        search_output("ws_output", found, False)]})
    calls = load(tmp_path, doc).tool_calls
    assert list(calls["call_id"]) == ["ws_call_0", "ws_call_1"]
    assert list(calls["status"]) == ["ok", "ok"] and list(calls["result_seq"]) == [1, 1]
