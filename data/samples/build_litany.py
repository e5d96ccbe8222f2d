"""Build data/samples/litany/: a workspaces root of two litany workspaces, deterministically.

Shapes follow formats.md §2 (mudbungie/litany, mudbungie/brazen). Every repository is a bare
git repository written by one ``git fast-import`` stream with fixed identities and times, so
the object ids are the same on every run; no hook, no work tree.

    litany/
      auth-refactor/                      workspace 1
        repo.git/                         agents/<planner>, agents/<planner>-7b01 (forked child),
                                          agents/<migrator> (counter 995 -> 1013)
        steps/<agent-id>/NNN/             meta.json, request.json, response.json (+ driver.log)
      docs-site/                          workspace 2: a legacy agent (bare-array entries,
        repo.git/ steps/                  pre-provenance meta.json, older usage events)

What the sample holds on purpose:

* the planner (``claude-fable-5``, a model id with hyphens, provider ``anthropic``) with a
  step whose first attempt failed after reporting usage (a retried attempt);
* a child agent forked from the planner's 12th commit (its id extends the parent's with
  ``-``), on ``gpt-5-mini`` through ``openai``, whose curation deleted a model entry and so
  left an orphan ``tool_result`` (``call_c3``) that the next steps' ``meta.json`` recorded;
* the migrator on ``gemini-2.5-pro`` through ``google`` whose counter runs 995 -> 1013 (so
  ``999-`` sorts before ``1000-``), a ``notes.txt`` that is no entry, and one malformed
  entry blob (a diagnostics row);
* commits that change only the worktree (``src/``, ``summary/``), as tool calls do.

    python data/samples/make_samples.py litany
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

T0 = 1_776_848_400  # 2026-04-22T09:00:00Z
IDENT = "litany <litany@localhost>"


def git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, LC_ALL="C")
    return env


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


class RepoBuilder:
    """Write a bare repository through one ``git fast-import`` stream (deterministic ids)."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self.chunks: list[bytes] = []
        self.mark = 0
        self.tips: dict[str, int] = {}

    def _data(self, payload: bytes) -> None:
        self.chunks.append(b"data %d\n" % len(payload))
        self.chunks.append(payload + b"\n")

    def commit(self, branch: str, changes: Mapping[str, bytes | str | None], when: int,
               message: str = "commit", parent: int | None = None) -> int:
        """Commit ``changes`` (path -> content, ``None`` deletes) on ``branch``; return its mark.

        ``parent`` (a mark) starts the branch from that commit (a fork).
        """
        self.mark += 1
        ref = f"refs/heads/{branch}"
        self.chunks.append(f"commit {ref}\nmark :{self.mark}\ncommitter {IDENT} {when} +0000\n".encode())
        self._data(message.encode())
        if parent is not None:
            self.chunks.append(f"from :{parent}\n".encode())
        elif branch in self.tips:
            self.chunks.append(f"from :{self.tips[branch]}\n".encode())
        for path, content in changes.items():
            if content is None:
                self.chunks.append(f"D {path}\n".encode())
                continue
            blob = content.encode() if isinstance(content, str) else content
            self.chunks.append(f"M 100644 inline {path}\n".encode())
            self._data(blob)
        self.tips[branch] = self.mark
        return self.mark

    def finish(self) -> dict[int, str]:
        """Run fast-import; return every mark's commit id."""
        if self.git_dir.exists():
            shutil.rmtree(self.git_dir)
        env = git_env()
        subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", "--bare", str(self.git_dir)],
                       check=True, env=env)
        shutil.rmtree(self.git_dir / "hooks", ignore_errors=True)
        marks = self.git_dir / "marks.tmp"
        stream = b"".join(self.chunks) + b"done\n"
        subprocess.run(["git", "--git-dir", str(self.git_dir), "-c", "fastimport.unpackLimit=0", "fast-import",
                        "--quiet", "--done",
                        f"--export-marks={marks}"], input=stream, check=True, env=env)
        found = {}
        for line in marks.read_text().splitlines():
            mark, sha = line.split()
            found[int(mark[1:])] = sha
        marks.unlink()
        for name in ("description", "FETCH_HEAD", "logs"):
            target = self.git_dir / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        return found


