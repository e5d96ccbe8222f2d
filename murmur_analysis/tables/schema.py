"""The declared tables: every column once, with its Arrow type, its meaning and how it is computed.

Each table is a tuple of :class:`Column`. A column names how the frame builder computes it
from the one typed value its table is built from (the way inspect_ai's column specs name
where a column comes from):

- ``messages``: a chunk of entries (:class:`~murmur_analysis.core.handoff.EntryColumns`); a
  column's value is a whole Arrow array for the chunk, so no Python runs per message.
- ``tool_calls``: the conversation's pairing and tool records (:class:`~murmur_analysis.tables.rows.CallColumns`),
  also whole arrays.
- ``usage``, ``orphans``, ``growth``, ``steps``: the hand-off's rows (:class:`~murmur_analysis.core.handoff.UsageRow`,
  :class:`~murmur_analysis.core.handoff.OrphanRow`, :class:`~murmur_analysis.core.handoff.GrowthRow`,
  :class:`~murmur_analysis.core.handoff.StepRow`); ``conversations``:
  :class:`~murmur_analysis.tables.rows.ConversationRow`;
  ``diagnostics``: :class:`~murmur_analysis.core.diagnostics.Diagnostic`. A column's value is one value per row.

A column with no ``value`` takes the attribute of its own name, except the key columns
(``source``, ``conversation_id``), which the frame builder gives per conversation. Adding a
column to a table is one entry here. :func:`schema` turns a table into a ``pa.Schema``;
``docs/tables.md`` is generated from the same declarations (a test fails when the two
disagree), so the documentation cannot drift from the data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Generic

import pyarrow as pa
from typing_extensions import TypeVar

from ..core.diagnostics import Diagnostic
from ..core.files import display, raw_name
from ..core.handoff import EntryColumns, GrowthRow, OrphanRow, StepRow, UsageRow
from .rows import CallColumns, ConversationRow

__all__ = ["SCHEMA_VERSION", "SOURCE_TABLES", "TABLES", "Column", "built_schema", "declared", "markdown", "schema"]

#: The version of the declared tables: raised whenever a column is added, removed, renamed or
#: changes type or meaning. Exports stamp it in every file.
SCHEMA_VERSION = 4

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.string()
_I64 = pa.int64()
_F64 = pa.float64()

_In = TypeVar("_In", default=Any)  # a table's input; ``Column`` alone: any input


@dataclass(frozen=True, slots=True)
class Column(Generic[_In]):
    """One declared column.

    Attributes:
        name: the column's name.
        type: its Arrow type.
        doc: what it means (``docs/tables.md``).
        filled_by: a module that fills the column after the frame builder (null until then).
        value: how it is computed from its table's input (see the module's docstring): an
            Arrow array, a sequence, a NumPy array or ``None`` (all null) for a chunk, one value
            for a row. ``None``: the input's attribute of the column's name.
        text: a text column, left null when a load leaves text out (``text=False``).
    """

    name: str
    type: pa.DataType
    doc: str
    filled_by: str | None = None
    value: Callable[[_In], object] | None = None
    text: bool = False


def _tokens(value: Callable[[str], Callable[[_In], object]]) -> tuple[Column[_In], ...]:
    """The token columns, each computed by ``value(name)`` (name: the ``Usage`` field)."""
    return tuple(Column(name, _I64, doc, value=value(name)) for name, doc in (
        ("input_tokens", "uncached input tokens (input_total minus the cache slices); null when "
                         "a slice the API has was not reported"),
        ("output_tokens", "generated tokens: reasoning excluded where reasoning_tokens is "
                          "reported, all of it included where no split is served"),
        ("cache_read_tokens", "input tokens read from the prompt cache"),
        ("cache_write_tokens", "input tokens written to the prompt cache (the 5-minute and 1-hour writes together)"),
        ("cache_write_5m_tokens", "the part of cache_write_tokens kept five minutes, where the API splits it "
                                  "(Anthropic); null where no split is reported"),
        ("cache_write_1h_tokens", "the part of cache_write_tokens kept one hour, where the API splits it "
                                  "(Anthropic); null where no split is reported"),
        ("reasoning_tokens", "reasoning tokens, where the provider reports the split"),
    ))


def _entry_usage(name: str) -> Callable[[EntryColumns], Sequence[int | None] | None]:
    """The ``Usage`` field ``name`` of each entry of a chunk (null where an entry has no usage)."""
    get = attrgetter(name)

    def value(chunk: EntryColumns) -> Sequence[int | None] | None:
        usage = chunk.usage_filled()
        return None if usage is None else list(map(get, usage))
    return value


def _row_usage(name: str) -> Callable[[UsageRow], int | None]:
    """The ``Usage`` field ``name`` of a usage row (read in C: a dotted ``attrgetter``)."""
    get: Callable[[UsageRow], int | None] = attrgetter(f"usage.{name}")
    return get


def _paired(name: str, typ: pa.DataType, doc: str, text: bool = False,
            pairing: str | None = None) -> Column[CallColumns]:
    """A ``tool_calls`` column that is the pairing walk's column ``pairing`` (default: its own name)."""
    field = pairing or name
    return Column(name, typ, doc, value=lambda calls: calls.pairing(field), text=text)


