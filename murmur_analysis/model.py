"""The canonical model every source decodes into: blocks, usage, entries and messages.

A *block* is one piece of content. Every block kind that brazen (litany), murmur or FlexiGPT
writes has a class here; a block of any other kind, or one whose required fields are missing or
of the wrong type, becomes :class:`Unknown` and keeps its whole JSON object. Nothing is coerced
to text. Keys a block class does not model ride along in ``extra``, so
``block_to_wire(block_from_wire(d)) == d`` for every block object ``d``.

Two wire dialects exist: ``"brazen"`` (litany's ``messages/`` entries, tagged ``tool_use``)
and ``"murmur"`` (conversation records, tagged ``tool_call``). Both decode to :class:`ToolUse`.

An :class:`Entry` is one element of a conversation as its source stored it (a murmur line, a
litany ``messages/NNN-*`` file, a FlexiGPT message), in order. The cursor core pages entries;
the assembly core groups them into :class:`Message` objects.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal, TypeAlias

from . import _native

__all__ = [
    "Block",
    "Dialect",
    "Document",
    "Entry",
    "File",
    "Image",
    "Message",
    "RedactedThinking",
    "Refusal",
    "ServerToolResult",
    "ServerToolUse",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "Unknown",
    "Usage",
    "block_from_wire",
    "block_kind",
    "block_to_wire",
    "blocks_from_wire",
    "blocks_to_wire",
    "joined_text",
    "message_text",
    "murmur_block_rules",
    "read_counter",
    "reasoning_text",
    "text_chars",
    "uuid7_datetime",
    "uuid7_ms",
]

Dialect = Literal["brazen", "murmur"]



class _EmptyExtra(Mapping[str, Any]):
    """The shared, immutable, hashable empty ``extra`` of blocks that have no extra keys."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and len(other) == 0

    def __repr__(self) -> str:
        return "{}"


_EMPTY: Mapping[str, Any] = _EmptyExtra()
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text."""

    text: str
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "text"


@dataclass(frozen=True, slots=True)
class Image:
    """An image; ``source`` is kept as the runtime wrote it (base64 or url)."""

    source: Any
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "image"


@dataclass(frozen=True, slots=True)
class Document:
    """A document (PDF, text) attached by reference or inline."""

    source: Any
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "document"


@dataclass(frozen=True, slots=True)
class File:
    """A file item (FlexiGPT ``fileItem``); ``data`` is the item as written."""

    data: Any
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "file"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A model's refusal text (FlexiGPT ``refusalItem``)."""

    text: str
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "refusal"


@dataclass(frozen=True, slots=True)
class Thinking:
    """Visible reasoning, with the provider's signature when it gave one."""

    text: str
    signature: str | None = None
    id: str | None = None
    encrypted_content: str | None = None
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "thinking"


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """Reasoning the provider returned only as opaque data."""

    data: str
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A client tool call (brazen ``tool_use``, murmur ``tool_call``)."""

    id: str
    name: str
    input: Any = None
    signature: str | None = None
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A client tool result answering the :class:`ToolUse` named by ``tool_use_id``.

    ``content`` is ``None`` when the wire object carried no ``content`` key.
    """

    tool_use_id: str
    content: tuple[Block, ...] | None = None
    is_error: bool | None = None
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "tool_result"


@dataclass(frozen=True, slots=True)
class ServerToolUse:
    """A provider-executed tool call (web search and the like), carried opaque."""

    id: str
    name: str
    input: Any = None
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    kind: ClassVar[str] = "server_tool_use"


@dataclass(frozen=True, slots=True)
class ServerToolResult:
    """A provider-executed tool's result; ``type`` is its wire tag (``*_tool_result``).

    ``is_error`` is the runtime's error flag: FlexiGPT's ``isError`` (set when the provider's
    search returned an error code), or true for a brazen result whose content is the
    provider's error object (``{"type": "web_search_tool_result_error", ...}``); it is not
    written back to the wire (the content already says it).
    """

    type: str
    tool_use_id: str
    content: Any = None
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    is_error: bool | None = None
    kind: ClassVar[str] = "server_tool_result"


