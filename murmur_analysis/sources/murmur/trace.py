"""The trace index: murmur session traces read once and indexed by the record's context id.

Conversation records carry no usage, so the traces are read once and what matters is kept by
context id (the values are :mod:`.trace_events`'):

* ``task_start.context_id`` joins a task (and so its session) to the record
  ``<record>/<context-id>``;
* ``inference`` events become :class:`~.trace_events.Inference` values with normalized usage;
* ``tool_call`` events become :class:`~murmur_analysis.core.handoff.ToolMeta` keyed by
  ``tool_call_id``;
* ``compaction`` events, with ``out/compaction-summaries.jsonl`` beside the trace, become
  :class:`~.trace_events.Compaction` values;
* ``retention`` events are kept for the source to report.

Where the traces are is :mod:`.sessions`' business.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from ...core.files import check_file
from ...core.handoff import ToolMeta
from ...core.values import datetime_of_ms, held, json_count, json_str
from ..base import Diagnostics
from ..jsonl import read_jsonl
from .trace_events import Compaction, Inference, Retention, Task, api_of, usage_of

__all__ = ["SUMMARIES", "SessionSpend", "TraceIndex"]

SUMMARIES = ("out", "compaction-summaries.jsonl")
_TASK_EVENTS = frozenset({"task_end", "inference", "tool_call", "compaction"})


class SessionSpend(NamedTuple):
    """A model call no task was in scope for: the session's spend, not any conversation's."""

    trace: str  #: the trace that recorded it
    inference: Inference  #: the call


class TraceIndex:
    """Tasks by context id, built from any number of traces.

    Args:
        diagnostics: where unreadable lines are reported.
        settle_seconds: how long a trace must be unchanged before a torn last line is reported.
    """

    def __init__(self, diagnostics: Diagnostics, settle_seconds: float = 5.0) -> None:
        self.diagnostics = diagnostics
        self.settle_seconds = settle_seconds
        self.tasks: dict[str, list[Task]] = {}
        self.retentions: list[Retention] = []
        self.session_usage: list[SessionSpend] = []
        self.claimed: dict[str, set[str]] = {}  # context id -> the records of it being loaded
        self.traces: list[str] = []
        self._inferences = 0
        self._seen: set[str] = set()

    def add_all(self, traces: Iterable[Path]) -> TraceIndex:
        """Read every trace (each file once) and return the index."""
        for trace in traces:
            key = os.path.realpath(trace)
            if key in self._seen:
                continue
            self._seen.add(key)
            self.add(trace)
        for tasks in self.tasks.values():
            tasks.sort(key=lambda t: (t.start_ms is None, t.start_ms or 0))
        return self

    def claim(self, records: Iterable[tuple[str, str]]) -> None:
        """Name every ``(record, context id)`` being loaded, before :meth:`for_record` is asked."""
        for record, context_id in records:
            self.claimed.setdefault(context_id, set()).add(record)

    def for_record(self, record: str, context_id: str) -> list[Task]:
        """The tasks of one record, oldest first.

        A task appends to exactly one record, ``<record store>/<context-id>``, and the store
        defaults to the session's capsule name; so tasks are joined on
        ``task_start.context_id == <context-id>`` and ``capsule_name == <record>``. A task whose
        capsule names no loaded record of that context id (a store set to another name, a
        capsule not known) goes to the one loaded record of its context id that no task names,
        and to none when there are several such records: a task is counted in one conversation
        at most.
        """
        tasks = self.tasks.get(context_id, [])
        own = [t for t in tasks if t.capsule == record]
        if own or not tasks:
            return own
        siblings = self.claimed.get(context_id, set()) | {record}
        fallbacks = [r for r in siblings if not any(t.capsule == r for t in tasks)]
        return [t for t in tasks if t.capsule not in siblings] if fallbacks == [record] else []

    def add(self, trace: Path) -> None:
        """Read one trace (and the compaction summaries beside it)."""
        path = str(trace)
        self.traces.append(path)
        session_model: str | None = None
        capsule: str | None = None
        session_ctx: str | None = None
        session_id: str | None = None
        by_id: dict[str, Task] = {}
        current: Task | None = None
        session_tasks: list[Task] = []
        compactions: list[tuple[Task, Compaction]] = []
        inferences: list[Inference] = []

        def task_for(event: Mapping[str, object], at_ms: int | None) -> Task | None:
            nonlocal current
            tid = json_str(event.get("task_id"))
            if tid is not None and tid in by_id:
                return by_id[tid]
            if tid is None:
                return current  # murmur writes task_id null when no task is in scope
            ctx = session_ctx
            if ctx is None:
                return None
            # An event before (or without) its task_start: a task on the session's context.
            task = Task(tid, ctx, session_id, capsule, session_model, path, at_ms)
            self._register(task, by_id, session_tasks)
            current = task
            return task

        for number, ev in read_jsonl(trace, self.diagnostics, self.settle_seconds):
            if not isinstance(ev, dict):
                self.diagnostics.report(trace, "not_an_event", f"line {number} is not a JSON object; skipped", number)
                continue
            kind = ev.get("event_type")
            ts = json_count(ev.get("timestamp"))
            if held(datetime_of_ms(ts), self.diagnostics, trace, "timestamp", number) is None:
                ts = None  # not written, or no timestamp holds it (reported): the index keeps no such time
            session_id = json_str(ev.get("session_id")) or session_id
            if kind == "session_start":
                session_model = json_str(ev.get("model")) or session_model
                capsule = json_str(ev.get("capsule_name")) or capsule
                session_ctx = json_str(ev.get("context_id")) or session_ctx
            elif kind == "task_start":
                ctx = json_str(ev.get("context_id")) or session_ctx
                if ctx is None:
                    self.diagnostics.report(trace, "unjoinable_event", f"line {number}: task_start has no context_id",
                                            number)
                    continue
                started = Task(json_str(ev.get("task_id")), ctx, session_id, capsule, session_model, path, ts)
                self._register(started, by_id, session_tasks)
                current = started
                continue
            task: Task | None = task_for(ev, ts) if kind in _TASK_EVENTS else None
            if kind == "task_end":
                if task is not None:
                    task.end_ms = ts
                if task is current:
                    current = None  # events after it with no task_id are in no task
            elif kind == "inference":
                hook = ev.get("origin") is not None
                model = json_str(ev.get("model")) or session_model
                api = api_of(ev, model)
                raw_ids = ev.get("message_ids")
                ids = (
                    tuple(i for i in raw_ids if isinstance(i, str))
                    if isinstance(raw_ids, list) and raw_ids
                    else None
                )
                inference = Inference(
                    self._inferences, json_count(ev.get("turn")), ts, usage_of(ev, api), model, api, hook,
                    ids or None, session_id,
                )
                self._inferences += 1
                inferences.append(inference)
                if task is None:
                    # No task in scope (task_id null outside the task loop, as the on-session-end
                    # hooks' calls are): the spend is the session's, not any conversation's.
                    self.session_usage.append(SessionSpend(path, inference))
                    continue
                task.inferences.append(inference)
            elif kind == "tool_call":
                call_id = json_str(ev.get("tool_call_id"))
                if task is None or call_id is None:
                    continue
                duration = ev.get("duration_ms")
                task.tool_meta[call_id] = ToolMeta(
                    duration_ms=float(duration) if isinstance(duration, int | float) and type(duration) is not bool
                    else None,
                    input_bytes=json_count(ev.get("input_bytes")),
                    output_bytes=json_count(ev.get("output_bytes")),
                    status=json_str(ev.get("status")),
                )
            elif kind == "compaction":
                comp = Compaction(json_count(ev.get("turn")), ts, json_count(ev.get("tokens_before")),
                                  json_count(ev.get("tokens_after")))
                if task is not None:
                    task.compactions.append(comp)
                    compactions.append((task, comp))
            elif kind == "retention":
                targets = ev.get("targets")
                self.retentions.append(
                    Retention(
                        path, number, ts, json_str(ev.get("store")), json_str(ev.get("reason")),
                        tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
                        json_count(ev.get("messages_dropped")),
                    )
                )
        self._summaries(trace, session_tasks, compactions, inferences)

    def _register(self, task: Task, by_id: dict[str, Task], session_tasks: list[Task]) -> None:
        if task.task_id is not None:
            by_id[task.task_id] = task
        session_tasks.append(task)
        self.tasks.setdefault(task.context_id, []).append(task)

    def _summaries(
        self,
        trace: Path,
        session_tasks: list[Task],
        compactions: list[tuple[Task, Compaction]],
        inferences: list[Inference],
    ) -> None:
        """Join ``out/compaction-summaries.jsonl`` to the session's compaction events.

        A summary line matches the first unmatched event with the same ``turn``,
        ``tokens_before`` and ``tokens_after``; it then lends that event its text. A line no
        event matches (a trace whose compaction write failed) becomes a compaction of its own,
        in the task that ran that turn, timed by that turn's ``inference``.
        """
        path = trace.parent.joinpath(*SUMMARIES)
        if not check_file(path, self.diagnostics):
            return
        open_events = list(compactions)
        contexts = {t.context_id for t in session_tasks}
        for number, value in read_jsonl(path, self.diagnostics, self.settle_seconds):
            if not isinstance(value, dict):
                self.diagnostics.report(path, "not_an_event", f"line {number} is not a JSON object; skipped", number)
                continue
            turn = json_count(value.get("turn"))
            before, after = json_count(value.get("tokens_before")), json_count(value.get("tokens_after"))
            summary = json_str(value.get("summary"))
            match = next(
                (i for i, (_, c) in enumerate(open_events)
                 if (c.turn, c.tokens_before, c.tokens_after) == (turn, before, after)),
                None,
            )
            if match is not None:
                open_events.pop(match)[1].summary = summary
                continue
            owner = self._task_of_turn(session_tasks, turn) if len(contexts) != 1 else session_tasks[-1]
            if owner is None:
                self.diagnostics.report(
                    path, "unjoinable_event",
                    f"line {number}: a compaction summary no trace event or task of this session matches", number,
                )
                continue
            at = next((i.at_ms for i in inferences if i.turn == turn and not i.hook), None)
            owner.compactions.append(Compaction(turn, at, before, after, summary))

    @staticmethod
    def _task_of_turn(tasks: list[Task], turn: int | None) -> Task | None:
        owners = [t for t in tasks if any(i.turn == turn for i in t.inferences)]
        return owners[0] if len(owners) == 1 else None
