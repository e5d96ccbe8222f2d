"""Build data/samples/flexigpt/: a FlexiGPT store with both schema versions, deterministically.

Shapes follow flexigpt/inference-go ``spec`` (``InputUnion``/``OutputUnion`` tagged by ``kind``,
``ToolCall{callID,name,arguments}``, ``ToolOutput{callID,name,isError,contents}``,
``ReasoningContent{summary,thinking,signature,encryptedContent}``,
``Usage{inputTokensTotal,inputTokensCached,inputTokensUncached,outputTokens,reasoningTokens}``,
``Error{code,message}``, ``ModelParam{name,…}``) and flexigpt-app's
``ModelPresetRef{providerName,modelPresetID}``; files are JSON with 2-space indent and sorted
keys, as the app writes them.

    flexigpt/
      conversationsv1/202506/<id>_Seed_era_greeting.json        schemaVersion v1.0.0, Anthropic
      conversations_v1/202508/<id>_Weather_in_two_cities.json   v1, OpenAI, tool calls + outputs, reasoning
      conversations_v1/202508/<id>_Latest_Go_release.json       v1, Google, web search, image, file, refusal
      conversations_v1/202509/<id>_Haiku_after_a_failure.json   v1, an error turn, an orphan output, unknown kind
      conversations_v1/202509/<id>_Broken.json                  not JSON          -> diagnostics bad_json
      conversations_v1/202509/<id>_From_the_future.json         schemaVersion v2  -> diagnostics unknown_schema
      conversations_v1/conversations.fts.sqlite                 the app's search index (empty; not read)
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

_BASES = {
    "greet": datetime(2025, 6, 10, 9, 15, 2, 123456, tzinfo=UTC),
    "weather": datetime(2025, 8, 4, 14, 0, 0, 0, tzinfo=UTC),
    "golang": datetime(2025, 8, 21, 7, 30, 0, 0, tzinfo=UTC),
    "haiku": datetime(2025, 9, 2, 18, 45, 0, 0, tzinfo=UTC),
    "broken": datetime(2025, 9, 3, 8, 0, 0, 0, tzinfo=UTC),
    "future": datetime(2025, 9, 5, 8, 0, 0, 0, tzinfo=UTC),
}


def uuid7(at: datetime, salt: int) -> str:
    """A UUIDv7 (dashed) minted at ``at`` with fixed random bits."""
    ms = int(at.timestamp() * 1000)
    rand = (salt * 0x9E3779B97F4A7C15) & ((1 << 74) - 1)
    hi = f"{ms:012x}"
    rand_a = (rand >> 62) & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    hexs = f"{hi}7{rand_a:03x}{(0b10 << 62 | rand_b):016x}"
    return f"{hexs[:8]}-{hexs[8:12]}-{hexs[12:16]}-{hexs[16:20]}-{hexs[20:]}"


def rfc3339(at: datetime, nanos: int = 0, offset: timedelta | None = None) -> str:
    """Go's RFC 3339 with nanoseconds (trailing zeros trimmed, as Go does)."""
    local = at.astimezone(UTC if offset is None else timezone(offset))
    frac = f"{local.microsecond * 1000 + nanos:09d}".rstrip("0")
    zone = "Z" if offset is None else local.strftime("%z")[:3] + ":" + local.strftime("%z")[3:]
    return local.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac}" if frac else "") + zone


def title_part(title: str) -> str:
    """The app's file-name title: cut to 64 bytes, every char outside [a-zA-Z0-9-] turned to _."""
    return re.sub(r"[^a-zA-Z0-9-]", "_", title.encode()[:64].decode(errors="ignore"))


def text(value: str) -> dict[str, Any]:
    return {"kind": "text", "textItem": {"text": value}}


def input_message(mid: str, *contents: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "inputMessage",
            "inputMessage": {"id": mid, "role": "user", "status": "completed", "contents": list(contents)}}


def output_message(mid: str, *contents: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "outputMessage",
            "outputMessage": {"id": mid, "role": "assistant", "status": "completed", "contents": list(contents)}}


def tool_call(kind: str, call_id: str, name: str, arguments: str, item_id: str) -> dict[str, Any]:
    return {"kind": kind, kind: {"type": "function" if kind == "functionToolCall" else "custom",
                                 "choiceID": f"choice-{name}", "id": item_id, "role": "assistant",
                                 "status": "completed", "callID": call_id, "name": name, "arguments": arguments}}


def tool_output(kind: str, call_id: str, name: str, is_error: bool, body: str, item_id: str) -> dict[str, Any]:
    return {"kind": kind, kind: {"type": "function" if kind == "functionToolOutput" else "custom",
                                 "choiceID": f"choice-{name}", "id": item_id, "role": "tool",
                                 "status": "completed", "callID": call_id, "name": name, "isError": is_error,
                                 "contents": [text(body)]}}


