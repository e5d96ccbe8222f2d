"""The canonical model every source decodes into: blocks, usage, entries and messages.

The block classes live in :mod:`murmur_analysis.core.blocks` (and are named here too, as part of the
model); the wire codec that reads and writes them lives in :mod:`murmur_analysis.core.wire`.

An :class:`Entry` is one element of a conversation as its source stored it (a murmur line, a
litany ``messages/NNN-*`` file, a FlexiGPT message), in order. The cursor core pages entries;
the assembly core groups them into :class:`Message` objects. :class:`Usage` holds the token
counters of one model response, normalized.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .blocks import (
    EMPTY,
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
from .values import int64_held
from .wire import blocks_to_wire

__all__ = [
    "Block",
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
    "sorted_entries",
]


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
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
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
        extra: Mapping[str, object] | None = None,
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
                total = int64_held(summed)
                if total is None:
                    found.append(f"input_tokens plus the cache slices ({summed}) pass the int64 limit 2**63-1; "
                                 "input_total_tokens is read as not reported")
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
            extra=dict(extra) if extra else EMPTY,
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
    raw: object = field(default=None, repr=False, compare=False)
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
    def content(self) -> list[object]:
        """The blocks as brazen block dicts."""
        return blocks_to_wire(self.blocks, "brazen")



def sorted_entries(entries: Iterable[Entry]) -> Sequence[Entry]:
    """Entries in ascending ``position``, ties in the order given (a stable sort)."""
    ordered = list(entries)
    if any(a.position > b.position for a, b in itertools.pairwise(ordered)):
        ordered.sort(key=lambda e: e.position)
    return ordered