@dataclass(frozen=True, slots=True)
class Unknown:
    """A block this toolkit does not model, kept whole: ``data`` is the wire value."""

    data: Any
    kind: ClassVar[str] = "unknown"

    @property
    def type(self) -> str | None:
        """The block's ``type`` tag, when it had a string one."""
        if isinstance(self.data, Mapping):
            tag = self.data.get("type")
            return tag if isinstance(tag, str) else None
        return None


Block: TypeAlias = (
    Text
    | Image
    | Document
    | File
    | Refusal
    | Thinking
    | RedactedThinking
    | ToolUse
    | ToolResult
    | ServerToolUse
    | ServerToolResult
    | Unknown
)

# Field specs: (name, required, expected type or None for any JSON value).
_Spec = tuple[tuple[str, bool, type | tuple[type, ...] | None], ...]
_SPECS: dict[type, _Spec] = {
    Text: (("text", True, str),),
    Image: (("source", True, None),),
    Document: (("source", True, None),),
    Refusal: (("text", True, str),),
    Thinking: (
        ("text", True, str),
        ("signature", False, str),
        ("id", False, str),
        ("encrypted_content", False, str),
    ),
    RedactedThinking: (("data", True, str),),
    ToolUse: (("id", True, str), ("name", True, str), ("input", False, None), ("signature", False, str)),
    ServerToolUse: (("id", True, str), ("name", True, str), ("input", False, None)),
}

_TAGS: dict[Dialect, dict[str, type]] = {
    "brazen": {
        "text": Text,
        "image": Image,
        "document": Document,
        "thinking": Thinking,
        "redacted_thinking": RedactedThinking,
        "tool_use": ToolUse,
        "tool_result": ToolResult,
        "server_tool_use": ServerToolUse,
    },
    "murmur": {
        "text": Text,
        "image": Image,
        "document": Document,
        "thinking": Thinking,
        "redacted_thinking": RedactedThinking,
        "tool_call": ToolUse,
        "tool_result": ToolResult,
    },
}
_TOOL_USE_TAG: dict[Dialect, str] = {"brazen": "tool_use", "murmur": "tool_call"}


def _decode_spec(cls: type, obj: Mapping[str, Any], spec: _Spec) -> Block | None:
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    wanted = {name: (required, typ) for name, required, typ in spec}
    for key, value in obj.items():
        if key == "type":
            continue
        slot = wanted.get(key)
        if slot is None or (value is None and not slot[0]):
            extra[key] = value  # unmodelled key, or an optional one written as null
            continue
        typ = slot[1]
        if typ is not None and not isinstance(value, typ):
            return None
        values[key] = value
    for name, required, _ in spec:
        if required and name not in values:
            return None
    if extra:
        values["extra"] = extra
    block: Block = cls(**values)
    return block


def block_from_wire(value: Any, dialect: Dialect = "brazen") -> Block:
    """Decode one wire block.

    Args:
        value: a block object as JSON-decoded, or a bare string (which is text).
        dialect: ``"brazen"`` for litany entries, ``"murmur"`` for murmur records.

    Returns:
        The typed block, or :class:`Unknown` holding ``value`` whole when the kind is not
        modelled or the object lacks a required field.
    """
    if isinstance(value, str):
        return Text(value)
    if not isinstance(value, Mapping):
        return Unknown(value)
    tag = value.get("type")
    if not isinstance(tag, str):
        return Unknown(value)
    cls = _TAGS[dialect].get(tag)
    decoded: Block | None
    if cls is ToolResult:
        decoded = _decode_tool_result(value, dialect)
    elif cls is not None:
        decoded = _decode_spec(cls, value, _SPECS[cls])
    elif tag.endswith("_tool_result") and dialect == "brazen":
        decoded = _decode_server_result(value)
    else:
        decoded = None
    return decoded if decoded is not None else Unknown(value)


