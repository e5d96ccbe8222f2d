"""Litany entry names, bodies and token rules (formats.md §2, docs/tokens.md ## litany)."""

from __future__ import annotations

import pytest

from murmur_analysis.core.model import Text, ToolResult, ToolUse, Unknown
from murmur_analysis.core.providers import Resolved, resolve
from murmur_analysis.sources.litany.entries import entry_name, normalize_usage, parse_body


def api(row: str) -> Resolved:
    """The API a step's provider row names."""
    return resolve(row, None)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("001-operator.md", (1, "user", "operator")),
        ("002-claude-fable-5.json", (2, "assistant", "claude-fable-5")),
        ("003-tool.json", (3, "tool", "tool")),
        ("1000-tool.json", (1000, "tool", "tool")),
        ("+7-tool.json", (7, "tool", "tool")),  # Rust's u32 parse takes one leading '+'
        ("004-tool-x.json", (4, "assistant", "tool-x")),  # only exactly "tool" is tool-side
        ("005-tool", (5, "tool", "tool")),  # no extension: a JSON entry
        ("006-.json", (6, "assistant", "")),  # empty origin: assistant-side
        ("007-a.b.md", (7, "user", "a.b")),
        ("4294967295-x.md", (4294967295, "user", "x")),
    ],
)
def test_entry_names_parse_as_the_seed_assembler(name: str, expected: tuple[int, str, str]) -> None:
    parsed = entry_name(name)
    assert parsed is not None
    assert (parsed.seq, parsed.side, parsed.origin) == expected


@pytest.mark.parametrize("name", ["notes.txt", "006.json", "-001-x.md", "4294967296-x.md", "+-1-x.md", "0x1-x.md",
                                  " 1-x.md", "1a-x.md", "", "++1-x.md"])
def test_non_conforming_names_are_not_entries(name: str) -> None:
    assert entry_name(name) is None


def test_markdown_is_one_text_block_verbatim() -> None:
    body = "  line one\n\n# not a header to us\n"
    assert parse_body(body.encode(), True).blocks == (Text(body),)
    assert parse_body(b"\xff", True).error is not None


def test_both_lawful_json_shapes_and_usage(fixtures: object) -> None:
    bare = parse_body(b'[{"type":"text","text":"legacy"}]', False)
    assert bare.blocks == (Text("legacy"),) and bare.usage is None
    obj = parse_body(b'{"content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":5,"output_tokens":3}}', False)
    assert obj.blocks == (Text("hi"),) and obj.usage == {"input_tokens": 5, "output_tokens": 3}
    mixed = parse_body(b'["plain",{"type":"tool_use","id":"t","name":"n","input":{}},{"type":"future"}]', False)
    assert isinstance(mixed.blocks[0], Text) and isinstance(mixed.blocks[1], ToolUse)
    assert isinstance(mixed.blocks[2], Unknown)
    res = parse_body(b'[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"x"}],'
                     b'"is_error":true}]', False)
    assert res.blocks == (ToolResult("t", (Text("x"),), True),)


@pytest.mark.parametrize("body", [b"{", b'{"usage":{}}', b'"text"', b"42", b'{"content":"x"}'])
def test_unreadable_json_entries_are_errors_not_crashes(body: bytes) -> None:
    assert parse_body(body, False).error is not None


@pytest.mark.parametrize(
    ("provider", "model", "family"),
    [
        ("anthropic", "claude-fable-5", "anthropic"),
        ("claude-max", "x", "anthropic"),
        ("openai", "gpt-5-mini", "openai"),
        ("openrouter", "anthropic/claude-3.7", "openai"),  # the row decides, not the model it serves
        ("ollama", "llama3", "openai"),
        ("google", "gemini-2.5-pro", "google"),
        ("vertex-eu", "x", "google"),
        (None, "claude-haiku-4", "anthropic"),
        (None, "gemini-2.5-flash", "google"),
        (None, "gpt-5", "openai"),
        (None, None, "openai"),
        ("my-row", "mystery-model", "openai"),
    ],
)
def test_provider_family(provider: str | None, model: str | None, family: str) -> None:
    assert resolve(provider, model).accounting.family == family


