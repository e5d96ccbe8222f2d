"""The Claude Code and Codex home writers (data/samples/build_claude_code.py, build_codex.py):
the bundled samples are rebuilt byte for byte, and the writers lay lines out as the runtimes do."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from peer_homes import SAMPLES, builder, cc, cx


@pytest.mark.parametrize("source", ["claude_code", "codex"])
def test_sample_is_rebuilt_byte_for_byte(source: str, tmp_path: Path) -> None:
    builder(source).build(tmp_path)
    shipped = sorted(p.relative_to(SAMPLES) for p in (SAMPLES / source).rglob("*") if p.is_file())
    built = sorted(p.relative_to(tmp_path) for p in (tmp_path / source).rglob("*") if p.is_file())
    assert built == shipped
    for rel in built:
        assert (tmp_path / rel).read_bytes() == (SAMPLES / rel).read_bytes(), rel
    assert sum((SAMPLES / rel).stat().st_size for rel in shipped) < 300_000


def test_a_streamed_response_is_one_line_per_block_sharing_its_keys(tmp_path: Path) -> None:
    s = cc.Session(tmp_path, "/w/app.v2", "s-1", datetime(2025, 1, 1, tzinfo=UTC))
    grown = s.assistant([cc.thinking("t"), cc.text("x"), cc.tool_use("toolu_1", "Bash", command="ls")],
                        cc.Usage(input=3, output=80, cache_read=10, cache_1h=7), shape="growing")
    filled = s.assistant([cc.text("a"), cc.text("b")], cc.Usage(input=1, output=9), request_id=None)
    assert len({(line["message"]["id"], line["requestId"]) for line in grown}) == 1
    assert [line["message"]["usage"]["output_tokens"] for line in grown] == [6, 13, 80]
    assert {line["message"]["usage"]["cache_read_input_tokens"] for line in grown} == {10}
    assert grown[-1]["message"]["usage"]["cache_creation"] == {"ephemeral_5m_input_tokens": 0,
                                                               "ephemeral_1h_input_tokens": 7}
    assert [line["message"]["stop_reason"] for line in grown] == [None, None, "tool_use"]
    assert all("requestId" not in line for line in filled)
    assert [line["message"]["usage"]["output_tokens"] for line in filled] == [9, 9]
    assert [line["parentUuid"] for line in grown[1:]] == [line["uuid"] for line in grown[:-1]]
    assert s.write() == tmp_path / "projects" / "-w-app-v2" / "s-1.jsonl"


def test_sample_claude_code_home_has_each_shape() -> None:
    project = SAMPLES / "claude_code" / "projects" / "-home-dev-shop"
    first = [json.loads(line) for line in (project / f"{cc.S1}.jsonl").read_text().splitlines()]
    kinds = {(r["type"], r.get("subtype")) for r in first}
    assert {("summary", None), ("ai-title", None), ("system", "compact_boundary")} <= kinds
    assert any(r.get("isCompactSummary") for r in first) and any(r.get("isApiErrorMessage") for r in first)
    assert any(r["type"] == "assistant" and "requestId" not in r and r["message"]["model"] != "<synthetic>"
               for r in first)
    replays = [r for r in first if r.get("isSidechain")]
    original = [r for r in first if r["type"] == "assistant" and not r.get("isSidechain")]
    assert replays and replays[0]["message"]["id"] == original[0]["message"]["id"]
    assert replays[0]["requestId"] != original[0]["requestId"]
    meta = json.loads((project / cc.S1 / "subagents" / f"agent-{cc.AGENT}.meta.json").read_text())
    uses = {b["id"] for r in original for b in r["message"]["content"] if b["type"] == "tool_use"}
    assert meta["toolUseId"] in uses
    resumed = (project / f"{cc.S2}.jsonl").read_bytes()
    assert not resumed.endswith(b"\n")  # torn: still being written
    copied = [json.loads(line) for line in resumed.splitlines()[:4]]
    assert [r.get("uuid") for r in copied] == [r.get("uuid") for r in first[:4]]
    assert {r.get("sessionId") for r in copied if "sessionId" in r} == {cc.S2}


def _frame_content(frame: bytes) -> bytes:
    """The content of a zstd frame of raw blocks (RFC 8878: frame header, then 3-byte block headers)."""
    assert frame[:4] == b"\x28\xb5\x2f\xfd" and frame[4] == 0b1110_0000
    size, at, out = int.from_bytes(frame[5:13], "little"), 13, b""
    while True:
        header = int.from_bytes(frame[at:at + 3], "little")
        assert (header >> 1) & 3 == 0  # raw block
        out += frame[at + 3:at + 3 + (header >> 3)]
        at += 3 + (header >> 3)
        if header & 1:
            break
    assert at == len(frame) and len(out) == size
    return out


def test_sample_codex_home_has_each_shape() -> None:
    home = SAMPLES / "codex"
    files = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.is_file())
    assert [f.split("/")[0] for f in files] == ["archived_sessions", *["sessions"] * 5]
    zst = next(home.rglob("*.jsonl.zst"))
    lines = [json.loads(line) for line in _frame_content(zst.read_bytes()).decode().splitlines()]
    assert lines[0]["type"] == "session_meta" and lines[0]["payload"]["id"] == cx.Z
    parent = [json.loads(line) for line in next(home.rglob(f"*{cx.P}.jsonl")).read_text().splitlines()]
    counts = [r["payload"] for r in parent if r["payload"].get("type") == "token_count"]
    assert counts[1]["info"] is None
    totals = [c["info"]["total_token_usage"] for c in counts if c["info"]]
    assert totals[1] == totals[2]  # re-emitted unchanged
    assert totals[-2] == {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
                          "reasoning_output_tokens": 0, "total_tokens": cx.WINDOW}  # the reset
    outputs = [r["payload"]["output"] for r in parent if r["payload"].get("type") == "function_call_output"]
    assert outputs[0].startswith("Exit code: 1\n") and json.loads(outputs[1])["metadata"]["exit_code"] == 0
    fork = [json.loads(line) for line in next(home.rglob(f"*{cx.F}.jsonl")).read_text().splitlines()]
    assert fork[0]["payload"]["forked_from_id"] == cx.P and fork[1:len(parent) + 1] == parent
    spawned = [json.loads(line) for line in next(home.rglob(f"*{cx.T}.jsonl")).read_text().splitlines()]
    assert spawned[0]["payload"]["source"]["subagent"]["thread_spawn"]["parent_thread_id"] == cx.P
    assert len({r["timestamp"] for r in spawned[1:len(parent) + 1]}) == 1  # re-stamped at the spawn
    first_generation = next(home.glob("sessions/rollout-2025-05-07-*.jsonl"))
    legacy = [json.loads(line) for line in first_generation.read_text().splitlines()]
    assert "type" not in legacy[0] and {"record_type": "state"} in legacy
