"""The blocks: every piece of content a conversation holds, and what reads their text.

A *block* is one piece of content. Every block kind that brazen (litany), murmur or FlexiGPT
writes has a class here; a block of any other kind, or one whose required fields are missing or
of the wrong type, becomes :class:`Unknown` and keeps its whole JSON object. Nothing is coerced
to text. Keys a block class does not model ride along in ``extra``
(:mod:`murmur_analysis.core.wire` decodes and encodes them).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

__all__ = [
    "EMPTY",
    "TEXT_CLASSES",
    "Block",
    "Document",
    "File",
    "Image",
    "RedactedThinking",
    "Refusal",
    "ServerToolResult",
    "ServerToolUse",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "Unknown",
    "block_kind",
    "joined_text",
    "message_text",
    "reasoning_text",
    "text_chars",
]


class _EmptyExtra(Mapping[str, object]):
    """The shared, immutable, hashable empty ``extra`` of blocks that have no extra keys."""

    def __getitem__(self, key: str) -> object:
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


EMPTY: Mapping[str, object] = _EmptyExtra()


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text."""

    text: str
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "text"


@dataclass(frozen=True, slots=True)
class Image:
    """An image; ``source`` is kept as the runtime wrote it (base64 or url)."""

    source: object
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "image"


@dataclass(frozen=True, slots=True)
class Document:
    """A document (PDF, text) attached by reference or inline."""

    source: object
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "document"


@dataclass(frozen=True, slots=True)
class File:
    """A file item (FlexiGPT ``fileItem``); ``data`` is the item as written."""

    data: object
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "file"


@dataclass(frozen=True, slots=True)
class Refusal:
    """A model's refusal text (FlexiGPT ``refusalItem``)."""

    text: str
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "refusal"


@dataclass(frozen=True, slots=True)
class Thinking:
    """Visible reasoning, with the provider's signature when it gave one."""

    text: str
    signature: str | None = None
    id: str | None = None
    encrypted_content: str | None = None
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "thinking"


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """Reasoning the provider returned only as opaque data."""

    data: str
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A client tool call (brazen ``tool_use``, murmur ``tool_call``)."""

    id: str
    name: str
    input: object = None
    signature: str | None = None
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "tool_use"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A client tool result answering the :class:`ToolUse` named by ``tool_use_id``.

    ``content`` is ``None`` when the wire object carried no ``content`` key.
    """

    tool_use_id: str
    content: tuple[Block, ...] | None = None
    is_error: bool | None = None
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    kind: ClassVar[str] = "tool_result"


@dataclass(frozen=True, slots=True)
class ServerToolUse:
    """A provider-executed tool call (web search and the like), carried opaque."""

    id: str
    name: str
    input: object = None
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
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
    content: object = None
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    is_error: bool | None = None
    kind: ClassVar[str] = "server_tool_result"


@dataclass(frozen=True, slots=True)
class Unknown:
    """A block this toolkit does not model, kept whole: ``data`` is the wire value."""

    data: object
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


def block_kind(block: Block) -> str:
    """The kind a block is listed under: its class's kind, or an unknown block's own tag."""
    if type(block) is Unknown:
        return block.type or "unknown"
    return str(block.kind)



#: The blocks whose ``text`` is human-readable text (what :func:`text_chars` counts).
TEXT_CLASSES: tuple[type, ...] = (Text, Thinking, Refusal)


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
        if kind in TEXT_CLASSES:
            total += len(block.text)  # type: ignore[union-attr]
        elif isinstance(block, ToolResult) and block.content:
            total += text_chars(block.content)
    return total
