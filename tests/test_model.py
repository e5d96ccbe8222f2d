"""The canonical model: every block kind has a home, nothing is lost."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from murmur_analysis.core.blocks import text_chars
from murmur_analysis.core.model import (
    Document,
    Image,
    RedactedThinking,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Unknown,
    Usage,
)
from murmur_analysis.core.values import uuid7_datetime
from murmur_analysis.core.wire import block_from_wire, block_to_wire, blocks_from_wire


def golden(fixtures: Path, name: str) -> list[dict[str, Any]]:
    return [orjson.loads(x) for x in (fixtures / "litany" / name).read_text().splitlines() if x.strip()]


def all_blocks(request: dict[str, Any]) -> list[Any]:
    out = list(request.get("system") or [])
    for message in request["messages"]:
        out.extend(message["content"])
    return out


@pytest.mark.parametrize("name", ["golden_v1_requests.jsonl", "golden_v1_requests.snapshot-v0.0.6.jsonl"])
def test_golden_requests_round_trip_through_the_model(fixtures: Path, name: str) -> None:
    for request in golden(fixtures, name):
        for block in all_blocks(request):
            decoded = block_from_wire(block, "brazen")
            assert not isinstance(decoded, Unknown), block
            assert block_to_wire(decoded, "brazen") == block


def test_golden_line_two_gives_every_block_kind_its_home(fixtures: Path) -> None:
    request = golden(fixtures, "golden_v1_requests.jsonl")[1]
    kinds = [type(block_from_wire(b)) for b in all_blocks(request)]
    assert kinds == [
        Text, Text, Image, Document, Thinking, Thinking, RedactedThinking, ToolUse, ToolUse, ServerToolUse,
        ServerToolResult, ToolResult, ToolResult,
    ]
    blocks = [block_from_wire(b) for b in all_blocks(request)]
    first, plain = blocks[4], blocks[5]
    assert isinstance(first, Thinking)
    assert (first.signature, first.id, first.encrypted_content) == ("sig", "rs_1", "enc")
    assert isinstance(plain, Thinking) and plain.signature is None and block_to_wire(plain)["signature"] is None
    use = blocks[7]
    assert isinstance(use, ToolUse) and use.signature == "gsig" and use.input == {"q": "x"}
    result = blocks[12]
    assert isinstance(result, ToolResult) and result.is_error is True and result.content == (Text("boom"),)
    server = blocks[10]
    assert isinstance(server, ServerToolResult) and server.type == "web_search_tool_result"


def test_unknown_kinds_and_broken_blocks_are_kept_whole() -> None:
    for raw in (
        {"type": "future_kind", "n": 1},
        {"type": "text"},  # missing its text
        {"type": "text", "text": 5},
        {"type": "tool_use", "id": "x"},
        {"no_type": True},
        42,
        None,
    ):
        block = block_from_wire(raw)
        assert isinstance(block, Unknown)
        assert block_to_wire(block) == raw
    assert block_from_wire({"type": "future_kind"}).type == "future_kind"  # type: ignore[union-attr]


def test_bare_strings_are_text_and_extra_keys_ride_along() -> None:
    assert blocks_from_wire(["hi", {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]) == (
        Text("hi"),
        Text("x", {"cache_control": {"type": "ephemeral"}}),
    )
    assert blocks_from_wire("whole") == (Text("whole"),)
    wire = {"type": "tool_result", "tool_use_id": "t", "content": "plain", "is_error": False}
    assert block_to_wire(block_from_wire(wire)) == wire


def test_murmur_dialect_says_tool_call() -> None:
    wire = {"id": "call_1", "input": {"path": "."}, "name": "ls", "type": "tool_call"}
    block = block_from_wire(wire, "murmur")
    assert block == ToolUse("call_1", "ls", {"path": "."})
    assert block_to_wire(block, "murmur") == wire
    assert block_to_wire(block, "brazen")["type"] == "tool_use"
    assert isinstance(block_from_wire({"type": "tool_use", "id": "a", "name": "b"}, "murmur"), Unknown)
    assert isinstance(block_from_wire({"type": "tool_call", "id": "a", "name": "b"}, "brazen"), Unknown)


def test_text_chars_counts_text_reasoning_and_result_text() -> None:
    blocks = blocks_from_wire(
        [
            {"type": "text", "text": "abc"},
            {"type": "thinking", "text": "de", "signature": None},
            {"type": "tool_use", "id": "t", "name": "n", "input": {"long": "x" * 50}},
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "fgh"}]},
        ]
    )
    assert text_chars(blocks) == 8


@pytest.mark.parametrize(
    ("provider", "raw", "expected"),
    [
        # Anthropic: cache slices beside input_tokens; no reasoning split.
        ("anthropic", dict(input_tokens=100, output_tokens=20, cache_read_tokens=1000, cache_write_tokens=50,
                           cache_in_input=False, reasoning_in_output=False), (100, 20, 1150, None)),
        # OpenAI: cached inside input; reasoning inside output.
        ("openai", dict(input_tokens=1200, output_tokens=300, cache_read_tokens=1000, reasoning_tokens=200,
                        cache_in_input=True, reasoning_in_output=True, cache_write_slice=False), (200, 100, 1200, 200)),
        # Google: cached inside input; reasoning beside output.
        ("google", dict(input_tokens=500, output_tokens=40, cache_read_tokens=100, reasoning_tokens=60,
                        cache_in_input=True, reasoning_in_output=False, cache_write_slice=False), (400, 40, 500, 60)),
    ],
)
def test_usage_normalization_per_provider(provider: str, raw: dict[str, Any], expected: tuple[Any, ...]) -> None:
    u = Usage.normalize(**raw)
    assert (u.input_tokens, u.output_tokens, u.input_total_tokens, u.reasoning_tokens) == expected
    assert u.input_tokens + (u.cache_read_tokens or 0) + (u.cache_write_tokens or 0) == u.input_total_tokens
    assert u.provider_input_tokens == raw["input_tokens"] and u.provider_output_tokens == raw["output_tokens"]


def test_unreported_counters_stay_null() -> None:
    u = Usage.normalize(output_tokens=3, cache_in_input=False, reasoning_in_output=False)
    assert (u.input_tokens, u.input_total_tokens, u.cache_read_tokens, u.reasoning_tokens) == (None, None, None, None)
    assert u.output_tokens == 3
    given_total = Usage.normalize(input_tokens=12, input_total_tokens=23, cache_read_tokens=5, cache_write_tokens=6,
                                  cache_in_input=False, reasoning_in_output=False)
    assert given_total.input_total_tokens == 23 and given_total.input_tokens == 12 and given_total.problems == ()


def test_contradicting_counters_are_not_clamped_but_reported() -> None:
    # Anthropic: input_tokens is the uncached rest, so 5 + 5 + 6 cannot be a prompt of 23.
    u = Usage.normalize(input_tokens=5, input_total_tokens=23, cache_read_tokens=5, cache_write_tokens=6,
                        cache_in_input=False, reasoning_in_output=False)
    assert (u.input_total_tokens, u.input_tokens) == (23, None) and len(u.problems) == 1
    # OpenAI: a cached slice larger than the whole prompt, reasoning larger than the output holding it.
    v = Usage.normalize(input_tokens=100, cache_read_tokens=150, output_tokens=10, reasoning_tokens=20,
                        cache_in_input=True, reasoning_in_output=True, cache_write_slice=False)
    assert (v.input_total_tokens, v.input_tokens, v.output_tokens, v.reasoning_tokens) == (100, None, None, 20)
    assert len(v.problems) == 2


def test_uncached_is_null_when_a_cache_slice_was_not_reported() -> None:
    # OpenAI-style prompt counter with no cached_tokens: the uncached rest cannot be told.
    u = Usage.normalize(input_tokens=2060, output_tokens=6, cache_in_input=True, reasoning_in_output=False,
                        cache_write_slice=False)
    assert (u.input_total_tokens, u.input_tokens) == (2060, None)
    # An API with a cache-write slice that reported only the read slice: the same.
    w = Usage.normalize(input_total_tokens=900, cache_read_tokens=100, cache_in_input=True, reasoning_in_output=False)
    assert (w.input_total_tokens, w.input_tokens) == (900, None)


def test_uuid7_time_is_utc_and_only_for_v7_ids() -> None:
    at = uuid7_datetime("msg_01a04900754b7183b66c11e744612e2d")
    assert at == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=0x01A04900754B)
    assert at is not None and at.tzinfo is UTC
    assert uuid7_datetime("msg_" + f"{1:032x}") is None  # not a v7 id: no invented time
    dashed = uuid7_datetime("019a4e7c-1f00-7000-8000-000000000000")
    assert dashed is not None and dashed.utcoffset() is not None
    assert uuid7_datetime("msg_nothex") is None
