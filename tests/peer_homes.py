"""Homes built to show one counting rule each, and what the real peers (ccusage 18.0.11) make of them.

Each :class:`Case` names the rule (and the peer's issue where the peer counts wrongly), builds
a small Claude Code or Codex home with the writers of ``data/samples/build_claude_code.py`` and
``build_codex.py``, and says two numbers: ``peer``, what the peer reports on that home (the
peer tests check it still does), and ``right``, what the rule says. Where the two differ the
peer is wrong by a known issue, and a reader of these homes must give ``right``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from peers import ccusage, ccusage_codex

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


@cache
def builder(source: str) -> ModuleType:
    """The sample builder ``data/samples/build_<source>.py``, imported by path (as the samples' own tests do)."""
    spec = importlib.util.spec_from_file_location(f"build_{source}", SAMPLES / f"build_{source}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


cc = builder("claude_code")
cx = builder("codex")

T0 = datetime(2025, 11, 24, 9, 12, 5, tzinfo=UTC)
CWD = "/home/dev/shop"
S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"


@dataclass(frozen=True)
class Case:
    """One rule, a home that shows it, and what the peer and the rule say.

    Attributes:
        name: a short name (the test id).
        issue: the peer's issue where it counts wrongly (``""``: the peer agrees with the rule).
        runtime: ``"claude_code"`` or ``"codex"``.
        build: writes the home into the folder given.
        peer_number: runs the peer on the home and returns the number the rule is about.
        peer: what ``peer_number`` returns with the pinned peer (recorded).
        right: what the rule says.
        ours: the same number as murmur-analysis gives it, through its public API.
    """

    name: str
    issue: str
    runtime: str
    build: Callable[[Path], None]
    peer_number: Callable[[Path], Any]
    peer: Any
    right: Any
    ours: Callable[[Path], Any]


def _claude(build: Callable[[Path], list[Any]]) -> Callable[[Path], None]:
    def write(home: Path) -> None:
        for session in build(home):
            session.write()
    return write


def _codex(build: Callable[[Path], None]) -> Callable[[Path], None]:
    return build


def _daily_total(field: str) -> Callable[[Path], Any]:
    return lambda home: ccusage("daily", home)["totals"][field]


def _codex_total(field: str) -> Callable[[Path], Any]:
    return lambda home: (ccusage_codex("daily", home)["totals"] or {}).get(field, 0)  # totals: null when empty


def _our_sum(column: str) -> Callable[[Path], Any]:
    """The sum of one ``usage`` column of ``ma.load(home)``."""
    def total(home: Path) -> Any:
        import murmur_analysis as ma

        value = ma.load(home).usage[column].sum()
        return round(float(value), 6) if column.endswith("_usd") else int(value)
    return total


def _our_json(report: str) -> Callable[[Path], Any]:
    """``murmur-analysis report <report> HOME --ccusage-json`` (ccusage's field names), parsed."""
    def run(home: Path) -> Any:
        import json
        import subprocess

        done = subprocess.run([sys.executable, "-m", "murmur_analysis.ui.cli", "report", report, str(home),
                               "--ccusage-json", "-q"], capture_output=True, text=True, check=True)
        return json.loads(done.stdout)
    return run


def _our_sessions(home: Path) -> list[str]:
    """The sessions: conversations no other conversation spawned (a subagent is its own, linked)."""
    import murmur_analysis as ma

    conv = ma.load(home).conversations
    return sorted(conv.loc[conv["parent_conversation_id"].isna(), "conversation_id"])


def _our_blocks(home: Path) -> list[tuple[str, str, str | None, bool, int, int]]:
    return [(b["startTime"], b["endTime"], b["actualEndTime"], b["isGap"], b["entries"], b["totalTokens"])
            for b in _our_json("blocks")(home)["blocks"]]


# ---------------------------------------------------------------------------- Claude Code


def partial_first_line(home: Path) -> list[Any]:
    """One response of two blocks; ``output_tokens`` grows from 50 on the first line to 400 on the last."""
    s = cc.Session(home, CWD, S1, T0)
    s.user("hi")
    s.assistant([cc.thinking("think"), cc.text("hello")], cc.Usage(input=10, output=400, cache_read=1_000),
                shape="growing")
    return [s]


def no_request_id(home: Path) -> list[Any]:
    """One response of two blocks, usage back-filled on both lines, without ``requestId``."""
    s = cc.Session(home, CWD, S1, T0)
    s.user("hi")
    s.assistant([cc.thinking("think"), cc.text("hello")], cc.Usage(input=10, output=100, cache_read=1_000),
                request_id=None)
    return [s]


def sidechain_replay(home: Path) -> list[Any]:
    """A response, and a ``/btw`` side question replaying it (same ``message.id``, new ``requestId``)."""
    s = cc.Session(home, CWD, S1, T0)
    s.user("hi")
    first = s.assistant([cc.text("hello")], cc.Usage(input=10, output=100, cache_read=20_000))
    s.user("/btw what model are you?")
    s.assistant([cc.text("hello")], cc.Usage(input=10, output=100, cache_read=20_000),
                message_id=first[0]["message"]["id"], sidechain=True)
    return [s]


def one_hour_cache(home: Path) -> list[Any]:
    """One Opus 4.5 response writing a million tokens to the one-hour cache, nothing else."""
    s = cc.Session(home, CWD, S1, T0, model=cc.OPUS)
    s.user("hi")
    s.assistant([cc.text("hello")], cc.Usage(input=0, output=0, cache_1h=1_000_000))
    return [s]


def sessions_of_a_project(home: Path) -> list[Any]:
    """Two sessions of one project, the first with a subagent file."""
    a = cc.Session(home, CWD, S1, T0)
    a.user("hi")
    a.assistant([cc.tool_use("toolu_1", "Task", description="look", prompt="look")], cc.Usage(input=5, output=20))
    agent = a.subagent("agent01", "toolu_1")
    agent.user("look")
    agent.assistant([cc.text("seen")], cc.Usage(input=7, output=30))
    a.tool_result("toolu_1", "seen", tool_use_result={"status": "completed", "agentId": "agent01"})
    b = cc.Session(home, CWD, S2, T0 + timedelta(hours=1))
    b.user("again")
    b.assistant([cc.text("ok")], cc.Usage(input=3, output=10))
    return [a, b]


def _session_ids(home: Path) -> list[str]:
    return sorted(row["sessionId"] for row in ccusage("session", home)["sessions"])


def resumed_copy(home: Path) -> list[Any]:
    """A session, and a resumed one whose first lines copy it (same uuids and keys, other ``sessionId``)."""
    a = cc.Session(home, CWD, S1, T0)
    a.user("hi")
    a.assistant([cc.text("hello")], cc.Usage(input=10, output=100))
    b = cc.Session(home, CWD, S2, T0 + timedelta(hours=2))
    b.copy(a, 2)
    b.user("more")
    b.assistant([cc.text("more")], cc.Usage(input=20, output=50))
    return [a, b]


def synthetic_and_torn(home: Path) -> list[Any]:
    """A response, a ``<synthetic>`` error line, and a torn last line."""
    s = cc.Session(home, CWD, S1, T0)
    s.user("hi")
    s.assistant([cc.text("hello")], cc.Usage(input=10, output=100))
    s.synthetic("API Error: 529 Overloaded")
    s.torn('{"parentUuid":null,"type":"assistant","message":{"usage":{"input_tokens":5')
    return [s]


def _models(home: Path) -> list[str]:
    return sorted(ccusage("daily", home)["daily"][0]["modelsUsed"])


#: Times of the responses of :func:`blocks_home` (UTC).
BLOCK_TIMES = (datetime(2025, 11, 24, 9, 12, 5, tzinfo=UTC), datetime(2025, 11, 24, 13, 59, 0, tzinfo=UTC),
               datetime(2025, 11, 24, 14, 30, 0, tzinfo=UTC), datetime(2025, 11, 25, 2, 0, 0, tzinfo=UTC),
               datetime(2025, 11, 25, 6, 59, 59, tzinfo=UTC), datetime(2025, 11, 25, 7, 0, 0, tzinfo=UTC))


def blocks_home(home: Path) -> list[Any]:
    """Responses at :data:`BLOCK_TIMES`: past five hours from a block's start, a gap over five hours,
    and responses exactly at and just under a block's end."""
    s = cc.Session(home, CWD, S1, BLOCK_TIMES[0])
    for k, at in enumerate(BLOCK_TIMES):
        s.user(f"q{k}", at=at - timedelta(seconds=1))
        s.assistant([cc.text(f"a{k}")], cc.Usage(input=10 * (k + 1), output=100, cache_read=1_000, cache_5m=50),
                    at=at, model=cc.OPUS if k % 2 else cc.SONNET)
    return [s]


BLOCKS = [
    ("2025-11-24T09:00:00.000Z", "2025-11-24T14:00:00.000Z", "2025-11-24T13:59:00.000Z", False, 2, 2_330),
    ("2025-11-24T14:00:00.000Z", "2025-11-24T19:00:00.000Z", "2025-11-24T14:30:00.000Z", False, 1, 1_180),
    ("2025-11-24T19:30:00.000Z", "2025-11-25T02:00:00.000Z", None, True, 0, 0),
    ("2025-11-25T02:00:00.000Z", "2025-11-25T07:00:00.000Z", "2025-11-25T07:00:00.000Z", False, 3, 3_600),
]


def _blocks(home: Path) -> list[tuple[str, str, str | None, bool, int, int]]:
    return [(b["startTime"], b["endTime"], b["actualEndTime"], b["isGap"], b["entries"], b["totalTokens"])
            for b in ccusage("blocks", home)["blocks"]]


# ---------------------------------------------------------------------------- Codex

P = "0199b1a2-7c3d-7e4f-8a5b-6c7d8e9f0a11"
C = "0199b1c4-1d2e-7f3a-9b4c-5d6e7f8a9b22"
C0 = datetime(2025, 11, 24, 8, 30, 0, tzinfo=UTC)


def _turns(r: Any, *usages: Any) -> None:
    r.turn_context()
    for k, usage in enumerate(usages):
        r.user(f"q{k}")
        r.tokens(usage)
        r.assistant(f"a{k}")


def reemitted_total(home: Path) -> None:
    """Two responses, and between them a ``token_count`` re-emitting the first's total unchanged."""
    r = cx.Rollout(home, P, C0)
    r.turn_context()
    r.user("q")
    r.tokens(cx.Tokens(input=1_000, cached=600, output=100))
    r.reemit()
    r.tokens(cx.Tokens(input=2_000, cached=1_500, output=50))
    r.write()


def _fork(home: Path, *, spawned: bool) -> None:
    parent = cx.Rollout(home, P, C0)
    _turns(parent, cx.Tokens(input=1_000, cached=600, output=100), cx.Tokens(input=2_000, cached=1_500, output=50))
    parent.write()
    child = cx.Rollout(home, C, C0 + timedelta(minutes=30), forked_from_id=None if spawned else P,
                       spawned_by=P if spawned else None)
    child.copy(parent, restamp=spawned)
    _turns(child, cx.Tokens(input=500, cached=0, output=20))
    child.write()


def fork_copy(home: Path) -> None:
    """A rollout and a fork of it (``forked_from_id``) that copies its items, then works on."""
    _fork(home, spawned=False)


def spawn_copy(home: Path) -> None:
    """A rollout and a ``thread_spawn`` subagent copying its items re-stamped to the spawn time."""
    _fork(home, spawned=True)


def archived(home: Path) -> None:
    """One session, archived (``archived_sessions/``)."""
    r = cx.Rollout(home, P, C0)
    _turns(r, cx.Tokens(input=1_000, cached=600, output=100))
    r.write(archived=True)


def compressed(home: Path) -> None:
    """One session, compressed (``.jsonl.zst``)."""
    r = cx.Rollout(home, P, C0)
    _turns(r, cx.Tokens(input=1_000, cached=600, output=100))
    r.write(zst=True)


def reset_and_null(home: Path) -> None:
    """A ``token_count`` with ``info: null``, a reset by ``fill_to_context_window``, and responses after it."""
    r = cx.Rollout(home, P, C0)
    r.turn_context()
    r.user("q")
    r.no_info()
    r.tokens(cx.Tokens(input=1_000, cached=600, output=100, reasoning=40))
    r.fill_to_context_window()
    r.tokens(cx.Tokens(input=300, cached=0, output=30))
    r.write()


CASES: tuple[Case, ...] = (
    # ccusage#888 (and #901, #938): the first line of a response wins, its partial output_tokens
    # with it; the right count is the response's largest (its last line's).
    Case("partial_first_line", "ccusage#888", "claude_code", _claude(partial_first_line),
         _daily_total("outputTokens"), peer=50, right=400, ours=_our_sum("output_tokens")),
    # ccusage#976 (and #797): with no requestId there is no dedup key, so each line of the response
    # counts; the right count is one response's.
    Case("no_request_id", "ccusage#976", "claude_code", _claude(no_request_id),
         _daily_total("cacheReadTokens"), peer=2_000, right=1_000, ours=_our_sum("cache_read_tokens")),
    # ccusage#913: a /btw sidechain replaying a parent response under a new requestId is counted
    # again, its cache reads included; the right count is the parent's once.
    Case("sidechain_replay", "ccusage#913", "claude_code", _claude(sidechain_replay),
         _daily_total("cacheReadTokens"), peer=40_000, right=20_000,
         ours=_our_sum("cache_read_tokens")),
    # ccusage#899: every cache write is priced at the five-minute rate (1.25x input: $6.25 per
    # million on Opus 4.5); one-hour writes cost 2x input ($10 per million).
    Case("one_hour_cache", "ccusage#899", "claude_code", _claude(one_hour_cache),
         lambda home: round(ccusage("daily", home)["totals"]["totalCost"], 6), peer=6.25, right=10.0,
         ours=_our_sum("cost_usd")),
    # ccusage#560 (and #809): the session is the file's folder, so a project's sessions merge into
    # one row named after the project, and subagent files make a session called "subagents".
    Case("sessions_of_a_project", "ccusage#560", "claude_code", _claude(sessions_of_a_project),
         _session_ids, peer=["-home-dev-shop", "subagents"], right=[S1, S2], ours=_our_sessions),
    # Agreed: a resumed session's copied lines keep their keys and count once.
    Case("resumed_copy", "", "claude_code", _claude(resumed_copy), _daily_total("outputTokens"),
         peer=150, right=150, ours=_our_sum("output_tokens")),
    # Agreed: a <synthetic> line costs nothing and a torn last line is not read; but ccusage lists
    # "<synthetic>" among the models used.
    Case("synthetic_and_torn", "", "claude_code", _claude(synthetic_and_torn), _daily_total("totalTokens"),
         peer=110, right=110, ours=lambda home: _our_sum("input_total_tokens")(home) + _our_sum("output_tokens")(home)),
    # ccusage's five-hour blocks (the definition ``report blocks`` follows): a block starts at its
    # first response's hour (UTC) and ends five hours later; a response more than five hours after
    # the block's start or after the previous response starts the next block, and a silence of
    # more than five hours is a gap block from five hours after the last response to the next one.
    # (start, end, last response, gap, responses, tokens) per block:
    Case("blocks", "", "claude_code", _claude(blocks_home), _blocks, peer=BLOCKS, right=BLOCKS, ours=_our_blocks),
    # No issue found: a block counts a <synthetic> line as an entry and lists "<synthetic>" among
    # its models (the daily report leaves it out of modelsUsed); it is no model response.
    Case("synthetic_in_blocks", "", "claude_code", _claude(synthetic_and_torn),
         lambda home: [(b["entries"], b["models"]) for b in ccusage("blocks", home)["blocks"]],
         peer=[(2, [cc.SONNET, "<synthetic>"])], right=[(1, [cc.SONNET])],
         ours=lambda home: [(b["entries"], b["models"]) for b in _our_json("blocks")(home)["blocks"]]),
    # @ccusage/codex#1288: a token_count re-emitting an unchanged total (a rate-limit refresh) is
    # counted again; the right input is the two responses' (cached inside input, as its JSON gives it).
    Case("reemitted_total", "ccusage#1288", "codex", _codex(reemitted_total), _codex_total("inputTokens"),
         peer=4_000, right=3_000, ours=_our_sum("input_total_tokens")),
    # ccusage#1371: a fork's copy of its parent's items is counted again.
    Case("fork_copy", "ccusage#1371", "codex", _codex(fork_copy), _codex_total("inputTokens"),
         peer=6_500, right=3_500, ours=_our_sum("input_total_tokens")),
    # ccusage#950: a thread_spawn subagent's copy of its parent, re-stamped to the spawn, is counted again.
    Case("spawn_copy", "ccusage#950", "codex", _codex(spawn_copy), _codex_total("inputTokens"),
         peer=6_500, right=3_500, ours=_our_sum("input_total_tokens")),
    # ccusage#1177 (and #1230): archived_sessions/ is never read.
    Case("archived", "ccusage#1177", "codex", _codex(archived), _codex_total("inputTokens"), peer=0, right=1_000,
         ours=_our_sum("input_total_tokens")),
    # No issue found: the peer never reads .jsonl.zst rollouts (a Codex feature newer than the peer).
    Case("compressed", "", "codex", _codex(compressed), _codex_total("inputTokens"), peer=0, right=1_000,
         ours=_our_sum("input_total_tokens")),
    # Agreed: info null is skipped, and so is the reset's zero delta; the responses after it count.
    Case("reset_and_null", "", "codex", _codex(reset_and_null), _codex_total("inputTokens"),
         peer=1_300, right=1_300, ours=_our_sum("input_total_tokens")),
)