def _recorded(name: str, typ: pa.DataType, doc: str) -> Column[CallColumns]:
    """A ``tool_calls`` column that is what the runtime recorded about the call (``ToolMeta``)."""
    return Column(name, typ, doc, value=lambda calls: calls.recorded(name))


def _cost(name: str, doc: str) -> Column:
    return Column(name, _F64, doc, filled_by="pricing")


_KEY: tuple[Column, ...] = (
    Column("source", _STR, "the runtime: murmur, litany, flexigpt, dispatch, claude_code, codex, or a plugin's name"),
    Column("conversation_id", _STR, "the conversation, unique within its source"),
)

MESSAGES: tuple[Column[EntryColumns], ...] = (
    *_KEY,
    Column("seq", _I64, "the entry's order key: murmur line index, litany NNN, message index",
           value=lambda chunk: chunk.position),
    Column("message_id", _STR, "the entry's own id, when the runtime gives one", value=lambda chunk: chunk.id),
    Column("role", _STR, "user, assistant, tool or system (the side it composes onto)",
           value=lambda chunk: chunk.side),
    Column("origin", _STR, "who wrote it: litany sender or model id, tool, hook origin"),
    Column("model", _STR, "the model that produced it, when known"),
    Column("created_at", _TS, "when it was written; null where the runtime records no time"),
    Column("n_blocks", pa.int32(), "content blocks in the entry"),
    Column("text_chars", _I64, "characters of text, reasoning and tool-result text"),
    *_tokens(_entry_usage),
    Column("status", _STR, "the runtime's status of the message (FlexiGPT), when it has one; Claude Code: "
                           "abandoned on a rewind's abandoned branch"),
    Column("error", _STR, "the runtime's error for the message, when it has one"),
    Column("source_id", _STR, "a join key a hook supplied (murmur)"),
    Column("block_kinds", pa.list_(_STR), "the kind of each block, in order (unknown kinds by their tag)"),
    Column("text", _STR, "the text of its text blocks, joined with newlines, as written (nothing escaped); null "
                         "when it has no text block or the load left text out (text=False)", text=True),
    Column("reasoning_text", _STR, "the text of its thinking (reasoning) blocks, joined with newlines; null when "
                                   "it has none or the load left text out", text=True),
)

