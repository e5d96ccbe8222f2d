"""Build data/samples/codex/: an OpenAI Codex CLI home, deterministically; and the writer behind it.

The writer (:class:`Rollout`) lays a rollout out as Codex's ``RolloutRecorder`` writes it: one
``{"timestamp", "type", "payload"}`` line per item (``session_meta``, ``turn_context``,
``response_item``, ``event_msg``), in ``sessions/YYYY/MM/DD/rollout-<local time>-<uuid>.jsonl``
(the folder and file name in local time, the line times in UTC). ``token_count`` events carry
the running ``total_token_usage`` and the ``last_token_usage`` the writer adds to it, as
``TokenUsageInfo::append_last_usage`` does. Tests build their own homes with it; :func:`build`
writes the bundled sample.

    codex/
      sessions/2025/11/24/rollout-2025-11-24T10-30-00-<P>.jsonl   a session: turn_context (model),
            user and assistant messages with their event_msg mirrors, reasoning, function calls
            whose outputs say "Exit code: N" (freeform) or carry it in JSON (structured), token_count
            events (advancing totals, one re-emitted unchanged total, one with info null, a reset by
            fill_to_context_window)
      sessions/2025/11/24/rollout-2025-11-24T11-05-00-<F>.jsonl   a fork of P (forked_from_id): P's
            items copied as they were, then its own turn
      sessions/2025/11/24/rollout-2025-11-24T11-20-00-<T>.jsonl   a thread_spawn subagent of P: P's
            items copied and re-stamped to the spawn time, then its own turn
      sessions/2025/11/25/rollout-2025-11-25T23-50-00-<Z>.jsonl.zst  a compressed rollout (zstd, raw blocks)
      sessions/rollout-2025-05-07-<L>.jsonl                        generation 1: a bare SessionMeta
            first line, bare response items, record_type: state lines; no times, no usage
      archived_sessions/rollout-2025-11-20T08-00-00-<A>.jsonl      an archived session

    python data/samples/make_samples.py codex
"""

from __future__ import annotations

import copy as _copy
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

GPT5 = "gpt-5"
GPT5_CODEX = "gpt-5-codex"
CLI_VERSION = "0.46.0"
WINDOW = 272_000


def stamp(at: datetime) -> str:
    """Codex's line time: UTC, milliseconds, ``Z``."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def dumps(obj: Any) -> str:
    """One line as Codex (serde_json) writes it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Tokens:
    """A ``TokenUsage``: cached input is inside input, reasoning inside output."""

    input: int = 0
    cached: int = 0
    output: int = 0
    reasoning: int = 0
    total: int | None = None

    def wire(self) -> dict[str, int]:
        total = self.input + self.output if self.total is None else self.total
        return {"input_tokens": self.input, "cached_input_tokens": self.cached, "output_tokens": self.output,
                "reasoning_output_tokens": self.reasoning, "total_tokens": total}

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.input + other.input, self.cached + other.cached, self.output + other.output,
                      self.reasoning + other.reasoning, self.wire()["total_tokens"] + other.wire()["total_tokens"])


