"""Build the murmur sample: a murmur home with records and the session traces they join to.

A tiny deterministic simulation of murmur's agent loop writes both sides at once, so the record
lines (``conversations/<record>/<context-id>/conversation.jsonl``) and the trace events
(``trace.jsonl``: ``session_start``, ``task_start``, ``inference``, ``tool_call``,
``compaction``, ``retention``, ``task_end``, ``session_end``) agree the way the runtime's do:
every id is a UUIDv7 minted from one fixed clock, every random part comes from a fixed seed.

Layout written under ``root/murmur``::

    conversations/support-bot/ctx-billing/conversation.jsonl   header; thinking, tool calls, a tool
                                                                error, an unknown block kind, a
                                                                hook message with source_id, a
                                                                compaction (Anthropic model)
    conversations/support-bot/ctx-refund/conversation.jsonl    a malformed line, a blank line;
                                                                message_ids on the trace (OpenAI)
    conversations/research-bot/ctx_0198…/conversation.jsonl    header with a truncation marker
    conversations/research-bot/ctx-scratch/conversation.jsonl  no session: usage stays null
    sessions/ses_…/trace.jsonl, out/compaction-summaries.jsonl  support-bot, ctx-billing
    sessions/ses_…/trace.jsonl                                  support-bot, ctx-refund
    formations/frm_…/researcher/.murmur/ses_…/trace.jsonl       research-bot (a formation member)
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def dumps(value: Any) -> str:
    """serde_json's compact encoding with sorted keys, as murmur writes record lines."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


class Clock:
    """Milliseconds and UUIDv7 ids from one deterministic source."""

    def __init__(self, start: int, seed: int) -> None:
        self.now = start
        self.rng = random.Random(seed)

    def tick(self, ms: int) -> int:
        self.now += ms
        return self.now

    def uuid7(self, at: int | None = None) -> str:
        ms = self.now if at is None else at
        rand_a = self.rng.getrandbits(12)
        variant = 0x8 | self.rng.getrandbits(2)
        rand_b = self.rng.getrandbits(60)
        return f"{ms:012x}7{rand_a:03x}{variant:x}{rand_b:015x}"


class Session:
    """One murmur session: a trace, and the records its tasks append to."""

    def __init__(self, clock: Clock, capsule: str, model: str, *, message_ids: bool) -> None:
        self.clock = clock
        self.capsule = capsule
        self.model = model
        self.message_ids = message_ids
        self.id = "ses_" + clock.uuid7()
        self.events: list[dict[str, Any]] = []
        self.summaries: list[dict[str, Any]] = []
        self.turn = 0
        self.task: str | None = None
        self.record: list[str] | None = None
        self.sent: list[str] = []  # ids in the live context, for message_ids
        self.totals = {"turns": 0, "in": 0, "out": 0, "tools": 0}
        self.event("session_start", capsule_name=capsule, capsule_version="0.4.2", model=model, max_turns=40,
                   context_id=None, tools_declared=["read_file", "search", "shell"])

    def event(self, kind: str, **fields: Any) -> None:
        at = self.clock.tick(3)
        self.events.append({"event_type": kind, "event_id": "evt_" + self.clock.uuid7(), "parent_id": None,
                            "session_id": self.id, "timestamp": at, **fields})

    def start_task(self, context_id: str, record: list[str], n: int) -> None:
        self.task = f"task-{self.capsule}-{n:02d}"
        self.record = record
        self.sent = []
        self.event("task_start", task_id=self.task, context_id=context_id, source="a2a", origin=None,
                   message_parts_bytes=120)

    def message(self, role: str, content: list[Any], **extra: Any) -> str:
        assert self.record is not None
        msg_id = "msg_" + self.clock.uuid7(self.clock.tick(2))
        self.record.append(dumps({"content": content, "id": msg_id, "role": role, **extra}))
        self.sent.append(msg_id)
        return msg_id

    def user(self, text: str, **extra: Any) -> str:
        return self.message("user", [{"text": text, "type": "text"}], **extra)

    def assistant(self, content: list[Any], usage: dict[str, int], est: tuple[int, int]) -> str:
        tool = next((b["name"] for b in content if b.get("type") == "tool_call"), None)
        fields: dict[str, Any] = {
            "turn": self.turn, "task_id": self.task, "input_tokens": est[0], "output_tokens": est[1],
            "decision": "tool_call" if tool else "end_turn", "stop_reason": "tool_use" if tool else "end_turn",
            "tool_name": tool, **usage,
        }
        if self.message_ids:
            fields["message_ids"] = list(self.sent)
        self.event("inference", **fields)
        self.turn += 1
        self.totals["turns"] += 1
        self.totals["in"] += est[0]
        self.totals["out"] += est[1]
        return self.message("assistant", content)

    def tool(self, call_id: str, name: str, text: str, *, is_error: bool, ms: int, input_bytes: int) -> str:
        self.clock.tick(ms)
        self.event("tool_call", turn=self.turn - 1, task_id=self.task, tool_name=name, tool_call_id=call_id,
                   input_bytes=input_bytes, output_bytes=len(text.encode()), duration_ms=ms,
                   status="error" if is_error else "ok")
        self.totals["tools"] += 1
        return self.message("tool", [{"text": text, "type": "text"}], is_error=is_error, tool_call_id=call_id)

    def compaction(self, before: int, after: int, summary: str) -> None:
        self.event("compaction", turn=self.turn, task_id=self.task, tokens_before=before, tokens_after=after)
        self.summaries.append({"turn": self.turn, "tokens_before": before, "tokens_after": after, "summary": summary})

    def end_task(self) -> None:
        self.event("task_end", task_id=self.task, exit_status="ok", duration_ms=4200, turns=self.turn,
                   input_tokens=self.totals["in"], output_tokens=self.totals["out"], tool_calls=self.totals["tools"],
                   shell_calls=0, reopen_count=0)

    def end(self) -> None:
        self.event("session_end", total_turns=self.totals["turns"], total_input_tokens=self.totals["in"],
                   total_output_tokens=self.totals["out"], total_tool_calls=self.totals["tools"], total_shell_calls=0,
                   duration_ms=9000, exit_status="ok")

    def write(self, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "trace.jsonl").write_text("".join(dumps(e) + "\n" for e in self.events), encoding="utf-8")
        if self.summaries:
            (workdir / "out").mkdir(exist_ok=True)
            text = "".join(orjson.dumps(s).decode() + "\n" for s in self.summaries)
            (workdir / "out" / "compaction-summaries.jsonl").write_text(text, encoding="utf-8")


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "input": args, "name": name, "type": "tool_call"}


