"""The wire codec: blocks decoded from, and encoded back to, the JSON a runtime writes.

Two wire dialects exist: ``"brazen"`` (litany's ``messages/`` entries, tagged ``tool_use``)
and ``"murmur"`` (conversation records, tagged ``tool_call``). Both decode to
:class:`~murmur_analysis.core.blocks.ToolUse`. A block of a kind not modelled, or one whose required
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
    "block_from_wire",
    "block_to_wire",
    "blocks_from_wire",
    "blocks_to_wire",
    "murmur_block_rules",
]

Dialect = Literal["brazen", "murmur"]

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


#: Each spec by field name: ``name -> (required, expected type)``; and each spec's required names.
_WANTED: dict[type, dict[str, tuple[bool, type | tuple[type, ...] | None]]] = {
    cls: {name: (required, typ) for name, required, typ in spec} for cls, spec in _SPECS.items()}
_REQUIRED: dict[type, tuple[str, ...]] = {
    cls: tuple(name for name, required, _typ in spec if required) for cls, spec in _SPECS.items()}


def _decode_spec(cls: type, obj: Mapping[str, object]) -> Block | None:
    values: dict[str, object] = {}
    extra: dict[str, object] = {}
    wanted = _WANTED[cls]
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
        decoded = _decode_spec(cls, value)
    elif tag.endswith("_tool_result") and dialect == "brazen":
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


def block_to_wire(block: Block, dialect: Dialect = "brazen") -> object:
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


def blocks_to_wire(blocks: Iterable[Block], dialect: Dialect = "brazen") -> list[object]:
    """Encode a sequence of blocks to a wire content list."""
    return [block_to_wire(b, dialect) for b in blocks]


class BlockRules(NamedTuple):
    """The ``murmur`` dialect's block rules, in the order the native scan takes them."""

    kinds: dict[str, str]  #: wire tag -> block kind
    fields: dict[str, list[tuple[str, bool, bool]]]  #: kind -> [(field, required, must be a string)]
    text_kinds: list[str]  #: kinds whose ``text`` counts as text
    text: str  #: the kind of a bare string
    tool_use: str  #: the kind of a tool call
    tool_result: str  #: the kind of a tool result
    unknown: str  #: the kind of an unmodelled block
    reasoning: str  #: the kind of a reasoning block


def murmur_block_rules() -> BlockRules:
    """The ``murmur`` dialect's block rules, as the native scan reads them.

    The scan derives block kinds, text characters and tool events exactly as
    :func:`block_from_wire` and :func:`~murmur_analysis.core.blocks.text_chars` do, from these tables
    rather than a copy. Its text columns follow :func:`~murmur_analysis.core.blocks.message_text`,
    :func:`~murmur_analysis.core.blocks.reasoning_text` and :func:`~murmur_analysis.core.blocks.joined_text`.
    """
    def kind(cls: type) -> str:
        return str(cls.kind)  # type: ignore[attr-defined]

    fields: dict[str, list[tuple[str, bool, bool]]] = {}
    for cls in _TAGS["murmur"].values():
        spec = _SPECS.get(cls, ())
        if any(typ not in (None, str) for _, _, typ in spec):
            raise TypeError(f"{cls.__name__}: the native scan checks only string-typed fields")
        fields[kind(cls)] = [(name, required, typ is str) for name, required, typ in spec]
    return BlockRules(
        {tag: kind(cls) for tag, cls in _TAGS["murmur"].items()},
        fields,
        [kind(cls) for cls in TEXT_CLASSES],
        Text.kind,
        ToolUse.kind,
        ToolResult.kind,
        Unknown.kind,
        Thinking.kind,
    )
