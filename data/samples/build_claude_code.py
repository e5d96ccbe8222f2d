"""Build data/samples/claude_code/: a Claude Code home, deterministically; and the writer behind it.

The writer (:class:`Session`) lays lines out as Claude Code writes them (``docs`` of the formats:
one JSON object a line, the envelope ``parentUuid, isSidechain, userType, cwd, sessionId,
version, gitBranch, type, ...``), from a small description: a user turn, an assistant response
given as its content blocks and its final usage, a tool result. Tests build their own homes with
it; :func:`build` writes the bundled sample. Every id and time comes from the session id and a
clock that advances per line, so the same description gives the same bytes.

    claude_code/projects/
      -home-dev-shop/
        <S1>.jsonl          streamed responses (usage back-filled on every line, and a first line
                            with partial output_tokens), tool_use/tool_result pairs, a Task call
                            whose subagent has its own file, a <synthetic> error line, a response
                            without requestId, a /btw sidechain replay of a parent response,
                            compaction (compact_boundary + isCompactSummary), summary and ai-title
                            lines, 5-minute and 1-hour cache writes
        <S1>/subagents/agent-<A>.jsonl      the subagent (isSidechain, agentId, the parent's sessionId)
        <S1>/subagents/agent-<A>.meta.json  {agentType, description, toolUseId}
        <S2>.jsonl          a resumed session: its first lines copy S1's (same uuid, other sessionId),
                            then new work; its last line is torn (still being written)
      -home-dev-notes/
        <S3>.jsonl          a second project, on another day, with another model

    python data/samples/make_samples.py claude_code
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

SONNET = "claude-sonnet-4-5-20250929"
OPUS = "claude-opus-4-5-20251101"
VERSION = "2.0.28"

Block = dict[str, Any]
Shape = Literal["backfilled", "growing"]


def stable_uuid(*parts: object) -> str:
    """A version-4-shaped UUID drawn from ``parts`` (the same parts give the same UUID)."""
    h = bytearray(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x40
    h[8] = (h[8] & 0x3F) | 0x80
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def _token(prefix: str, *parts: object) -> str:
    alphabet = "0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n = int.from_bytes(hashlib.sha256(":".join(map(str, parts)).encode()).digest()[:16])
    out = ""
    while len(out) < 24:
        n, r = divmod(n, len(alphabet))
        out += alphabet[r]
    return prefix + out


def stamp(at: datetime) -> str:
    """Claude Code's line time: UTC, milliseconds, ``Z``."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def encode_cwd(cwd: str) -> str:
    """The project folder name: the absolute working directory with ``/`` (and ``.``) as ``-``."""
    return cwd.replace("/", "-").replace(".", "-")


def dumps(obj: Any) -> str:
    """One line as Claude Code (JavaScript's ``JSON.stringify``) writes it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def thinking(value: str) -> Block:
    return {"type": "thinking", "thinking": value, "signature": _token("Eu", value)}


def tool_use(tool_id: str, name: str, **tool_input: Any) -> Block:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


@dataclass(frozen=True)
class Usage:
    """A response's final usage: uncached input, output, cache reads, and cache writes by TTL."""

    input: int
    output: int
    cache_read: int = 0
    cache_5m: int = 0
    cache_1h: int = 0

    def wire(self, output: int | None = None) -> dict[str, Any]:
        """``message.usage`` as the API returns it (``output`` overrides the output tokens)."""
        return {"input_tokens": self.input, "cache_creation_input_tokens": self.cache_5m + self.cache_1h,
                "cache_read_input_tokens": self.cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": self.cache_5m,
                                   "ephemeral_1h_input_tokens": self.cache_1h},
                "output_tokens": self.output if output is None else output, "service_tier": "standard"}


