"""dispatch eval traces (``evals/<parcel-digest>/<ms>-<case>.dispatch-trace.json``).

Tool outcomes exist only in eval traces (``dispatch-core/src/trace.rs``). Each trace is a
conversation of its own (``eval:<digest[:12]>/<file stem>``): the operation's input (user), the
resolved prompt (system), each ``tool_call_started`` (an assistant ``ToolUse``), each
``tool_call_finished`` (a tool ``ToolResult``, an error when ``exit_code != 0``), and courier
messages. Traces give calls no ids, so call ``n`` is ``call_<n>``; a result answers the oldest
open call of the same tool (else the oldest open call; with none open it is an orphan
``result_<n>``). The exit code reaches ``tool_calls.exit_code``.

A channel reply is the assistant's reply (courier's ``normalize_assistant_reply``): its text is
the envelope's content. Streamed ``text_delta`` events make one assistant message, unless the
trace holds the whole reply.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from ...core.handoff import Summary, ToolMeta
from ...core.model import Block, Entry, Text, ToolResult, ToolUse, Unknown
from ...core.values import datetime_of_ms, held, json_count, json_int, json_str
from ..base import Diagnostics
from .documents import document, printable_row

__all__ = ["Trace", "decode_trace", "read_trace", "read_trace_document"]


@dataclass(frozen=True, slots=True)
class Trace:
    """An eval trace, decoded.

    Attributes:
        entries: its entries, in order.
        tool_meta: each call's input size, exit code and status, by call id.
        summary: its case name as the title, and its ``dispatch_sessions`` row.
    """

    entries: list[Entry]
    tool_meta: dict[str, ToolMeta]
    summary: Summary


def _is_reply(event: Any) -> bool:
    """Whether a trace event is the assistant's whole reply (a message, or a reply tagged for a channel)."""
    if not isinstance(event, Mapping):
        return False
    if event.get("kind") == "channel_reply":
        envelope = event.get("message")
        return isinstance(envelope, Mapping) and isinstance(envelope.get("content"), str)
    return event.get("kind") == "message" and event.get("role") == "assistant"


def decode_trace(data: Mapping[str, Any], path: str, diagnostics: Diagnostics) -> Trace:
    """An eval trace artifact's entries, tool outcomes and summary (its ``dispatch_sessions`` row).

    A start or finish time no timestamp holds is a ``bad_time`` row, and is null.
    """
    steps = data.get("steps")
    steps = steps if isinstance(steps, list) else []
    events = [s.get("event") for s in steps if isinstance(s, Mapping) and s.get("kind") == "event"]
    decoder = _Decoder(has_reply=any(_is_reply(e) for e in events))
    for step in steps:
        decoder.step(step)
    decoder.flush_deltas()
    return Trace(decoder.entries, decoder.meta, _summary(data, decoder.session_id, path, diagnostics))


