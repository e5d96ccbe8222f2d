"""Deterministic benchmark corpora: murmur records and litany workspaces, from a seed.

Everything is written under ``benchmarks/data/<scale>/`` (gitignored):

* ``murmur-big/conversations/bench/ctx-big/conversation.jsonl``: one long murmur record
  (``full``: 1,000,000 lines, about 1.3 GB) with heavy-tailed text sizes, plus
  ``murmur-big-slice10.jsonl``, its first tenth, for baselines too slow for the whole file.
* ``murmur-small/conversations/<record>/<context-id>/conversation.jsonl``: many short records
  (``full``: 2,000 of 100-500 lines) in murmur's home layout; some start with a header line.
* ``litany/workspaces/bench/``: a bare ``repo.git`` with one ``agents/<id>`` branch per agent
  (``full``: 200 x 50 commits) and its ``steps/`` records, built with ``git fast-import``.
* ``litany-10x/workspaces/bench/``: the same transcripts, each commit followed by 9 commits
  that change only files outside ``messages/`` (10x the commits, the same ``messages/``).
* ``claude-home/projects/<encoded cwd>/<session>.jsonl``: a Claude Code config dir.
* ``claude-many/projects/...``: a config dir of ten times the sessions, each a tenth as long
  (``full``: 5,000 sessions of about 3 turns, about the same bytes): the per-session work.
* ``codex-home/sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``: a Codex CLI home.

Lines are written as murmur writes them (serde_json: keys sorted, compact, non-ASCII as UTF-8,
control characters escaped). A ``manifest.json`` per scale records the parameters and sizes;
a dataset whose files still match is not generated again.

Usage::

    python benchmarks/generate.py --scale small            # a quick corpus (~100 MB)
    python benchmarks/generate.py --scale full             # the issue's sizes (~3 GB)
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

GENERATOR_VERSION = 5
DATA = Path(__file__).resolve().parent / "data"
START_MS = 1_776_816_000_000  # 2026-04-22T00:00:00Z
SORTED = orjson.OPT_SORT_KEYS


@dataclass(frozen=True)
class Scale:
    """Sizes of every dataset at one scale."""

    big_lines: int
    small_records: int
    small_min: int
    small_max: int
    agents: int
    commits: int
    side_commits: int
    claude_projects: int = 4
    claude_sessions: int = 5
    claude_turns: int = 40
    codex_sessions: int = 10
    codex_turns: int = 12


SCALES: dict[str, Scale] = {
    "tiny": Scale(
        big_lines=2_000, small_records=10, small_min=100, small_max=500, agents=4, commits=50, side_commits=9
    ),
    "small": Scale(
        big_lines=50_000, small_records=100, small_min=100, small_max=500, agents=20, commits=50, side_commits=9,
        claude_projects=8, claude_sessions=10, claude_turns=40, codex_sessions=60, codex_turns=12,
    ),
    "full": Scale(
        big_lines=1_000_000, small_records=2_000, small_min=100, small_max=500, agents=200, commits=50, side_commits=9,
        claude_projects=25, claude_sessions=20, claude_turns=30, codex_sessions=220, codex_turns=14,
    ),
}

# ---------------------------------------------------------------------------------------------
# Text: slices of two pools, plain prose-and-code and tricky characters, at heavy-tailed sizes.

_TRICKY_PIECES = [
    "C:\\Users\\agent\\project\\src",
    "\\n is not a newline",
    "\\\\server\\share",
    "regex \\d+\\.\\w*",
    "\t",
    "\ttabbed\tcolumns\t",
    '"quoted"',
    'say "hi" and \\"escaped\\"',
    "\n",
    "\r\n",
    "é à ü ß",
    "中文字符",
    "日本語のテキスト",
    "🎉🚀",
    "👩‍💻",
    "עברית",
    "\u2028line separator",
    "\x1b[31mred\x1b[0m",
    "\x00nul",
    "\x7f",
    '{"json": "inside \\"a\\" string\\n"}',
    "</script><b>&amp;</b>",
    "\ud7ff\ue000",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]
_CODE = [
    "def f(x):\n    return x + 1\n",
    'print("done")\n',
    "if (a && b) { return 0; }\n",
    "$ ls -la\n",
    "Exit code: 0\n",
    "--- stderr ---\n",
    "    at Object.<anonymous> (index.js:1:1)\n",
    "| col | value |\n",
]


def _vocabulary(rng: random.Random, size: int = 4_000) -> list[str]:
    letters = "etaoinshrdlucmfwypvbgkjqxz"
    weights = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.0, 2.0, 1.9, 1.5,
               1.0, 0.8, 0.2, 0.2, 0.1, 0.1, 0.1]
    words = set()
    while len(words) < size:
        n = max(1, min(14, int(rng.lognormvariate(1.5, 0.45))))
        words.add("".join(rng.choices(letters, weights, k=n)))
    return sorted(words)


def _pool(rng: random.Random, chars: int, tricky: bool) -> str:
    vocab = _vocabulary(rng)
    parts: list[str] = []
    size = 0
    while size < chars:
        r = rng.random()
        if tricky and r < 0.25:
            piece = rng.choice(_TRICKY_PIECES)
        elif r < 0.03:
            piece = rng.choice(_CODE)
        elif r < 0.05:
            piece = "\n\n" if r < 0.04 else ". "
        else:
            piece = rng.choice(vocab) + " "
        parts.append(piece)
        size += len(piece)
    return "".join(parts)


class TextSource:
    """Text of heavy-tailed length: a lognormal body with a Pareto tail, capped."""

    def __init__(self, rng: random.Random, median: float = 480.0, sigma: float = 1.35, cap: int = 200_000,
                 pool_chars: int = 1 << 22) -> None:
        self.rng = rng
        self.mu = math.log(median)
        self.sigma = sigma
        self.cap = cap
        self.plain = _pool(rng, pool_chars, tricky=False)
        self.tricky = _pool(rng, max(pool_chars // 4, 4_096), tricky=True)

    def length(self, scale: float = 1.0) -> int:
        rng = self.rng
        if rng.random() < 0.01:  # the Pareto tail: pasted logs, file dumps
            n = int(2_000 * rng.paretovariate(1.1))
        else:
            n = int(rng.lognormvariate(self.mu, self.sigma) * scale)
        return max(1, min(n, self.cap))

    def text(self, scale: float = 1.0, tricky_rate: float = 0.03) -> str:
        n = self.length(scale)
        pool = self.tricky if self.rng.random() < tricky_rate else self.plain
        n = min(n, len(pool) - 1)
        start = self.rng.randrange(0, len(pool) - n)
        return pool[start : start + n]


def uuid7_hex(rng: random.Random, ms: int) -> str:
    """32 lowercase hex digits of a UUIDv7 minted at ``ms``."""
    return f"{ms:012x}7{rng.getrandbits(12):03x}{8 + rng.getrandbits(2):x}{rng.getrandbits(60):015x}"


# ---------------------------------------------------------------------------------------------
# murmur records

_TOOLS = ["bash", "read_file", "write_file", "grep", "ls", "edit", "web_fetch"]


def _tool_input(rng: random.Random, text: TextSource, name: str) -> dict[str, Any]:
    if name == "bash":
        return {"command": text.text(0.1), "timeout_ms": rng.choice([10_000, 60_000, 120_000])}
    if name in ("read_file", "ls"):
        return {"path": f"src/pkg_{rng.randrange(40)}/mod_{rng.randrange(200)}.py"}
    if name in ("write_file", "edit"):
        return {"content": text.text(0.6), "path": f"src/pkg_{rng.randrange(40)}/mod_{rng.randrange(200)}.py"}
    if name == "grep":
        return {"options": {"context": rng.randrange(5), "regex": True}, "pattern": text.text(0.02)}
    return {"url": f"https://example.org/{rng.getrandbits(32):08x}"}


class RecordWriter:
    """Lines of one murmur conversation, as the runtime appends them."""

    def __init__(self, rng: random.Random, text: TextSource, ms: int) -> None:
        self.rng = rng
        self.text = text
        self.ms = ms
        self.open_calls: list[str] = []
        self.state = "user"

    def _id(self) -> str:
        self.ms += self.rng.randint(1, 4_000)
        return "msg_" + uuid7_hex(self.rng, self.ms)

    def line(self) -> bytes:
        """The next line (no newline)."""
        rng = self.rng
        if self.open_calls:
            call = self.open_calls.pop(0)
            if rng.random() < 0.0005:  # a result whose call the record never held
                call = f"call_{rng.getrandbits(64):016x}"
            body: Any = [{"text": self.text.text(), "type": "text"}]
            if rng.random() < 0.002:  # a hook-made tool body held as a bare string
                body = self.text.text()
            obj: dict[str, Any] = {
                "content": body,
                "id": self._id(),
                "is_error": rng.random() < 0.05,
                "role": "tool",
                "tool_call_id": call,
            }
            if not self.open_calls:
                self.state = "assistant"
            return orjson.dumps(obj, option=SORTED)
        if self.state == "user":
            self.state = "assistant"
            obj = {"content": [{"text": self.text.text(0.4), "type": "text"}], "id": self._id(), "role": "user"}
            if rng.random() < 0.01:
                obj["source_id"] = f"hook-{rng.getrandbits(32):08x}"
            return orjson.dumps(obj, option=SORTED)
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.1:
            sig = f"sig{rng.getrandbits(64):016x}"
            blocks.append({"signature": sig, "text": self.text.text(0.5), "type": "thinking"})
        if rng.random() < 0.85:
            blocks.append({"text": self.text.text(0.5), "type": "text"})
        r = rng.random()
        n_calls = 0 if r < 0.25 else 1 if r < 0.8 else 2 if r < 0.95 else 3
        for _ in range(n_calls):
            name = rng.choice(_TOOLS)
            call = f"call_{rng.getrandbits(96):024x}"
            blocks.append({"id": call, "input": _tool_input(rng, self.text, name), "name": name, "type": "tool_call"})
            if rng.random() > 0.0005:  # now and then a call is never answered
                self.open_calls.append(call)
        if not blocks:
            blocks.append({"text": self.text.text(0.5), "type": "text"})
        self.state = "assistant" if self.open_calls else "user"
        return orjson.dumps({"content": blocks, "id": self._id(), "role": "assistant"}, option=SORTED)


def write_record(path: Path, lines: int, seed: int, header: bool = False, text: TextSource | None = None) -> int:
    """Write one murmur record of ``lines`` message lines; returns its size in bytes."""
    rng = random.Random(seed)
    text = text or TextSource(random.Random(seed ^ 0x5EED))
    text.rng = rng
    writer = RecordWriter(rng, text, START_MS + rng.randrange(86_400_000))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb", buffering=1 << 20) as out:
        if header:
            out.write(orjson.dumps({"capsule": path.parent.parent.name, "created_ms": writer.ms,
                                    "type": "murmur.record"}, option=SORTED) + b"\n")
        chunk: list[bytes] = []
        for _ in range(lines):
            chunk.append(writer.line())
            if len(chunk) == 8_192:
                out.write(b"\n".join(chunk) + b"\n")
                chunk = []
        if chunk:
            out.write(b"\n".join(chunk) + b"\n")
    tmp.replace(path)
    return path.stat().st_size


def tricky_lines(seed: int = 7, n: int = 400) -> list[bytes]:
    """A short record made to break JSON engines: escapes, unicode, mixed content shapes.

    Every tricky piece appears in a text, a tool input and a tool body; tool bodies alternate
    between block lists and bare strings (pyarrow.json refuses the mix; polars mangles it).
    """
    rng = random.Random(seed)
    text = TextSource(random.Random(seed), median=40, sigma=0.8, cap=400, pool_chars=1 << 16)
    ms = START_MS
    out: list[bytes] = []
    calls: list[str] = []
    for i in range(n):
        ms += 1 + i % 7
        mid = "msg_" + uuid7_hex(rng, ms)
        piece = _TRICKY_PIECES[i % len(_TRICKY_PIECES)]
        body = piece + text.text(tricky_rate=0.7) + piece
        kind = i % 4
        obj: dict[str, Any]
        if kind == 0:
            obj = {"content": [{"text": body, "type": "text"}], "id": mid, "role": "user"}
        elif kind == 1:
            call = f"call_{i:04d}"
            calls.append(call)
            obj = {"content": [{"text": body, "type": "text"},
                               {"id": call, "input": {"command": piece, "nested": {"k": [piece, 1, None]}},
                                "name": "bash", "type": "tool_call"}], "id": mid, "role": "assistant"}
        elif kind == 2:
            content: Any = [{"text": body, "type": "text"}] if i % 8 == 2 else body
            obj = {"content": content, "id": mid, "is_error": i % 3 == 0, "role": "tool",
                   "tool_call_id": calls.pop(0) if calls else f"call_orphan_{i}"}
        else:
            obj = {"content": [{"text": body, "type": "text"}, {"text": piece, "type": "text"}],
                   "id": mid, "role": "assistant"}
        out.append(orjson.dumps(obj, option=SORTED))
    return out


# ---------------------------------------------------------------------------------------------
# litany workspaces

_MODELS = ["claude-fable-5", "gpt-5.1", "gemini-3-pro"]
_SENDERS = ["operator", "reviewer", "scheduler"]


def _agent_ids(rng: random.Random, n: int) -> list[str]:
    ids: list[str] = []
    for i in range(n):
        if ids and rng.random() < 0.1:  # a child extends its parent's id
            ids.append(f"{rng.choice(ids)}-{rng.getrandbits(32):08x}")
        else:
            t = time.gmtime(START_MS // 1000 + i * 97)
            ids.append(time.strftime("%Y%m%dT%H%M%SZ", t) + f"-{rng.getrandbits(32):08x}")
    return ids


def _pretty(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


@dataclass
class _Commit:
    message: str
    files: list[tuple[str, bytes]]
    step: int | None = None  # set on the first commit of a step: the step reads the state before it


def _agent_commits(rng: random.Random, text: TextSource, agent: str, commits: int) -> list[_Commit]:
    """One agent's transcript history: dispatch, deliveries, model outputs, tool calls."""
    out = [_Commit(f"dispatch: worker [{agent}]", [
        ("goal.md", text.text(0.5).encode()),
        ("soul.md", text.text(0.3).encode()),
        ("name", f"agent-{agent[-8:]}".encode()),
        ("messages/001-operator.md", text.text(0.5).encode()),
    ])]
    nnn = 1
    step = 0
    model = rng.choice(_MODELS)
    context = 2_000
    while len(out) < commits:
        nnn += 1 + (rng.random() < 0.03)  # gaps are normal
        if rng.random() < 0.12 and len(out) > 1:
            sender = rng.choice(_SENDERS)
            out.append(_Commit(f"deliver: {sender}", [(f"messages/{nnn:03d}-{sender}.md", text.text(0.4).encode())]))
            continue
        step += 1
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.2:
            blocks.append({"type": "thinking", "text": text.text(0.4), "signature": f"sig{rng.getrandbits(48):012x}"})
        blocks.append({"type": "text", "text": text.text(0.5)})
        calls = [f"toolu_{rng.getrandbits(96):024x}" for _ in range(rng.choice([0, 1, 1, 1, 2, 2, 3]))]
        for call in calls:
            name = rng.choice(_TOOLS)
            blocks.append({"type": "tool_use", "id": call, "name": name, "input": _tool_input(rng, text, name)})
        context += rng.randint(500, 6_000)
        cached = int(context * rng.uniform(0.5, 0.95))
        usage = {"input_tokens": context - cached, "output_tokens": rng.randint(20, 2_000),
                 "cache_read_tokens": cached, "input_total_tokens": context, "context_window": 200_000}
        entry: Any = {"content": blocks, "usage": usage} if rng.random() > 0.05 else blocks
        out.append(_Commit(f"step {step:03d}: {model}", [(f"messages/{nnn:03d}-{model}.json", _pretty(entry))], step))
        for call in calls:
            if len(out) >= commits:
                break
            nnn += 1
            code = 0 if rng.random() > 0.08 else rng.choice([1, 2, 127])
            result = f"Exit code: {code}\n{text.text()}"
            if code:
                result += f"\n--- stderr ---\n{text.text(0.2)}"
            tool = [{"type": "tool_result", "tool_use_id": call, "content": [{"type": "text", "text": result}],
                     "is_error": code != 0}]
            files = [(f"messages/{nnn:03d}-tool.json", _pretty({"content": tool}))]
            if rng.random() < 0.5:  # the tool's side effect in the worktree
                files.append((f"src/mod_{rng.randrange(30)}.py", text.text(2.0).encode()))
            out.append(_Commit(f"tool: {call}", files))
    return out[:commits]


