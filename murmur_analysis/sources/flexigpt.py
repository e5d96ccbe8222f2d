"""FlexiGPT conversation stores: one pretty JSON file per conversation (formats.md §3).

Layout: ``<store>/conversations_v1/<YYYYMM>/<uuidv7>_<title>.json`` (seed era:
``conversationsv1``). A path may be the data folder holding the store, the store itself, one
month partition, or a single conversation file. ``conversations.fts.sqlite`` (the app's search
index) is not read.

Decoding rules (what the tables show):

* One :class:`~murmur_analysis.model.Entry` per ``ConversationMessage``; ``position`` is the
  message's index, ``id``/``created_at`` are the message's own (RFC 3339 with nanoseconds, cut
  to microseconds, UTC), ``side`` is its ``role``.
* Blocks are ``inputs`` then ``outputs`` in order. Tool outputs a user turn starts with stay
  *inside* that user entry as ``ToolResult`` blocks: the calls they answer sit in the assistant
  entry before, so pairing and orphan dropping see call then result, and each stored message
  stays one row.
* ``functionToolCall``/``customToolCall`` become ``ToolUse`` (``id`` = ``callID``; ``input`` =
  the parsed ``arguments`` when they are JSON, else the string; the raw ``arguments`` string is
  kept in ``extra["arguments"]`` and its UTF-8 size is the call's ``input_bytes``).
  ``…ToolOutput`` become ``ToolResult`` (``is_error`` = ``isError``). Web search calls and
  outputs are provider-executed: ``ServerToolUse``/``ServerToolResult`` (``is_error`` =
  ``isError`` too). Unknown kinds are kept whole as ``Unknown``.
* ``modelParam.name`` names the model; ``modelPresetRef.providerName`` names the provider
  preset, whose SDK decides what the usage counters mean (:func:`api_of`). Both carry over to
  later turns that omit them, as the app does. The model is set on assistant entries only (a
  user turn is not produced by a model).
* ``usage`` is normalized per provider (``docs/tokens.md``); ``error`` becomes
  ``"<code>: <message>"``; ``status`` is kept.

Conversations are listed newest first, in descending UUIDv7 order, like the app: month
partitions newest first, files within one partition newest first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import orjson

from ..cursor import paginate
from ..handoff import Conversation, ToolMeta, UsageRow
from ..model import (
    Block,
    Entry,
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
    Usage,
    read_counter,
)
from ..providers import FLEXIGPT_TABLE, Resolved, as_resolved, resolve
from .base import Diagnostics, Source
from .files import NotRegularFile, entry_is_dir, is_dir, listing, open_regular, read_regular

__all__ = [
    "SCHEMA_VERSIONS",
    "STORE_DIRS",
    "ConversationListItem",
    "FlexiGPTSource",
    "api_of",
    "decode",
    "normalize_usage",
    "parse_rfc3339",
]

#: The store folder names: the current one first, then the seed era's.
STORE_DIRS = ("conversations_v1", "conversationsv1")
#: The ``schemaVersion`` values this reader decodes (the seed era's and the current one).
SCHEMA_VERSIONS = frozenset({"v1.0.0", "v1"})

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_FILE = re.compile(rf"^({_UUID})(?:_.*)?\.json$")
_PARTITION = re.compile(r"^[0-9]{6}$")
_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$"
)
_PEEK = 4096


def parse_rfc3339(value: Any) -> datetime | None:
    """An RFC 3339 time (Go's ``time.Time`` JSON, up to nanoseconds) as aware UTC.

    Fractions beyond microseconds are cut (not rounded); Go's zero time and anything that does
    not parse give ``None``.
    """
    if not isinstance(value, str):
        return None
    m = _RFC3339.match(value)
    if m is None:
        return None
    date, clock, frac, zone = m.groups()
    text = f"{date}T{clock}"
    if frac:
        text += "." + frac[:6].ljust(6, "0")
    text += "+00:00" if zone in ("Z", "z") else zone
    try:
        at = datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return None
    return None if at.year <= 1 else at


def api_of(provider_name: str | None, model: str | None) -> Resolved:
    """The SDK a turn was served through: the provider preset decides, else the model name.

    ``modelPresetRef.providerName`` names an inference-go provider preset, whose SDK type
    (``modelpreset/provider_*.go``) fixes what the counters mean: ``anthropic``, ``ollama`` and
    ``moonshot`` speak the Anthropic Messages API, ``googlegemini`` Google's
    ``generateContent``, every other built-in preset an OpenAI API. A provider name no preset
    has (a user-defined provider) says nothing of its SDK: the model name is read, as a guess.
    """
    return resolve(provider_name, model, FLEXIGPT_TABLE)


_USAGE_KEYS = ("inputTokensTotal", "inputTokensCached", "inputTokensUncached", "outputTokens", "reasoningTokens")


def normalize_usage(raw: Mapping[str, Any], resolved: Resolved | str | None) -> Usage | None:
    """FlexiGPT's ``Usage`` as normalized counters (see ``docs/tokens.md``).

    inference-go fills ``spec.Usage`` per SDK: ``inputTokensTotal`` is the whole prompt,
    ``inputTokensCached`` its cached slice and ``inputTokensUncached`` the rest (checked against
    them where the API has no other slice); the OpenAI SDKs' ``outputTokens`` holds
    ``reasoningTokens`` (subtracted), Google's does not; the Anthropic SDK writes
    ``reasoningTokens`` 0 for "not reported" (null here; a non-zero value rides in ``extra``)
    and keeps no cache-write slice. A usage whose counters are all 0 (a failed turn) is no usage.
    ``resolved`` is :func:`api_of`'s answer, or a family or provider preset name.
    """
    problems: list[str] = []
    total, cached, uncached, output, reasoning = (read_counter(raw.get(k), k, problems) for k in _USAGE_KEYS)
    if all(c is None or c == 0 for c in (total, cached, uncached, output, reasoning)) and not problems:
        return None
    extra: dict[str, Any] = {k: v for k, v in raw.items() if k not in _USAGE_KEYS}
    acct = as_resolved(resolved, FLEXIGPT_TABLE).accounting
    if acct.family == "anthropic":
        if reasoning:
            extra["reasoningTokens"] = reasoning
        reasoning = None
    return Usage.normalize(
        input_tokens=total,
        output_tokens=output,
        cache_read_tokens=cached,
        input_total_tokens=total,
        uncached_tokens=uncached,
        reasoning_tokens=reasoning,
        cache_in_input=True,
        reasoning_in_output=acct.reasoning_in_output,
        cache_write_slice=acct.cache_write_slice,
        extra=extra,
        problems=problems,
    )


# -- blocks -----------------------------------------------------------------------------------

_ITEM_KEYS = {"text": "textItem", "image": "imageItem", "file": "fileItem", "refusal": "refusalItem"}


def _content_block(item: Any) -> Block:
    if not isinstance(item, Mapping):
        return Unknown(item)
    kind = item.get("kind")
    payload = item.get(_ITEM_KEYS.get(kind, ""), None) if isinstance(kind, str) else None
    if not isinstance(payload, Mapping):
        return Unknown(dict(item))
    if kind == "text" and isinstance(payload.get("text"), str):
        rest = {k: v for k, v in payload.items() if k != "text"}
        return Text(payload["text"], rest) if rest else Text(payload["text"])
    if kind == "refusal" and isinstance(payload.get("refusal"), str):
        rest = {k: v for k, v in payload.items() if k != "refusal"}
        return Refusal(payload["refusal"], rest) if rest else Refusal(payload["refusal"])
    if kind == "image":
        return Image(dict(payload))
    if kind == "file":
        return File(dict(payload))
    return Unknown(dict(item))


def _contents(payload: Mapping[str, Any]) -> list[Block]:
    items = payload.get("contents")
    return [_content_block(c) for c in items] if isinstance(items, list) else []


def _strings(value: Any) -> list[str]:
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def _reasoning(payload: Mapping[str, Any]) -> Block:
    thinking, summary = _strings(payload.get("thinking")), _strings(payload.get("summary"))
    redacted, encrypted = _strings(payload.get("redactedThinking")), _strings(payload.get("encryptedContent"))
    extra = {k: v for k, v in payload.items() if k not in ("id", "signature")}
    if not thinking and not summary and redacted and not encrypted:
        return RedactedThinking("\n".join(redacted), extra)
    rid, signature = payload.get("id"), payload.get("signature")
    return Thinking(
        "\n\n".join(thinking or summary),
        signature if isinstance(signature, str) and signature else None,
        rid if isinstance(rid, str) and rid else None,
        "\n".join(encrypted) if encrypted else None,
        extra,
    )


def _tool_call(payload: Mapping[str, Any], kind: str, meta: dict[str, ToolMeta]) -> Block:
    call_id, name = payload.get("callID"), payload.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        return Unknown({"kind": kind, kind: dict(payload)})
    extra = {k: v for k, v in payload.items() if k not in ("callID", "name")}
    extra["kind"] = kind
    raw = payload.get("arguments")
    args: Any = None
    if isinstance(raw, str):
        meta[call_id] = ToolMeta(input_bytes=len(raw.encode()))
        try:
            args = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            args = raw  # custom tools take free-form text
    if kind == "webSearchToolCall":
        if args is None and "webSearchToolCallItems" in payload:
            args = payload["webSearchToolCallItems"]
        return ServerToolUse(call_id, name, args, extra)
    return ToolUse(call_id, name, args, None, extra)


def _tool_output(payload: Mapping[str, Any], kind: str) -> Block:
    call_id = payload.get("callID")
    if not isinstance(call_id, str):
        return Unknown({"kind": kind, kind: dict(payload)})
    extra = {k: v for k, v in payload.items() if k not in ("callID", "contents", "isError")}
    extra["kind"] = kind
    is_error = payload.get("isError")
    if kind == "webSearchToolOutput":
        return ServerToolResult("web_search_tool_result", call_id, payload.get("webSearchToolOutputItems"), extra,
                                is_error if isinstance(is_error, bool) else None)
    return ToolResult(call_id, tuple(_contents(payload)), is_error if isinstance(is_error, bool) else None, extra)


def _union_blocks(union: Any, meta: dict[str, ToolMeta]) -> list[Block]:
    """The blocks of one ``InputUnion``/``OutputUnion``."""
    if not isinstance(union, Mapping):
        return [Unknown(union)]
    kind = union.get("kind")
    payload = union.get(kind) if isinstance(kind, str) else None
    if not isinstance(payload, Mapping):
        return [Unknown(dict(union))]
    if kind in ("inputMessage", "outputMessage"):
        return _contents(payload)
    if kind == "reasoningMessage":
        return [_reasoning(payload)]
    if kind in ("functionToolCall", "customToolCall", "webSearchToolCall"):
        return [_tool_call(payload, kind, meta)]
    if kind in ("functionToolOutput", "customToolOutput", "webSearchToolOutput"):
        return [_tool_output(payload, kind)]
    return [Unknown(dict(union))]


# -- conversations ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConversationListItem:
    """One conversation in a listing (the app's ``ConversationListItem`` plus its file).

    Attributes:
        id: the conversation's UUIDv7 (from the file name).
        title: the sanitized title in the file name.
        path: the conversation file.
    """

    id: str
    title: str
    path: str


def _error_text(raw: Any) -> str | None:
    if not isinstance(raw, Mapping):
        return None
    code, message = raw.get("code"), raw.get("message")
    code = code if isinstance(code, str) and code else None
    message = message if isinstance(message, str) and message else None
    if code and message:
        return f"{code}: {message}"
    return code or message


def decode(data: Mapping[str, Any], path: str) -> Conversation:
    """Decode one parsed conversation file (of a known schema version) into a conversation."""
    entries: list[Entry] = []
    usage_rows: list[UsageRow] = []
    meta: dict[str, ToolMeta] = {}
    model: str | None = None
    provider_name: str | None = None
    messages = data.get("messages")
    for index, msg in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(msg, Mapping):
            entries.append(Entry(index, "unknown", (Unknown(msg),)))
            continue
        param, preset = msg.get("modelParam"), msg.get("modelPresetRef")
        if isinstance(param, Mapping) and isinstance(param.get("name"), str) and param["name"]:
            model = param["name"]
        if isinstance(preset, Mapping):
            if isinstance(preset.get("providerName"), str) and preset["providerName"]:
                provider_name = preset["providerName"]
            if model is None and isinstance(preset.get("modelPresetID"), str) and preset["modelPresetID"]:
                model = preset["modelPresetID"]
        role = msg.get("role") if isinstance(msg.get("role"), str) and msg.get("role") else "unknown"
        blocks: list[Block] = []
        for key in ("inputs", "outputs"):
            unions = msg.get(key)
            if isinstance(unions, list):
                for union in unions:
                    blocks.extend(_union_blocks(union, meta))
        produced = role == "assistant"
        api = api_of(provider_name, model)
        usage = normalize_usage(msg["usage"], api) if isinstance(msg.get("usage"), Mapping) else None
        status = msg.get("status")
        msg_id = msg.get("id") if isinstance(msg.get("id"), str) else None
        at = parse_rfc3339(msg.get("createdAt"))
        entry = Entry(
            index,
            str(role),
            tuple(blocks),
            id=msg_id,
            model=model if produced else None,
            created_at=at,
            usage=usage,
            status=status if isinstance(status, str) and status else None,
            error=_error_text(msg.get("error")),
        )
        entries.append(entry)
        if usage is not None:
            usage_rows.append(UsageRow(usage, msg_id, index, entry.model, provider_name or api.family, at,
                                       found_in="entry", accounting=api.accounting.family, provider_source=api.source))
    conv_id = data.get("id")
    title = data.get("title")
    return Conversation(
        source="flexigpt",
        conversation_id=str(conv_id) if isinstance(conv_id, str) and conv_id else Path(path).stem.split("_")[0],
        entries=entries,
        key=path,
        title=title if isinstance(title, str) and title else None,
        path=path,
        usage=usage_rows,
        tool_meta=meta,
    )


def _json_files(folder: Path, diagnostics: Diagnostics | None) -> list[str]:
    """The names ending ``.json`` in ``folder``, whatever they are (a reader reports what is no file)."""
    return [e.name for e in listing(folder, diagnostics) if e.name.endswith(".json")]


def _newest_first(folders: list[Path], diagnostics: Diagnostics | None) -> Iterator[Path]:
    """The conversation files of some folders, merged newest first (descending UUIDv7, then name)."""
    found = [(f, name) for f in folders for name in _json_files(f, diagnostics)]

    def key(item: tuple[Path, str]) -> tuple[str, str]:
        m = _FILE.match(item[1])
        return (m.group(1).lower() if m else "", item[1])

    for folder, name in sorted(found, key=key, reverse=True):
        yield folder / name


def _store_files(roots: list[Path], diagnostics: Diagnostics | None) -> Iterator[Path]:
    """Every conversation file of some store folders, newest first: month partitions, then loose files.

    Only one partition's names are held at a time.
    """
    parts: set[str] = set()
    loose: list[Path] = []
    for root in roots:
        entries = listing(root, diagnostics)
        parts.update(e.name for e in entries if _PARTITION.match(e.name) and entry_is_dir(e))
        if any(e.name.endswith(".json") for e in entries):
            loose.append(root)
    for part in sorted(parts, reverse=True):
        yield from _newest_first([root / part for root in roots if is_dir(root / part)], diagnostics)
    yield from _newest_first(loose, diagnostics)


class FlexiGPTSource(Source):
    """FlexiGPT's JSON conversation store (both schema versions)."""

    name: ClassVar[str] = "flexigpt"
    description: ClassVar[str] = "FlexiGPT conversation stores (conversations_v1/ or conversationsv1/ JSON files)"

    def guess_can_open(self, path: Path) -> bool:
        """A store folder, a folder holding one, a month partition, or a ``<uuid>_<title>.json``."""
        if not is_dir(path):
            return _FILE.match(path.name) is not None and self._peek(path)
        if path.name in STORE_DIRS:
            return True
        if any(is_dir(path / d) for d in STORE_DIRS):
            return True
        return _PARTITION.match(path.name) is not None and path.parent.name in STORE_DIRS

    @staticmethod
    def _peek(path: Path) -> bool:
        try:
            with open_regular(path) as fh:
                head = fh.read(_PEEK)
        except NotRegularFile:  # claimed where a store keeps conversations, so that it is reported
            return path.parent.name in STORE_DIRS or _PARTITION.match(path.parent.name) is not None
        except OSError:
            return True  # named as a conversation file and unreadable: claimed, so that it is reported
        return head.lstrip().startswith(b"{") and (b'"messages"' in head or b'"createdAt"' in head)

    def files(self, path: Path, diagnostics: Diagnostics | None = None) -> Iterator[Path]:
        """Every conversation file under ``path``, newest first.

        Folders that cannot be listed are reported to ``diagnostics`` when it is given.
        """
        if not is_dir(path):
            yield path
            return
        stores = [path / d for d in STORE_DIRS if is_dir(path / d)]
        if stores:
            yield from _store_files(stores, diagnostics)
        elif _PARTITION.match(path.name):
            yield from _newest_first([path], diagnostics)
        else:
            yield from _store_files([path], diagnostics)

    def list_conversations(
        self, path: str | os.PathLike[str], cursor: str | None = None, limit: int = 12
    ) -> tuple[list[ConversationListItem], str | None, int]:
        """One page of the store's listing, newest first, through the cursor core.

        Args:
            path: a store, the folder holding it, a partition or a file.
            cursor: ``None`` for the newest page, or the ``next_cursor`` of the page before.
            limit: page size (the app's default is 12; the cursor core clamps to ``1..=100``).

        Returns:
            ``(items newest first, next_cursor, total)``.

        Raises:
            ReadMessagesError: ``invalid-cursor``.
        """
        items: list[ConversationListItem] = []
        for file in self.files(Path(path)):
            m = _FILE.match(file.name)
            stem = file.name[: -len(".json")]
            cid, _, title = stem.partition("_") if m else (stem, "", "")
            items.append(ConversationListItem(cid, title, str(file)))
        items.reverse()  # the cursor core takes items oldest first
        return paginate(items, cursor, limit)

    def open(self, path: Path, diagnostics: Diagnostics) -> Iterator[Conversation]:
        """Every readable conversation under ``path``, newest first.

        A file reached twice (through a linked folder) loads once, and two files holding one
        conversation id both load: the loader keys conversations on their files.
        """
        for file in self.files(path, diagnostics):
            conv = self._read(str(file), diagnostics)
            if conv is not None:
                yield conv

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode the conversation file ``key`` again (an empty conversation if it became unreadable)."""
        path = str(key)
        conv = self._read(path, diagnostics)
        if conv is None:
            return Conversation(self.name, Path(path).stem.split("_")[0], [], key=path, path=path)
        return conv

    def _read(self, path: str, diagnostics: Diagnostics) -> Conversation | None:
        raw = read_regular(path, diagnostics)
        if raw is None:
            return None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            diagnostics.report(path, "bad_json", f"not a JSON document ({err}); skipped")
            return None
        if not isinstance(data, dict) or not isinstance(data.get("messages", []), list):
            diagnostics.report(path, "bad_json", "not a FlexiGPT conversation object; skipped")
            return None
        version = data.get("schemaVersion")
        if not isinstance(version, str) or version not in SCHEMA_VERSIONS:  # a list or object too
            diagnostics.report(path, "unknown_schema",
                               f"schemaVersion {version!r} is not one this reader knows "
                               f"({', '.join(sorted(SCHEMA_VERSIONS))}); skipped, as the app skips it")
            return None
        return decode(data, path)