def _decode_tool_result(obj: Mapping[str, Any], dialect: Dialect) -> Block | None:
    tool_use_id = obj.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        return None
    is_error = obj.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        return None
    extra = {k: v for k, v in obj.items() if k not in ("type", "tool_use_id", "content", "is_error")}
    if "is_error" in obj and is_error is None:
        extra["is_error"] = None
    content: tuple[Block, ...] | None = None
    if "content" in obj:
        raw = obj["content"]
        if isinstance(raw, list):
            content = tuple(block_from_wire(b, dialect) for b in raw)
        elif isinstance(raw, str | Mapping):
            # brazen accepts one string or one object where a list is expected; keep the
            # wire shape so the block encodes back to exactly what was read.
            content = (block_from_wire(raw, dialect),)
            extra["__content_shape__"] = "str" if isinstance(raw, str) else "object"
        else:
            return None
    return ToolResult(tool_use_id, content, is_error, extra or _EMPTY)


def _decode_server_result(obj: Mapping[str, Any]) -> Block | None:
    tool_use_id = obj.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        return None
    extra = {k: v for k, v in obj.items() if k not in ("type", "tool_use_id", "content")}
    content = obj.get("content")
    tag = content.get("type") if isinstance(content, Mapping) else None
    failed = True if isinstance(tag, str) and tag.endswith("_error") else None
    return ServerToolResult(str(obj["type"]), tool_use_id, content, extra or _EMPTY, failed)


def blocks_from_wire(values: Any, dialect: Dialect = "brazen") -> tuple[Block, ...]:
    """Decode a content value: a list of blocks, or one string (which is one text block)."""
    if isinstance(values, list):
        return tuple(block_from_wire(v, dialect) for v in values)
    if isinstance(values, str):
        return (Text(values),)
    return (Unknown(values),)


def block_to_wire(block: Block, dialect: Dialect = "brazen") -> Any:
    """Encode a block back to its wire object in ``dialect`` (the inverse of decoding)."""
    if isinstance(block, Unknown):
        return block.data
    if isinstance(block, ToolResult):
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
        extra = dict(block.extra)
        shape = extra.pop("__content_shape__", None)
        if block.content is not None:
            encoded = [block_to_wire(b, dialect) for b in block.content]
            if shape == "str" and isinstance(block.content[0], Text):
                out["content"] = block.content[0].text
            elif shape == "object":
                out["content"] = encoded[0]
            else:
                out["content"] = encoded
        if block.is_error is not None:
            out["is_error"] = block.is_error
        out.update(extra)
        return out
    if isinstance(block, ServerToolResult):
        out = {"type": block.type, "tool_use_id": block.tool_use_id}
        if block.content is not None:
            out["content"] = block.content
        out.update(block.extra)
        return out
    if isinstance(block, File):
        return {"type": "file", "data": block.data, **block.extra}
    tag = _TOOL_USE_TAG[dialect] if isinstance(block, ToolUse) else block.kind
    out = {"type": tag}
    for name, _required, _typ in _SPECS[type(block)]:
        value = getattr(block, name)
        if value is not None:
            out[name] = value
    out.update(block.extra)
    return out


def blocks_to_wire(blocks: Iterable[Block], dialect: Dialect = "brazen") -> list[Any]:
    """Encode a sequence of blocks to a wire content list."""
    return [block_to_wire(b, dialect) for b in blocks]


def block_kind(block: Block) -> str:
    """The kind a block is listed under: its class's kind, or an unknown block's own tag."""
    if type(block) is Unknown:
        return block.type or "unknown"
    return str(block.kind)


#: The blocks whose ``text`` is human-readable text (what :func:`text_chars` counts).
_TEXT_CLASSES: tuple[type, ...] = (Text, Thinking, Refusal)