def _step_files(rng: random.Random, model: str, commit: str, started: int) -> dict[str, bytes]:
    ended = started + rng.randint(2, 90)
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    meta = {"commit": commit, "provider": "anthropic" if model.startswith("claude") else "openai",
            "dropped_orphans": [], "started_at": time.strftime(fmt, time.gmtime(started)),
            "ended_at": time.strftime(fmt, time.gmtime(ended))}
    request = {"model": model, "max_tokens": 8_192, "stream": True}
    inp = rng.randint(2_000, 150_000)
    events = [
        {"type": "message_start"},
        {"type": "content_start", "index": 0, "kind": "text"},
        {"type": "content_delta", "index": 0, "text": "…"},
        {"type": "content_stop", "index": 0},
        {"type": "usage", "input_tokens": inp // 10, "output_tokens": rng.randint(20, 2_000),
         "cache_read_tokens": inp - inp // 10, "input_total_tokens": inp, "context_window": 200_000},
        {"type": "finish", "reason": "tool_use"},
        {"type": "end"},
    ]
    return {
        "meta.json": _pretty(meta),
        "request.json": orjson.dumps(request),
        "response.json": b"".join(orjson.dumps(e) + b"\n" for e in events),
    }


def safe_git_env() -> dict[str, str]:
    """An environment for git on untrusted repositories: no system/global config, pager or prompts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_PAGER="cat", PAGER="cat",
               GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    return env


SAFE_GIT = ["git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]


def write_workspace(root: Path, agents: int, commits: int, seed: int, side_commits: int = 0) -> dict[str, Any]:
    """A litany workspace under ``root`` (``repo.git`` and ``steps/``); returns its summary."""
    rng = random.Random(seed)
    text = TextSource(random.Random(seed ^ 0x11AA), median=300)
    text.rng = rng
    if root.exists():
        shutil.rmtree(root)
    repo = root / "repo.git"
    root.mkdir(parents=True)
    env = safe_git_env()
    subprocess.run([*SAFE_GIT, "init", "-q", "--bare", str(repo)], check=True, env=env)
    marks = root / ".marks"
    proc = subprocess.Popen([*SAFE_GIT, "--git-dir", str(repo), "fast-import", "--quiet",
                             f"--export-marks={marks}"], stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    stdin = proc.stdin
    mark = 0
    steps: list[tuple[str, int, int, str, int]] = []  # (agent, step, mark of read state, model, time)
    n_commits = 0
    clock = START_MS // 1000
    for agent in _agent_ids(rng, agents):
        prev = 0
        model = "claude-fable-5"
        side = random.Random(rng.getrandbits(64))
        for commit in _agent_commits(rng, text, agent, commits):
            if commit.step is not None:
                model = commit.message.split(": ", 1)[1]
                steps.append((agent, commit.step, prev, model, clock))
            rounds = [commit] + [
                _Commit(f"worktree: edit {j}", [(f"work/scratch-{j}.txt", f"{side.getrandbits(64):x}\n".encode())])
                for j in range(side_commits)
            ]
            for c in rounds:
                mark += 1
                clock += 7
                buf = [f"commit refs/heads/agents/{agent}\nmark :{mark}\n"
                       f"committer litany <litany@localhost> {clock} +0000\n".encode()]
                msg = c.message.encode()
                buf.append(b"data %d\n%s\n" % (len(msg), msg))
                if prev:
                    buf.append(b"from :%d\n" % prev)
                for path, data in c.files:
                    buf.append(b"M 100644 inline %s\ndata %d\n%s\n" % (path.encode(), len(data), data))
                stdin.write(b"".join(buf) + b"\n")
                prev = mark
                n_commits += 1
    stdin.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed")
    shas = dict(line.split() for line in marks.read_text().splitlines())
    marks.unlink()
    for agent, step, read_mark, model, started in steps:
        folder = root / "steps" / agent / f"{step:03d}"
        folder.mkdir(parents=True)
        commit_sha = shas[f":{read_mark}"] if read_mark else "0" * 40
        for name, data in _step_files(rng, model, commit_sha, started).items():
            (folder / name).write_bytes(data)
    heads = subprocess.run([*SAFE_GIT, "--git-dir", str(repo), "for-each-ref", "--format=%(objectname)"],
                           check=True, env=env, capture_output=True).stdout
    return {"commits": n_commits, "steps": len(steps), "refs": hashlib.sha256(heads).hexdigest()}


# ---------------------------------------------------------------------------------------------
# A Claude Code home: projects of sessions, responses streamed one content block per line


_CLAUDE_MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001")
_CLAUDE_TOOLS = ("Read", "Bash", "Grep", "Edit", "Glob")


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def _claude_session(rng: random.Random, text: TextSource, cwd: str, session: str, turns: int, ms: int) -> bytes:
    """One session file: prompts, streamed responses (thinking, text, tool calls), 1-20 KB tool results."""
    lines: list[bytes] = []
    parent: str | None = None
    model = rng.choice(_CLAUDE_MODELS)
    base = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": session, "version": "2.1.170",
            "gitBranch": "main"}

    def put(kind: str, message: dict[str, Any], **extra: Any) -> None:
        nonlocal parent, ms
        ms += rng.randint(200, 20_000)
        uid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        line = {"parentUuid": parent, **base, "type": kind, "message": message, "uuid": uid, "timestamp": _iso(ms),
                **extra}
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode())
        parent = uid

    context = rng.randint(2_000, 20_000)
    for turn in range(turns):
        if turn == 0 or rng.random() < 0.2:
            put("user", {"role": "user", "content": text.text(0.3)})
        msg_id = f"msg_01{rng.getrandbits(96):024x}"
        request = f"req_011C{rng.getrandbits(96):024x}"
        calls = [f"toolu_01{rng.getrandbits(96):024x}" for _ in range(rng.choice((0, 1, 1, 1, 2)))]
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.4:
            blocks.append({"type": "thinking", "thinking": text.text(0.5), "signature": "sig"})
        blocks.append({"type": "text", "text": text.text(0.4)})
        for call in calls:
            blocks.append({"type": "tool_use", "id": call, "name": rng.choice(_CLAUDE_TOOLS),
                           "input": {"file_path": f"{cwd}/src/m{rng.randint(0, 99)}.py"}})
        write = rng.randint(0, 3_000)
        fresh = rng.randint(1, 30)
        final_output = rng.randint(20, 1_500)
        # the final usage back-filled onto every line of the response, as main sessions are written
        # (a shape ccusage counts right, so the daily totals of the two readers can be compared)
        for block in blocks:
            output = final_output
            usage = {"input_tokens": fresh, "cache_creation_input_tokens": write,
                     "cache_read_input_tokens": context,
                     "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": write},
                     "output_tokens": output, "service_tier": "standard"}
            put("assistant", {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                              "content": [block], "stop_reason": "tool_use" if calls else "end_turn",
                              "stop_sequence": None, "usage": usage}, requestId=request)
        context += write + final_output
        for call in calls:
            body = text.text(rng.uniform(2.0, 40.0))[:20_000]
            body = body if len(body) >= 1_000 else (body * (1_000 // max(len(body), 1) + 1))[:1_000]
            put("user", {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": body,
                                                       "is_error": rng.random() < 0.05}]},
                toolUseResult={"stdout": body[:200], "stderr": "", "interrupted": False, "isImage": False})
    return b"\n".join(lines) + b"\n"


def write_claude_home(root: Path, projects: int, sessions: int, turns: int, seed: int) -> dict[str, Any]:
    """A Claude Code config dir: ``projects/<encoded cwd>/<session>.jsonl``, days apart."""
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(seed)
    text = TextSource(random.Random(seed ^ 0xC1A0))
    total = files = 0
    for p in range(projects):
        cwd = f"/home/dev/work/project-{p:02d}"
        folder = root / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True)
        for _ in range(sessions):
            session = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            start = START_MS + rng.randint(0, 30) * 86_400_000 + rng.randint(0, 86_400_000)
            data = _claude_session(rng, text, cwd, session, rng.randint(turns // 2, turns * 3 // 2), start)
            (folder / f"{session}.jsonl").write_bytes(data)
            total += len(data)
            files += 1
    return {"bytes": total, "files": files, "digest": _tree_digest(root)}


# ---------------------------------------------------------------------------------------------
# A Codex CLI home: rollouts of turns, each response followed by its token_count event


_CODEX_MODELS = ("gpt-5.1-codex", "gpt-5-codex", "gpt-5.1-codex-mini")
#: The writer's local time is UTC+2: folders and file names use it, line times are UTC.
_CODEX_LOCAL_MS = 2 * 3_600_000


def _codex_name(ms: int) -> str:
    """``rollout-YYYY-MM-DDThh-mm-ss`` in the writer's local time."""
    return time.strftime("rollout-%Y-%m-%dT%H-%M-%S", time.gmtime((ms + _CODEX_LOCAL_MS) // 1000))


def _uuid7(rng: random.Random, ms: int) -> str:
    return str(uuid.UUID(uuid7_hex(rng, ms)))


class _CodexUsage:
    """The running ``TokenUsageInfo``: each response's ``last`` appended into the totals."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.context = rng.randint(4_000, 12_000)
        self.total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
                      "reasoning_output_tokens": 0, "total_tokens": 0}
        self.last = dict(self.total)
        self.reemitted = {"input": 0, "cached": 0, "output": 0, "reasoning": 0, "events": 0}

    def respond(self) -> None:
        """One model call over the whole context so far (cached up to its last 256-token boundary)."""
        rng = self.rng
        cached = self.context // 256 * 256
        output = rng.randint(20, 1_500)
        reasoning = rng.randint(0, output // 2) if rng.random() < 0.7 else 0
        self.last = {"input_tokens": self.context, "cached_input_tokens": cached, "output_tokens": output,
                     "reasoning_output_tokens": reasoning, "total_tokens": self.context + output}
        self.total = {k: self.total[k] + v for k, v in self.last.items()}
        self.context += output

    def info(self) -> dict[str, Any]:
        return {"total_token_usage": dict(self.total), "last_token_usage": dict(self.last),
                "model_context_window": 272_000}

    def count_reemit(self) -> None:
        """A rate-limit refresh re-emits ``info`` unchanged: readers without the guard count it again."""
        last = self.last
        for key, name in (("input", "input_tokens"), ("cached", "cached_input_tokens"),
                          ("output", "output_tokens"), ("reasoning", "reasoning_output_tokens")):
            self.reemitted[key] += last[name]
        self.reemitted["events"] += 1


def _rate_limits(rng: random.Random, ms: int) -> dict[str, Any]:
    reset = ms // 1000 + rng.randint(60, 18_000)
    return {"primary": {"used_percent": round(rng.uniform(0, 90), 1), "window_minutes": 300, "resets_at": reset},
            "secondary": {"used_percent": round(rng.uniform(0, 40), 1), "window_minutes": 10_080,
                          "resets_at": reset + 500_000}}


def _codex_output(rng: random.Random, text: TextSource) -> str:
    body = text.text(rng.uniform(2.0, 40.0))[:20_000]
    body = body if len(body) >= 1_000 else (body * (1_000 // max(len(body), 1) + 1))[:1_000]
    code = 0 if rng.random() < 0.93 else rng.choice((1, 2, 127))
    return f"Exit code: {code}\nWall time: {rng.uniform(0.05, 30):.1f} seconds\nOutput:\n{body}"


def _codex_call(rng: random.Random, text: TextSource, cwd: str) -> tuple[str, str]:
    if rng.random() < 0.7:
        args: dict[str, Any] = {"command": text.text(0.08).replace("\n", " "), "workdir": cwd}
        return "shell_command", json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    args = {"command": ["bash", "-lc", f"sed -n 1,200p src/m{rng.randint(0, 99)}.py"], "workdir": cwd,
            "timeout_ms": rng.choice((10_000, 60_000, 120_000))}
    return "shell", json.dumps(args, ensure_ascii=False, separators=(",", ":"))


class _Rollout:
    """One rollout being written: lines stamped with an advancing UTC time."""

    def __init__(self, rng: random.Random, ms: int) -> None:
        self.rng, self.ms = rng, ms
        self.lines: list[bytes] = []

    def put(self, kind: str, payload: dict[str, Any], step: tuple[int, int] = (50, 4_000)) -> None:
        self.ms += self.rng.randint(*step)
        line = {"timestamp": _iso(self.ms), "type": kind, "payload": payload}
        self.lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode())

    def tokens(self, usage: _CodexUsage) -> None:
        self.put("event_msg", {"type": "token_count", "info": usage.info(),
                               "rate_limits": _rate_limits(self.rng, self.ms)}, (5, 200))
        if self.rng.random() < 0.05:  # a rate-limit refresh: the same info again
            self.put("event_msg", {"type": "token_count", "info": usage.info(),
                                   "rate_limits": _rate_limits(self.rng, self.ms)}, (5, 2_000))
            usage.count_reemit()


def _codex_response(r: _Rollout, text: TextSource, usage: _CodexUsage, cwd: str, final: bool) -> None:
    """One model response: reasoning, then tool calls (and their outputs) or the final answer."""
    rng = r.rng
    if rng.random() < 0.6:
        summary = text.text(0.3)
        r.put("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": summary}],
                                "content": None, "encrypted_content": "gAAAAA" + base64.b64encode(
                                    rng.randbytes(rng.randint(300, 3_000))).decode()}, (500, 20_000))
        r.put("event_msg", {"type": "agent_reasoning", "text": summary}, (1, 20))
    if final:
        answer = text.text(0.5)
        r.put("response_item", {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": answer}]})
        r.put("event_msg", {"type": "agent_message", "message": answer}, (1, 20))
        usage.respond()
        r.tokens(usage)
        return
    calls = [f"call_{rng.getrandbits(96):024x}" for _ in range(rng.choice((1, 1, 1, 2)))]
    named = [_codex_call(rng, text, cwd) for _ in calls]
    for call, (name, args) in zip(calls, named, strict=True):
        r.put("response_item", {"type": "function_call", "name": name, "arguments": args, "call_id": call})
    usage.respond()
    r.tokens(usage)
    for call in calls:
        output = _codex_output(rng, text)
        r.put("response_item", {"type": "function_call_output", "call_id": call, "output": output}, (100, 30_000))
        usage.context += len(output) // 4


def _codex_session(rng: random.Random, text: TextSource, thread: str, turns: int, ms: int) -> tuple[bytes, _CodexUsage]:
    """One rollout: its meta, then turns of a prompt and 1-8 responses (tool calls, then an answer)."""
    r = _Rollout(rng, ms)
    cwd = f"/home/dev/work/project-{rng.randint(0, 11):02d}"
    usage = _CodexUsage(rng)
    r.put("session_meta", {"id": thread, "timestamp": _iso(ms), "cwd": cwd, "originator": "codex_cli_rs",
                           "cli_version": "0.63.0", "instructions": None, "source": "cli", "model_provider": "openai",
                           "git": {"commit_hash": f"{rng.getrandbits(160):040x}", "branch": "main",
                                   "repository_url": "git@github.com:dev/project.git"}}, (0, 1))
    model = rng.choice(_CODEX_MODELS)
    for _ in range(turns):
        turn_id = _uuid7(rng, r.ms)
        r.put("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272_000},
              (2_000, 600_000))
        r.put("turn_context", {"cwd": cwd, "approval_policy": "on-request",
                               "sandbox_policy": {"type": "workspace-write", "network_access": False},
                               "model": model, "effort": "medium", "summary": "auto", "turn_id": turn_id}, (1, 10))
        prompt = text.text(0.3)
        r.put("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]})
        r.put("event_msg", {"type": "user_message", "message": prompt, "images": None, "local_images": [],
                            "text_elements": []}, (1, 20))
        if rng.random() < 0.1:  # the first rate-limit snapshot of a turn comes before any usage
            r.put("event_msg", {"type": "token_count", "info": None, "rate_limits": _rate_limits(rng, r.ms)})
        usage.context += len(prompt) // 4
        steps = rng.randint(0, 7)
        for step in range(steps + 1):
            _codex_response(r, text, usage, cwd, final=step == steps)
        r.put("event_msg", {"type": "task_complete", "last_agent_message": None}, (1, 50))
    return b"\n".join(r.lines) + b"\n", usage


def write_codex_home(root: Path, sessions: int, turns: int, seed: int) -> dict[str, Any]:
    """A Codex home: ``sessions/YYYY/MM/DD/rollout-<local time>-<thread id>.jsonl``, over a month."""
    if root.exists():
        shutil.rmtree(root)
    rng = random.Random(seed)
    text = TextSource(random.Random(seed ^ 0xC0DE))
    total = 0
    reemitted = {"input": 0, "cached": 0, "output": 0, "reasoning": 0, "events": 0}
    for _ in range(sessions):
        start = START_MS + rng.randint(0, 30) * 86_400_000 + rng.randint(0, 86_400_000)
        thread = _uuid7(rng, start)
        data, usage = _codex_session(rng, text, thread, rng.randint(turns // 2, turns * 3 // 2), start)
        local = time.gmtime((start + _CODEX_LOCAL_MS) // 1000)
        folder = root / "sessions" / time.strftime("%Y/%m/%d", local)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{_codex_name(start)}-{thread}.jsonl").write_bytes(data)
        total += len(data)
        reemitted = {k: v + usage.reemitted[k] for k, v in reemitted.items()}
    return {"bytes": total, "files": sessions, "reemitted": reemitted, "digest": _tree_digest(root)}


# ---------------------------------------------------------------------------------------------
# Datasets, the manifest and the command line


@dataclass(frozen=True)
class Paths:
    """Where each dataset of a scale lives."""

    root: Path

    @property
    def big(self) -> Path:
        return self.root / "murmur-big" / "conversations" / "bench" / "ctx-big" / "conversation.jsonl"

    @property
    def big_home(self) -> Path:
        return self.root / "murmur-big" / "conversations"

    @property
    def big_slice(self) -> Path:
        return self.root / "murmur-big-slice10.jsonl"

    @property
    def small_home(self) -> Path:
        return self.root / "murmur-small" / "conversations"

    @property
    def litany(self) -> Path:
        return self.root / "litany" / "workspaces" / "bench"

    @property
    def litany10(self) -> Path:
        return self.root / "litany-10x" / "workspaces" / "bench"

    @property
    def claude_home(self) -> Path:
        return self.root / "claude-home"

    @property
    def claude_many(self) -> Path:
        return self.root / "claude-many"

    @property
    def codex_home(self) -> Path:
        return self.root / "codex-home"


def paths(scale: str, data: Path = DATA) -> Paths:
    """The dataset paths of ``scale``."""
    return Paths(data / scale)


def _quick_digest(path: Path) -> str:
    """sha256 over the size, the first and the last MiB: cheap, and catches a partial file."""
    h = hashlib.sha256()
    size = path.stat().st_size
    h.update(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
        f.seek(max(size - (1 << 20), 0))
        h.update(f.read(1 << 20))
    return h.hexdigest()


def _tree_digest(folder: Path) -> str:
    """sha256 over every file's relative path and size under ``folder``."""
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath, name)
            h.update(f"{p.relative_to(folder)}\0{p.stat().st_size}\n".encode())
    return h.hexdigest()


def _write_big(p: Paths, s: Scale, seed: int) -> dict[str, Any]:
    size = write_record(p.big, s.big_lines, seed)
    cut = 0
    with open(p.big, "rb") as f:
        for i, _ in enumerate(f, 1):
            if i == max(1, s.big_lines // 10):
                cut = f.tell()
                break
    with open(p.big, "rb") as src, open(p.big_slice, "wb") as dst:
        dst.write(src.read(cut))
    return {"bytes": size, "lines": s.big_lines, "digest": _quick_digest(p.big), "slice_bytes": cut}


def _check_big(p: Paths, info: dict[str, Any]) -> bool:
    return (p.big.exists() and p.big_slice.exists() and p.big.stat().st_size == info["bytes"]
            and p.big_slice.stat().st_size == info["slice_bytes"] and _quick_digest(p.big) == info["digest"])


def _write_small(p: Paths, s: Scale, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    if p.small_home.exists():
        shutil.rmtree(p.small_home)
    text = TextSource(random.Random(seed ^ 0xABC))
    capsules = [f"capsule-{i:02d}" for i in range(20)]
    total = lines = 0
    for i in range(s.small_records):
        n = rng.randint(s.small_min, s.small_max)
        context = f"ctx-{i:05d}-{rng.getrandbits(32):08x}"
        path = p.small_home / capsules[i % len(capsules)] / context / "conversation.jsonl"
        total += write_record(path, n, rng.getrandbits(63), header=rng.random() < 0.3, text=text)
        lines += n
    return {"bytes": total, "lines": lines, "records": s.small_records, "digest": _tree_digest(p.small_home)}


def _check_tree(folder: Path, info: dict[str, Any]) -> bool:
    return folder.exists() and _tree_digest(folder) == info["digest"]


def _write_litany(folder: Path, s: Scale, seed: int, side: int) -> dict[str, Any]:
    summary = write_workspace(folder, s.agents, s.commits, seed, side_commits=side)
    summary["digest"] = _tree_digest(folder / "steps")
    summary["pack_bytes"] = sum(f.stat().st_size for f in (folder / "repo.git" / "objects").rglob("*") if f.is_file())
    return summary


def _check_litany(folder: Path, info: dict[str, Any]) -> bool:
    if not (folder / "repo.git").exists() or not _check_tree(folder / "steps", info):
        return False
    heads = subprocess.run([*SAFE_GIT, "--git-dir", str(folder / "repo.git"), "for-each-ref",
                            "--format=%(objectname)"], env=safe_git_env(), capture_output=True).stdout
    return hashlib.sha256(heads).hexdigest() == info["refs"]


Writer = Callable[[], dict[str, Any]]
Checker = Callable[[dict[str, Any]], bool]


def datasets(p: Paths, s: Scale, seed: int) -> dict[str, tuple[Writer, Checker]]:
    """Each dataset's writer and checker."""
    return {
        "murmur-big": (lambda: _write_big(p, s, seed), lambda info: _check_big(p, info)),
        "murmur-small": (lambda: _write_small(p, s, seed + 1), lambda info: _check_tree(p.small_home, info)),
        "litany": (lambda: _write_litany(p.litany, s, seed + 2, 0), lambda info: _check_litany(p.litany, info)),
        "litany-10x": (lambda: _write_litany(p.litany10, s, seed + 2, s.side_commits),
                       lambda info: _check_litany(p.litany10, info)),
        "claude-home": (lambda: write_claude_home(p.claude_home, s.claude_projects, s.claude_sessions, s.claude_turns,
                                                  seed + 3),
                        lambda info: _check_tree(p.claude_home, info)),
        "codex-home": (lambda: write_codex_home(p.codex_home, s.codex_sessions, s.codex_turns, seed + 4),
                       lambda info: _check_tree(p.codex_home, info)),
        "claude-many": (lambda: write_claude_home(p.claude_many, s.claude_projects, s.claude_sessions * MANY,
                                                  max(1, s.claude_turns // MANY), seed + 5),
                        lambda info: _check_tree(p.claude_many, info)),
    }


#: How many more sessions, each that much shorter, the ``claude-many`` home has than ``claude-home``.
MANY = 10


def ensure(scale: str, seed: int = 20260422, only: list[str] | None = None, data: Path = DATA,
           force: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Generate every dataset of ``scale`` that is missing or stale; returns the manifest."""
    s = SCALES[scale]
    p = paths(scale, data)
    p.root.mkdir(parents=True, exist_ok=True)
    manifest_path = p.root / "manifest.json"
    manifest: dict[str, Any] = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    params = {"version": GENERATOR_VERSION, "seed": seed, "scale": asdict(s)}
    for name, (write, check) in datasets(p, s, seed).items():
        if only and name not in only:
            continue
        entry = manifest.get(name)
        if not force and entry and entry.get("params") == params and check(entry["info"]):
            log(f"{name}: up to date")
            continue
        t0 = time.perf_counter()
        info = write()
        manifest[name] = {"params": params, "info": info, "seconds": round(time.perf_counter() - t0, 1)}
        manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True))
        log(f"{name}: written in {manifest[name]['seconds']} s: {info}")
    return manifest


def keys_option(known: tuple[str, ...], what: str) -> Callable[[str], list[str]]:
    """An ``--only`` option's type: one or more of ``known``, comma-separated; an unknown one is an error.

    Args:
        known: the names the option takes.
        what: what a name names (``"dataset"``, ``"scenario"``), for the error.
    """

    def keys(text: str) -> list[str]:
        found = [k.strip() for k in text.split(",") if k.strip()]
        unknown = [k for k in found if k not in known]
        if unknown or not found:
            raise argparse.ArgumentTypeError(f"no {what} {', '.join(unknown) or repr(text)} "
                                             f"(known: {', '.join(known)})")
        return found

    return keys


#: The datasets, in the order they are written.
DATASETS = ("murmur-big", "murmur-small", "litany", "litany-10x", "claude-home", "codex-home", "claude-many")


def iter_scales() -> Iterator[str]:
    """The scale names."""
    return iter(SCALES)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", choices=list(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=20260422)
    parser.add_argument("--only", action="extend", type=keys_option(DATASETS, "dataset"), metavar="NAME[,NAME...]",
                        help=f"datasets (repeatable, or comma-separated): {', '.join(DATASETS)}")
    parser.add_argument("--force", action="store_true", help="regenerate even when up to date")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    ensure(args.scale, args.seed, args.only, args.data, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
