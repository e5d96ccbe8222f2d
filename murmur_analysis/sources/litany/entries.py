"""Litany's ``messages/NNN-<origin>.<ext>`` entries: names, bodies and usage, as litany reads them.

The naming rules are the seed assembler's (litany ``src/prompt/dispatch/assembler.rs``):

* ``NNN`` is the part of the file name before the first ``-``, parsed as Rust parses a
  ``u32`` (ASCII digits with an optional leading ``+``, at most 4294967295); any other name
  is not an entry. Entries sort by ``NNN`` numerically, ties in git tree order.
* A name whose extension is ``md`` composes user-side: one text block of the whole file
  (UTF-8), the origin being the sender (the stem after ``NNN-``).
* Any other name is a JSON entry (a bare block array or ``{"content": [...], "usage": {...}}``)
  composing tool-side iff the origin (the stem after its first ``-``) is exactly ``tool``,
  else assistant-side, the origin being the model id (hyphens kept).

Token counters follow ``docs/tokens.md`` (``## litany``): :func:`normalize_usage`, with the API chosen
by :func:`murmur_analysis.core.providers.resolve`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from ...core.model import Block, Text, Usage
from ...core.providers import Resolved, as_resolved
from ...core.values import read_counter
from ...core.wire import blocks_from_wire

__all__ = [
    "EntryName",
    "Parsed",
    "entry_name",
    "normalize_usage",
    "parse_body",
]

_U32 = re.compile(r"\A\+?[0-9]+\Z")
_U32_MAX = 0xFFFFFFFF
_COUNTERS = {
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "input_total_tokens",
    "context_window",
    "thinking_tokens",
}

@dataclass(frozen=True, slots=True)
class EntryName:
    """What a file name under ``messages/`` says about its entry."""

    seq: int
    side: str
    origin: str
    is_md: bool


def _split_ext(name: str) -> tuple[str, str | None]:
    # Rust's Path::file_stem / Path::extension.
    if name == "..":
        return name, None
    before, dot, after = name.rpartition(".")
    if not dot or not before:
        return name, None
    return before, after


@lru_cache(maxsize=1 << 16)
def entry_name(name: str) -> EntryName | None:
    """Parse one file name of ``messages/``; ``None`` when it is not an entry.

    Args:
        name: the file name (no folder), e.g. ``002-claude-fable-5.json``.
    """
    head = name.split("-", 1)[0]
    if not _U32.match(head) or int(head) > _U32_MAX:
        return None
    stem, ext = _split_ext(name)
    origin = stem.split("-", 1)[1] if "-" in stem else ""
    if ext == "md":
        return EntryName(int(head), "user", origin, True)
    return EntryName(int(head), "tool" if origin == "tool" else "assistant", origin, False)


@dataclass(frozen=True, slots=True)
class Parsed:
    """One blob decoded: its blocks and raw usage counters, or why it could not be read."""

    blocks: tuple[Block, ...] = ()
    usage: Mapping[str, Any] | None = None
    error: str | None = None


def parse_body(data: bytes, is_md: bool) -> Parsed:
    """Decode an entry's bytes: a markdown delivery, or a JSON entry in either lawful shape."""
    if is_md:
        try:
            return Parsed((Text(data.decode("utf-8")),))
        except UnicodeDecodeError as err:
            return Parsed(error=f"not UTF-8 text: {err}")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        return Parsed(error=f"not JSON: {err}")
    if isinstance(value, list):
        return Parsed(blocks_from_wire(value, "brazen"))
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        usage = value.get("usage")
        return Parsed(blocks_from_wire(value["content"], "brazen"), usage if isinstance(usage, dict) else None)
    return Parsed(error="neither a block array nor an object with a content array")


def normalize_usage(raw: Mapping[str, Any] | None, resolved: Resolved | str | None) -> Usage | None:
    """Litany usage counters (an entry's ``usage`` or a folded ``usage`` event) normalized.

    brazen writes the provider's counters under its own names (``usage.rs``).
    ``input_total_tokens`` wins when reported; otherwise the API's accounting decides whether
    ``input_tokens`` holds the cache slices (OpenAI, Google) or not (Anthropic).
    ``thinking_tokens`` is the reasoning split, and wherever brazen writes it its
    ``output_tokens`` already excludes it (``with_thinking``: 396 completion tokens of which
    383 reasoning are written as 13 + 383), for every provider: nothing is subtracted.
    Counters this toolkit does not know, and known ones that are not integers, ride through in
    ``Usage.extra`` (the latter also as a problem).

    Args:
        raw: the counters as written.
        resolved: the API the call went through (:func:`murmur_analysis.core.providers.resolve`), or
            a family or provider row name (:func:`murmur_analysis.core.providers.as_resolved`).

    Returns:
        The usage, or ``None`` when nothing was reported.
    """
    if not raw:
        return None
    problems: list[str] = []
    known = {k: read_counter(v, k, problems) for k, v in raw.items() if k in _COUNTERS}
    extra = {k: v for k, v in raw.items() if k not in _COUNTERS or (v is not None and known.get(k) is None)}
    if not any(v is not None for v in known.values()) and not extra:
        return None
    acct = as_resolved(resolved).accounting
    return Usage.normalize(
        input_tokens=known.get("input_tokens"),
        output_tokens=known.get("output_tokens"),
        cache_read_tokens=known.get("cache_read_tokens"),
        cache_write_tokens=known.get("cache_write_tokens"),
        input_total_tokens=known.get("input_total_tokens"),
        reasoning_tokens=known.get("thinking_tokens"),
        cache_in_input=acct.cache_in_input,
        reasoning_in_output=False,
        cache_write_slice=acct.cache_write_slice,
        context_window=known.get("context_window"),
        extra=extra,
        problems=problems,
    )
