"""murmur session traces: token usage, tool timings, compactions and retention, by context id.

A murmur session writes ``<session workdir>/trace.jsonl`` (murmur docs,
``reference/observability-schemas.md``): one JSON event per line, each with ``event_type``,
``session_id`` and ``timestamp`` (Unix ms). Conversation records carry no usage, so this module
reads the traces once and indexes what matters by the record's context id:

* ``task_start.context_id`` joins a task (and so its session) to the record
  ``<record>/<context-id>``;
* ``inference`` events become :class:`Inference` values with normalized :class:`Usage`
  (provider counters win, the runtime's cl100k estimates are kept beside them);
* ``tool_call`` events become :class:`ToolMeta` keyed by ``tool_call_id``;
* ``compaction`` events, with ``out/compaction-summaries.jsonl`` beside the trace, become
  :class:`Compaction` values;
* ``retention`` events are kept for the source to report.

Where sessions live is not under ``~/.murmur``: a session workdir is
``<manifest-dir>/workdir/<session-id>`` or, with ``mur run --workdir W``, ``W/.murmur/<session-id>``
(murmur docs, ``reference/workdir.md``). :func:`trace_files` resolves any of those shapes;
:func:`discover` finds the ones that sit under a murmur home.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from ...handoff import ToolMeta
from ...model import Usage, read_counter
from ...providers import Resolved, resolve
from ..base import Diagnostics
from ..files import check_file, entry_is_dir, is_dir, listing, read_file

__all__ = [
    "Compaction",
    "Inference",
    "Retention",
    "Task",
    "TraceIndex",
    "api_of",
    "discover",
    "read_jsonl",
    "trace_files",
    "usage_of",
]

TRACE_NAME = "trace.jsonl"
SUMMARIES = ("out", "compaction-summaries.jsonl")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TASK_EVENTS = frozenset({"task_end", "inference", "tool_call", "compaction"})


def _int(value: Any) -> int | None:
    """A non-negative JSON integer, or ``None`` (murmur omits what was not reported)."""
    return value if type(value) is int and value >= 0 else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _at(ms: int | None) -> datetime | None:
    return None if ms is None else _EPOCH + timedelta(milliseconds=ms)


# --------------------------------------------------------------------------------------------
# Providers and token normalization


def api_of(event: dict[str, Any], model: str | None) -> Resolved:
    """The API an ``inference`` was served through (:func:`murmur_analysis.providers.resolve`).

    An event's own ``provider`` decides when the runtime wrote one; else the driver route a
    ``provider/model`` string names (``openrouter/anthropic/claude-sonnet-4`` is spoken over
    OpenRouter's OpenAI API, whatever model it serves); else a guess from the model name.
    """
    api = _str(event.get("provider"))
    if api is None and model is not None and "/" in model:
        api = model.split("/", 1)[0]
    return resolve(api, model)


def usage_of(event: dict[str, Any], resolved: Resolved) -> Usage:
    """The normalized usage of one ``inference`` event.

    A murmur driver passes the provider's own counters through unchanged (murmur docs,
    ``reference/wit-interfaces.md``, "Reported token usage"): ``input_tokens_actual`` is the
    API's prompt counter (Anthropic's excludes the cache slices, OpenAI's holds the cached
    one), ``output_tokens_actual`` its output counter, which holds any reasoning (murmur
    reports no split). The runtime's estimates (``input_tokens``, ``output_tokens``) go to
    ``estimated_*``. Absent counters stay ``None``; a counter of the wrong type is a problem.
    """
    problems: list[str] = []

    def counter(name: str) -> int | None:
        return read_counter(event.get(name), name, problems)

    acct = resolved.accounting
    return Usage.normalize(
        input_tokens=counter("input_tokens_actual"),
        output_tokens=counter("output_tokens_actual"),
        cache_read_tokens=counter("cached_tokens"),
        cache_write_tokens=counter("cache_write_tokens"),
        cache_in_input=acct.cache_in_input,
        reasoning_in_output=False,
        cache_write_slice=acct.cache_write_slice,
        estimated_input_tokens=counter("input_tokens"),
        estimated_output_tokens=counter("output_tokens"),
        problems=problems,
    )


# --------------------------------------------------------------------------------------------
# What the index holds


@dataclass(slots=True)
class Inference:
    """One ``inference`` event: one model response.

    Attributes:
        index: the event's order in the index (trace order); the join key of the source.
        turn: the event's 0-based turn.
        at_ms: the event's timestamp (Unix ms).
        usage: the normalized counters.
        model: the model that answered (the session's, or the event's own for a hook call).
        api: the API it went through (:func:`api_of`).
        hook: whether a hook made the call (``origin`` present): it answers no record message.
        message_ids: the record ids the request embedded, in order, when the trace says.
        session_id: the session that made the call.
    """

    index: int
    turn: int | None
    at_ms: int | None
    usage: Usage
    model: str | None
    api: Resolved
    hook: bool
    message_ids: tuple[str, ...] | None
    session_id: str | None = None

    @property
    def provider(self) -> str | None:
        """The API family its counters were read by, when something told."""
        return self.api.family

    @property
    def at(self) -> datetime | None:
        """The event's time (UTC)."""
        return _at(self.at_ms)