TOOL_CALLS: tuple[Column[CallColumns], ...] = (
    *_KEY,
    _paired("call_id", _STR, "the call's id (for a result with no call, the id it names)"),
    _paired("tool_name", _STR, "the tool called, when the call was seen"),
    _paired("kind", _STR, "client (tool_use/tool_result) or server (provider-executed)"),
    _paired("called_seq", _I64, "seq of the entry holding the call; null for an orphan result"),
    _paired("result_seq", _I64, "seq of the entry holding the result; null when unanswered"),
    Column("called_at", _TS, "created_at of the entry holding the call; null for an orphan result or where the "
                             "runtime records no time", value=lambda calls: calls.at("called_seq")),
    Column("result_at", _TS, "created_at of the entry holding the result; null when unanswered or where the "
                             "runtime records no time (result_at - called_at: the call's latency as written)",
           value=lambda calls: calls.at("result_seq")),
    _paired("status", _STR, "ok (the result says no error), error, unknown (answered, and the result says "
                            "neither: never taken for a success), unanswered (a client call no result "
                            "answered), orphan_result or duplicate_result; a provider-run call is ok unless "
                            "its result says error"),
    _paired("is_error", pa.bool_(), "the result's error flag, as written"),
    _recorded("duration_ms", _F64, "how long the call ran, where the runtime timed it"),
    Column("input_bytes", _I64, "size of the call's input as JSON text",
           value=lambda calls: calls.recorded_or_paired("input_bytes")),
    _recorded("output_bytes", _I64, "size of the result as the runtime measured it, where it did"),
    _paired("result_chars", _I64, "characters of text in the result"),
    _recorded("exit_code", _I64, "the tool process's exit code, where the runtime records one"),
    _paired("input", _STR, "the call's arguments as JSON text, as the runtime wrote them (serde_json's compact "
                           "text); null with no input or when the load left text out (text=False)",
            text=True, pairing="input_text"),
    _paired("result_text", _STR, "the text of the result's text blocks, joined with newlines; null when it has "
                                 "none, when unanswered, or when the load left text out", text=True),
)

USAGE: tuple[Column[UsageRow], ...] = (
    *_KEY,
    Column("message_id", _STR, "the message the response became, when known"),
    Column("seq", _I64, "seq of that message, when known"),
    Column("model", _STR, "the model that answered"),
    Column("provider", _STR, "the provider or API the runtime recorded, else the family guessed from the model"),
    Column("accounting", _STR, "the API family whose counter rule read the row: anthropic, openai or google"),
    Column("provider_source", _STR, "what chose that rule: runtime (the API the runtime recorded), model_name "
                                    "(a guess from the model name), null (nothing told: the openai rule)"),
    Column("session_id", _STR, "the runtime session that made the call (murmur), when known"),
    Column("created_at", _TS, "when the response was made, when known"),
    *_tokens(_row_usage),
    Column("input_total_tokens", _I64, "the whole prompt, cached slices included",
           value=_row_usage("input_total_tokens")),
    Column("context_window", _I64, "the model's context window, when reported", value=_row_usage("context_window")),
    Column("estimated_input_tokens", _I64, "the runtime's own estimate of the prompt",
           value=_row_usage("estimated_input_tokens")),
    Column("estimated_output_tokens", _I64, "the runtime's own estimate of the output",
           value=_row_usage("estimated_output_tokens")),
    Column("attempt", pa.int32(), "attempt number within a step (1-based), where retries are recorded"),
    Column("sealed", pa.bool_(), "whether this attempt's output was kept (false: spent on a retry)"),
    Column("found_in", _STR, "where the counters were read: entry, trace, response"),
    _cost("cost_usd", "what the response cost in USD (genai-prices or user prices); null when unpriced"),
    _cost("input_cost_usd", "the cost of input_tokens (the uncached prompt)"),
    _cost("cache_read_cost_usd", "the cost of cache_read_tokens; null when not reported"),
    _cost("cache_write_cost_usd", "the cost of cache_write_tokens; null when not reported (1-hour writes at "
                                  "their own rate, the rest at the 5-minute rate)"),
    _cost("output_cost_usd", "the cost of output_tokens and reasoning_tokens"),
)

ORPHANS: tuple[Column[OrphanRow], ...] = (
    *_KEY,
    Column("step", _I64, "the litany step that recorded it, when known"),
    Column("commit", _STR, "the commit whose tree holds the orphan, when known"),
    Column("tool_use_id", _STR, "the id the orphan result names"),
    Column("found_by", _STR, "assembly (this toolkit's replay) or record (the runtime's own record)"),
)

