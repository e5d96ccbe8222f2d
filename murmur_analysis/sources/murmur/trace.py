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
from dataclasses import dataclass, field
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
        session = _Session(str(trace))
        self.traces.append(session.path)
        for number, ev in read_jsonl(trace, self.diagnostics, self.settle_seconds):
            if not isinstance(ev, dict):
                self.diagnostics.report(trace, "not_an_event", f"line {number} is not a JSON object; skipped", number)
                continue
            self._event(trace, number, ev, session)
        self._summaries(trace, session.tasks, session.compactions, session.inferences)

    def _event(self, trace: Path, number: int, ev: Mapping[str, object], session: _Session) -> None:
        """Decide what one event is: the session's start, a task's start, a task's event, or a retention."""
        kind = ev.get("event_type")
        ts = json_count(ev.get("timestamp"))
        if held(datetime_of_ms(ts), self.diagnostics, trace, "timestamp", number) is None:
            ts = None  # not written, or no timestamp holds it (reported): the index keeps no such time
        session.session_id = json_str(ev.get("session_id")) or session.session_id
        if kind == "session_start":
            session.model = json_str(ev.get("model")) or session.model
            session.capsule = json_str(ev.get("capsule_name")) or session.capsule
            session.context_id = json_str(ev.get("context_id")) or session.context_id
        elif kind == "task_start":
            ctx = json_str(ev.get("context_id")) or session.context_id
            if ctx is None:
                self.diagnostics.report(trace, "unjoinable_event", f"line {number}: task_start has no context_id",
                                        number)
                return
            self._register(session.task(json_str(ev.get("task_id")), ctx, ts), session)
        elif kind in _TASK_EVENTS:
            self._task_event(kind, ev, ts, session)
        elif kind == "retention":
            self.retentions.append(_retention(session.path, number, ts, ev))

    def _task_event(self, kind: object, ev: Mapping[str, object], ts: int | None, session: _Session) -> None:
        """An event of the task in scope: its end, a model call, a tool call's outcome, or a compaction."""
        task = self._task_for(ev, ts, session)
        if kind == "task_end":
            if task is not None:
                task.end_ms = ts
            if task is session.current:
                session.current = None  # events after it with no task_id are in no task
        elif kind == "inference":
            inference = _inference(ev, ts, self._inferences, session)
            self._inferences += 1
            session.inferences.append(inference)
            if task is None:
                # No task in scope (task_id null outside the task loop, as the on-session-end
                # hooks' calls are): the spend is the session's, not any conversation's.
                self.session_usage.append(SessionSpend(session.path, inference))
            else:
                task.inferences.append(inference)
        elif kind == "tool_call":
            call_id = json_str(ev.get("tool_call_id"))
            if task is not None and call_id is not None:
                task.tool_meta[call_id] = _tool_meta(ev)
        else:  # compaction
            comp = Compaction(json_count(ev.get("turn")), ts, json_count(ev.get("tokens_before")),
                              json_count(ev.get("tokens_after")))
            if task is not None:
                task.compactions.append(comp)
                session.compactions.append((task, comp))

    def _task_for(self, ev: Mapping[str, object], at_ms: int | None, session: _Session) -> Task | None:
        """The task an event is in: the one its ``task_id`` names, else the one in scope.

        An event before (or without) its ``task_start`` starts a task on the session's context;
        without a session context it is in no task.
        """
        tid = json_str(ev.get("task_id"))
        if tid is not None and tid in session.by_id:
            return session.by_id[tid]
        if tid is None:
            return session.current  # murmur writes task_id null when no task is in scope
        if session.context_id is None:
            return None
        task = session.task(tid, session.context_id, at_ms)
        self._register(task, session)
        return task

    def _register(self, task: Task, session: _Session) -> None:
        """Index a started task by its id, in its session and by its context id; it is now in scope."""
        if task.task_id is not None:
            session.by_id[task.task_id] = task
        session.tasks.append(task)
        self.tasks.setdefault(task.context_id, []).append(task)
        session.current = task

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


@dataclass(slots=True)
class _Session:
    """What one trace has told so far: its session, its tasks, and the task in scope."""

    path: str  #: the trace
    model: str | None = None
    capsule: str | None = None
    context_id: str | None = None
    session_id: str | None = None
    by_id: dict[str, Task] = field(default_factory=dict)
    current: Task | None = None  #: the task in scope
    tasks: list[Task] = field(default_factory=list)
    compactions: list[tuple[Task, Compaction]] = field(default_factory=list)
    inferences: list[Inference] = field(default_factory=list)

    def task(self, task_id: str | None, context_id: str, at_ms: int | None) -> Task:
        """A task of this session, started at ``at_ms``."""
        return Task(task_id, context_id, self.session_id, self.capsule, self.model, self.path, at_ms)


def _inference(ev: Mapping[str, object], ts: int | None, index: int, session: _Session) -> Inference:
    """An ``inference`` event as the ``index``-th model call read, with normalized usage."""
    hook = ev.get("origin") is not None
    model = json_str(ev.get("model")) or session.model
    api = api_of(ev, model)
    raw_ids = ev.get("message_ids")
    ids = tuple(i for i in raw_ids if isinstance(i, str)) if isinstance(raw_ids, list) and raw_ids else None
    return Inference(
        index, json_count(ev.get("turn")), ts, usage_of(ev, api), model, api, hook, ids or None, session.session_id,
    )


def _tool_meta(ev: Mapping[str, object]) -> ToolMeta:
    """A ``tool_call`` event's duration, sizes and status."""
    duration = ev.get("duration_ms")
    return ToolMeta(
        duration_ms=float(duration) if isinstance(duration, int | float) and type(duration) is not bool else None,
        input_bytes=json_count(ev.get("input_bytes")),
        output_bytes=json_count(ev.get("output_bytes")),
        status=json_str(ev.get("status")),
    )


def _retention(path: str, number: int, ts: int | None, ev: Mapping[str, object]) -> Retention:
    """A ``retention`` event, kept for the source to report."""
    targets = ev.get("targets")
    return Retention(
        path, number, ts, json_str(ev.get("store")), json_str(ev.get("reason")),
        tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
        json_count(ev.get("messages_dropped")),
    )
