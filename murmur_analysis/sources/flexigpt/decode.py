"""FlexiGPT's conversation file decoded: one parsed ``conversations_v1`` JSON into a conversation.

Decoding rules (what the tables show):

* One :class:`~murmur_analysis.core.model.Entry` per ``ConversationMessage``; ``position`` is the
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
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from ...core.handoff import Summary, ToolMeta, UsageRow
from ...core.model import (
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
)
from ...core.providers import FLEXIGPT_TABLE, Resolved, as_resolved, resolve
from ...core.values import Reporter, held, read_counter, rfc3339_datetime

__all__ = ["api_of", "decode", "normalize_usage"]


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


def normalize_usage(raw: Mapping[str, object], resolved: Resolved | str | None) -> Usage | None:
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
    extra: dict[str, object] = {k: v for k, v in raw.items() if k not in _USAGE_KEYS}
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


def _content_block(item: object) -> Block:
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


def _contents(payload: Mapping[str, object]) -> list[Block]:
    items = payload.get("contents")
    return [_content_block(c) for c in items] if isinstance(items, list) else []


def _strings(value: object) -> list[str]:
    return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []


def _reasoning(payload: Mapping[str, object]) -> Block:
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


def _tool_call(payload: Mapping[str, object], kind: str, meta: dict[str, ToolMeta]) -> Block:
    call_id, name = payload.get("callID"), payload.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        return Unknown({"kind": kind, kind: dict(payload)})
    extra = {k: v for k, v in payload.items() if k not in ("callID", "name")}
    extra["kind"] = kind
    raw = payload.get("arguments")
    args: object = None
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


def _tool_output(payload: Mapping[str, object], kind: str) -> Block:
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


def _union_blocks(union: object, meta: dict[str, ToolMeta]) -> list[Block]:
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


def _error_text(raw: object) -> str | None:
    if not isinstance(raw, Mapping):
        return None
    code, message = raw.get("code"), raw.get("message")
    code = code if isinstance(code, str) and code else None
    message = message if isinstance(message, str) and message else None
    if code and message:
        return f"{code}: {message}"
    return code or message


def decode(data: Mapping[str, object], path: str, diagnostics: Reporter) -> tuple[str | None, list[Entry], Summary]:
    """Decode one parsed conversation file (of a known schema version).

    Args:
        data: the parsed document.
        path: the file it was read from (what a diagnostics row names).
        diagnostics: where a ``createdAt`` no timestamp holds is reported (``bad_time``).

    Returns:
        The conversation id the document holds (``None`` when it holds none), its entries,
        and what reading them taught: usage rows, title and tool timings.
    """
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
        at = held(rfc3339_datetime(msg.get("createdAt")), diagnostics, path, f"messages[{index}].createdAt")
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
    summary = Summary(
        usage=tuple(usage_rows),
        title=title if isinstance(title, str) and title else None,
        tool_meta=meta,
    )
    return (conv_id if isinstance(conv_id, str) and conv_id else None), entries, summary
