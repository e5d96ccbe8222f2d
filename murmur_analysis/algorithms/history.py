"""The history core: a conversation's size after each of its states.

A conversation's history is a sequence of states: after each message (murmur, FlexiGPT,
dispatch), after each commit (litany), after a compaction. What the history core is told is
one of two events:

- :class:`Appended`: these entries were appended after every entry held (a message arrived,
  a commit added files; no entries: the state stands, as after a commit that left the
  transcript alone);
- :class:`Reset`: the history was rewritten to these entries (a rebase, a compaction that
  removed or replaced entries); nothing held before counts any more.

and what it answers, for each state, is a :class:`State`: the entries held, their text
characters (:func:`~murmur_analysis.core.model.text_chars`), the tokens in context
(:func:`context_tokens`, the one home of that rule) and the orphan tool results assembly
would drop from it (the assembly core's pairing walk, fed as the state grows).

A state costs what it appends: the sums and the pairing walk carry forward, so a long history
of small appends is linear, and a reset costs the entries it holds.

The per-message path of the frame builder streams chunks of columns through
:meth:`History.append_columns`, one state per entry, without building entries. A history whose
points mostly leave it alone (a litany branch's commits, most of which touch no entry) is told
only the events that change it; :class:`Timeline` spreads their states over every point, as
columns.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..core.blocks import text_chars
from ..core.model import Entry, Usage, sorted_entries
from ..core.values import counter_sum
from .pairing import Pairer

__all__ = ["Appended", "Event", "Grown", "History", "Reset", "State", "Timeline", "context_after", "context_tokens",
           "message_states", "replay", "running_context"]

_I64 = pa.int64()


def context_tokens(usage: Usage) -> int | None:
    """Tokens in context after one response: its whole prompt plus everything it generated.

    That is ``input_total_tokens + output_tokens + reasoning_tokens`` (reasoning included);
    ``None`` when the response did not report its prompt, or when the sum passes ``int64``
    (:func:`~murmur_analysis.core.values.int64_held`).
    """
    if usage.input_total_tokens is None:
        return None
    return counter_sum((usage.input_total_tokens, usage.output_tokens, usage.reasoning_tokens))[0]


def running_context(usages: Sequence[Usage | None], previous: int | None) -> list[int | None]:
    """The tokens in context after each entry, given each entry's response usage.

    Args:
        usages: each entry's usage (``None``: the entry holds no response).
        previous: the tokens in context before the first entry.

    Returns:
        One value per entry: the last response at or before it that reported its prompt
        (:func:`context_tokens`, null where its sum passes ``int64``), else ``previous``.
    """
    last, values = _last_reported(usages, np.zeros(1, dtype=np.int64))
    return [values[k] if k >= 0 else previous for k in last.tolist()]


def context_after(usages: Sequence[Usage | None], previous: int | None) -> int | None:
    """The tokens in context after the last of ``usages``: the last of :func:`running_context`, in one pass.

    The last response among them that reported its prompt (:func:`context_tokens`), else ``previous``.
    """
    for usage in reversed(usages):
        if usage is not None and usage.input_total_tokens is not None:
            return context_tokens(usage)
    return previous


def _last_reported(usages: Sequence[Usage | None], starts: np.ndarray) -> tuple[np.ndarray, list[int | None]]:
    """For each entry, which response at or before it in its history last reported its prompt.

    Args:
        usages: each entry's usage, the histories laid end to end.
        starts: the index of each history's first entry (ascending, the first 0).

    Returns:
        Per entry, the index into the second list of that response's tokens in context
        (:func:`context_tokens`), ``-1`` where no response of its history has reported one yet.
    """
    reported = [i for i, u in enumerate(usages) if u is not None and u.input_total_tokens is not None]
    values = [context_tokens(u) for u in usages if u is not None and u.input_total_tokens is not None]
    n = len(usages)
    at = np.full(n, -1, dtype=np.int64)
    at[np.asarray(reported, dtype=np.int64)] = np.asarray(reported, dtype=np.int64)
    at = np.maximum.accumulate(at) if n else at
    first = np.repeat(starts, np.diff(np.append(starts, n)))  # each entry's history's first entry
    last = np.where(at >= first, np.searchsorted(np.asarray(reported, dtype=np.int64), at), -1)
    return last, values


@dataclass(frozen=True, slots=True)
class Appended:
    """These entries were appended, in position order, after every entry held.

    Attributes:
        entries: the entries appended (none: the state stands).
    """

    entries: Sequence[Entry]


@dataclass(frozen=True, slots=True)
class Reset:
    """The history was rewritten to these entries (any order: they are sorted by position).

    Attributes:
        entries: every entry of the new state.
    """

    entries: Sequence[Entry]


#: What happened to a history between two states.
Event = Appended | Reset


@dataclass(frozen=True, slots=True)
class State:
    """A history's size at one state.

    Attributes:
        messages: entries held.
        chars: their text characters.
        context_tokens: tokens in context (:func:`running_context`), ``None`` when no
            response held reported its prompt.
        dropped: the orphan results assembly drops from the state, by id, in the order met.
    """

    messages: int
    chars: int
    context_tokens: int | None
    dropped: tuple[str, ...]

    @property
    def orphans(self) -> int:
        """How many orphan results assembly drops from the state."""
        return len(self.dropped)


@dataclass(frozen=True, slots=True)
class Grown:
    """The states after each entry of a chunk (:meth:`History.append_columns`), as int64 columns.

    Attributes:
        messages: entries held after each entry.
        chars: text characters held after each entry.
        context_tokens: tokens in context after each entry (null where none is known).
    """

    messages: pa.Array
    chars: pa.Array
    context_tokens: pa.Array


class History:
    """One conversation's history, told event by event; answers its size after each.

    Args:
        usage: the response usage of an entry, where the source settled it elsewhere (a
            litany step's sealing attempt); by default the entry's own.
        orphans: run the pairing walk, so each :class:`State` names its dropped orphans
            (``False``: ``dropped`` stays empty).
    """

    def __init__(self, usage: Callable[[Entry], Usage | None] | None = None, orphans: bool = True) -> None:
        self._usage = usage
        self._orphans = orphans
        self._state: State | None = None
        self._messages = 0
        self._chars = 0
        self._context: int | None = None
        self._pairer = Pairer(keep_inputs=False, rows=False)

    @property
    def state(self) -> State:
        """The current state (before any event: the empty one)."""
        if self._state is None:
            dropped = tuple(self._pairer.dropped_orphans()) if self._orphans and self._messages else ()
            self._state = State(self._messages, self._chars, self._context, dropped)
        return self._state

    def tell(self, event: Event) -> State:
        """Take one event; return the state it leaves."""
        if isinstance(event, Reset):
            return self.reset(event.entries)
        return self.append(event.entries)

    def append(self, entries: Iterable[Entry]) -> State:
        """Entries appended after every entry held, in position order; return the new state.

        Raises:
            ValueError: an entry sorts before one held (with ``orphans``: the pairing walk's).
        """
        added = list(entries)
        if not added:
            return self.state
        for entry in added:
            if self._orphans:
                self._pairer.feed(entry)
            self._chars += text_chars(entry.blocks)
        self._messages += len(added)
        usages = [self._usage(e) for e in added] if self._usage is not None else [e.usage for e in added]
        self._context = context_after(usages, self._context)
        self._state = None
        return self.state

    def reset(self, entries: Iterable[Entry]) -> State:
        """The history rewritten to ``entries``; return the new state."""
        self._messages, self._chars, self._context = 0, 0, None
        self._pairer = Pairer(keep_inputs=False, rows=False)
        self._state = None
        return self.append(sorted_entries(entries))

    def append_columns(self, chars: pa.Array, usages: Sequence[Usage | None] | None) -> Grown:
        """A chunk of entries appended, each one a state: the columnar path of a long record.

        Args:
            chars: each entry's text characters (int64, no nulls).
            usages: each entry's usage, or ``None`` when no entry of the chunk has any.

        Returns:
            The size after each entry (:func:`message_states`, going on from the state held). No
            pairing walk runs on this path, so no orphans are counted.
        """
        n = len(chars)
        grown = _states(chars.to_numpy(zero_copy_only=False), usages, np.zeros(1, dtype=np.int64),
                        (self._messages, self._chars, self._context))
        if n:
            self._messages += n
            self._chars = int(grown.chars[-1].as_py())
            self._context = grown.context_tokens[-1].as_py()
            self._state = None
        return grown


def message_states(chars: np.ndarray, usages: Sequence[Usage | None] | None, starts: np.ndarray) -> Grown:
    """The size after each entry of many histories laid end to end, each told from empty, one state per entry.

    What :meth:`History.append_columns` answers for each history's entries, for a batch of
    conversations at once (no Python runs per entry, except over the usage of responses).

    Args:
        chars: each entry's text characters.
        usages: each entry's usage, or ``None`` when no entry has any.
        starts: the index of each history's first entry (ascending, the first 0; a history of no
            entry repeats the next one's start).
    """
    return _states(chars, usages, starts, (0, 0, None))


def _states(chars: np.ndarray, usages: Sequence[Usage | None] | None, starts: np.ndarray,
            before: tuple[int, int, int | None]) -> Grown:
    """:func:`message_states`, the first history going on from ``before`` (entries, characters, context)."""
    n = len(chars)
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.diff(np.append(starts, n))
    first = np.repeat(starts, lengths)  # each entry's history's first entry
    sums = np.cumsum(chars, dtype=np.int64)
    below = np.concatenate([np.zeros(1, dtype=np.int64), sums])[first]  # the characters before its history
    held, earlier, previous = before
    head = np.arange(n) < (starts[1] if len(starts) > 1 else n)  # the entries of the first history
    messages = np.arange(n, dtype=np.int64) - first + 1 + np.where(head, held, 0)
    sized = sums - below + np.where(head, earlier, 0)
    if usages:
        last, values = _last_reported(usages, starts)
        context = _context_at(pa.array([*values, previous], _I64), last, head, len(values))
    elif previous is not None:
        context = pa.array(np.where(head, previous, 0), _I64, mask=~head)
    else:
        context = pa.nulls(n, _I64)
    return Grown(pa.array(messages, _I64), pa.array(sized, _I64), context)


def _context_at(known: pa.Array, last: np.ndarray, head: np.ndarray, reported: int) -> pa.Array:
    """Each entry's tokens in context: ``known[last]``; with no response before it, the one before its history.

    ``known`` holds the reported values and then the context before the first history; a later
    history starts from none (null).
    """
    index = np.where(last >= 0, last, reported)
    return known.take(pa.array(index, _I64, mask=(last < 0) & ~head))


def replay(events: Iterable[Event], usage: Callable[[Entry], Usage | None] | None = None) -> Iterator[State]:
    """The state after each event of a history, from the empty one.

    Args:
        events: what happened, in order.
        usage: as for :class:`History`.
    """
    history = History(usage)
    for event in events:
        yield history.tell(event)


#: The state before any event.
_EMPTY = State(0, 0, None, ())


class Timeline:
    """A history's state at each of its points, where only some points hold an event.

    Args:
        states: the state each event left (:func:`replay`), in order.
        at: the point of each event (ascending); a point with no event keeps the state before
            it, and the points before the first event hold the empty state.
        points: how many points the history has.
    """

    def __init__(self, states: Sequence[State], at: Sequence[int], points: int) -> None:
        self.states = states
        self.at = at
        self.points = points

    def state(self, point: int) -> State:
        """The state at ``point``."""
        k = bisect.bisect_right(self.at, point) - 1
        return self.states[k] if k >= 0 else _EMPTY

    def columns(self) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
        """Entries held, their characters, the tokens in context and the orphans dropped at each point (int64)."""
        owner = np.full(self.points, -1, dtype=np.int64)
        owner[np.asarray(self.at, dtype=np.int64)] = np.arange(len(self.at), dtype=np.int64)
        take = np.maximum.accumulate(owner) + 1  # each point's state: 0 the empty one, k the k-th event's
        states = [_EMPTY, *self.states]
        n = len(states)
        context = [s.context_tokens for s in states]
        known = np.fromiter((c is not None for c in context), bool, n)[take]
        return (pa.array(np.fromiter((s.messages for s in states), np.int64, n)[take], _I64),
                pa.array(np.fromiter((s.chars for s in states), np.int64, n)[take], _I64),
                pa.array(np.fromiter((c or 0 for c in context), np.int64, n)[take], _I64, mask=~known),
                pa.array(np.fromiter((len(s.dropped) for s in states), np.int64, n)[take], _I64))