def text(value: str) -> dict[str, Any]:
    return {"text": value, "type": "text"}


def anthropic(uncached: int, cached: int, written: int, out: int) -> dict[str, int]:
    return {"input_tokens_actual": uncached, "output_tokens_actual": out, "cached_tokens": cached,
            "cache_write_tokens": written}


def header(capsule: str, created: int, truncated: dict[str, Any] | None = None) -> str:
    value: dict[str, Any] = {"capsule": capsule, "created_ms": created, "type": "murmur.record"}
    if truncated:
        value["truncated"] = truncated
    return dumps(value)


def billing(clock: Clock, record: list[str]) -> Session:
    s = Session(clock, "support-bot", "claude-sonnet-4-5", message_ids=False)
    s.start_task("ctx-billing", record, 1)
    s.user("My invoice for March shows two charges for the Pro plan. Can you check?")
    s.assistant([{"signature": "EuYBCkQYAiJA", "text": "Look up the account's invoices first.", "type": "thinking"},
                 text("Let me look at the March invoices."),
                 call("toolu_01", "search", {"query": "invoices account:4417 month:2026-03"})],
                anthropic(412, 0, 2980, 96), (3350, 88))
    s.tool("toolu_01", "search", "INV-2291 Pro plan $49.00 2026-03-01\nINV-2304 Pro plan $49.00 2026-03-02",
           is_error=False, ms=840, input_bytes=52)
    s.assistant([text("Two invoices are listed. Checking the payment log."),
                 call("toolu_02", "read_file", {"path": "payments/2026-03.log"})],
                anthropic(188, 2980, 0, 61), (3510, 58))
    s.tool("toolu_02", "read_file", "error: payments/2026-03.log: permission denied", is_error=True, ms=35,
           input_bytes=36)
    s.assistant([text("I could not open the payment log; trying the billing API instead."),
                 call("toolu_03", "shell", {"cmd": "billing-cli charges --account 4417 --month 2026-03"})],
                anthropic(240, 3168, 0, 74), (3620, 70))
    s.tool("toolu_03", "shell", "ch_88a1 $49.00 captured\nch_88b7 $49.00 refunded", is_error=False, ms=2310,
           input_bytes=61)
    s.compaction(3712, 334, "1. THE ISSUE: duplicate Pro charge in March (INV-2291, INV-2304). "
                             "2. FOUND: ch_88b7 already refunded. 3. NEXT: tell the customer.")
    s.user("[compacted] Duplicate March charge found; the second charge (ch_88b7) was already refunded.",
           source_id="hook:compactor/summary-1")
    s.assistant([text("The second charge was already refunded on March 2, so you were billed once."),
                 {"cited_text": "ch_88b7 $49.00 refunded", "source": "billing-cli", "type": "citation"}],
                anthropic(96, 0, 334, 52), (430, 49))
    s.user("Great, thanks. Can you email me the refund receipt?")
    s.assistant([call("toolu_04", "send_email", {"template": "refund_receipt", "charge": "ch_88b7"})],
                anthropic(61, 430, 0, 40), (520, 36))
    s.tool("toolu_04", "send_email", "error: tool send_email is not installed", is_error=True, ms=3, input_bytes=48)
    s.assistant([text("I can't send email from here, but the receipt is in Billing > History > ch_88b7.")],
                anthropic(70, 430, 48, 31), (600, 29))
    s.end_task()
    s.end()
    return s