GROWTH: tuple[Column[GrowthRow], ...] = (
    *_KEY,
    Column("position", _I64, "the commit's index on its branch, or the entry's seq"),
    Column("at", _TS, "when that state existed, when known"),
    Column("event", _STR, "commit, message or compaction"),
    Column("commit", _STR, "the commit, for a git source"),
    Column("messages", _I64, "entries in the conversation at that point"),
    Column("chars", _I64, "characters of text in the conversation at that point"),
    Column("context_tokens", _I64, "provider tokens in context: the last reported whole prompt plus all it "
                                   "generated (reasoning included); null on compaction rows"),
    Column("orphans", _I64, "orphan results assembly would drop at that point"),
    Column("tokens_before", _I64, "for a compaction: the prompt before it as the runtime counted it (murmur: its "
                                  "cl100k estimate, not a provider count; Claude Code: compactMetadata.preTokens)"),
    Column("tokens_after", _I64, "for a compaction: the prompt after it as the runtime counted it (murmur: its "
                                 "cl100k estimate; Claude Code: compactMetadata.postTokens)"),
    Column("summary", _STR, "for a compaction: the summary text that replaced the history, as written (murmur: "
                            "out/compaction-summaries.jsonl; Claude Code: the isCompactSummary user line after the "
                            "boundary); null when none was written or the load left text out (text=False)", text=True),
)

STEPS: tuple[Column[StepRow], ...] = (
    *_KEY,
    Column("agent_id", _STR, "the litany agent (branch agents/<agent_id>)"),
    Column("step", _I64, "the step number (1-based)"),
    Column("commit", _STR, "the read-state commit the step assembled"),
    Column("started_at", _TS, "when the step started"),
    Column("ended_at", _TS, "when the step ended"),
    Column("model", _STR, "the model requested (request.json)"),
    Column("provider", _STR, "the provider, when recorded"),
    Column("dropped_orphans", pa.list_(_STR), "orphan ids the runtime dropped at this step",
           value=lambda step: None if step.dropped_orphans is None else list(step.dropped_orphans)),
    Column("attempts", pa.int32(), "attempt segments in response.json"),
    Column("finish_reason", _STR, "the sealing attempt's finish reason"),
    Column("error", _STR, "the last attempt's error message, if it failed"),
)

CONVERSATIONS: tuple[Column[ConversationRow], ...] = (
    *_KEY,
    Column("title", _STR, "the conversation's title or display name, when it has one"),
    Column("path", _STR, "where it was read from"),
    Column("first_at", _TS, "time of its first timed entry"),
    Column("last_at", _TS, "time of its last timed entry"),
    Column("messages", _I64, "entries"),
    Column("tool_calls", _I64, "tool calls made"),
    Column("tool_errors", _I64, "tool calls whose result is an error"),
    Column("orphans", _I64, "orphan results assembly drops from the conversation as it stands (last state)"),
    Column("tokens", _I64, "input_total plus output plus reasoning tokens over every usage row that reports them"),
    Column("unreported_responses", _I64, "responses whose spend no counter reports (usage rows with none, "
                                         "assistant messages with no usage), so not in tokens"),
    Column("truncated_dropped", _I64, "messages the runtime's retention dropped before this record"),
    Column("parent_conversation_id", _STR, "the conversation of the same source that spawned or forked this one "
                                           "(a subagent's session, a forked thread), when recorded"),
    Column("parent_call_id", _STR, "the parent's tool call that spawned it, when known"),
    _cost("cost_usd", "the sum of its responses' known costs; null when none is known"),
    Column("unpriced_responses", _I64, "usage rows with a null cost_usd (non-zero: cost_usd is a lower bound)",
           filled_by="pricing"),
    Column("conversation_id_bytes", pa.binary(),
           "the exact bytes of an id made of a name that is not UTF-8 (conversation_id then shows each "
           "such byte as \\xNN); null when the id is valid text"),
    Column("path_bytes", pa.binary(),
           "the exact bytes of a path that is not UTF-8 (path then shows each such byte as \\xNN); null "
           "when the path is valid text"),
)

DIAGNOSTICS: tuple[Column[Diagnostic], ...] = (
    Column("source", _STR, "the source that met it (load: finding what to read)"),
    Column("path", _STR, "the file, blob or object", value=lambda d: display(d.path)),
    Column("line", _I64, "the 1-based line, when it is a line"),
    Column("kind", _STR, "a stable tag: not_a_message, partial_line, bad_json, unknown_schema, "
           "unreadable_folder, not_a_regular_file, reached_twice, ..."),
    Column("detail", _STR, "what happened, in a sentence", value=lambda d: display(d.detail)),
    Column("path_bytes", pa.binary(),
           "the exact bytes of a path that is not UTF-8 (path then shows each such byte as \\xNN); null "
           "when the path is valid text", value=lambda d: raw_name(d.path)),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "messages": MESSAGES,
    "tool_calls": TOOL_CALLS,
    "usage": USAGE,
    "orphans": ORPHANS,
    "growth": GROWTH,
    "steps": STEPS,
    "conversations": CONVERSATIONS,
    "diagnostics": DIAGNOSTICS,
}


