"""The hand-off: what a source gives the frame builder, and nothing else.

A source decodes; the frame builder assembles tables. Between them travel only the values
declared here, below both sides and frozen once handed over (a loader that needs another value
makes a copy):

- :class:`Conversation`: one conversation as its source decoded it: who it is, where it was
  read, its entries (or the engine's column chunks) and the facts known before they are read.
- :class:`Summary`: what the source learns only by reading the conversation (usage joined from
  traces, growth events, a title, the pairing the engine already walked, rows of the source's
  own tables). Given up front as :attr:`Conversation.summary`, or *returned* by the entries'
  generator when its stream ends: a generator's ``return summary`` is the one channel by which
  a streaming source hands over what it learned, so nothing is written into a conversation
  after it is handed over.
- :class:`ResumePoint`: where a whole read of an append-only file stopped, for a source that
  can read on from there (:class:`~murmur_analysis.sources.resume.Resumable`).
- :class:`TableRows`: rows of a table that belong to no conversation (a session's own spend,
  a store's memory rows), yielded by a source beside its conversations.
- The row values of the sources' side facts (:class:`UsageRow`, :class:`GrowthRow`,
  :class:`OrphanRow`, :class:`StepRow`, :class:`ToolMeta`) and the columnar forms
  (:class:`EntryColumns`, :class:`ToolEvents`, :class:`Pairing`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import pyarrow as pa

from ..engine import _native
from .identity import Known, known_doc, known_file
from .model import Entry, Usage
from .providers import Family, ProviderSource
from .values import JSON, datetime_of_us

__all__ = [
    "PAIRED",
    "Conversation",
    "EntryColumns",
    "FoundBy",
    "FoundIn",
    "GrowthColumns",
    "GrowthEvent",
    "GrowthRow",
    "OrphanRow",
    "Pairing",
    "Reading",
    "ResumePoint",
    "StepRow",
    "Summary",
    "TableRows",
    "ToolEvents",
    "ToolKind",
    "ToolMeta",
    "UsageColumns",
    "UsageCounters",
    "UsageRow",
    "repeated",
]

#: Where a usage row's counters were read: a transcript entry, a trace event, a step's response.
FoundIn = Literal["entry", "trace", "response"]
#: What a growth row marks: a commit (litany), a message, or a compaction.
GrowthEvent = Literal["commit", "message", "compaction"]
#: Who found an orphan result: this toolkit's assembly, or the runtime's own record.
FoundBy = Literal["assembly", "record"]
#: A tool call's kind: a client tool, or a provider-executed (server) one.
ToolKind = Literal["client", "server"]


@dataclass(frozen=True, slots=True)
class UsageRow:
    """One model response's usage, from wherever the runtime recorded it.

    ``accounting`` is the API family whose counter rule was applied (``anthropic``,
    ``openai``, ``google``; :mod:`murmur_analysis.core.providers`) and ``provider_source`` what
    chose it (``runtime``, ``model_name``, or ``None`` when nothing told). ``session_id`` is
    the runtime session that made the call, where the runtime has sessions (murmur).
    """

    usage: Usage
    message_id: str | None = None
    seq: int | None = None
    model: str | None = None
    provider: str | None = None
    created_at: datetime | None = None
    attempt: int | None = None
    sealed: bool | None = None
    found_in: FoundIn = "entry"
    accounting: Family | None = None
    provider_source: ProviderSource | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class UsageCounters:
    """The counters of usage rows given as columns: each :class:`Usage` field read as a list (``None``: not reported).

    What a ``usage`` column declared by its row's counter (``usage.<field>``) reads from
    :class:`UsageColumns`.
    """

    usages: Sequence[Usage]

    def __getattr__(self, name: str) -> list[object]:
        if name.startswith("_") or name not in _USAGE_FIELDS:
            raise AttributeError(name)
        return list(map(attrgetter(name), self.usages))


_USAGE_FIELDS = frozenset(Usage.__dataclass_fields__)


@dataclass(frozen=True, slots=True)
class UsageColumns:
    """Usage rows as columns: :class:`UsageRow`'s fields, one Arrow array each, and each row's :class:`Usage`.

    What a source that counts responses as columns hands over (:attr:`Summary.usage`), so that
    no object is made per row beside the counters; the ``usage`` table reads it as it reads rows,
    by the same declarations (a field by its name, a counter as ``usage.<field>``).
    """

    usages: Sequence[Usage]
    message_id: pa.Array
    seq: pa.Array
    model: pa.Array
    provider: pa.Array
    created_at: pa.Array
    attempt: pa.Array
    sealed: pa.Array
    found_in: pa.Array
    accounting: pa.Array
    provider_source: pa.Array
    session_id: pa.Array

    def __len__(self) -> int:
        return len(self.usages)

    @classmethod
    def of(cls, usages: Sequence[Usage], *, message_id: pa.Array | None = None, seq: pa.Array | None = None,
           model: pa.Array | None = None, created_us: pa.Array | None = None, session_id: pa.Array | None = None,
           provider: str | pa.Array | None = None, found_in: FoundIn = "entry", accounting: Family | None = None,
           provider_source: ProviderSource | pa.Array | None = None) -> UsageColumns:
        """Rows of ``usages``, each array argument one value per row (``None``: null on every row).

        ``created_us`` is microseconds since the epoch (int64); a text given as a string is every row's.
        """
        n = len(usages)

        def text(value: str | pa.Array | None) -> pa.Array:
            if isinstance(value, pa.Array):
                return value
            return pa.nulls(n, pa.string()) if value is None else repeated(value, n)

        return cls(usages, message_id=pa.nulls(n, pa.string()) if message_id is None else message_id,
                   seq=pa.nulls(n, pa.int64()) if seq is None else seq,
                   model=pa.nulls(n, pa.string()) if model is None else model,
                   provider=text(provider),
                   created_at=(pa.nulls(n, pa.int64()) if created_us is None else created_us).cast(_UTC_US),
                   attempt=pa.nulls(n, pa.int32()), sealed=pa.nulls(n, pa.bool_()), found_in=text(found_in),
                   accounting=text(accounting), provider_source=text(provider_source),
                   session_id=pa.nulls(n, pa.string()) if session_id is None else session_id)

    @property
    def usage(self) -> UsageCounters:
        """The rows' counters, read by field."""
        return UsageCounters(self.usages)

    def slice(self, start: int, stop: int) -> UsageColumns:
        """Rows ``start:stop`` (the arrays viewed, not copied)."""
        arrays = {name: getattr(self, name).slice(start, stop - start) for name in _USAGE_ARRAYS}
        return UsageColumns(self.usages[start:stop], **arrays)

    @classmethod
    def joined(cls, pieces: Sequence[UsageColumns]) -> UsageColumns:
        """The rows of ``pieces``, one after the other."""
        if len(pieces) == 1:
            return pieces[0]
        usages = [u for piece in pieces for u in piece.usages]
        arrays = {name: pa.concat_arrays([getattr(p, name) for p in pieces]) for name in _USAGE_ARRAYS}
        return cls(usages, **arrays)

    def rows(self) -> list[UsageRow]:
        """The rows, one :class:`UsageRow` each (times in ``datetime.UTC``, as every source gives them)."""
        columns = [getattr(self, name).to_pylist() for name in _USAGE_ARRAYS]
        micros = self.created_at.cast(pa.int64()).to_pylist()
        columns[_USAGE_ARRAYS.index("created_at")] = [datetime_of_us(us) for us in micros]
        return [UsageRow(u, *values) for u, *values in zip(self.usages, *columns, strict=True)]