def refund(clock: Clock, record: list[str]) -> Session:
    s = Session(clock, "support-bot", "gpt-4.1", message_ids=True)
    s.start_task("ctx-refund", record, 1)
    s.user("Please refund order 7781, it arrived broken.")
    s.assistant([call("call_r1", "search", {"query": "order 7781"})],
                {"input_tokens_actual": 1900, "output_tokens_actual": 22, "cached_tokens": 1536}, (1850, 20))
    s.tool("call_r1", "search", "order 7781: delivered 2026-01-02, $120.00, status=delivered", is_error=False,
           ms=512, input_bytes=24)
    record.append("{this line was cut by a crash before it was rewritten")
    record.append("")
    s.assistant([text("I've opened refund RF-1029 for $120.00; it will post in 3-5 days.")],
                {"input_tokens_actual": 2010, "output_tokens_actual": 31, "cached_tokens": 1792}, (1990, 30))
    s.user("Thank you!")
    s.assistant([text("You're welcome.")], {"input_tokens_actual": 2060, "output_tokens_actual": 6}, (2041, 5))
    s.end_task()
    s.end()
    return s


def research(clock: Clock, record: list[str], context_id: str) -> Session:
    s = Session(clock, "research-bot", "claude-haiku-4-5", message_ids=False)
    s.event("retention", store="records", reason="max_messages", targets=[context_id], messages_dropped=40)
    s.start_task(context_id, record, 1)
    s.user("Continue the survey of columnar file formats: what does Parquet's page index add?")
    s.assistant([text("It stores per-page min/max statistics and offsets, so readers can skip pages.")],
                anthropic(900, 0, 0, 58), (880, 55))
    s.user("And ORC?")
    s.assistant([text("ORC keeps row-group indexes with statistics every 10,000 rows by default.")],
                {}, (960, 40))
    s.end_task()
    s.end()
    return s


def build(root: Path) -> None:
    """Write the murmur sample under ``root / "murmur"``."""
    home = root / "murmur"
    clock = Clock(T0, seed=20260101)
    conversations = home / "conversations"

    billing_record = [header("support-bot", T0)]
    billing_session = billing(clock, billing_record)
    refund_record: list[str] = []
    clock.tick(60_000)
    refund_session = refund(clock, refund_record)

    clock.tick(3_600_000)
    research_ctx = "ctx_" + clock.uuid7()
    dropped_first, dropped_last = clock.uuid7(clock.now - 900_000), clock.uuid7(clock.now - 600_000)
    survivors = [
        dumps({"content": [text("Survey columnar formats: Parquet, ORC, Arrow IPC.")],
               "id": "msg_" + clock.uuid7(clock.now - 500_000), "role": "user"}),
        dumps({"content": [text("Parquet: row groups, column chunks, pages; ORC: stripes; Arrow IPC: batches.")],
               "id": "msg_" + clock.uuid7(clock.now - 499_000), "role": "assistant"}),
    ]
    del dropped_first
    truncated = {"at_ms": clock.now, "dropped": 40, "last_dropped_id": "msg_" + dropped_last,
                 "oldest_surviving_id": orjson.loads(survivors[0])["id"]}
    research_record = [header("research-bot", T0 - 86_400_000, truncated), *survivors]
    research_session = research(clock, research_record, research_ctx)

    clock.tick(120_000)
    scratch = [
        dumps({"content": [text("Note to self: compare zstd levels 3 and 9 on the logs corpus.")],
               "id": "msg_" + clock.uuid7(clock.tick(1)), "role": "user"}),
        dumps({"content": [text("Level 9 is ~8% smaller and ~3x slower to write on that corpus.")],
               "id": "msg_" + clock.uuid7(clock.tick(900)), "role": "assistant"}),
    ]

    for record, ctx, lines in (
        ("support-bot", "ctx-billing", billing_record),
        ("support-bot", "ctx-refund", refund_record),
        ("research-bot", research_ctx, research_record),
        ("research-bot", "ctx-scratch", scratch),
    ):
        path = conversations / record / ctx / "conversation.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    billing_session.write(home / "sessions" / billing_session.id)
    refund_session.write(home / "sessions" / refund_session.id)
    formation = "frm_" + clock.uuid7()
    research_session.write(home / "formations" / formation / "researcher" / ".murmur" / research_session.id)


if __name__ == "__main__":
    import sys

    build(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