@dataclass(slots=True)
class _Decoder:
    """One trace's decoding so far: its entries, its calls (and which are open), the streamed text."""

    has_reply: bool  #: whether the trace holds the whole reply (streamed text is then not kept)
    entries: list[Entry] = field(default_factory=list)
    meta: dict[str, ToolMeta] = field(default_factory=dict)
    open_calls: list[tuple[str, str]] = field(default_factory=list)  # (call id, tool name), oldest first
    session_id: str | None = None
    calls: int = 0
    results: int = 0
    deltas: list[str] = field(default_factory=list)

    def add(self, side: str, *blocks: Block) -> None:
        """Append an entry of these blocks on this side."""
        self.entries.append(Entry(len(self.entries), side, tuple(blocks)))

    def flush_deltas(self) -> None:
        """Make the streamed text so far one assistant message."""
        if self.deltas:
            self.add("assistant", Text("".join(self.deltas)))
            self.deltas.clear()

    def step(self, step: Any) -> None:
        """Decide what a step is: the operation's input, the session's id, an event, or unknown."""
        if not isinstance(step, Mapping):
            self.add("event", Unknown(step))
            return
        kind = step.get("kind")
        if kind == "operation":
            text = json_str(step.get("input"))
            self.add("user", Text(text) if text is not None else Unknown(dict(step)))
        elif kind == "session_open":
            self.session_id = json_str(step.get("session_id")) or self.session_id
        else:
            event = step.get("event") if kind == "event" else None
            if isinstance(event, Mapping):
                self.event(event)
            else:
                self.add("event", Unknown(dict(step)))

    def event(self, event: Mapping[str, Any]) -> None:
        """Decide what an event is: streamed text, a call, a result, a message, the prompt, or lifecycle."""
        ekind = event.get("kind")
        if ekind == "text_delta":
            if not self.has_reply and isinstance(event.get("content"), str):
                self.deltas.append(event["content"])
            return
        self.flush_deltas()
        if ekind == "tool_call_started":
            self.call_started(event)
        elif ekind == "tool_call_finished":
            self.call_finished(event)
        elif ekind == "message":
            role, text = json_str(event.get("role")), json_str(event.get("content"))
            self.add(role or "unknown", Text(text) if text is not None else Unknown(dict(event)))
        elif ekind == "channel_reply":
            self.add("assistant", _channel_reply(event))
        elif ekind == "prompt_resolved" and isinstance(event.get("text"), str):
            self.add("system", Text(event["text"]))
        elif ekind not in ("done", "local_tools_listed", "backend_fallback"):  # lifecycle, not conversation content
            self.add("event", Unknown(dict(event)))

    def call_started(self, event: Mapping[str, Any]) -> None:
        """A started call: an assistant ``ToolUse`` under the next call id, open until a result answers it."""
        inv = event.get("invocation")
        name = json_str(inv.get("name")) if isinstance(inv, Mapping) else None
        if name is None or not isinstance(inv, Mapping):
            self.add("event", Unknown(dict(event)))
            return
        self.calls += 1
        call_id = f"call_{self.calls}"
        raw = json_str(inv.get("input"))
        extra = {k: v for k, v in event.items() if k not in ("kind", "invocation")}
        if raw is not None:
            extra["input"] = raw
        self.open_calls.append((call_id, name))
        self.meta[call_id] = ToolMeta(input_bytes=len(raw.encode()) if raw is not None else None)
        self.add("assistant", ToolUse(call_id, name, _arguments(raw), None, extra))

    def call_finished(self, event: Mapping[str, Any]) -> None:
        """A finished call: a tool ``ToolResult`` (an error when ``exit_code != 0``) and the call's outcome."""
        res = event.get("result")
        if not isinstance(res, Mapping):
            self.add("event", Unknown(dict(event)))
            return
        self.results += 1
        tool, code = json_str(res.get("tool")), json_int(res.get("exit_code"))
        call_id = self.answered(tool)
        stdout, stderr = json_str(res.get("stdout")) or "", json_str(res.get("stderr")) or ""
        content: tuple[Block, ...] = (Text(stdout),) + ((Text(stderr),) if stderr else ())
        extra = {k: v for k, v in res.items() if k not in ("stdout",)}
        is_error = code != 0 if code is not None else None
        self.add("tool", ToolResult(call_id, content, is_error, extra))
        if call_id in self.meta:
            self.meta[call_id] = ToolMeta(input_bytes=self.meta[call_id].input_bytes, exit_code=code,
                                          status=None if is_error is None else ("error" if is_error else "ok"))

    def answered(self, tool: str | None) -> str:
        """The id of the call a result of ``tool`` answers, closed now.

        That is the oldest open call of that tool, else the oldest open call; with none open, the
        result is an orphan with an id of its own (``result_<n>``).
        """
        match = next((i for i, (_, n) in enumerate(self.open_calls) if n == tool), 0 if self.open_calls else None)
        return self.open_calls.pop(match)[0] if match is not None else f"result_{self.results}"


def _arguments(raw: str | None) -> Any:
    """A call's input as JSON, or as the text it is when it is not JSON."""
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


def _channel_reply(event: Mapping[str, Any]) -> Block:
    """A reply tagged for a channel, as the assistant's reply (courier's ``normalize_assistant_reply``).

    Its text is the envelope's content; the rest of the envelope is kept beside it.
    """
    envelope = event.get("message")
    text = json_str(envelope.get("content")) if isinstance(envelope, Mapping) else None
    if text is None:
        return Unknown(dict(event))
    rest = {k: v for k, v in envelope.items() if k != "content"} if isinstance(envelope, Mapping) else {}
    return Text(text, {"channel_reply": rest})


def _summary(data: Mapping[str, Any], session_id: str | None, path: str, diagnostics: Diagnostics) -> Summary:
    """A trace's case name as the title, and its ``dispatch_sessions`` row."""
    failures = [f for f in data.get("failures", []) if isinstance(f, str)] if isinstance(
        data.get("failures"), list) else []
    errors = [e for e in [json_str(data.get("error")), *failures] if e]
    passed = data.get("passed")
    row = {
        "kind": "eval_trace",
        "session_id": session_id,
        "parcel_digest": json_str(data.get("parcel_digest")) or None,
        "entrypoint": json_str(data.get("entrypoint")),
        "label": json_str(data.get("case_name")),
        "courier": json_str(data.get("courier")),
        "status": ("passed" if passed else "failed") if isinstance(passed, bool) else None,
        "started_at": held(datetime_of_ms(json_count(data.get("started_at_ms"))), diagnostics, path, "started_at_ms"),
        "stopped_at": held(datetime_of_ms(json_count(data.get("finished_at_ms"))), diagnostics, path,
                           "finished_at_ms"),
        "error": "; ".join(errors) or None,
        "path": path,
    }
    return Summary(title=json_str(data.get("case_name")), rows={"dispatch_sessions": (printable_row(row),)})


def read_trace_document(path: Path, diagnostics: Diagnostics) -> dict[str, Any] | None:
    """A trace file's document, or ``None`` once reported (unreadable, not JSON, no steps list)."""
    return document(path, "steps", diagnostics, "not_a_trace", "a dispatch trace artifact")


def read_trace(path: Path, diagnostics: Diagnostics) -> Generator[Entry, None, Summary]:
    """An eval trace file's entries, read when first asked for; returns its summary (tool outcomes included).

    A file that holds no trace gives no entries and a diagnostics row, and no row of any table.
    """
    data = read_trace_document(path, diagnostics)
    if data is None:
        return Summary(readable=False)
    trace = decode_trace(data, str(path), diagnostics)
    yield from trace.entries
    return replace(trace.summary, tool_meta=trace.tool_meta)