_UTC_US = pa.timestamp("us", tz="UTC")
#: :class:`UsageColumns`' arrays: :class:`UsageRow`'s fields after its ``usage``, in its order.
_USAGE_ARRAYS = tuple(name for name in UsageRow.__dataclass_fields__ if name != "usage")


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
    event: GrowthEvent
    messages: int | None = None
    chars: int | None = None
    context_tokens: int | None = None
    orphans: int | None = None
    at: datetime | None = None
    commit: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class GrowthColumns:
    """Growth rows as columns, one Arrow array per ``growth`` column (by name).

    The rows of a chunk of messages, or a source's own timeline (a litany branch's commits). A
    column left ``None`` is null on every row; ``source`` and ``conversation_id`` are given by the
    frame builder.
    """

    rows: int
    position: pa.Array
    at: pa.Array
    event: pa.Array
    messages: pa.Array
    chars: pa.Array
    context_tokens: pa.Array
    commit: pa.Array | None = None
    orphans: pa.Array | None = None
    tokens_before: pa.Array | None = None
    tokens_after: pa.Array | None = None
    summary: pa.Array | None = None


@dataclass(frozen=True, slots=True)
class OrphanRow:
    """An orphan tool result, found by assembly or recorded by the runtime."""

    tool_use_id: str
    found_by: FoundBy
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
class ToolEvents:
    """The tool events of a chunk of entries, one list element per event, in entry and block order.

    A call event carries ``name``, ``input_bytes`` (and ``inputs`` when kept); a result event
    carries ``is_error`` (the block's flag, else its entry's) and ``chars`` (its text characters).

    Attributes:
        row: the index, within the chunk, of the entry holding the event.
        call: ``True`` for a call (``tool_use``), ``False`` for a result.
        kind: ``"client"`` or ``"server"`` (provider-executed).
        call_id: the call's id, or the id a result answers.
        name: the called tool (calls).
        is_error: the result's error flag (results).
        chars: text characters of the result (results).
        input_bytes: the call's input as compact JSON, in bytes (calls with an input).
        inputs: the calls' inputs, when the pairing keeps them (``None`` otherwise).
        texts: each call's input as JSON text (``murmur_analysis.core.serde.serde_text``) and each result's
            text (``blocks.message_text`` of its content), when kept (``None`` otherwise): a list, or
            a string array (a scan's own column, which reaches the pairing rows with no Python
            object per text).
        result_texts: when given (a string array, one element per event), the results' texts,
            and ``texts`` then holds the calls' only (each null at the other side's events). A
            scan that writes each side's texts in order into a buffer of its own hands them so:
            the pairing rows then view the texts where they lie (one row per call, in call
            order), with no copy.
    """

    row: list[int] = field(default_factory=list)
    call: list[bool] = field(default_factory=list)
    kind: list[ToolKind] = field(default_factory=list)
    call_id: list[str] = field(default_factory=list)
    name: list[str | None] = field(default_factory=list)
    is_error: list[bool | None] = field(default_factory=list)
    chars: list[int | None] = field(default_factory=list)
    input_bytes: list[int | None] = field(default_factory=list)
    inputs: list[Any] | None = None
    texts: list[str | None] | pa.Array | None = None
    result_texts: pa.Array | None = None

    def __len__(self) -> int:
        return len(self.row)