def usage(total: int, cached: int, output: int, reasoning: int) -> dict[str, int]:
    return {"inputTokensTotal": total, "inputTokensCached": cached, "inputTokensUncached": total - cached,
            "outputTokens": output, "reasoningTokens": reasoning}


def model_param(name: str, reasoning: dict[str, Any] | None = None) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "stream": True, "maxPromptLength": 200000, "maxOutputLength": 8192,
                             "systemPrompt": "You are a helpful assistant.", "timeout": 300,
                             "additionalParametersRawJSON": None}
    if reasoning:
        param["reasoning"] = reasoning
    return param


class Conv:
    """Builds one conversation: message ids and times advance from the conversation's base time."""

    def __init__(self, key: str, title: str, version: str) -> None:
        self.base = _BASES[key]
        self.salt = sum(map(ord, key)) * 1000
        self.id = uuid7(self.base, self.salt)
        self.title = title
        self.version = version
        self.messages: list[dict[str, Any]] = []

    def mid(self, n: int) -> str:
        return uuid7(self.base + timedelta(seconds=n), self.salt + n + 1)

    def add(self, role: str, offset_s: int, **fields: Any) -> None:
        n = len(self.messages)
        msg: dict[str, Any] = {"id": self.mid(n), "role": role,
                               "createdAt": rfc3339(self.base + timedelta(seconds=offset_s), nanos=789 + n,
                                                    offset=fields.pop("tz", None))}
        msg.update(fields)
        self.messages.append(msg)

    def doc(self) -> dict[str, Any]:
        last = self.messages[-1]["createdAt"] if self.messages else rfc3339(self.base)
        return {"schemaVersion": self.version, "id": self.id, "title": self.title,
                "createdAt": rfc3339(self.base), "modifiedAt": last, "messages": self.messages}


def greet() -> Conv:
    c = Conv("greet", "Seed era greeting", "v1.0.0")
    c.add("user", 0, status="completed", inputs=[input_message("in-1", text("Hello, what can you do?"))],
          modelParam=model_param("claude-sonnet-4-20250514", {"type": "hybridWithTokens", "level": "", "tokens": 1024}),
          modelPresetRef={"providerName": "anthropic", "modelPresetID": "sonnet4"})
    c.add("assistant", 4, status="completed", outputs=[
        {"kind": "reasoningMessage", "reasoningMessage": {
            "id": "rs-1", "role": "assistant", "status": "completed", "signature": "sig-greet-1",
            "thinking": ["The user greets me and asks about my abilities."]}},
        output_message("out-1", text("I can answer questions, write and review code, and summarize documents.")),
    ], usage=usage(1200, 1000, 80, 0))
    return c


def weather() -> Conv:
    c = Conv("weather", "Weather in two cities", "v1")
    c.add("user", 0, status="completed",
          inputs=[input_message("in-1", text("What's the weather in Paris and Berlin?"))],
          modelParam=model_param("gpt-5-mini", {"type": "singleWithLevels", "level": "low", "tokens": 0}),
          modelPresetRef={"providerName": "openairesponses", "modelPresetID": "gpt5mini"})
    c.add("assistant", 3, status="completed", outputs=[
        {"kind": "reasoningMessage", "reasoningMessage": {
            "id": "rs-1", "role": "assistant", "status": "completed",
            "summary": ["I need the weather for two cities; call the tool twice."],
            "encryptedContent": ["gAAAAABoEncryptedReasoningBlob=="]}},
        tool_call("functionToolCall", "call_paris", "get_weather", '{"city":"Paris"}', "fc-1"),
        tool_call("functionToolCall", "call_berlin", "get_weather", '{"city":"Berlin"}', "fc-2"),
    ], usage=usage(900, 512, 240, 128))
    c.add("user", 5, status="completed", inputs=[
        tool_output("functionToolOutput", "call_paris", "get_weather", False, "18°C, cloudy", "fo-1"),
        tool_output("functionToolOutput", "call_berlin", "get_weather", True, "upstream timeout", "fo-2"),
        input_message("in-2", text("Berlin failed; retry it, and note that you did.")),
    ])
    c.add("assistant", 8, status="completed", outputs=[
        tool_call("functionToolCall", "call_berlin_2", "get_weather", '{"city":"Berlin"}', "fc-3"),
        tool_call("customToolCall", "call_note", "append_note", "Retried Berlin after a timeout.", "ct-1"),
    ], usage=usage(1300, 1024, 40, 16))
    c.add("user", 10, status="completed", inputs=[
        tool_output("functionToolOutput", "call_berlin_2", "get_weather", False, "21°C, sunny", "fo-3"),
        tool_output("customToolOutput", "call_note", "append_note", False, "noted", "co-1"),
        input_message("in-3", text("Thanks, summarize both.")),
    ])
    c.add("assistant", 12, status="completed", outputs=[
        output_message("out-1", text("Paris: 18°C and cloudy. Berlin: 21°C and sunny.")),
    ], usage=usage(1500, 1280, 60, 0))
    return c