def murmur_block_rules() -> tuple[
    dict[str, str], dict[str, list[tuple[str, bool, bool]]], list[str], str, str, str, str, str
]:
    """The ``murmur`` dialect's block rules, as the native scan reads them.

    The scan derives block kinds, text characters and tool events exactly as
    :func:`block_from_wire` and :func:`text_chars` do, from these tables rather than a copy:
    ``(tag -> kind, kind -> [(field, required, must be a string)], kinds whose text counts,
    the kind of a bare string, of a tool call, of a tool result, of an unmodelled block, of a
    reasoning block)``. Its text columns follow :func:`message_text`, :func:`reasoning_text`
    and :func:`joined_text`.
    """
    def kind(cls: type) -> str:
        return str(cls.kind)  # type: ignore[attr-defined]

    fields: dict[str, list[tuple[str, bool, bool]]] = {}
    for cls in _TAGS["murmur"].values():
        spec = _SPECS.get(cls, ())
        if any(typ not in (None, str) for _, _, typ in spec):
            raise TypeError(f"{cls.__name__}: the native scan checks only string-typed fields")
        fields[kind(cls)] = [(name, required, typ is str) for name, required, typ in spec]
    return (
        {tag: kind(cls) for tag, cls in _TAGS["murmur"].items()},
        fields,
        [kind(cls) for cls in _TEXT_CLASSES],
        Text.kind,
        ToolUse.kind,
        ToolResult.kind,
        Unknown.kind,
        Thinking.kind,
    )


def joined_text(texts: Iterable[str]) -> str | None:
    """Texts joined with newlines, as written (nothing escaped); ``None`` when there are none."""
    parts = list(texts)
    return "\n".join(parts) if parts else None


def message_text(blocks: Iterable[Block]) -> str | None:
    """The text of the :class:`Text` blocks among ``blocks``, joined with newlines.

    This is ``messages.text`` and a tool result's text; ``None`` when there is no text block.
    """
    return joined_text(b.text for b in blocks if type(b) is Text)


def reasoning_text(blocks: Iterable[Block]) -> str | None:
    """The text of the :class:`Thinking` blocks among ``blocks``, joined with newlines (or ``None``)."""
    return joined_text(b.text for b in blocks if type(b) is Thinking)


def text_chars(blocks: Iterable[Block]) -> int:
    """Count the characters of human-readable text in ``blocks``.

    Text, thinking, refusals and the text inside tool results count; tool inputs and opaque
    payloads are not text and count 0.
    """
    total = 0
    for block in blocks:
        kind = type(block)
        if kind in _TEXT_CLASSES:
            total += len(block.text)  # type: ignore[union-attr]
        elif kind is ToolResult and block.content:  # type: ignore[union-attr]
            total += text_chars(block.content)  # type: ignore[union-attr]
    return total


#: The largest counter a table column holds (Arrow ``int64``).
COUNTER_MAX = (1 << 63) - 1


