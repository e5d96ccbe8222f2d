"""What a source is, and what it hands to the cores.

A source only *decodes*: it finds conversations under a path, reads their files and turns them
into :class:`Conversation` objects holding ordered :class:`~murmur_analysis.model.Entry`
values plus whatever side facts the runtime recorded (trace usage, tool timings, steps). It
never sorts, pages, pairs or counts: the cursor and assembly cores and the frame builder do
that, once, for every source.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from ..diagnostics import Diagnostic
from ..model import Entry, Usage

__all__ = [
    "Conversation",
    "Diagnostics",
    "GrowthRow",
    "OrphanRow",
    "Source",
    "StepRow",
    "ToolMeta",
    "UsageRow",
]


class Diagnostics:
    """Where a source reports what it could not read. Sources never print or warn."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.rows: list[Diagnostic] = []

    def report(self, path: str | os.PathLike[str], kind: str, detail: str, line: int | None = None) -> None:
        """Record one diagnostic row."""
        self.rows.append(Diagnostic(self.source, os.fspath(path), line, kind, detail))

    def extend(self, rows: list[Diagnostic]) -> None:
        """Record rows another reader produced."""
        self.rows.extend(rows)


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One model response's usage, from wherever the runtime recorded it."""

    usage: Usage
    message_id: str | None = None
    seq: int | None = None
    model: str | None = None
    provider: str | None = None
    created_at: datetime | None = None
    attempt: int | None = None
    sealed: bool | None = None
    found_in: str = "entry"


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """What a runtime recorded about one tool call beyond the transcript, keyed by call id."""

    duration_ms: float | None = None
    input_bytes: int | None = None
    output_bytes: int | None = None
    status: str | None = None
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class GrowthRow:
    """The conversation's size at one point: a commit, a message or a compaction."""

    position: int
    event: str
    messages: int | None = None
    chars: int | None = None
    context_tokens: int | None = None
    orphans: int | None = None
    at: datetime | None = None
    commit: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None


@dataclass(frozen=True, slots=True)
class OrphanRow:
    """An orphan tool result, found by assembly or recorded by the runtime."""

    tool_use_id: str
    found_by: str
    step: int | None = None
    commit: str | None = None


@dataclass(frozen=True, slots=True)
class StepRow:
    """One litany step record (``steps/<agent>/NNN/``)."""

    agent_id: str
    step: int
    commit: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    model: str | None = None
    provider: str | None = None
    dropped_orphans: tuple[str, ...] | None = None
    attempts: int | None = None
    finish_reason: str | None = None
    error: str | None = None


@dataclass
class Conversation:
    """One conversation as a source decoded it.

    Attributes:
        source: the source's name.
        conversation_id: unique within the source.
        entries: the entries. A list is sorted by ``position`` (stably) before use; any other
            iterable is streamed once by the frame builder and must already be in position
            order (a long murmur record is read this way, in bounded memory).
        key: what :meth:`Source.reopen` needs to decode this conversation again.
        title: a title or display name, when the runtime keeps one.
        path: where it was read from.
        usage: usage rows the runtime recorded outside the entries. ``None`` means "take the
            usage on the entries"; a list replaces it (so nothing is counted twice).
        tool_meta: timings and outcomes per tool call id.
        growth: growth rows; ``None`` means one row per entry, derived by the frame builder.
            A list holding only ``compaction`` rows adds them to the derived rows.
        steps: step records (litany).
        recorded_orphans: orphans the runtime itself recorded.
        assembly_orphans: orphans found by replaying states the entries alone do not show
            (litany commits); ``None`` means "assemble the entries".
        truncated_dropped: messages retention removed before the oldest entry, if known.
        extra: anything else a source wants to keep (shown nowhere by default).
    """

    source: str
    conversation_id: str
    entries: Iterable[Entry]
    key: Hashable = None
    title: str | None = None
    path: str | None = None
    usage: list[UsageRow] | None = None
    tool_meta: Mapping[str, ToolMeta] = field(default_factory=dict)
    growth: list[GrowthRow] | None = None
    steps: list[StepRow] = field(default_factory=list)
    recorded_orphans: list[OrphanRow] = field(default_factory=list)
    assembly_orphans: list[OrphanRow] | None = None
    truncated_dropped: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Source(ABC):
    """A conversation source: finds and decodes one runtime's files.

    Subclasses set :attr:`name` and :attr:`description` and implement
    :meth:`guess_can_open`, :meth:`open` and :meth:`reopen`. Register a third-party source
    under the ``murmur_analysis.sources`` entry-point group (the entry point names the class).
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        """Create the source; ``options`` are source-specific (``load(options={name: {...}})``).

        Raises:
            TypeError: an option this source does not take.
        """
        if options:
            raise TypeError(f"source {self.name!r} takes no option {sorted(options)}")

    @abstractmethod
    def guess_can_open(self, path: Path) -> bool:
        """Whether ``path`` looks like this source's data (cheap: names and a peek at most)."""

    @abstractmethod
    def open(self, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
        """Every conversation under ``path``, decoded.

        Unreadable input is reported to ``diagnostics`` and skipped; nothing is raised for it.
        """

    @abstractmethod
    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode again the conversation :attr:`Conversation.key` names."""

    def extra_tables(self) -> Mapping[str, Any]:
        """Tables of this source's own (``pa.Table`` by name) gathered by the last :meth:`open`."""
        return {}