@dataclass
class EntryColumns:
    """A chunk of entries as typed columns, in position order: what the frame builder reads.

    The murmur source's native scan builds these directly; the entries of every other source
    (and a reopened murmur record) are turned into the same columns by the frame builder, so
    the tables and the tool pairing have one path.

    Attributes:
        position: the entries' positions (int64).
        id: their ids (string).
        side: their sides (string).
        origin: who wrote each (string).
        model: the model that produced each, when known (string).
        created_at: creation times (timestamp[us, UTC]).
        n_blocks: blocks per entry (int32).
        text_chars: ``blocks.text_chars`` of each entry's blocks (int64).
        status: each entry's status (string).
        error: each entry's error (string).
        source_id: each entry's source id (string).
        block_kinds: each entry's block kinds (list<string>).
        text: ``blocks.message_text`` of each entry's blocks (string; null when text is left out).
        reasoning_text: ``blocks.reasoning_text`` of each entry's blocks (string).
        usage: each entry's usage, or ``None`` when no entry of the chunk has any.
        events: the chunk's tool events.
    """

    position: pa.Array
    id: pa.Array
    side: pa.Array
    origin: pa.Array
    model: pa.Array
    created_at: pa.Array
    n_blocks: pa.Array
    text_chars: pa.Array
    status: pa.Array
    error: pa.Array
    source_id: pa.Array
    block_kinds: pa.Array
    text: pa.Array
    reasoning_text: pa.Array
    usage: list[Usage | None] | None
    events: ToolEvents

    def __len__(self) -> int:
        return len(self.position)

    def usage_filled(self) -> list[Usage] | None:
        """Each entry's usage, a usage of no counters where an entry has none (``None``: no entry has any).

        Made once per chunk and kept on it, so the token columns each take their field of one
        list (in C), and it goes when the chunk goes.
        """
        if self.usage is None:
            return None
        found: list[Usage] | None = self.__dict__.get("_usage_filled")
        if found is None:
            found = self.__dict__["_usage_filled"] = [u or _NO_USAGE for u in self.usage]
        return found


#: The usage of an entry with none, where a column needs one for every entry.
_NO_USAGE = Usage()


def repeated(value: str, n: int) -> pa.Array:
    """A string column holding ``value`` ``n`` times, built from buffers (no Python list)."""
    data = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(data)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


#: The columns of a conversation's tool pairing (:attr:`Conversation.paired`).
PAIRED = pa.schema(
    [("call_id", pa.string()), ("tool_name", pa.string()), ("kind", pa.string()), ("called_seq", pa.int64()),
     ("result_seq", pa.int64()), ("status", pa.string()), ("is_error", pa.bool_()), ("result_chars", pa.int64()),
     ("input_bytes", pa.int64()), ("input_text", pa.string()), ("result_text", pa.string())]
)


