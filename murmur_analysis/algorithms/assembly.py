"""The assembly core: litany's ``assemble`` and ``drop_orphans``, exactly, for every source.

Entries are taken in ``position`` order (a stable sort: litany sorts by the parsed ``NNN``
counter); each composes onto its side, and consecutive same-side entries join one message.
:func:`transcript` stops there: it is the record's own, unfiltered view. :func:`assemble` then
drops every orphan ``tool_result`` (a result whose ``tool_use`` no message at or before it
carries), names the dropped ids in the order met, removes messages left empty and merges
neighbours that now share a role.

:func:`murmur_analysis.algorithms.pairing.pair_tools` walks the same grouping once more for analysis:
every call with its result (or none), every result with no call, with positions. Its
``orphan_result`` rows are exactly the results :func:`assemble` drops, in the same order, so
tool error rates and orphan counts come from one place for every source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..core.model import Block, Entry, Message, ToolResult, ToolUse, sorted_entries
from .pairing import MessageRuns

__all__ = ["Assembled", "assemble", "drop_orphans", "group", "transcript"]


@dataclass(frozen=True, slots=True)
class Assembled:
    """An assembled wire history and what assembly refused to send with it.

    Attributes:
        messages: the wire messages, roles alternating, no orphan result in them.
        dropped_orphans: ``tool_use_id`` of every orphan ``tool_result`` dropped, in the order
            met. Empty for every history no cut has split.
    """

    messages: list[Message]
    dropped_orphans: list[str]


def group(entries: Iterable[Entry]) -> Iterator[list[Entry]]:
    """Entries in position order, cut into runs of the same side (one run per message)."""
    runs = MessageRuns()
    run: list[Entry] = []
    current = -1
    for entry in sorted_entries(entries):
        message = runs.next(entry.side)
        if message != current and run:
            yield run
            run = []
        current = message
        run.append(entry)
    if run:
        yield run


def transcript(entries: Iterable[Entry]) -> list[Message]:
    """Group entries into the unfiltered transcript, orphans kept.

    This is litany's ``transcript()``: the record's own view.
    """
    messages: list[Message] = []
    for run in group(entries):
        blocks: list[Block] = []
        for entry in run:
            blocks.extend(entry.blocks)
        messages.append(Message(run[0].side, tuple(blocks)))
    return messages


def drop_orphans(messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """Litany's ``drop_orphans``: remove results with no earlier call, then regroup.

    Args:
        messages: a grouped wire history.

    Returns:
        ``(messages, dropped)``: the lawful history and the dropped ``tool_use_id`` values in
        the order met.
    """
    called: set[str] = set()
    dropped: list[str] = []
    kept: list[Message] = []
    for message in messages:
        for block in message.blocks:
            if isinstance(block, ToolUse):
                called.add(block.id)
        blocks: list[Block] = []
        for block in message.blocks:
            if isinstance(block, ToolResult) and block.tool_use_id not in called:
                dropped.append(block.tool_use_id)
            else:
                blocks.append(block)
        if blocks:
            kept.append(Message(message.role, tuple(blocks)))
    grouped: list[Message] = []
    runs = MessageRuns()  # neighbours that now share a side join, as entries do
    for message in kept:
        if runs.next(message.role) < len(grouped):
            grouped[-1] = Message(message.role, grouped[-1].blocks + message.blocks)
        else:
            grouped.append(message)
    return grouped, dropped


def assemble(entries: Iterable[Entry]) -> Assembled:
    """Assemble entries into the wire history litany would send.

    Args:
        entries: a conversation's entries, from any source.

    Returns:
        The messages (brazen block dicts through :attr:`Message.content`) and the dropped
        orphan ids.
    """
    messages, dropped = drop_orphans(transcript(entries))
    return Assembled(messages, dropped)