class Rollout:
    """One rollout file of a Codex home, written item by item from a description.

    Args:
        home: the Codex home (``CODEX_HOME``).
        session_id: the thread UUID.
        start: the ``session_meta`` time; each item after it is ``step`` later.
        cwd: the working directory.
        model: the model ``turn_context`` names.
        utc_offset: the local time the folder and file name are written in.
        forked_from_id: the parent thread of a fork.
        spawned_by: the parent thread of a ``thread_spawn`` subagent.
    """

    def __init__(self, home: Path, session_id: str, start: datetime, *, cwd: str = "/home/dev/shop",
                 model: str = GPT5_CODEX, utc_offset: timedelta = timedelta(0), step: timedelta = timedelta(seconds=2),
                 forked_from_id: str | None = None, spawned_by: str | None = None,
                 cli_version: str = CLI_VERSION) -> None:
        self.home, self.session_id, self.start, self.cwd, self.model = home, session_id, start, cwd, model
        self.utc_offset, self.step, self.clock = utc_offset, step, start
        self.items: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.total: Tokens | None = None
        self._last = Tokens()
        self.rate_used = 5.0
        self._calls = 0
        source: Any = "cli" if spawned_by is None else {
            "subagent": {"thread_spawn": {"parent_thread_id": spawned_by, "depth": 1}}}
        meta: dict[str, Any] = {"id": session_id}
        if forked_from_id is not None:
            meta["forked_from_id"] = forked_from_id
        meta.update(timestamp=stamp(start), cwd=cwd, originator="codex_cli_rs", cli_version=cli_version,
                    instructions=None, source=source, model_provider="openai",
                    git={"commit_hash": "3f2c1a7e9b0d4c6f8a1e2d3c4b5a69788f7e6d5c", "branch": "main",
                         "repository_url": "git@github.com:dev/shop.git"})
        self.item("session_meta", meta)

    # ------------------------------------------------------------------ lines

    def item(self, kind: str, payload: dict[str, Any], *, at: datetime | None = None) -> dict[str, Any]:
        """Write one ``{"timestamp", "type", "payload"}`` line."""
        if at is not None:
            self.clock = at
        line = {"timestamp": stamp(self.clock), "type": kind, "payload": payload}
        self.clock += self.step
        self.items.append(line)
        self.lines.append(dumps(line))
        return line

    def turn_context(self, model: str | None = None) -> None:
        """A ``turn_context`` (it names the model of the turn's responses)."""
        if model is not None:
            self.model = model
        self.item("turn_context", {"cwd": self.cwd, "approval_policy": "on-request",
                                   "sandbox_policy": {"mode": "workspace-write", "network_access": False,
                                                      "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False},
                                   "model": self.model, "effort": "medium", "summary": "auto"})

    def user(self, message: str) -> None:
        """A user message: the ``response_item`` and its ``event_msg/user_message`` mirror."""
        self.item("response_item", {"type": "message", "role": "user",
                                    "content": [{"type": "input_text", "text": message}]})
        self.item("event_msg", {"type": "user_message", "message": message, "images": None,
                                "local_images": [], "text_elements": []})

    def assistant(self, message: str) -> None:
        """An assistant message: the ``response_item`` and its ``event_msg/agent_message`` mirror."""
        self.item("response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": message}]})
        self.item("event_msg", {"type": "agent_message", "message": message})

    def reasoning(self, summary: str) -> None:
        """A ``reasoning`` item (its summary; the content stays encrypted) and its ``agent_reasoning``."""
        self.item("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                                    "content": None, "encrypted_content": "gAAAAABo" + "x" * 40})
        self.item("event_msg", {"type": "agent_reasoning", "text": summary})

    def call(self, command: str, output: str, *, exit_code: int = 0, structured: bool = False,
             seconds: float = 0.2) -> str:
        """A shell ``function_call`` and its ``function_call_output``.

        Args:
            command: the command line.
            output: what it printed.
            exit_code: its exit code (in the output text: the only place Codex keeps it).
            structured: the output as JSON ``{"output", "metadata": {"exit_code", "duration_seconds"}}``
                instead of the freeform ``Exit code: N\\nWall time: ...\\nOutput:\\n...``.
            seconds: its wall time.

        Returns:
            The ``call_id``.
        """
        self._calls += 1
        call_id = f"call_{self.session_id[:8]}{self._calls:02d}"
        self.item("response_item", {"type": "function_call", "name": "shell",
                                    "arguments": dumps({"command": ["bash", "-lc", command], "workdir": self.cwd}),
                                    "call_id": call_id})
        body = dumps({"output": output, "metadata": {"exit_code": exit_code, "duration_seconds": seconds}}) \
            if structured else f"Exit code: {exit_code}\nWall time: {seconds} seconds\nOutput:\n{output}"
        self.item("response_item", {"type": "function_call_output", "call_id": call_id, "output": body})
        return call_id

    def _rate_limits(self) -> dict[str, Any]:
        resets = int((self.start + timedelta(hours=5)).timestamp())
        return {"primary": {"used_percent": self.rate_used, "window_minutes": 300, "resets_at": resets},
                "secondary": {"used_percent": 1.0, "window_minutes": 10080, "resets_at": resets + 86_400}}

    def _token_count(self, info: dict[str, Any] | None) -> None:
        self.item("event_msg", {"type": "token_count", "info": info, "rate_limits": self._rate_limits()})

    def tokens(self, last: Tokens) -> None:
        """A response's ``token_count``: ``last`` added to the running total."""
        self.total = last if self.total is None else self.total + last
        self.rate_used += 1.5
        self._token_count({"total_token_usage": self.total.wire(), "last_token_usage": last.wire(),
                           "model_context_window": WINDOW})
        self._last = last

    def reemit(self) -> None:
        """The same ``info`` again with new rate limits (``update_rate_limits``): the total did not advance."""
        assert self.total is not None
        self.rate_used += 0.5
        self._token_count({"total_token_usage": self.total.wire(), "last_token_usage": self._last.wire(),
                           "model_context_window": WINDOW})

    def no_info(self) -> None:
        """A ``token_count`` with ``info: null`` (usage unknown; rate limits only)."""
        self._token_count(None)

    def fill_to_context_window(self) -> None:
        """The context window ran out (``set_total_tokens_full``): the total becomes the window alone."""
        before = 0 if self.total is None else self.total.wire()["total_tokens"]
        self.total = Tokens(total=WINDOW)
        self._last = Tokens(total=WINDOW - before)
        self._token_count({"total_token_usage": self.total.wire(), "last_token_usage": self._last.wire(),
                           "model_context_window": WINDOW})

    def copy(self, parent: Rollout, *, restamp: bool = False) -> None:
        """A fork's or spawned thread's head: every item of ``parent`` copied.

        ``restamp`` gives every copied line this rollout's current time (one instant, as a writer
        copying the history at spawn does); otherwise the copies keep their times.
        """
        for line in parent.items:
            copied = _copy.deepcopy(line)
            if restamp:
                copied["timestamp"] = stamp(self.clock)
            self.items.append(copied)
            self.lines.append(dumps(copied))
        self.clock += self.step
        self.total, self._last = parent.total, parent._last

    # ------------------------------------------------------------------ files

    def name(self) -> str:
        local = self.start.astimezone(timezone(self.utc_offset))
        return f"rollout-{local.strftime('%Y-%m-%dT%H-%M-%S')}-{self.session_id}.jsonl"

    def folder(self) -> Path:
        local = self.start.astimezone(timezone(self.utc_offset))
        return self.home / "sessions" / local.strftime("%Y/%m/%d")

    def body(self) -> bytes:
        return "".join(line + "\n" for line in self.lines).encode()

    def write(self, *, archived: bool = False, zst: bool = False) -> Path:
        """Write the rollout: under ``sessions/YYYY/MM/DD/``, or flat in ``archived_sessions/``; ``zst``
        compresses it to ``<name>.jsonl.zst``."""
        folder = self.home / "archived_sessions" if archived else self.folder()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (self.name() + (".zst" if zst else ""))
        path.write_bytes(zstd_frame(self.body()) if zst else self.body())
        return path


def zstd_frame(data: bytes) -> bytes:
    """``data`` as one Zstandard frame of raw (stored) blocks: readable by any zstd decoder.

    No compressor is needed (the format allows uncompressed blocks), so the bytes are the same
    everywhere. The frame header gives the content size; there is no checksum.
    """
    out = bytearray(b"\x28\xb5\x2f\xfd")
    out += bytes([0b1110_0000])  # 8-byte content size, single segment
    out += len(data).to_bytes(8, "little")
    limit = 128 * 1024
    chunks = [data[i:i + limit] for i in range(0, len(data), limit)] or [b""]
    for k, chunk in enumerate(chunks):
        header = (len(chunk) << 3) | (0 << 1) | (1 if k == len(chunks) - 1 else 0)
        out += header.to_bytes(3, "little") + chunk
    return bytes(out)


def legacy(home: Path, session_id: str, start: datetime, turns: list[tuple[str, str]]) -> Path:
    """A generation-1 rollout (``sessions/rollout-YYYY-MM-DD-<uuid>.jsonl``): a bare ``SessionMeta``
    line, bare response items and ``record_type: state`` lines; no line times and no usage."""
    lines: list[dict[str, Any]] = [{"id": session_id, "timestamp": stamp(start), "instructions": None}]
    for k, (question, answer) in enumerate(turns):
        lines.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": question}]})
        lines.append({"record_type": "state"})
        call_id = f"call_legacy{k:02d}"
        lines.append({"type": "function_call", "name": "shell",
                      "arguments": dumps({"command": ["bash", "-lc", "ls"]}), "call_id": call_id})
        lines.append({"type": "function_call_output", "call_id": call_id,
                      "output": dumps({"output": "README.md\nshop\n", "metadata": {"exit_code": 0,
                                                                                  "duration_seconds": 0.1}})})
        lines.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]})
        lines.append({"record_type": "state", "previous_response_id": f"resp_legacy{k:02d}"})
    folder = home / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{start.strftime('%Y-%m-%d')}-{session_id}.jsonl"
    path.write_bytes("".join(dumps(line) + "\n" for line in lines).encode())
    return path