@dataclass(frozen=True, slots=True)
class Pairing:
    """A conversation's tool pairing, as the assembly core's pairing walk left it.

    Attributes:
        rows: one row per call and per result with no call (:data:`PAIRED` columns).
        made: calls made (rows with a call).
        errors: calls whose result is an error.
        dropped: the client orphan results assembly drops, by id, in the order met.
    """

    rows: pa.RecordBatch
    made: int
    errors: int
    dropped: list[str]


@dataclass(frozen=True)
class ResumePoint:
    """Where a read of an append-only file stopped, and what the rows after it go on from.

    Attributes:
        messages: messages before the point (the next one's position).
        lines: lines before the point (line numbers go on from it).
        chars: text characters of the messages before it (growth's ``chars`` go on from it).
        walk: the state the pairing walk of the messages before it left (the calls still open,
            the ids called, the message-run state: ``algorithms.pairing.PairState``), which
            the walk of the messages after it goes on from; ``None``: the walk from the first
            message (the point before a file's first byte). A walk takes the state over, so a
            point serves one read.
        at: the file's identity where the point ends (``None``: not tied to a file yet).
        carry: what else the rows after the point depend on, as JSON values the source that
            made the point fills and reads (its own state, opaque to the exporter: Codex keeps
            the model in force, the last token totals, the last assistant message, ...);
            empty for a source whose rows after a point depend on nothing more.
        context: the tokens in context after the messages before it, where their usage on the
            entries tells (``algorithms.history.context_after``): growth's ``context_tokens``
            go on from it until a message after the point reports its own; ``None``: none told.
    """

    messages: int = 0
    lines: int = 0
    chars: int = 0
    walk: _native.PairState | None = field(default=None, compare=False)
    at: Known | None = None
    carry: Mapping[str, JSON] = field(default_factory=dict)
    context: int | None = None

    def to_doc(self) -> dict[str, JSON]:
        """The point as JSON values (an export's state keeps it): the counts, the walk's state, the file's identity.

        The walk's state is the base64 text of its versioned bytes (``pairing``); the source's
        ``carry``, when it has one, is kept as it is.
        """
        walk = self.walk if self.walk is not None else _native.PairState()
        doc: dict[str, JSON] = {"messages": self.messages, "lines": self.lines, "chars": self.chars,
                                "pairing": base64.b64encode(walk.to_bytes()).decode("ascii")}
        if self.carry:
            doc["carry"] = dict(self.carry)
        if self.context is not None:
            doc["context"] = self.context
        if self.at is not None:
            doc.update(known_doc(self.at))
        return doc

    @classmethod
    def from_doc(cls, doc: JSON) -> ResumePoint | None:
        """The point :meth:`to_doc` wrote; ``None`` when ``doc`` is none or not one this version reads.

        A point an earlier version wrote holds no walk state (it kept the last run's side and
        whether that run had loose results), and neither does one whose state's format is of
        another version: the file is then read whole once, which leaves a point of this one.
        A point with no ``carry`` (as one written before points had it) has an empty one: a
        source whose rows need its carry reads the file whole when it finds it empty.
        """
        if not isinstance(doc, dict):
            return None
        counts = [doc.get(k) for k in ("messages", "lines", "chars")]
        if any(not isinstance(c, int) or isinstance(c, bool) for c in counts):
            return None
        messages, lines, chars = (int(c) for c in counts if isinstance(c, int))
        text = doc.get("pairing")
        if not isinstance(text, str):
            return None
        try:
            walk = _native.PairState.from_bytes(base64.b64decode(text, validate=True))
        except (ValueError, binascii.Error):
            return None
        carry = doc.get("carry", {})
        context = doc.get("context")
        if not isinstance(carry, dict) or isinstance(context, bool) or not isinstance(context, int | None):
            return None
        return cls(messages, lines, chars, walk, known_file(doc) if "size" in doc else None, carry, context)


