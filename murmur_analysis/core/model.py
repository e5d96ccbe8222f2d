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
    "ABANDONED_STATUS",
    "API_ERROR_ORIGIN",
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


#: The origin of a message a runtime wrote in the model's place (Claude Code's ``<synthetic>`` and
#: ``isApiErrorMessage`` lines): an assistant message that no model answered.
API_ERROR_ORIGIN = "api_error"
#: The status of a message on a branch the user rewound away from (Claude Code): kept, not live.
ABANDONED_STATUS = "abandoned"


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
    * ``cache_write_5m_tokens`` and ``cache_write_1h_tokens`` split ``cache_write_tokens`` by
      how long the cache keeps it (Anthropic's 5-minute and 1-hour writes, priced apart); where
      the split is reported, ``cache_write_tokens`` is their sum.
    * A counter the provider did not report is ``None``, never 0.

    ``estimated_*`` hold a runtime's own estimates (murmur's cl100k counts) beside the
    provider's numbers; ``provider_input_tokens``/``provider_output_tokens`` keep the raw
    numbers as reported; ``extra`` keeps counters this toolkit does not know. ``problems``
    says, in sentences, what did not add up or could not be read (no value is clamped).
    ``counted_elsewhere`` marks an entry whose response is counted on another entry (Claude
    Code writes one response over several lines, and a resumed session copies lines into its
    new file): it reports no counter of its own, and it is no unreported response.
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
    cache_write_5m_tokens: int | None = None
    cache_write_1h_tokens: int | None = None
    extra: Mapping[str, object] = field(default=EMPTY, repr=False)
    problems: tuple[str, ...] = ()
    counted_elsewhere: bool = False

    @classmethod
    def normalize(
        cls,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        cache_write_5m_tokens: int | None = None,
        cache_write_1h_tokens: int | None = None,
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
            cache_write_5m_tokens: the part of the writes kept five minutes (Anthropic's
                ``cache_creation.ephemeral_5m_input_tokens``).
            cache_write_1h_tokens: the part kept one hour (``ephemeral_1h_input_tokens``). When
                either part is reported, ``cache_write_tokens`` is their sum (an unreported part
                counted as none) and a scalar that disagrees is kept in ``extra`` only.
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
        kept = dict(extra) if extra else {}
        if cache_write_5m_tokens is not None or cache_write_1h_tokens is not None:
            write = int64_held((cache_write_5m_tokens or 0) + (cache_write_1h_tokens or 0))
            if write is None:
                found.append("the 5-minute and 1-hour cache writes pass the int64 limit 2**63-1 together; "
                             "cache_write_tokens is read as not reported")
            if cache_write_tokens is not None and cache_write_tokens != write:
                kept["cache_write_tokens_reported"] = cache_write_tokens
        total, uncached, contradicted = _whole_prompt(
            input_tokens, read, write, input_total_tokens, uncached_tokens, cache_in_input, found
        )
        if not contradicted:
            uncached = _uncached_rest(total, read, write, uncached, cache_write_slice, found)
        output = _output_less_reasoning(output_tokens, reasoning_tokens, reasoning_in_output, found)
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
            cache_write_5m_tokens=cache_write_5m_tokens,
            cache_write_1h_tokens=cache_write_1h_tokens,
            extra=kept or EMPTY,
            problems=tuple(found),
        )

    @property
    def reported(self) -> bool:
        """Whether the provider reported any counter of the prompt or the output."""
        return (self.input_total_tokens is not None or self.output_tokens is not None
                or self.reasoning_tokens is not None or self.provider_output_tokens is not None)


def _whole_prompt(
    input_tokens: int | None,
    read: int | None,
    write: int | None,
    total: int | None,
    uncached: int | None,
    cache_in_input: bool,
    found: list[str],
) -> tuple[int | None, int | None, bool]:
    """The whole prompt and the uncached rest as the prompt counter gives them (:meth:`Usage.normalize`).

    Where the cached slices sit beside the prompt counter, the counter is the uncached rest and the
    whole prompt is it plus each reported slice; a whole prompt reported beside them must agree.
    Elsewhere the counter is the whole prompt, unless the runtime already computed one.

    Returns:
        The whole prompt, the uncached rest so far, and whether the counters contradict each
        other (the uncached rest is then null). What is wrong is appended to ``found``.
    """
    if cache_in_input or input_tokens is None:
        return (input_tokens if total is None else total), uncached, False
    summed = input_tokens + (read or 0) + (write or 0)
    if uncached is None:
        uncached = input_tokens
    if total is None:
        total = int64_held(summed)
        if total is None:
            found.append(f"input_tokens plus the cache slices ({summed}) pass the int64 limit 2**63-1; "
                         "input_total_tokens is read as not reported")
        return total, uncached, False
    if total != summed:
        found.append(f"input_total_tokens {total} is not input_tokens plus the cache slices ({summed})")
        return total, None, True
    return total, uncached, False


def _uncached_rest(
    total: int | None,
    read: int | None,
    write: int | None,
    uncached: int | None,
    cache_write_slice: bool,
    found: list[str],
) -> int | None:
    """The uncached rest of the prompt: the whole less the cache slices, where both are known.

    An uncached rest already known is checked against it; slices larger than the whole prompt, or
    a rest that disagrees, make it null, and what is wrong is appended to ``found``.
    """
    slices_known = read is not None and (write is not None or not cache_write_slice)
    if total is None or not slices_known:
        return uncached
    rest = total - (read or 0) - (write or 0)
    if rest < 0:
        found.append(f"the cache slices ({(read or 0) + (write or 0)}) exceed the whole prompt ({total})")
        return None
    if uncached is not None and uncached != rest:
        found.append(f"the uncached prompt reported ({uncached}) is not the whole prompt less the cache "
                     f"slices ({rest})")
        return None
    return rest


def _output_less_reasoning(
    output: int | None, reasoning: int | None, reasoning_in_output: bool, found: list[str]
) -> int | None:
    """The output counter without the reasoning split, where the provider's counter holds it.

    Reasoning larger than the output that holds it makes the output null, and is appended to ``found``.
    """
    if output is None or reasoning is None or not reasoning_in_output:
        return output
    if reasoning > output:
        found.append(f"reasoning_tokens {reasoning} exceed the output {output} that holds them")
        return None
    return output - reasoning


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