# ---------------------------------------------------------------------------- the sample home

P = "0199b1a2-7c3d-7e4f-8a5b-6c7d8e9f0a11"
F = "0199b1c4-1d2e-7f3a-9b4c-5d6e7f8a9b22"
T = "0199b1d0-2e3f-7a4b-8c5d-6e7f8a9b0c33"
Z = "0199b8e2-3f4a-7b5c-9d6e-7f8a9b0c1d44"
A = "0199a0f1-4a5b-7c6d-8e7f-8a9b0c1d2e55"
L = "5e2c7a1b-9d3f-4b6e-8a2c-1f7d3e9b5a66"


def _parent(home: Path) -> Rollout:
    r = Rollout(home, P, datetime(2025, 11, 24, 8, 30, 0, 250000, tzinfo=UTC), utc_offset=timedelta(hours=2))
    r.turn_context()
    r.user("Why does the checkout test fail?")
    r.reasoning("**Reading the test**")
    r.call("pytest -q tests/test_checkout.py", "F\nFAILED tests/test_checkout.py::test_total - assert 4 == 3",
           exit_code=1, seconds=1.4)
    r.tokens(Tokens(input=9_812, cached=4_608, output=402, reasoning=256))
    r.no_info()
    r.call("grep -n shipping shop/cart.py", "41:    subtotal += shipping\n44:    return subtotal + shipping",
           structured=True)
    r.tokens(Tokens(input=10_530, cached=9_728, output=188, reasoning=64))
    r.reemit()
    r.assistant("cart.py adds the shipping fee on line 41 and again on line 44; line 41 should go.")
    r.tokens(Tokens(input=10_990, cached=10_496, output=61))
    r.user("Remove it and run the tests.")
    r.turn_context(GPT5)
    r.call("sed -i '41d' shop/cart.py && pytest -q", "....\n4 passed in 0.31s", seconds=2.2)
    r.tokens(Tokens(input=11_420, cached=10_880, output=140, reasoning=64))
    r.fill_to_context_window()
    r.assistant("Done: the duplicate line is gone and the four tests pass.")
    r.tokens(Tokens(input=3_100, cached=0, output=72))
    return r