@dataclass
class Step:
    """One step record to write once commit ids are known."""

    number: int
    read_mark: int
    started: int
    ended: int
    model: str
    provider: str | None
    attempts: list[list[dict[str, Any]]]
    dropped: list[str] | None = None
    legacy: bool = False


@dataclass
class Agent:
    """A scripted agent: writes litany commits on its branch and remembers its steps."""

    repo: RepoBuilder
    agent_id: str
    model: str
    provider: str | None
    counter: int = 1
    clock: int = T0
    steps: list[Step] = field(default_factory=list)
    head: int | None = None
    fork_from: int | None = None
    bare_entries: bool = False

    @property
    def branch(self) -> str:
        return f"agents/{self.agent_id}"

    def _commit(self, changes: Mapping[str, bytes | str | None], message: str) -> int:
        self.clock += 37
        parent, self.fork_from = self.fork_from, None
        self.head = self.repo.commit(self.branch, changes, self.clock, message, parent=parent)
        return self.head

    def entry(self, origin: str, body: bytes | str, message: str) -> str:
        ext = "md" if origin.startswith("@") else "json"
        name = f"messages/{self.counter:03d}-{origin.lstrip('@')}.{ext}"
        self.counter += 1
        self._commit({name: body}, message)
        return name

    def dispatch(self, role: str, name: str, goal: str) -> None:
        self._commit({"goal.md": goal + "\n", "soul.md": f"You are the {role}.\n", "name": name + "\n"},
                     f"dispatch: {role} [{self.agent_id}]")

    def deliver(self, sender: str, text: str) -> None:
        self.entry("@" + sender, text, f"deliver: {sender}")

    def work(self, path: str, content: str) -> None:
        self._commit({path: content}, f"worktree: {path}")

    def step(self, blocks: list[dict[str, Any]], usage: dict[str, int], *, retry: dict[str, int] | None = None,
             dropped: list[str] | None = None, legacy: bool = False) -> None:
        assert self.head is not None
        read, started = self.head, self.clock + 5
        attempts = []
        if retry is not None:
            attempts.append([
                {"type": "message_start", "v": 1, "id": None, "model": self.model, "role": "assistant"},
                {"type": "usage", **retry},
                {"type": "error", "kind": {"provider": {"status": 529}}, "message": "overloaded",
                 "provider_detail": None},
                {"type": "end"},
            ])
        events: list[dict[str, Any]] = [
            {"type": "message_start", "v": 1, "id": f"msg_{len(self.steps) + 1:04d}", "model": self.model,
             "role": "assistant"},
        ]
        for i, block in enumerate(blocks):
            kind = block["type"]
            events.append({"type": "content_start", "index": i, "kind": {kind: {}}})
            events.append({"type": "content_stop", "index": i})
        half = {k: (None if k == "output_tokens" else v) for k, v in usage.items()}
        events += [{"type": "usage", **half}, {"type": "usage", **usage},
                   {"type": "finish", "reason": "tool_use" if any(b["type"] == "tool_use" for b in blocks)
                    else "stop"}, {"type": "end"}]
        attempts.append(events)
        body: Any = blocks if self.bare_entries else {"content": blocks, "usage": usage}
        self.entry(self.model, compact(body), f"step {len(self.steps) + 1:03d}: {self.model}")
        self.steps.append(Step(len(self.steps) + 1, read, started, self.clock, self.model, self.provider,
                               attempts, dropped, legacy))

    def tool(self, call_id: str, text: str, *, is_error: bool = False, side: tuple[str, str] | None = None) -> None:
        result = [{"type": "tool_result", "tool_use_id": call_id, "content": [{"type": "text", "text": text}],
                   "is_error": is_error}]
        name = f"messages/{self.counter:03d}-tool.json"
        self.counter += 1
        changes: dict[str, bytes | str | None] = {name: compact(result)}
        if side:
            changes[side[0]] = side[1]
        self._commit(changes, f"tool: {call_id}")