@dataclass(slots=True)
class Compaction:
    """One committed compaction, from the trace event, the summaries file, or both."""

    turn: int | None
    at_ms: int | None
    tokens_before: int | None
    tokens_after: int | None
    summary: str | None = None

    @property
    def at(self) -> datetime | None:
        """The compaction's time (UTC), when known."""
        return _at(self.at_ms)


@dataclass(slots=True)
class Task:
    """One task of one session, and what its trace recorded."""

    task_id: str | None
    context_id: str
    session_id: str | None
    capsule: str | None
    model: str | None
    trace: str
    start_ms: int | None = None
    end_ms: int | None = None
    inferences: list[Inference] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    tool_meta: dict[str, ToolMeta] = field(default_factory=dict)


@dataclass(slots=True)
class Retention:
    """One ``retention`` event: a store pruned or truncated."""

    trace: str
    line: int
    at_ms: int | None
    store: str | None
    reason: str | None
    targets: tuple[str, ...]
    messages_dropped: int | None


# --------------------------------------------------------------------------------------------
# Reading JSONL that is still being written


def read_jsonl(path: Path, diagnostics: Diagnostics, settle_seconds: float) -> Iterator[tuple[int, Any]]:
    """Every parsed line of a JSONL file that a runtime may still be appending to.

    Blank lines are skipped. A line that is not JSON is reported (``bad_json``). An unterminated
    last line that is not JSON is a line still being written: it is skipped and reported
    (``partial_line``) only once the file has not changed for ``settle_seconds``.

    Yields:
        ``(1-based line number, parsed value)``.
    """
    found = read_file(path, diagnostics)
    if found is None:
        return
    data, mtime = found
    settled = time.time() - mtime >= settle_seconds
    lines = data.split(b"\n")
    last = len(lines)
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            if number == last:
                if settled:
                    diagnostics.report(
                        path, "partial_line", f"line {number} is unterminated and not JSON; skipped", number
                    )
            else:
                diagnostics.report(path, "bad_json", f"line {number} is not JSON; skipped", number)
            continue
        yield number, value


# --------------------------------------------------------------------------------------------
# Finding traces


def _children(path: Path, diagnostics: Diagnostics | None) -> list[Path]:
    if not is_dir(path):
        return []
    return [Path(e.path) for e in listing(path, diagnostics) if entry_is_dir(e)]


def trace_files(path: Path, diagnostics: Diagnostics | None = None) -> list[Path]:
    """The ``trace.jsonl`` files a sessions path names.

    ``path`` may be a ``trace.jsonl``; a session workdir (holding ``trace.jsonl``); a folder of
    session workdirs (``<manifest-dir>/workdir/`` or ``<workdir>/.murmur/``); or a folder
    holding one of those as ``workdir/`` or ``.murmur/`` (a manifest directory, or a
    ``--workdir``). Folders that cannot be listed and traces that are not regular files are
    reported to ``diagnostics``.
    """
    if not is_dir(path):
        return [path] if check_file(path, diagnostics) else []
    if os.path.lexists(path / TRACE_NAME):
        return [path / TRACE_NAME] if check_file(path / TRACE_NAME, diagnostics) else []
    found: list[Path] = []
    for root in (path, path / ".murmur", path / "workdir"):
        for child in _children(root, diagnostics):
            trace = child / TRACE_NAME
            if check_file(trace, diagnostics):
                found.append(trace)
    return found