def golang() -> Conv:
    c = Conv("golang", "Latest Go release", "v1")
    c.add("user", 0, status="completed", tz=timedelta(hours=2), inputs=[input_message(
        "in-1", text("Find the latest Go release. Here is a screenshot of our build page."),
        {"kind": "image", "imageItem": {"id": "img-1", "detail": "auto", "imageName": "build.png",
                                        "imageMIME": "image/png", "imageURL": "https://example.com/build.png"}})],
        modelParam=model_param("gemini-2.5-flash", {"type": "hybridWithTokens", "level": "", "tokens": 1024}),
        modelPresetRef={"providerName": "googlegemini", "modelPresetID": "gemini25Flash"})
    c.add("assistant", 6, status="completed", outputs=[
        {"kind": "reasoningMessage", "reasoningMessage": {
            "id": "rs-1", "role": "assistant", "status": "completed",
            "thinking": ["Search the web for the Go release history."]}},
        {"kind": "webSearchToolCall", "webSearchToolCall": {
            "type": "webSearch", "choiceID": "ws-choice", "id": "ws_call_0", "role": "assistant",
            "status": "completed", "callID": "ws_call_0", "name": "webSearchToolChoice",
            "webSearchToolCallItems": [{"kind": "search", "searchItem": {"query": "latest Go release"}}]}},
        {"kind": "webSearchToolOutput", "webSearchToolOutput": {
            "type": "webSearch", "choiceID": "ws-choice", "id": "ws_output", "role": "assistant",
            "status": "completed", "callID": "ws_output", "name": "webSearchToolChoice", "isError": False,
            "webSearchToolOutputItems": [{"kind": "search", "searchItem": {
                "url": "https://go.dev/doc/devel/release", "title": "Release History"}}]}},
        output_message("out-1", text("The release history lists Go 1.25 as the latest major release.")),
    ], usage=usage(2000, 0, 150, 300))
    c.add("user", 9, status="completed", inputs=[input_message(
        "in-2",
        {"kind": "file", "fileItem": {"id": "file-1", "fileName": "notes.md", "fileMIME": "text/markdown",
                                      "fileData": "IyBOb3Rlcwo=", "citationConfig": None}},
        text("Summarize this file."))])
    c.add("assistant", 11, status="completed", outputs=[
        output_message("out-2", {"kind": "refusal", "refusalItem": {"refusal": "I cannot read that attachment."}}),
    ], usage=usage(2100, 1024, 12, 0))
    return c


def haiku() -> Conv:
    c = Conv("haiku", "Haiku after a failure", "v1")
    c.add("user", 0, status="completed", inputs=[input_message("in-1", text("Write a haiku about rain."))],
          modelParam=model_param("gpt-4.1"))
    c.add("assistant", 2, status="failed", outputs=[],
          usage=usage(0, 0, 0, 0), error={"code": "rate_limit_exceeded", "message": "Rate limit reached; retry later."})
    c.add("user", 30, status="completed", inputs=[
        tool_output("functionToolOutput", "call_lost", "get_time", False, "12:00", "fo-1"),
        {"kind": "audioMessage", "audioMessage": {"id": "au-1", "format": "wav", "data": "UklGRg=="}},
        input_message("in-2", text("Try again, please.")),
    ])
    c.add("assistant", 33, status="completed", outputs=[
        output_message("out-1", text("Soft rain on the roof\nthe gutters hum their one note\nthe street remembers")),
    ], usage=usage(30, 0, 17, 0))
    return c


def write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def place(store: Path, conv: Conv) -> Path:
    return store / conv.base.strftime("%Y%m") / f"{conv.id}_{title_part(conv.title)}.json"


def build(root: Path) -> None:
    """Write ``root/flexigpt``."""
    out = root / "flexigpt"
    seed_store, store = out / "conversationsv1", out / "conversations_v1"
    c = greet()
    write(place(seed_store, c), c.doc())
    for conv in (weather(), golang(), haiku()):
        write(place(store, conv), conv.doc())
    broken = Conv("broken", "Broken", "v1")
    broken.add("user", 0, inputs=[input_message("in-1", text("this file was cut short"))])
    body = json.dumps(broken.doc(), indent=2, sort_keys=True)
    target = place(store, broken)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(body[: len(body) // 2], encoding="utf-8")
    future = Conv("future", "From the future", "v2")
    future.add("user", 0, inputs=[input_message("in-1", text("a format this reader does not know"))])
    write(place(store, future), future.doc())
    (store / "conversations.fts.sqlite").write_bytes(b"")