@dataclass(frozen=True)
class Conversation:
    """One conversation as a source decoded it.

    Attributes:
        source: the source's name.
        conversation_id: unique within the source.
        entries: the entries. A list is sorted by ``position`` (stably) before use; any other
            iterable is streamed once by the frame builder and must already be in position
            order (a long murmur record is read this way, in bounded memory).
        key: what :meth:`Source.reopen` needs to decode this conversation again.
        path: where it was read from.
        tool_meta: timings and outcomes per tool call id, when known before the entries are read.
        truncated_dropped: messages retention removed before the oldest entry, if known.
        columns: the entries as column chunks, in position order (see :class:`EntryColumns`);
            when set, the frame builder reads these instead of ``entries``.
        extra: anything else a source wants to keep (shown nowhere by default).
        resume: where a whole read of the conversation's append-only file stopped, set by a
            source that can read on from there (:class:`~murmur_analysis.sources.resume.Resumable`).
        versions: what the source's fingerprint names of the input besides its files (litany:
            the tip commit of each ref read).
        parent_conversation_id: the conversation that spawned or forked this one (a subagent's
            session, a fork's thread), when the runtime records it.
        parent_call_id: the parent's tool call that spawned it, when known.
        conversation_id_bytes: the id's exact bytes where it is not valid UTF-8 as found (set
            by the loader; the ``conversations`` table keeps them).
        path_bytes: the path's exact bytes where it is not valid UTF-8 (set by the loader).
        part: what names this conversation inside ``path`` when that file or folder holds
            several (a branch of a repository, a row of a database); ``None`` when ``path``
            holds this conversation alone. The loader loads a conversation once however many
            ways it is reached: ``(path's device and inode, part)`` is its identity.
        summary: what the source learned by reading it (usage, growth, title, the pairing the
            engine walked, rows of its own tables), when known before the entries are read; a
            generator in ``entries`` or ``columns`` may instead *return* its :class:`Summary`
            when its stream ends (see :class:`Reading`). Nothing is written into a conversation
            once it is made: it is frozen, and a loader that needs another makes a copy.
    """

    source: str
    conversation_id: str
    entries: Iterable[Entry]
    key: Hashable = None
    path: str | None = None
    tool_meta: Mapping[str, ToolMeta] = field(default_factory=dict)
    truncated_dropped: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    columns: Iterable[EntryColumns] | None = None
    part: str | None = None
    summary: Summary | None = None
    resume: ResumePoint | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    parent_conversation_id: str | None = None
    parent_call_id: str | None = None
    conversation_id_bytes: bytes | None = None
    path_bytes: bytes | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    """What a source learns about a conversation by reading it.

    Attributes:
        usage: usage rows the runtime recorded outside the entries, or the same as columns.
            ``None`` means "take the usage on the entries"; rows given replace it (so nothing is
            counted twice).
        growth: growth rows, or the same as columns; ``None`` means one row per entry, derived
            by the frame builder. Rows holding only ``compaction`` events add them to the
            derived rows.
        title: a title or display name, when the runtime keeps one.
        paired: the conversation's tool pairing when the assembly core's pairing walk already
            ran over its events (the native scan runs it while it reads a record).
        assembly_orphans: orphans found by replaying states the entries alone do not show
            (litany commits); ``None`` means "assemble the entries". Rows with no ``step`` are
            the last state's, which ``conversations.orphans`` counts.
        rows: rows of the source's own tables (declared in :mod:`murmur_analysis.tables.schema`)
            that belong to this conversation, by table name; each row maps column names to
            values (``source`` and ``conversation_id`` are filled in by the frame builder).
        tool_meta: timings and outcomes per tool call id, when learned by reading (else the
            conversation's own :attr:`Conversation.tool_meta`).
        readable: ``False`` when the conversation handed over unread turned out not to be
            readable at all (its diagnostics row says why): it adds no row to any table.
    """

    usage: tuple[UsageRow, ...] | UsageColumns | None = None
    growth: tuple[GrowthRow, ...] | GrowthColumns | None = None
    title: str | None = None
    paired: Pairing | None = None
    assembly_orphans: tuple[OrphanRow, ...] | None = None
    rows: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    tool_meta: Mapping[str, ToolMeta] | None = None
    readable: bool = True


@dataclass(frozen=True, slots=True)
class TableRows:
    """Rows of one table that belong to no conversation, yielded by a source beside its conversations.

    Attributes:
        table: the table (declared in :mod:`murmur_analysis.tables.schema`).
        rows: each row maps column names to values; ``source`` is filled in by the frame builder.
        path: the file or folder they were read from.
    """

    table: str
    rows: tuple[Mapping[str, Any], ...]
    path: str | None = None


_T = TypeVar("_T")


class Reading(Generic[_T]):
    """A conversation's stream read once, keeping the :class:`Summary` its generator returns.

    Iterate it to the end, then read :attr:`summary`: the summary the stream returned, else
    the one the conversation was handed over with.
    """

    def __init__(self, stream: Iterable[_T], summary: Summary | None) -> None:
        self._it = iter(stream)
        self.summary: Summary | None = summary

    def __iter__(self) -> Iterator[_T]:
        return self

    def __next__(self) -> _T:
        try:
            return next(self._it)
        except StopIteration as stop:
            if isinstance(stop.value, Summary):
                self.summary = stop.value
            raise StopIteration from None