class Session:
    """One transcript file of a Claude Code home, written line by line from a description.

    Args:
        home: the Claude config dir (``projects/`` is made under it).
        cwd: the session's working directory (names the project folder).
        session_id: the session UUID (the file's stem; a subagent's parent session).
        start: the first line's time; each line after it is ``step`` later.
        model: the model of the assistant responses unless one says otherwise.
        agent_id: set for a subagent file (``<session>/subagents/agent-<agent_id>.jsonl``).
    """

    def __init__(self, home: Path, cwd: str, session_id: str, start: datetime, *, model: str = SONNET,
                 agent_id: str | None = None, step: timedelta = timedelta(seconds=3),
                 version: str = VERSION, git_branch: str = "main") -> None:
        self.home, self.cwd, self.session_id, self.model = home, cwd, session_id, model
        self.agent_id, self.step, self.version, self.git_branch = agent_id, step, version, git_branch
        self.clock = start
        self.lines: list[str] = []
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self._n = 0
        self.meta: dict[str, Any] | None = None
        self.children: list[Session] = []

    # ------------------------------------------------------------------ identity and envelope

    def _next(self, what: str) -> str:
        self._n += 1
        return stable_uuid(self.session_id, self.agent_id, what, self._n)

    def _tick(self, at: datetime | None) -> str:
        if at is not None:
            self.clock = at
        now = self.clock
        self.clock += self.step
        return stamp(now)

    def _envelope(self, kind: str, sidechain: bool = False) -> dict[str, Any]:
        line: dict[str, Any] = {"parentUuid": self.parent, "isSidechain": sidechain or self.agent_id is not None,
                                "userType": "external", "cwd": self.cwd, "sessionId": self.session_id,
                                "version": self.version, "gitBranch": self.git_branch}
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        line["type"] = kind
        return line

    def add(self, record: dict[str, Any], *, chained: bool = True) -> dict[str, Any]:
        """Write ``record`` as the next line (and, when ``chained``, make it the next line's parent)."""
        self.records.append(record)
        self.lines.append(dumps(record))
        if chained and "uuid" in record:
            self.parent = record["uuid"]
        return record

    # ------------------------------------------------------------------ conversation lines

    def user(self, content: str | list[Block], *, at: datetime | None = None, **extra: Any) -> dict[str, Any]:
        """A user line (``content``: the text, or blocks); ``extra`` adds fields (``isMeta``, ...)."""
        line = self._envelope("user")
        line["message"] = {"role": "user", "content": [text(content)] if isinstance(content, str) else content}
        line["uuid"] = self._next("user")
        line["timestamp"] = self._tick(at)
        line.update(extra)
        return self.add(line)

    def tool_result(self, tool_use_id: str, output: str, *, is_error: bool = False,
                    tool_use_result: Any = None, at: datetime | None = None) -> dict[str, Any]:
        """The user line answering ``tool_use_id`` (with the harness's ``toolUseResult``)."""
        block: Block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": output}
        if is_error:
            block["is_error"] = True
        result = tool_use_result if tool_use_result is not None else (
            f"Error: {output}" if is_error else {"stdout": output, "stderr": "", "interrupted": False,
                                                 "isImage": False})
        return self.user([block], at=at, toolUseResult=result)

    def assistant(self, blocks: list[Block], usage: Usage, *, shape: Shape = "backfilled",
                  model: str | None = None, message_id: str | None = None, request_id: str | None = "new",
                  sidechain: bool = False, stop_reason: str | None = None,
                  at: datetime | None = None) -> list[dict[str, Any]]:
        """One response streamed as one line per content block, sharing ``message.id`` and ``requestId``.

        Args:
            blocks: the content blocks, one line each.
            usage: the response's final usage.
            shape: ``"backfilled"``: every line carries the final usage (main transcripts today);
                ``"growing"``: ``output_tokens`` grows from a partial first line to the final
                count on the last (older builds; the other counters are the same on every line).
            model: the model (default: the session's).
            message_id: the ``message.id`` (default: a new ``msg_...``); a replay reuses one.
            request_id: ``"new"`` mints a ``req_...``, ``None`` leaves the field out.
            sidechain: ``isSidechain: true`` (a ``/btw`` side question).
            stop_reason: the last line's stop reason (default ``tool_use`` after a tool call,
                else ``end_turn``).
            at: the first line's time.

        Returns:
            The lines written.
        """
        mid = message_id or _token("msg_01", self.session_id, self.agent_id, "message", self._n)
        rid = _token("req_011C", self.session_id, self.agent_id, "request", self._n) if request_id == "new" \
            else request_id
        final_stop = stop_reason or ("tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn")
        out = []
        for k, block in enumerate(blocks):
            last = k == len(blocks) - 1
            partial = max(1, usage.output * (k + 1) // (4 * len(blocks)))
            output = usage.output if shape == "backfilled" or last else partial
            line = self._envelope("assistant", sidechain)
            line["message"] = {"id": mid, "type": "message", "role": "assistant", "model": model or self.model,
                               "content": [block], "stop_reason": final_stop if last else None,
                               "stop_sequence": None, "usage": usage.wire(output)}
            if rid is not None:
                line["requestId"] = rid
            line["uuid"] = self._next("assistant")
            line["timestamp"] = self._tick(at if k == 0 else None)
            out.append(self.add(line))
        return out

    def synthetic(self, message: str, *, at: datetime | None = None) -> dict[str, Any]:
        """A ``<synthetic>`` assistant line: the harness's error, not a model response (no requestId)."""
        line = self._envelope("assistant")
        line["message"] = {"id": self._next("synthetic"), "container": None, "model": "<synthetic>",
                           "role": "assistant", "stop_reason": "stop_sequence", "stop_sequence": "",
                           "type": "message",
                           "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                                     "cache_read_input_tokens": 0, "server_tool_use": {"web_search_requests": 0},
                                     "service_tier": None, "cache_creation": {"ephemeral_1h_input_tokens": 0,
                                                                              "ephemeral_5m_input_tokens": 0}},
                           "content": [text(message)]}
        line["uuid"] = self._next("assistant")
        line["timestamp"] = self._tick(at)
        line["isApiErrorMessage"] = True
        return self.add(line)

    def compact(self, summary: str, pre_tokens: int, *, trigger: str = "auto") -> None:
        """A compaction: the ``compact_boundary`` system line, then the ``isCompactSummary`` user line."""
        line = self._envelope("system")
        line["parentUuid"] = None
        line["logicalParentUuid"] = self.parent
        line.update(subtype="compact_boundary", content="Conversation compacted", isMeta=False,
                    timestamp=self._tick(None), uuid=self._next("system"), level="info",
                    compactMetadata={"trigger": trigger, "preTokens": pre_tokens})
        self.add(line)
        self.user("This session is being continued from a previous conversation that ran out of context. "
                  f"The conversation is summarized below:\n{summary}",
                  isVisibleInTranscriptOnly=True, isCompactSummary=True)

    def summary(self, value: str, leaf_uuid: str) -> None:
        """A ``summary`` line (no ``sessionId``; ``leafUuid`` names the summarized chain's last line)."""
        self.add({"type": "summary", "summary": value, "leafUuid": leaf_uuid}, chained=False)

    def ai_title(self, value: str) -> None:
        """An ``ai-title`` line (several per session; the last wins)."""
        self.add({"type": "ai-title", "aiTitle": value, "sessionId": self.session_id}, chained=False)

    def copy(self, other: Session, count: int) -> None:
        """A resumed session's head: ``other``'s first ``count`` lines, same uuids, this ``sessionId``."""
        for record in other.records[:count]:
            self.add(dict(record, sessionId=self.session_id) if "sessionId" in record else dict(record))

    def torn(self, fragment: str) -> None:
        """A last line still being written: ``fragment`` with no newline."""
        self.lines.append(fragment)

    # ------------------------------------------------------------------ files

    def subagent(self, agent_id: str, tool_use_id: str, *, agent_type: str = "general-purpose",
                 description: str = "", model: str | None = None) -> Session:
        """A subagent of this session, spawned by the ``Task`` call ``tool_use_id`` (its own file)."""
        child = Session(self.home, self.cwd, self.session_id, self.clock, model=model or self.model,
                        agent_id=agent_id, step=self.step, version=self.version, git_branch=self.git_branch)
        child.meta = {"agentType": agent_type, "description": description, "toolUseId": tool_use_id}
        self.children.append(child)
        return child

    @property
    def path(self) -> Path:
        """Where the file goes: ``projects/<encoded cwd>/<session>.jsonl``, or the subagent's."""
        project = self.home / "projects" / encode_cwd(self.cwd)
        if self.agent_id is None:
            return project / f"{self.session_id}.jsonl"
        return project / self.session_id / "subagents" / f"agent-{self.agent_id}.jsonl"

    def write(self) -> Path:
        """Write the file (and a subagent's ``.meta.json``), then its subagents' files.

        A torn last line (:meth:`torn`) is written without a newline.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = "\n".join(self.lines)
        torn = bool(self.lines) and not self.lines[-1].endswith("}")
        self.path.write_bytes((body if torn else body + "\n").encode())
        if self.meta is not None:
            meta = self.path.with_name(f"agent-{self.agent_id}.meta.json")
            meta.write_bytes((dumps(self.meta) + "\n").encode())
        for child in self.children:
            child.write()
        return self.path


# ---------------------------------------------------------------------------- the sample home

S1 = "6f1c2a9e-3b7d-4c21-9a55-0d4e8b1f7a01"
S2 = "8a2d4c6e-1f3b-4d5a-8e7c-2b9a0f1e3d02"
S3 = "1b3d5f7a-9c2e-4f6a-8b0d-3c5e7a9f1b03"
AGENT = "a7f3e91"


def _first_session(home: Path) -> Session:
    s = Session(home, "/home/dev/shop", S1, datetime(2025, 11, 24, 9, 12, 5, 120000, tzinfo=UTC))
    s.summary("Fix the failing checkout test", stable_uuid(S1, "leaf"))
    s.user("The checkout test fails on CI. Find out why and fix it.")
    s.assistant([thinking("Look at the test first."), text("I'll read the test."),
                 tool_use("toolu_01S1read", "Read", file_path="/home/dev/shop/tests/test_checkout.py")],
                Usage(input=3, output=182, cache_read=11_240, cache_1h=4_096))
    s.tool_result("toolu_01S1read", "def test_total():\n    assert total([1, 2]) == 3\n")
    s.assistant([text("Running it."), tool_use("toolu_01S1bash", "Bash", command="pytest -q tests/test_checkout.py",
                                               description="Run the checkout test")],
                Usage(input=5, output=97, cache_read=15_336, cache_5m=310), shape="growing")
    s.tool_result("toolu_01S1bash", "FAILED tests/test_checkout.py::test_total - assert 4 == 3", is_error=True)
    s.assistant([tool_use("toolu_01S1task", "Task", description="Find the rounding bug",
                          prompt="Find where total() adds the shipping fee twice.", subagent_type="general-purpose")],
                Usage(input=4, output=120, cache_read=15_646, cache_5m=512))
    agent = s.subagent(AGENT, "toolu_01S1task", description="Find the rounding bug")
    agent.user("Find where total() adds the shipping fee twice.")
    agent.assistant([tool_use("toolu_01A1grep", "Grep", pattern="shipping", path="/home/dev/shop/shop")],
                    Usage(input=8, output=64, cache_read=0, cache_5m=6_210), shape="growing")
    agent.tool_result("toolu_01A1grep",
                      "shop/cart.py:41:    subtotal += shipping\nshop/cart.py:44:    return subtotal + shipping")
    agent.assistant([text("cart.py adds `shipping` on line 41 and again on line 44.")],
                    Usage(input=6, output=41, cache_read=6_210, cache_5m=88))
    s.clock = agent.clock
    s.tool_result("toolu_01S1task", "cart.py adds `shipping` on line 41 and again on line 44.",
                  tool_use_result={"status": "completed", "agentId": AGENT,
                                   "prompt": "Find where total() adds the shipping fee twice.",
                                   "content": [text("cart.py adds `shipping` on line 41 and again on line 44.")],
                                   "totalDurationMs": 9120, "totalTokens": 6345, "totalToolUseCount": 1})
    s.synthetic('API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}')
    s.user("try again")
    s.assistant([tool_use("toolu_01S1edit", "Edit", file_path="/home/dev/shop/shop/cart.py",
                                 old_string="    subtotal += shipping\n", new_string="")],
                       Usage(input=3, output=88, cache_read=16_270, cache_5m=402), request_id=None)
    s.tool_result("toolu_01S1edit", "The file /home/dev/shop/shop/cart.py has been updated.")
    s.user("/btw is the fee taxed?", isMeta=False)
    s.assistant([text("I'll read the test.")], Usage(input=3, output=182, cache_read=11_240, cache_1h=4_096),
                message_id=s.records[3]["message"]["id"], sidechain=True)
    s.compact("The checkout total added the shipping fee twice; the duplicate line in cart.py was removed.", 16_760)
    s.assistant([text("The test passes now: the fee was added twice.")],
                Usage(input=9, output=35, cache_read=2_104, cache_5m=1_190))
    s.ai_title("Fix double shipping fee in checkout")
    return s


def build(root: Path) -> None:
    """Write ``root/claude_code/``: the sample Claude Code home."""
    home = root / "claude_code"
    first = _first_session(home)
    resumed = Session(home, "/home/dev/shop", S2, datetime(2025, 11, 24, 15, 40, 0, tzinfo=UTC), model=OPUS)
    resumed.copy(first, 4)
    resumed.user("Now add a test for the fee.")
    resumed.assistant([thinking("A test with a non-zero fee."),
                       tool_use("toolu_01S2write", "Write", file_path="/home/dev/shop/tests/test_fee.py",
                                content="def test_fee():\n    assert total([1], shipping=2) == 3\n")],
                      Usage(input=6, output=140, cache_read=9_800, cache_1h=2_050))
    resumed.tool_result("toolu_01S2write", "File created successfully at: /home/dev/shop/tests/test_fee.py")
    resumed.torn('{"parentUuid":"' + resumed.parent + '","isSidechain":false,"userType":"external","cwd":"/home/d')
    notes = Session(home, "/home/dev/notes", S3, datetime(2025, 11, 26, 22, 5, 0, tzinfo=UTC), model=OPUS)
    notes.user("Summarise notes/todo.md in three bullets.")
    notes.assistant([tool_use("toolu_01S3read", "Read", file_path="/home/dev/notes/todo.md")],
                    Usage(input=3, output=52, cache_read=0, cache_5m=3_400))
    notes.tool_result("toolu_01S3read", "- ship the fee fix\n- write the release note\n- book the review")
    notes.assistant([text("- Ship the fee fix.\n- Write the release note.\n- Book the review.")],
                    Usage(input=5, output=30, cache_read=3_400, cache_5m=96))
    for session in (first, resumed, notes):
        session.write()
