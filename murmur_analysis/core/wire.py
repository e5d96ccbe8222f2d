"""The wire codec: blocks decoded from, and encoded back to, the JSON a runtime writes.

Three wire dialects exist: ``"brazen"`` (litany's ``messages/`` entries, tagged ``tool_use``),
``"murmur"`` (conversation records, tagged ``tool_call``) and ``"anthropic"`` (the Messages API's
blocks, as Claude Code's sessions hold them: brazen's tags, a thinking block's text under
``thinking``, and a tool result that writes no ``is_error`` is no error). All decode to
:class:`~murmur_analysis.core.blocks.ToolUse`; blocks are encoded back to brazen and murmur
(``anthropic`` is only read). A block of a kind not modelled, or one whose required
fields are missing or of the wrong type, decodes to :class:`~murmur_analysis.core.blocks.Unknown`
holding the wire value whole; keys a block class does not model ride in ``extra``, so
``block_to_wire(block_from_wire(d)) == d`` for every block object ``d``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

from .blocks import (
    EMPTY,
    TEXT_CLASSES,
    Block,
    Document,
    File,
    Image,
    RedactedThinking,
    Refusal,
    ServerToolResult,
    ServerToolUse,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Unknown,
)

__all__ = [
    "BlockRules",
    "Dialect",
    "WireDialect",
    "block_from_wire",
    "block_rules",
    "block_to_wire",
    "blocks_from_wire",
    "blocks_to_wire",
]

#: The dialects blocks are read in.
Dialect = Literal["brazen", "murmur", "anthropic"]
#: The dialects blocks are written back in.
WireDialect = Literal["brazen", "murmur"]

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
_TAGS["anthropic"] = _TAGS["brazen"]
_TOOL_USE_TAG: dict[WireDialect, str] = {"brazen": "tool_use", "murmur": "tool_call"}
#: A field a dialect writes under a key of its own: ``{dialect: {class: {wire key: field}}}``.
_KEYS: dict[Dialect, dict[type, dict[str, str]]] = {"anthropic": {Thinking: {"thinking": "text"}}}
#: What a client tool result that writes no ``is_error`` (or ``null``) says: nothing, except in
#: the Messages API, whose default is no error.
_RESULT_ERROR_DEFAULT: dict[Dialect, bool | None] = {"brazen": None, "murmur": None, "anthropic": False}
#: The dialects whose provider-run tool results (``*_tool_result`` tags) are modelled.
_SERVER_RESULTS: frozenset[Dialect] = frozenset({"brazen", "anthropic"})


#: Each spec by field name: ``name -> (required, expected type)``; and each spec's required names.
_WANTED: dict[type, dict[str, tuple[bool, type | tuple[type, ...] | None]]] = {
    cls: {name: (required, typ) for name, required, typ in spec} for cls, spec in _SPECS.items()}
_REQUIRED: dict[type, tuple[str, ...]] = {
    cls: tuple(name for name, required, _typ in spec if required) for cls, spec in _SPECS.items()}


def _wire_key(field: str, cls: type, dialect: Dialect) -> str:
    """The key ``dialect`` writes ``cls``'s ``field`` under."""
    return next((key for key, name in _KEYS.get(dialect, {}).get(cls, {}).items() if name == field), field)


def _decode_spec(cls: type, obj: Mapping[str, object], dialect: Dialect) -> Block | None:
    values: dict[str, object] = {}
    extra: dict[str, object] = {}
    wanted = _WANTED[cls]
    keys = _KEYS.get(dialect, {}).get(cls, {})
    for key, value in obj.items():
        if key == "type":
            continue
        # a field the dialect writes under another key is read from that key alone
        name = keys.get(key, None if key in keys.values() else key)
        slot = wanted.get(name) if name is not None else None
        if slot is None or (value is None and not slot[0]):
            extra[key] = value  # unmodelled key, or an optional one written as null
            continue
        typ = slot[1]
        if typ is not None and not isinstance(value, typ):
            return None
        values[str(name)] = value
    for name in _REQUIRED[cls]:
        if name not in values:
            return None
    if extra:
        values["extra"] = extra
    block: Block = cls(**values)
    return block