def iso(ts: int) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_steps(root: Path, agent: Agent, shas: dict[int, str]) -> None:
    folder = root / "steps" / agent.agent_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "driver.log").write_text("driver: started\n")
    for st in agent.steps:
        d = folder / f"{st.number:03d}"
        d.mkdir()
        meta: dict[str, Any] = {"commit": shas[st.read_mark]}
        if not st.legacy:
            meta["config_commit"] = "0" * 39 + "c"
            meta["workflow_commit"] = "0" * 39 + "c"
            meta["provider"] = st.provider
            meta["dropped_orphans"] = st.dropped or []
        meta["started_at"] = iso(st.started)
        meta["ended_at"] = iso(st.ended)
        (d / "meta.json").write_text(pretty(meta))
        (d / "request.json").write_text(pretty({"model": st.model, "max_tokens": 8192, "messages": []}))
        lines = [json.dumps(e, separators=(",", ":")) for attempt in st.attempts for e in attempt]
        (d / "response.json").write_text("\n".join(lines) + "\n")
        (d / "stderr.log").write_text("")


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(cid: str, name: str, **inp: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


def usage_a(prompt: int, out: int, read: int, write: int) -> dict[str, int]:
    # Anthropic: input_tokens excludes the cache slices; brazen adds input_total_tokens.
    return {"input_tokens": prompt, "output_tokens": out, "cache_read_tokens": read, "cache_write_tokens": write,
            "input_total_tokens": prompt + read + write, "context_window": 200000}


def build_auth(ws: Path) -> None:
    repo = RepoBuilder(ws / "repo.git")
    planner = Agent(repo, "20260422T090000Z-3f2a9c1e", "claude-fable-5", "anthropic")
    planner.dispatch("planner", "auth planner", "Replace the session cookie auth with signed tokens.")
    planner.deliver("operator", "Plan the token migration. Keep the old cookie path working until cutover.")
    planner.step([text("I'll look at the current auth module first."), call("call_a1", "read", path="src/auth.py")],
                 usage_a(812, 64, 0, 1400))
    planner.tool("call_a1", "Exit code: 0\ndef login(req):\n    return set_cookie(req.user)\n")
    planner.step([call("call_a2", "shell", cmd="grep -rn set_cookie src")], usage_a(96, 41, 2212, 0),
                 retry={"input_tokens": 96, "output_tokens": None, "cache_read_tokens": 2212,
                        "cache_write_tokens": 0, "input_total_tokens": 2308})
    planner.tool("call_a2", "Exit code: 0\nsrc/auth.py:2\nsrc/views.py:14\nsrc/views.py:40\n")
    planner.work("summary/001.md", "Cookie auth is set in two modules.\n")
    planner.step([text("Two call sites. Writing the plan."),
                  call("call_a3", "write", path="PLAN.md", body="1. add token signer\n2. dual-read\n3. cutover\n")],
                 usage_a(120, 188, 2400, 0))
    planner.tool("call_a3", "Exit code: 0\n", side=("PLAN.md", "1. add token signer\n2. dual-read\n3. cutover\n"))
    planner.deliver("operator", "Good. Spawn a worker for the signer.")
    planner.step([text("Spawning a worker for step 1."), call("call_a4", "spawn", role="worker")],
                 usage_a(64, 57, 2700, 180))
    planner.tool("call_a4", "Exit code: 0\nspawned 20260422T090000Z-3f2a9c1e-7b01\n")
    fork_point, fork_counter = planner.head, planner.counter
    for i in range(5, 11):
        planner.step([call(f"call_a{i}", "shell", cmd=f"pytest -q tests/test_auth_{i}.py")],
                     usage_a(70 + i, 30 + i, 2900 + 90 * i, 0))
        planner.tool(f"call_a{i}", f"Exit code: {0 if i % 4 else 1}\n{i} passed\n" + ("" if i % 4 else
                     "--- stderr ---\n1 failed\n"), is_error=not i % 4)
        planner.work(f"src/auth_{i}.py", f"# revision {i}\n")
    planner.step([text("The migration plan is in PLAN.md; the worker owns the signer.")], usage_a(58, 120, 3900, 0))

    child = Agent(repo, "20260422T090000Z-3f2a9c1e-7b01", "gpt-5-mini", "openai", counter=fork_counter,
                  clock=planner.clock + 600, fork_from=fork_point)
    child.dispatch("worker", "token signer", "Add an HMAC token signer with rotation.")
    child.deliver("20260422T090000Z-3f2a9c1e", "Implement src/signer.py with sign() and verify().")
    openai = {"input_tokens": 3100, "output_tokens": 240, "cache_read_tokens": 2048, "thinking_tokens": 128}
    child.step([text("Starting with the signer."), call("call_c1", "write", path="src/signer.py")], openai)
    child.tool("call_c1", "Exit code: 0\n", side=("src/signer.py", "def sign(b): ...\n"))
    child.step([call("call_c2", "shell", cmd="pytest -q tests/test_signer.py")],
               {"input_tokens": 3400, "output_tokens": 90, "cache_read_tokens": 3072, "thinking_tokens": 64})
    child.tool("call_c2", "Exit code: 1\n0 passed\n--- stderr ---\nImportError: hmac\n", is_error=True)
    child.step([call("call_c3", "edit", path="src/signer.py")],
               {"input_tokens": 3600, "output_tokens": 150, "cache_read_tokens": 3328, "thinking_tokens": 96})
    model_entry = f"messages/{child.counter - 1:03d}-gpt-5-mini.json"
    child.tool("call_c3", "Exit code: 0\n", side=("src/signer.py", "import hmac\ndef sign(b): ...\n"))
    child._commit({model_entry: None}, "curate: drop a superseded model entry")  # leaves call_c3's result orphan
    child.deliver("20260422T090000Z-3f2a9c1e", "Status?")
    for i in range(4, 9):
        child.step([call(f"call_c{i}", "shell", cmd=f"pytest -q -k case{i}")],
                   {"input_tokens": 3700 + 100 * i, "output_tokens": 60 + i, "cache_read_tokens": 3584,
                    "thinking_tokens": 32}, dropped=["call_c3"])
        child.tool(f"call_c{i}", f"Exit code: 0\n{i} passed\n")
        child.work(f"summary/{i:03d}.md", f"case {i} green\n")
    child.step([text("Signer done; all cases pass.")],
               {"input_tokens": 4800, "output_tokens": 40, "cache_read_tokens": 4608}, dropped=["call_c3"])

    migrator = Agent(repo, "20260421T150000Z-c0ffee00", "gemini-2.5-pro", "google", counter=995, clock=T0 - 64800)
    migrator.dispatch("migrator", "schema migrator", "Write the sessions -> tokens table migration.")
    migrator._commit({"messages/notes.txt": "scratch notes; not an entry\n"}, "worktree: notes")
    migrator.deliver("operator", "Migrate the sessions table. The history before 995 was compacted.")
    for i in range(1, 7):
        migrator.step([text(f"Migration part {i}."), call(f"call_m{i}", "sql", q=f"ALTER TABLE part{i}")],
                      {"input_tokens": 5000 + 400 * i, "output_tokens": 210 + i, "cache_read_tokens": 4096,
                       "thinking_tokens": 512})
        if i == 3:
            name = f"messages/{migrator.counter:03d}-tool.json"
            migrator.counter += 1
            migrator._commit({name: b'[{"type":"tool_result","tool_use_id":"call_m3","content":[{"type":'},
                             "tool: call_m3 (truncated write)")
        else:
            migrator.tool(f"call_m{i}", f"Exit code: 0\nALTER TABLE part{i}\n")
        migrator.work("migrations/0042_tokens.sql", f"-- part {i}\n")
    shas = repo.finish()
    for agent in (planner, child, migrator):
        write_steps(ws, agent, shas)


def build_docs(ws: Path) -> None:
    repo = RepoBuilder(ws / "repo.git")
    legacy = Agent(repo, "20260420T080000Z-0d0c5173", "claude-haiku-4", None, clock=T0 - 172800, bare_entries=True)
    legacy.dispatch("writer", "docs writer", "Fix the broken links in docs/.")
    legacy.deliver("operator", "docs/index.md links to pages that moved.")
    for i in range(1, 5):
        legacy.step([call(f"call_d{i}", "shell", cmd=f"linkcheck docs/page{i}.md")],
                    {"input_tokens": 400 + i, "output_tokens": 30, "cache_read_tokens": 1200, "cache_write_tokens": 0},
                    legacy=True)
        legacy.tool(f"call_d{i}", f"Exit code: 0\npage{i}: ok\n", side=(f"docs/page{i}.md", f"# Page {i}\n"))
    legacy.step([text("All links fixed.")], {"input_tokens": 420, "output_tokens": 12, "cache_read_tokens": 1300},
                legacy=True)
    shas = repo.finish()
    write_steps(ws, legacy, shas)


def build(root: Path) -> None:
    out = root / "litany"
    if out.exists():
        shutil.rmtree(out)
    build_auth(out / "auth-refactor")
    build_docs(out / "docs-site")
