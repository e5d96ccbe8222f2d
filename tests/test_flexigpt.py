"""FlexiGPT: decoding the store's JSON (shapes from flexigpt/inference-go spec and flexigpt-app), and the sample."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import murmur_analysis as ma
from murmur_analysis.core.model import (
    File,
    Image,
    Refusal,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Unknown,
)
from murmur_analysis.errors import ReadMessagesError
from murmur_analysis.sources.base import Diagnostics
from murmur_analysis.sources.flexigpt import FlexiGPTSource, api_of, normalize_usage
from murmur_analysis.tables.schema import schema

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "samples" / "flexigpt"
CONV_ID = "01987561-cb00-7de6-8f3e-021d2ecaf780"

# A conversation as the app writes it (2-space indent, sorted keys; inference-go spec shapes).
REALISTIC: dict[str, Any] = {
    "createdAt": "2025-08-04T14:00:00.123456789Z",
    "id": CONV_ID,
    "messages": [
        {
            "createdAt": "2025-08-04T14:00:00.123456789Z",
            "id": "01987561-cb00-7000-8000-000000000001",
            "inputs": [{"inputMessage": {"contents": [{"kind": "text", "textItem": {"text": "Weather in Paris?"}}],
                                         "id": "in-1", "role": "user", "status": "completed"},
                        "kind": "inputMessage"}],
            "modelParam": {"additionalParametersRawJSON": None, "maxOutputLength": 8192, "maxPromptLength": 200000,
                           "name": "gpt-5-mini", "stream": True, "systemPrompt": "", "timeout": 300},
            "modelPresetRef": {"modelPresetID": "gpt5mini", "providerName": "openairesponses"},
            "role": "user",
            "status": "completed",
        },
        {
            "createdAt": "2025-08-04T16:00:03.5+02:00",
            "id": "01987561-cb00-7000-8000-000000000002",
            "outputs": [
                {"kind": "reasoningMessage",
                 "reasoningMessage": {"id": "rs-1", "role": "assistant", "status": "completed",
                                      "summary": ["Call the weather tool."], "encryptedContent": ["gAAA=="]}},
                {"functionToolCall": {"arguments": "{\"city\":\"Paris\"}", "callID": "call_1", "choiceID": "c-1",
                                      "id": "fc-1", "name": "get_weather", "role": "assistant",
                                      "status": "completed", "type": "function"},
                 "kind": "functionToolCall"},
            ],
            "role": "assistant",
            "status": "completed",
            "usage": {"inputTokensCached": 512, "inputTokensTotal": 900, "inputTokensUncached": 388,
                      "outputTokens": 240, "reasoningTokens": 128},
        },
        {
            "createdAt": "2025-08-04T14:00:05Z",
            "id": "01987561-cb00-7000-8000-000000000003",
            "inputs": [
                {"functionToolOutput": {"callID": "call_1", "choiceID": "c-1", "contents": [
                    {"kind": "text", "textItem": {"text": "18C"}}], "id": "fo-1", "isError": False,
                    "name": "get_weather", "role": "tool", "status": "completed", "type": "function"},
                 "kind": "functionToolOutput"},
                {"inputMessage": {"contents": [{"kind": "text", "textItem": {"text": "Thanks"}}], "id": "in-2",
                                  "role": "user", "status": "completed"}, "kind": "inputMessage"},
            ],
            "role": "user",
        },
        {
            "createdAt": "2025-08-04T14:00:07Z",
            "error": {"code": "context_length_exceeded", "message": "prompt too long"},
            "id": "01987561-cb00-7000-8000-000000000004",
            "role": "assistant",
            "status": "failed",
            "usage": {"inputTokensCached": 0, "inputTokensTotal": 0, "inputTokensUncached": 0, "outputTokens": 0,
                      "reasoningTokens": 0},
        },
    ],
    "modifiedAt": "2025-08-04T14:00:07Z",
    "schemaVersion": "v1",
    "title": "Weather in Paris",
}


def write(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    return path


def store_file(root: Path, doc: dict[str, Any], store: str = "conversations_v1", month: str = "202508") -> Path:
    title = doc.get("title", "").replace(" ", "_")
    return write(root / store / month / f"{doc['id']}_{title}.json", doc)


def read(doc: dict[str, Any], tmp_path: Path) -> ma.ConversationHandle:
    path = store_file(tmp_path, doc)
    return ma.load(path, source="flexigpt").conversation(doc["id"])


# -- decoding ---------------------------------------------------------------------------------


def test_messages_become_entries_with_ids_times_sides_and_blocks(tmp_path: Path) -> None:
    entries = read(REALISTIC, tmp_path).entries
    assert [(e.position, e.side) for e in entries] == [(0, "user"), (1, "assistant"), (2, "user"), (3, "assistant")]
    assert entries[0].id == "01987561-cb00-7000-8000-000000000001"
    assert entries[0].created_at == datetime(2025, 8, 4, 14, 0, 0, 123456, tzinfo=UTC)
    assert entries[1].created_at == datetime(2025, 8, 4, 14, 0, 3, 500000, tzinfo=UTC)
    thinking, call = entries[1].blocks
    assert isinstance(thinking, Thinking) and thinking.text == "Call the weather tool."
    assert thinking.encrypted_content == "gAAA==" and thinking.id == "rs-1"
    assert isinstance(call, ToolUse)
    assert (call.id, call.name, call.input) == ("call_1", "get_weather", {"city": "Paris"})
    assert call.extra["arguments"] == '{"city":"Paris"}'
    result, text = entries[2].blocks
    assert isinstance(result, ToolResult) and result.tool_use_id == "call_1" and result.is_error is False
    assert result.content == (Text("18C"),)
    assert text == Text("Thanks")
    assert entries[1].model == "gpt-5-mini" and entries[0].model is None
    assert entries[3].model == "gpt-5-mini"  # carried over from the turn that set it
    assert entries[3].status == "failed" and entries[3].error == "context_length_exceeded: prompt too long"
    assert entries[3].usage is None  # all-zero usage on a failed turn is no usage


def test_tables_show_status_error_usage_and_tool_input_size(tmp_path: Path) -> None:
    store_file(tmp_path, REALISTIC)
    corpus = ma.load(tmp_path, source="flexigpt")
    msgs = corpus.messages
    assert msgs["status"].fillna("-").tolist() == ["completed", "completed", "-", "failed"]
    assert msgs["error"].tolist()[3] == "context_length_exceeded: prompt too long"
    calls = corpus.tool_calls
    assert calls["status"].tolist() == ["ok"] and calls["input_bytes"].tolist() == [len('{"city":"Paris"}')]
    usage = corpus.usage.iloc[0]
    assert usage["provider"] == "openairesponses" and usage["model"] == "gpt-5-mini"
    assert usage["accounting"] == "openai" and usage["provider_source"] == "runtime"
    assert (usage["input_total_tokens"], usage["cache_read_tokens"], usage["input_tokens"]) == (900, 512, 388)
    assert (usage["output_tokens"], usage["reasoning_tokens"]) == (112, 128)
    assert len(corpus.usage) == 1


def test_every_block_kind(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(REALISTIC))
    doc["messages"] = [{
        "createdAt": "2025-08-04T14:00:00Z", "id": "m1", "role": "assistant",
        "outputs": [
            {"kind": "outputMessage", "outputMessage": {"id": "o", "role": "assistant", "contents": [
                {"kind": "text", "textItem": {"text": "hi", "citations": [{"kind": "url"}]}},
                {"kind": "image", "imageItem": {"imageName": "a.png", "imageURL": "https://x/a.png"}},
                {"kind": "file", "fileItem": {"fileName": "a.md", "fileData": "Iw==", "citationConfig": None}},
                {"kind": "refusal", "refusalItem": {"refusal": "no"}},
                {"kind": "video", "videoItem": {"url": "v"}},
            ]}},
            {"kind": "customToolCall", "customToolCall": {"callID": "c1", "name": "note", "arguments": "free text"}},
            {"kind": "webSearchToolCall", "webSearchToolCall": {
                "callID": "w1", "name": "webSearchToolChoice",
                "webSearchToolCallItems": [{"kind": "search", "searchItem": {"query": "q"}}]}},
            {"kind": "webSearchToolOutput", "webSearchToolOutput": {
                "callID": "w1", "name": "webSearchToolChoice", "isError": False,
                "webSearchToolOutputItems": [{"kind": "search", "searchItem": {"url": "https://x"}}]}},
            {"kind": "reasoningMessage", "reasoningMessage": {"id": "r", "redactedThinking": ["opaque"]}},
            {"kind": "holographicMessage", "holographicMessage": {"id": "h"}},
        ],
    }]
    blocks = read(doc, tmp_path).entries[0].blocks
    kinds = [b.kind for b in blocks]
    assert kinds == ["text", "image", "file", "refusal", "unknown", "tool_use", "server_tool_use",
                     "server_tool_result", "redacted_thinking", "unknown"]
    assert blocks[0] == Text("hi", {"citations": [{"kind": "url"}]})
    assert isinstance(blocks[1], Image) and blocks[1].source["imageName"] == "a.png"
    assert isinstance(blocks[2], File) and blocks[2].data["fileName"] == "a.md"
    assert blocks[3] == Refusal("no")
    assert isinstance(blocks[4], Unknown) and blocks[4].data["kind"] == "video"
    assert isinstance(blocks[5], ToolUse) and blocks[5].input == "free text"
    assert isinstance(blocks[6], ServerToolUse)
    assert blocks[6].input == [{"kind": "search", "searchItem": {"query": "q"}}]
    assert isinstance(blocks[7], ServerToolResult) and blocks[7].tool_use_id == "w1"
    assert isinstance(blocks[9], Unknown) and blocks[9].data["kind"] == "holographicMessage"


@pytest.mark.parametrize(
    ("provider", "model", "family"),
    [("anthropic", None, "anthropic"), ("googlegemini", None, "google"), ("openairesponses", None, "openai"),
     ("openaichat", None, "openai"), (None, "claude-opus-4-1", "anthropic"), (None, "gemini-2.5-pro", "google"),
     (None, "gpt-4.1", "openai"), (None, "o3-mini", "openai"), ("huggingface", "meta-llama/Llama-3", "openai"),
     # inference-go presets: the SDK decides, not the model (provider_ollama.go: SDKTypeAnthropic;
     # provider_openrouter.go: an OpenAI API)
     ("ollama", "gpt-oss:20b", "anthropic"), ("openrouter", "anthropic/claude-sonnet-4", "openai"),
     ("my-gateway", "claude-x", "anthropic"), ("my-gateway", "llama3", None)],
)
def test_provider_family(provider: str | None, model: str | None, family: str | None) -> None:
    assert api_of(provider, model).family == family


def test_usage_rules_per_provider() -> None:
    raw = {"inputTokensTotal": 1000, "inputTokensCached": 400, "inputTokensUncached": 600, "outputTokens": 300,
           "reasoningTokens": 100}
    openai = normalize_usage(raw, api_of("openai", None))
    google = normalize_usage(raw, api_of("googlegemini", None))
    assert openai is not None and google is not None
    assert (openai.input_total_tokens, openai.cache_read_tokens, openai.input_tokens) == (1000, 400, 600)
    assert (openai.output_tokens, openai.reasoning_tokens) == (200, 100)  # OpenAI's output includes reasoning
    assert (google.output_tokens, google.reasoning_tokens) == (300, 100)  # Google's sits beside it
    anthropic = normalize_usage({**raw, "reasoningTokens": 0}, api_of("anthropic", None))
    assert anthropic is not None and anthropic.reasoning_tokens is None and anthropic.output_tokens == 300
    assert anthropic.cache_write_tokens is None
    unknown = normalize_usage(raw, api_of(None, None))
    assert unknown is not None and unknown.output_tokens == 200
    assert normalize_usage({k: 0 for k in raw}, api_of("openai", None)) is None


def test_both_schema_versions_and_both_store_names(tmp_path: Path) -> None:
    old = {**REALISTIC, "schemaVersion": "v1.0.0", "id": "01900000-0000-7000-8000-000000000001", "title": "Old"}
    store_file(tmp_path, old, store="conversationsv1", month="202406")
    store_file(tmp_path, REALISTIC)
    corpus = ma.load(tmp_path)  # detected: a folder holding a store
    assert sorted(corpus.conversations["conversation_id"]) == sorted([old["id"], CONV_ID])
    assert len(corpus.diagnostics) == 0


def test_unknown_schema_and_bad_json_are_diagnostics(tmp_path: Path) -> None:
    store_file(tmp_path, REALISTIC)
    store_file(tmp_path, {**REALISTIC, "id": "01990000-0000-7000-8000-00000000000f", "schemaVersion": "v9"})
    bad = tmp_path / "conversations_v1" / "202508" / "01990000-0000-7000-8000-00000000000e_Cut.json"
    bad.write_text('{"id": "01990000-0000-7000-8000-00000000000e", "messa')
    not_conv = store_file(tmp_path, {"id": "x"}, month="202509")
    not_conv.write_text("[1, 2]")
    corpus = ma.load(tmp_path / "conversations_v1", source="flexigpt")
    assert corpus.conversations["conversation_id"].tolist() == [CONV_ID]
    assert sorted(corpus.diagnostics["kind"]) == ["bad_json", "bad_json", "unknown_schema"]
    assert set(corpus.diagnostics["source"]) == {"flexigpt"}


def test_listing_is_newest_first_through_the_cursor_core(tmp_path: Path) -> None:
    ids = [f"0198{n:04x}-0000-7000-8000-000000000000" for n in range(5)]
    for n, cid in enumerate(ids):
        store_file(tmp_path, {**REALISTIC, "id": cid, "title": f"T{n}"}, month="202507" if n < 2 else "202508")
    source = FlexiGPTSource()
    walked: list[str] = []
    cursor: str | None = None
    while True:
        items, cursor, total = source.list_conversations(tmp_path, cursor, limit=2)
        assert total == 5
        walked.extend(i.id for i in items)
        if cursor is None:
            break
    assert walked == ids[::-1]
    with pytest.raises(ReadMessagesError, match="invalid-cursor"):
        source.list_conversations(tmp_path, "mc_99")
    corpus = ma.load(tmp_path, source="flexigpt")
    assert corpus.conversations["conversation_id"].tolist() == ids[::-1]


def test_detection(tmp_path: Path) -> None:
    path = store_file(tmp_path, REALISTIC)
    source = FlexiGPTSource()
    assert source.guess_can_open(tmp_path)
    assert source.guess_can_open(tmp_path / "conversations_v1")
    assert source.guess_can_open(path.parent)  # a month partition
    assert source.guess_can_open(path)
    other = write(tmp_path / "notes.json", {"a": 1})
    assert not source.guess_can_open(other)
    assert not source.guess_can_open(tmp_path / "conversations_v1" / "conversations.fts.sqlite")


def test_reopen_reads_the_file_again(tmp_path: Path) -> None:
    path = store_file(tmp_path, REALISTIC)
    conv = FlexiGPTSource().reopen(str(path), Diagnostics("flexigpt"))
    assert conv.conversation_id == CONV_ID and len(list(conv.entries)) == 4
    path.write_text("{")
    diags = Diagnostics("flexigpt")
    gone = FlexiGPTSource().reopen(str(path), diags)
    assert list(gone.entries) == [] and [d.kind for d in diags.rows] == ["bad_json"]


# -- the bundled sample -----------------------------------------------------------------------


def test_sample_exact_counts() -> None:
    corpus = ma.load(SAMPLE)
    sizes = {name: table.num_rows for name, table in corpus.tables.items()}
    assert sizes == {"messages": 16, "tool_calls": 6, "usage": 7, "orphans": 1, "growth": 16, "steps": 0,
                     "conversations": 4, "diagnostics": 2}
    for name, table in corpus.tables.items():
        assert table.schema == schema(name)
    conv = corpus.conversations.set_index("title")
    assert conv["messages"].to_dict() == {"Haiku after a failure": 4, "Latest Go release": 4,
                                          "Weather in two cities": 6, "Seed era greeting": 2}
    assert conv.loc["Weather in two cities", "tool_calls"] == 4
    assert conv.loc["Weather in two cities", "tool_errors"] == 1
    assert conv.loc["Haiku after a failure", "orphans"] == 1
    # newest first, as the app lists them
    assert corpus.conversations["title"].tolist() == ["Haiku after a failure", "Latest Go release",
                                                     "Weather in two cities", "Seed era greeting"]
    assert sorted(corpus.diagnostics["kind"]) == ["bad_json", "unknown_schema"]
    calls = corpus.tool_calls.set_index("call_id")
    assert calls["status"].to_dict() == {"call_lost": "orphan_result", "ws_call_0": "ok", "call_paris": "ok",
                                         "call_berlin": "error", "call_berlin_2": "ok", "call_note": "ok"}
    assert calls.loc["ws_call_0", "kind"] == "server"
    assert sorted(corpus.usage["accounting"].value_counts().items()) == [("anthropic", 1), ("google", 2), ("openai", 4)]
    guessed = corpus.usage[corpus.usage["provider_source"] == "model_name"]
    assert list(guessed["model"]) == ["gpt-4.1"]  # no provider preset recorded: the model name is a guess
    msgs = corpus.messages
    assert msgs["reasoning_tokens"].sum() == 300 + 128 + 16
    assert (msgs["status"] == "failed").sum() == 1
    assert msgs["block_kinds"].map(lambda kinds: "thinking" in list(kinds)).sum() == 3
    assert msgs["created_at"].notna().all()


def test_sample_is_rebuilt_byte_for_byte(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("build_flexigpt", REPO / "data" / "samples" / "build_flexigpt.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path)
    built = sorted(p.relative_to(tmp_path / "flexigpt") for p in (tmp_path / "flexigpt").rglob("*") if p.is_file())
    shipped = sorted(p.relative_to(SAMPLE) for p in SAMPLE.rglob("*") if p.is_file())
    assert built == shipped
    for rel in built:
        assert (tmp_path / "flexigpt" / rel).read_bytes() == (SAMPLE / rel).read_bytes(), rel
    shutil.rmtree(tmp_path / "flexigpt")