def read_counter(value: Any, name: str, problems: list[str]) -> int | None:
    """One token counter as written: a JSON integer in ``0..2**63-1``, else ``None``.

    A counter the runtime left out (``None``) is simply not reported. Any other value that is
    not such an integer (a string ``"1900"``, a float, a boolean, a negative number, one too
    large for a 64-bit column) is not read: ``None``, and a sentence is added to ``problems``
    (the frame builder turns it into a diagnostics row).
    """
    if value is None:
        return None
    if type(value) is int and 0 <= value <= COUNTER_MAX:
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
    problems.append(f"counter {name} = {shown} is not a non-negative 64-bit integer; read as not reported")
    return None


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counters of one model response, normalized (see ``docs/tokens.md``).

    * ``input_total_tokens`` is the whole prompt, cached slices included (OpenTelemetry
      GenAI's ``gen_ai.usage.input_tokens``).
    * ``cache_read_tokens`` and ``cache_write_tokens`` are slices of it, and
      ``input_tokens`` is the rest (the uncached input), so
      ``input_tokens + cache_read_tokens + cache_write_tokens == input_total_tokens`` with a
      slice the API does not have (or did not report) counted as absent. ``input_tokens`` is
      null when it can be neither read nor worked out from reported slices.
    * ``output_tokens + reasoning_tokens`` is everything generated: ``output_tokens`` excludes
      the reasoning where the split is served (``reasoning_tokens`` not null) and holds all of
      it where no split is served (``reasoning_tokens`` null).
    * A counter the provider did not report is ``None``, never 0.

    ``estimated_*`` hold a runtime's own estimates (murmur's cl100k counts) beside the
    provider's numbers; ``provider_input_tokens``/``provider_output_tokens`` keep the raw
    numbers as reported; ``extra`` keeps counters this toolkit does not know. ``problems``
    says, in sentences, what did not add up or could not be read (no value is clamped).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    input_total_tokens: int | None = None
    reasoning_tokens: int | None = None
    context_window: int | None = None
    estimated_input_tokens: int | None = None
    estimated_output_tokens: int | None = None
    provider_input_tokens: int | None = None
    provider_output_tokens: int | None = None
    extra: Mapping[str, Any] = field(default=_EMPTY, repr=False)
    problems: tuple[str, ...] = ()

    @classmethod
    def normalize(
        cls,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        input_total_tokens: int | None = None,
        reasoning_tokens: int | None = None,
        uncached_tokens: int | None = None,
        cache_in_input: bool,
        reasoning_in_output: bool,
        cache_write_slice: bool = True,
        context_window: int | None = None,
        estimated_input_tokens: int | None = None,
        estimated_output_tokens: int | None = None,
        extra: Mapping[str, Any] | None = None,
        problems: Sequence[str] = (),
    ) -> Usage:
        """Build normalized counters from a provider's own numbers (the one normalization rule).

        Args:
            input_tokens: the provider's prompt counter as reported.
            output_tokens: the provider's output counter as reported.
            cache_read_tokens: tokens read from the prompt cache.
            cache_write_tokens: tokens written to the prompt cache.
            input_total_tokens: the whole prompt, when the runtime already computed it.
            reasoning_tokens: the reasoning split, when the provider served one.
            uncached_tokens: the uncached rest of the prompt, when the runtime reports it
                itself (it is then checked against the slices, where they are known).
            cache_in_input: ``True`` where the provider's prompt counter already contains the
                cached slices (OpenAI, Google), ``False`` where they sit beside it (Anthropic).
            reasoning_in_output: ``True`` where the output counter given contains the
                reasoning split (it is subtracted), ``False`` where it sits beside it.
            cache_write_slice: whether the API has a cache-write slice at all (only then
                does an unreported write leave the uncached rest unknown).
            context_window: the model's context window, when known.
            estimated_input_tokens: a runtime's own estimate of the prompt.
            estimated_output_tokens: a runtime's own estimate of the output.
            extra: counters this toolkit does not model, carried through.
            problems: what the caller already found wrong with the counters.

        Returns:
            The normalized usage. Counters that contradict each other are not clamped: the
            value that cannot be told is null and ``problems`` says why.
        """
        found = list(problems)
        read, write = cache_read_tokens, cache_write_tokens
        total = input_total_tokens
        uncached = uncached_tokens
        contradicted = False
        if not cache_in_input and input_tokens is not None:
            # The prompt counter is the uncached rest; each reported slice sits beside it.
            summed = input_tokens + (read or 0) + (write or 0)
            if uncached is None:
                uncached = input_tokens
            if total is None:
                total = summed
            elif total != summed:
                found.append(f"input_total_tokens {total} is not input_tokens plus the cache slices ({summed})")
                contradicted = True
                uncached = None
        elif total is None:
            total = input_tokens
        slices_known = read is not None and (write is not None or not cache_write_slice)
        if total is not None and slices_known and not contradicted:
            rest = total - (read or 0) - (write or 0)
            if rest < 0:
                found.append(f"the cache slices ({(read or 0) + (write or 0)}) exceed the whole prompt ({total})")
                uncached = None
            elif uncached is None:
                uncached = rest
            elif uncached != rest:
                found.append(f"the uncached prompt reported ({uncached}) is not the whole prompt less the cache "
                             f"slices ({rest})")
                uncached = None
        output = output_tokens
        if output is not None and reasoning_tokens is not None and reasoning_in_output:
            if reasoning_tokens > output:
                found.append(f"reasoning_tokens {reasoning_tokens} exceed the output {output} that holds them")
                output = None
            else:
                output -= reasoning_tokens
        return cls(
            input_tokens=uncached,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
            input_total_tokens=total,
            reasoning_tokens=reasoning_tokens,
            context_window=context_window,
            estimated_input_tokens=estimated_input_tokens,
            estimated_output_tokens=estimated_output_tokens,
            provider_input_tokens=input_tokens,
            provider_output_tokens=output_tokens,
            extra=dict(extra) if extra else _EMPTY,
            problems=tuple(found),
        )

    @property
    def reported(self) -> bool:
        """Whether the provider reported any counter of the prompt or the output."""
        return (self.input_total_tokens is not None or self.output_tokens is not None
                or self.reasoning_tokens is not None or self.provider_output_tokens is not None)