def discover(home: Path, diagnostics: Diagnostics | None = None) -> list[Path]:
    """Traces that sit under a murmur home.

    * ``formations/<formation>/<member>/.murmur/<session>/trace.jsonl``: murmur launches each
      formation member with its working directory under the home, so their sessions live there;
    * ``sessions/<entry>``: each entry resolved as :func:`trace_files` does (this toolkit's
      place to drop or link session workdirs next to the records they belong to).
    """
    found: list[Path] = []
    for formation in _children(home / "formations", diagnostics):
        for member in _children(formation, diagnostics):
            found.extend(trace_files(member / ".murmur", diagnostics))
    sessions = home / "sessions"
    if is_dir(sessions):
        for entry in listing(sessions, diagnostics):
            found.extend(trace_files(Path(entry.path), diagnostics))
    return found


# --------------------------------------------------------------------------------------------
# The index


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
        self.session_usage: list[tuple[str, Inference]] = []
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

        def task_for(event: dict[str, Any]) -> Task | None:
            nonlocal current
            tid = _str(event.get("task_id"))
            if tid is not None and tid in by_id:
                return by_id[tid]
            if tid is None:
                return current  # murmur writes task_id null when no task is in scope
            ctx = session_ctx
            if ctx is None:
                return None
            # An event before (or without) its task_start: a task on the session's context.
            task = Task(tid, ctx, session_id, capsule, session_model, path, _int(event.get("timestamp")))
            self._register(task, by_id, session_tasks)
            current = task
            return task

        for number, ev in read_jsonl(trace, self.diagnostics, self.settle_seconds):
            if not isinstance(ev, dict):
                self.diagnostics.report(trace, "not_an_event", f"line {number} is not a JSON object; skipped", number)
                continue
            kind = ev.get("event_type")
            ts = _int(ev.get("timestamp"))
            session_id = _str(ev.get("session_id")) or session_id
            if kind == "session_start":
                session_model = _str(ev.get("model")) or session_model
                capsule = _str(ev.get("capsule_name")) or capsule
                session_ctx = _str(ev.get("context_id")) or session_ctx
            elif kind == "task_start":
                ctx = _str(ev.get("context_id")) or session_ctx
                if ctx is None:
                    self.diagnostics.report(trace, "unjoinable_event", f"line {number}: task_start has no context_id",
                                            number)
                    continue
                started = Task(_str(ev.get("task_id")), ctx, session_id, capsule, session_model, path, ts)
                self._register(started, by_id, session_tasks)
                current = started
                continue
            task: Task | None = task_for(ev) if kind in _TASK_EVENTS else None
            if kind == "task_end":
                if task is not None:
                    task.end_ms = ts
                if task is current:
                    current = None  # events after it with no task_id are in no task
            elif kind == "inference":
                hook = ev.get("origin") is not None
                model = _str(ev.get("model")) or session_model
                api = api_of(ev, model)
                raw_ids = ev.get("message_ids")
                ids = (
                    tuple(i for i in raw_ids if isinstance(i, str))
                    if isinstance(raw_ids, list) and raw_ids
                    else None
                )
                inference = Inference(
                    self._inferences, _int(ev.get("turn")), ts, usage_of(ev, api), model, api, hook,
                    ids or None, session_id,
                )
                self._inferences += 1
                inferences.append(inference)
                if task is None:
                    # No task in scope (task_id null outside the task loop, as the on-session-end
                    # hooks' calls are): the spend is the session's, not any conversation's.
                    self.session_usage.append((path, inference))
                    continue
                task.inferences.append(inference)
            elif kind == "tool_call":
                call_id = _str(ev.get("tool_call_id"))
                if task is None or call_id is None:
                    continue
                duration = ev.get("duration_ms")
                task.tool_meta[call_id] = ToolMeta(
                    duration_ms=float(duration) if isinstance(duration, int | float) and type(duration) is not bool
                    else None,
                    input_bytes=_int(ev.get("input_bytes")),
                    output_bytes=_int(ev.get("output_bytes")),
                    status=_str(ev.get("status")),
                )
            elif kind == "compaction":
                comp = Compaction(_int(ev.get("turn")), ts, _int(ev.get("tokens_before")), _int(ev.get("tokens_after")))
                if task is not None:
                    task.compactions.append(comp)
                    compactions.append((task, comp))
            elif kind == "retention":
                targets = ev.get("targets")
                self.retentions.append(
                    Retention(
                        path, number, ts, _str(ev.get("store")), _str(ev.get("reason")),
                        tuple(t for t in targets if isinstance(t, str)) if isinstance(targets, list) else (),
                        _int(ev.get("messages_dropped")),
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
            turn = _int(value.get("turn"))
            before, after = _int(value.get("tokens_before")), _int(value.get("tokens_after"))
            summary = _str(value.get("summary"))
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