def test_rule_input_total_wins_when_reported() -> None:
    u = normalize_usage({"input_tokens": 12, "output_tokens": 34, "cache_read_tokens": 5, "cache_write_tokens": 6,
                         "input_total_tokens": 23, "context_window": 200000}, api("anthropic"))
    assert u is not None
    assert (u.input_total_tokens, u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (23, 12, 5, 6)
    assert (u.output_tokens, u.context_window, u.provider_input_tokens) == (34, 200000, 12)


def test_rule_anthropic_adds_the_cache_slices_to_input_tokens() -> None:
    u = normalize_usage({"input_tokens": 401, "output_tokens": 30, "cache_read_tokens": 1200,
                         "cache_write_tokens": 7}, api("anthropic"))
    assert u is not None and (u.input_total_tokens, u.input_tokens) == (1608, 401)


def test_rule_openai_input_tokens_already_hold_the_cache() -> None:
    u = normalize_usage({"input_tokens": 3100, "output_tokens": 240, "cache_read_tokens": 2048,
                         "thinking_tokens": 128}, api("openai"))
    assert u is not None
    assert (u.input_total_tokens, u.input_tokens, u.cache_read_tokens) == (3100, 1052, 2048)
    assert (u.output_tokens, u.reasoning_tokens, u.provider_output_tokens) == (240, 128, 240)


@pytest.mark.parametrize("row", ["openai", "anthropic", "google", "openrouter"])
def test_brazen_thinking_tokens_are_never_subtracted_again(row: str) -> None:
    # brazen usage.rs `with_thinking` (test openai_chat_subtracts_the_contained_reasoning): a
    # response of 396 completion tokens, 383 of them reasoning, is written as 13 + 383.
    u = normalize_usage({"input_tokens": 9, "input_total_tokens": 9, "output_tokens": 13, "thinking_tokens": 383},
                        api(row))
    assert u is not None and (u.output_tokens, u.reasoning_tokens) == (13, 383)
    assert u.output_tokens + u.reasoning_tokens == 396 and u.problems == ()


def test_rule_google_input_holds_the_cache_and_reasoning_sits_beside_output() -> None:
    u = normalize_usage({"input_tokens": 5400, "output_tokens": 211, "cache_read_tokens": 4096,
                         "thinking_tokens": 512}, api("google"))
    assert u is not None
    assert (u.input_total_tokens, u.input_tokens, u.output_tokens, u.reasoning_tokens) == (5400, 1304, 211, 512)


def test_rule_anthropic_thinking_tokens_sit_beside_output() -> None:
    u = normalize_usage({"input_tokens": 10, "output_tokens": 100, "thinking_tokens": 40}, api("anthropic"))
    assert u is not None and (u.output_tokens, u.reasoning_tokens) == (100, 40)


def test_rule_unreported_counters_stay_null_and_unknown_ones_ride_through() -> None:
    u = normalize_usage({"input_tokens": 5}, api("anthropic"))
    assert u is not None
    assert (u.input_total_tokens, u.input_tokens, u.output_tokens, u.cache_read_tokens) == (5, 5, None, None)
    v = normalize_usage({"output_tokens": 3, "audio_tokens": 9, "input_tokens": "many"}, api("openai"))
    assert v is not None and v.input_total_tokens is None and v.output_tokens == 3
    assert dict(v.extra) == {"audio_tokens": 9, "input_tokens": "many"}
    assert len(v.problems) == 1 and "input_tokens" in v.problems[0]
    assert normalize_usage({}, api("openai")) is None and normalize_usage(None, "openai") is None
    assert normalize_usage({"input_tokens": None}, api("openai")) is None