def block_from_wire(value: object, dialect: Dialect = "brazen") -> Block:
    """Decode one wire block.

    Args:
        value: a block object as JSON-decoded, or a bare string (which is text).
        dialect: ``"brazen"`` for litany entries, ``"murmur"`` for murmur records,
            ``"anthropic"`` for Claude Code's messages.

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
        decoded = _decode_spec(cls, value, dialect)
    elif tag.endswith("_tool_result") and dialect in _SERVER_RESULTS:
        decoded = _decode_server_result(value)
    else:
        decoded = None
    return decoded if decoded is not None else Unknown(value)


def _decode_tool_result(obj: Mapping[str, object], dialect: Dialect) -> Block | None:
    tool_use_id = obj.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        return None
    is_error = obj.get("is_error")
    if is_error is not None and not isinstance(is_error, bool):
        return None
    extra = {k: v for k, v in obj.items() if k not in ("type", "tool_use_id", "content", "is_error")}
    if "is_error" in obj and is_error is None:
        extra["is_error"] = None
    if is_error is None:
        is_error = _RESULT_ERROR_DEFAULT[dialect]
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
    return ToolResult(tool_use_id, content, is_error, extra or EMPTY)


def _decode_server_result(obj: Mapping[str, object]) -> Block | None:
    tool_use_id = obj.get("tool_use_id")
    if not isinstance(tool_use_id, str):
        return None
    extra = {k: v for k, v in obj.items() if k not in ("type", "tool_use_id", "content")}
    content = obj.get("content")
    tag = content.get("type") if isinstance(content, Mapping) else None
    failed = True if isinstance(tag, str) and tag.endswith("_error") else None
    return ServerToolResult(str(obj["type"]), tool_use_id, content, extra or EMPTY, failed)


def blocks_from_wire(values: object, dialect: Dialect = "brazen") -> tuple[Block, ...]:
    """Decode a content value: a list of blocks, or one string (which is one text block)."""
    if isinstance(values, list):
        return tuple(block_from_wire(v, dialect) for v in values)
    if isinstance(values, str):
        return (Text(values),)
    return (Unknown(values),)


def block_to_wire(block: Block, dialect: WireDialect = "brazen") -> object:
    """Encode a block back to its wire object in ``dialect`` (the inverse of decoding)."""
    if isinstance(block, Unknown):
        return block.data
    if isinstance(block, ToolResult):
        out: dict[str, object] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
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


def blocks_to_wire(blocks: Iterable[Block], dialect: WireDialect = "brazen") -> list[object]:
    """Encode a sequence of blocks to a wire content list."""
    return [block_to_wire(b, dialect) for b in blocks]


class BlockRules(NamedTuple):
    """A dialect's block rules, in the order the native scan takes them."""

    kinds: dict[str, str]  #: wire tag -> block kind
    fields: dict[str, list[tuple[str, bool, bool]]]  #: kind -> [(wire key, required, must be a string)]
    text_kinds: list[str]  #: kinds whose text counts as text
    text: str  #: the kind of a bare string
    tool_use: str  #: the kind of a tool call
    tool_result: str  #: the kind of a tool result
    unknown: str  #: the kind of an unmodelled block
    reasoning: str  #: the kind of a reasoning block
    text_keys: dict[str, str]  #: kind -> the wire key of its text
    server_tool_use: str  #: the kind of a provider-run tool's call ("" when the dialect has none)
    server_tool_result: str  #: the kind of a ``*_tool_result`` block ("" when the dialect models none)
    result_error: bool | None  #: what a tool result that writes no ``is_error`` says


def block_rules(dialect: Dialect) -> BlockRules:
    """``dialect``'s block rules, as the native scan reads them.

    The scan derives block kinds, text characters and tool events exactly as
    :func:`block_from_wire` and :func:`~murmur_analysis.core.blocks.text_chars` do, from these tables
    rather than a copy. Its text columns follow :func:`~murmur_analysis.core.blocks.message_text`,
    :func:`~murmur_analysis.core.blocks.reasoning_text` and :func:`~murmur_analysis.core.blocks.joined_text`.
    """
    def kind(cls: type) -> str:
        return str(cls.kind)  # type: ignore[attr-defined]

    tags = _TAGS[dialect]
    fields: dict[str, list[tuple[str, bool, bool]]] = {}
    for cls in tags.values():
        spec = _SPECS.get(cls, ())
        if any(typ not in (None, str) for _, _, typ in spec):
            raise TypeError(f"{cls.__name__}: the native scan checks only string-typed fields")
        fields[kind(cls)] = [(_wire_key(name, cls, dialect), required, typ is str) for name, required, typ in spec]
    texts = [cls for cls in TEXT_CLASSES if cls in tags.values()]
    return BlockRules(
        {tag: kind(cls) for tag, cls in tags.items()},
        fields,
        [kind(cls) for cls in TEXT_CLASSES],
        Text.kind,
        ToolUse.kind,
        ToolResult.kind,
        Unknown.kind,
        Thinking.kind,
        {kind(cls): _wire_key("text", cls, dialect) for cls in texts},
        ServerToolUse.kind if ServerToolUse in tags.values() else "",
        ServerToolResult.kind if dialect in _SERVER_RESULTS else "",
        _RESULT_ERROR_DEFAULT[dialect],
    )