@dataclass(frozen=True, slots=True)
class Entry:
    """One element of a conversation, as its source stored it, in order.

    Attributes:
        position: the order key within the conversation (a murmur message index, a litany
            ``NNN`` counter, a FlexiGPT message index). Entries are processed in ascending
            ``position``; ties keep the source's order.
        side: the wire side the entry composes onto: ``"user"``, ``"assistant"``,
            ``"tool"`` (or ``"system"``, or a hook-given role); equal sides group.
        blocks: the entry's content.
        id: the entry's own id, when the source gives one.
        origin: who wrote it: a litany sender or model id, ``"tool"``, a murmur hook origin.
        model: the model that produced it, when known.
        created_at: when it was written (timezone-aware UTC), when the source says.
        source_id: a join key a hook supplied (murmur).
        usage: token usage reported for the response this entry holds.
        tool_call_id: for a murmur tool message, the call it answers.
        is_error: for a murmur tool message, whether the call failed.
        raw: the source's own JSON value of the entry, when the cursor core needs it to
            reproduce a runtime's exact encoding.
        status: a source's status of the message (FlexiGPT ``status``), when it has one.
        error: a source's error text for the message, when it has one.
    """

    position: int
    side: str
    blocks: tuple[Block, ...]
    id: str | None = None
    origin: str | None = None
    model: str | None = None
    created_at: datetime | None = None
    source_id: str | None = None
    usage: Usage | None = None
    tool_call_id: str | None = None
    is_error: bool | None = None
    raw: Any = field(default=None, repr=False, compare=False)
    status: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """One assembled wire message: consecutive same-side entries joined.

    Attributes:
        role: ``"user"``, ``"assistant"`` or ``"tool"`` (the side).
        blocks: the typed blocks, in order.
    """

    role: str
    blocks: tuple[Block, ...]

    @property
    def content(self) -> list[Any]:
        """The blocks as brazen block dicts."""
        return blocks_to_wire(self.blocks, "brazen")


def uuid7_ms(hex_id: str) -> int | None:
    """The Unix-millisecond mint time inside a UUIDv7, or ``None`` when ``hex_id`` is not one.

    The id ends with a UUIDv7 in simple or dashed form (each dash optional), at its start or
    after a ``_``; its first 48 bits are the Unix-ms time and its version nibble is 7. A time
    past year 9999 is ``None`` (no datetime can hold it). The rule is the native engine's, so a
    scanned ``created_at`` and an entry's agree.

    Args:
        hex_id: e.g. ``msg_01a04900754b7183b66c11e744612e2d`` or a dashed UUID.

    Returns:
        The first 48 bits, which a UUIDv7 defines as its Unix-ms time.
    """
    ms: int | None = _native.uuid7_ms(hex_id)
    return ms


def uuid7_datetime(hex_id: str) -> datetime | None:
    """The mint time inside a UUIDv7 (simple or dashed form, any prefix before ``_``).

    Args:
        hex_id: e.g. ``msg_01a04900754b7183b66c11e744612e2d`` or a dashed UUID.

    Returns:
        The timezone-aware UTC time of the first 48 bits, or ``None`` when ``hex_id`` is not
        a UUIDv7.
    """
    ms = uuid7_ms(hex_id)
    return None if ms is None else _EPOCH + timedelta(milliseconds=ms)


def sorted_entries(entries: Iterable[Entry]) -> Sequence[Entry]:
    """Entries in ascending ``position``, ties in the order given (a stable sort)."""
    ordered = list(entries)
    if any(a.position > b.position for a, b in itertools.pairwise(ordered)):
        ordered.sort(key=lambda e: e.position)
    return ordered