def schema(table: str) -> pa.Schema:
    """The declared Arrow schema of ``table`` (a core table or a source's own)."""
    return pa.schema([pa.field(c.name, c.type) for c in declared(table)])


def built_schema(table: str) -> pa.Schema:
    """The columns of ``table`` the frame builder writes (every column no later step fills)."""
    return pa.schema([pa.field(c.name, c.type) for c in declared(table) if c.filled_by is None])


def markdown() -> str:
    """The column reference as Markdown (what ``docs/tables.md`` holds)."""
    out = ["# Tables", "", "Generated from `murmur_analysis/tables/schema.py`; a test keeps them equal.", ""]
    for name, columns in {**TABLES, **SOURCE_TABLES}.items():
        out += [f"## {name}", ""]
        if name in SOURCE_TABLES:
            out += [SOURCE_TABLES_NOTE, ""]
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [f"| {c.name} | {c.type} | {c.doc} |" for c in columns]
        out.append("")
    return "\n".join(out)


# -- Tables of one source's own --------------------------------------------------------------------
# Declared like the core tables and built by the frame builder from the rows a source hands over
# (a conversation's in its summary, the others beside its conversations). Unlike a core table, a
# load holds one only when a source gave it rows.

#: What ``docs/tables.md`` says of every table in :data:`SOURCE_TABLES`.
SOURCE_TABLES_NOTE = "A source's own table: a load holds it only when its source read rows of it."

SOURCE_TABLES: dict[str, tuple[Column, ...]] = {
    "dispatch_sessions": (
        Column("source", _STR, "always dispatch"),
        Column("conversation_id", _STR, "the conversation (a session id, or eval:<digest>/<trace>)"),
        Column("kind", _STR, "run, session_file, channel, sqlite or eval_trace: where it was found"),
        Column("session_id", _STR, "the courier session id"),
        Column("run_id", _STR, "the run (<ms>-<digest[:12]>), for a run's session"),
        Column("parcel_digest", _STR, "the parcel's digest"),
        Column("parcel_name", _STR, "the parcel's name, from the run record"),
        Column("entrypoint", _STR, "chat, job, heartbeat, ..."),
        Column("label", _STR, "the session's label, when set"),
        Column("channel", _STR, "the channel plugin folder, for a channel bot's session"),
        Column("courier", _STR, "the courier that ran it (run record or trace)"),
        Column("status", _STR, "run status (starting running exited failed stopped), or passed/failed for a trace"),
        Column("exit_code", _I64, "the run's exit code"),
        Column("turn_count", _I64, "turns the session ran"),
        Column("elapsed_ms", _I64, "the session's elapsed_ms"),
        Column("history_messages", _I64, "messages in the session's history"),
        Column("started_at", _TS, "when the run or trace started (the only times dispatch records)"),
        Column("stopped_at", _TS, "when the run stopped or the trace finished"),
        Column("error", _STR, "the run's last_error, or the trace's error and failures"),
        Column("path", _STR, "the file it was read from"),
    ),
    "memory": (
        Column("source", _STR, "always dispatch"),
        Column("parcel_digest", _STR, "the parcel whose memory it is"),
        Column("namespace", _STR, "the memory namespace"),
        Column("key", _STR, "the key"),
        Column("value", _STR, "the value as text: as stored, or a BLOB's UTF-8 text (null when a BLOB is not "
                              "UTF-8)"),
        Column("value_bytes", pa.binary(), "the value's bytes when it is stored as a BLOB"),
        Column("updated_at", _TS, "updated_at as a time (Unix seconds; values past 1e11 read as milliseconds)"),
        Column("updated_at_raw", _I64, "updated_at as stored"),
        Column("path", _STR, "the SQLite file"),
    ),
}


def declared(table: str) -> tuple[Column, ...]:
    """The columns of ``table``: a core table, else a source's own (``KeyError`` for neither)."""
    return TABLES[table] if table in TABLES else SOURCE_TABLES[table]