def build(root: Path) -> None:
    """Write ``root/codex/``: the sample Codex home."""
    home = root / "codex"
    parent = _parent(home)
    parent.write()
    fork = Rollout(home, F, datetime(2025, 11, 24, 9, 5, 0, tzinfo=UTC), utc_offset=timedelta(hours=2),
                   model=GPT5, forked_from_id=P)
    fork.copy(parent)
    fork.turn_context()
    fork.user("Also add a test for the fee.")
    fork.call("pytest -q tests/test_fee.py", "1 passed in 0.05s")
    fork.tokens(Tokens(input=4_200, cached=3_072, output=230, reasoning=128))
    fork.assistant("Added tests/test_fee.py; it passes.")
    fork.write()
    spawned = Rollout(home, T, datetime(2025, 11, 24, 9, 20, 0, tzinfo=UTC), utc_offset=timedelta(hours=2),
                      spawned_by=P)
    spawned.copy(parent, restamp=True)
    spawned.turn_context()
    spawned.user("Review the change to cart.py.")
    spawned.tokens(Tokens(input=2_900, cached=2_048, output=96, reasoning=32))
    spawned.assistant("The change is right: the fee is added once.")
    spawned.write()
    late = Rollout(home, Z, datetime(2025, 11, 25, 21, 50, 0, tzinfo=UTC), utc_offset=timedelta(hours=2))
    late.turn_context()
    late.user("Write the release note.")
    late.tokens(Tokens(input=2_400, cached=0, output=310, reasoning=128))
    late.assistant("Fixed: the checkout total no longer adds the shipping fee twice.")
    late.write(zst=True)
    archived = Rollout(home, A, datetime(2025, 11, 20, 8, 0, 0, tzinfo=UTC), model=GPT5)
    archived.turn_context()
    archived.user("List the open branches.")
    archived.call("git branch", "* main\n  fee-fix")
    archived.tokens(Tokens(input=1_800, cached=1_024, output=44))
    archived.assistant("Two branches: main and fee-fix.")
    archived.write(archived=True)
    legacy(home, L, datetime(2025, 5, 7, 10, 0, 0, tzinfo=UTC), [("What is in this repo?", "A shop and its tests.")])
