"""murmur trace events as values: inferences with normalized usage, compactions, tasks, retention.

A murmur session's ``trace.jsonl`` (murmur docs, ``reference/observability-schemas.md``) holds
one JSON event per line, each with ``event_type``, ``session_id`` and ``timestamp`` (Unix ms).
This module names what the index (:mod:`.trace`) keeps of them, and reads the counters of an
``inference`` event: provider counters win, the runtime's cl100k estimates are kept beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ...core.handoff import ToolMeta
from ...core.model import Usage
from ...core.providers import Resolved, resolve, route_api
from ...core.values import datetime_of_ms, json_str, read_counter

__all__ = ["Compaction", "Inference", "Retention", "Task", "api_of", "usage_of"]


def api_of(event: Mapping[str, object], model: str | None) -> Resolved:
    """The API an ``inference`` was served through (:func:`murmur_analysis.core.providers.resolve`).

    An event's own ``provider`` decides when the runtime wrote one; else the driver route a
    ``provider/model`` string names (``openrouter/anthropic/claude-sonnet-4`` is spoken over
    OpenRouter's OpenAI API, whatever model it serves); else a guess from the model name.
    """
    api = json_str(event.get("provider"))
    return resolve(route_api(model) if api is None else api, model)


def usage_of(event: Mapping[str, object], resolved: Resolved) -> Usage:
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


def _time(at_ms: int | None) -> datetime | None:
    """The UTC time of an event's ``at_ms``: the index keeps only times a timestamp holds.

    The trace's reader reports a ``timestamp`` no timestamp holds and keeps no time for it
    (:class:`~.trace.TraceIndex`), so nothing is dropped here unreported.
    """
    at = datetime_of_ms(at_ms)
    return at if isinstance(at, datetime) else None


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
        return _time(self.at_ms)


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
        return _time(self.at_ms)


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
