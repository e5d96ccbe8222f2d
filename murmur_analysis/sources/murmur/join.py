"""The join of one murmur record to its sessions' trace facts, made while the record streams.

:class:`Join` is fed the record's messages in position order (one call per message) and
answers which ``inference`` each assistant message is the response of; at the end it gives the
record's usage rows and compaction growth rows. The rules are in ``docs/tokens.md``
(``## murmur``).
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from typing import Any

from ...core.handoff import GrowthRow, Pairing, Summary, UsageRow
from ...core.model import Usage
from ...tables.schema import built_schema
from .trace_events import Inference, Task

__all__ = ["Join", "inference_row", "learned", "usage_columns"]

def _before(at_ms: int | None, created_ms: int) -> bool:
    return at_ms is not None and at_ms < created_ms


def inference_row(inf: Inference, message_id: str | None = None, seq: int | None = None) -> UsageRow:
    """The usage row of one ``inference`` (``message_id``/``seq``: the message it answered)."""
    return UsageRow(inf.usage, message_id, seq, inf.model, inf.provider, inf.at, found_in="trace",
                    accounting=inf.api.accounting.family, provider_source=inf.api.source, session_id=inf.session_id)


_ROW_FIELDS = frozenset(f.name for f in fields(UsageRow)) - {"usage"}
_COUNTERS = frozenset(f.name for f in fields(Usage))
#: The ``usage`` columns a usage row gives, by name (the frame builder fills ``source`` and
#: ``conversation_id``; a column named by neither stays null).
_USAGE_COLUMNS = tuple(n for n in built_schema("usage").names if n in _ROW_FIELDS | _COUNTERS)


def usage_columns(row: UsageRow) -> dict[str, Any]:
    """``row`` keyed by the ``usage`` table's column names.

    Each column is the row's field of that name, else its counter of that name
    (:class:`~murmur_analysis.core.model.Usage`).
    """
    usage = row.usage
    return {n: getattr(row, n) if n in _ROW_FIELDS else getattr(usage, n) for n in _USAGE_COLUMNS}


class Join:
    """Trace facts joined to one record's entries while they stream, in position order.

    The inference -> message rule (``docs/tokens.md``):

    1. an ``inference`` carrying ``message_ids`` answers with the first assistant message
       after the last id it embedded;
    2. otherwise, within one task, the n-th agent-loop ``inference`` answers with the n-th
       assistant message minted during that task (``task_start`` to ``task_end``, read from
       the message id's UUIDv7 time);
    3. hook-made inferences (``origin`` set) answer no record message; in a record whose
       front retention dropped, rule 2 is not applied to tasks that began before the drop.

    Compactions are placed after the last message minted at or before them. Their
    ``tokens_before``/``tokens_after`` are murmur's own cl100k estimates of the prompt, not
    provider counts: they stay in those columns, and ``context_tokens`` (a provider unit) is
    left null on compaction rows.
    """

    def __init__(self, tasks: Sequence[Task], cutoff_ms: int | None) -> None:
        self.tasks = list(tasks)
        # Tasks with no start time sort last and are matched by no message time (bisect needs order).
        self.starts = [t.start_ms if t.start_ms is not None else 1 << 62 for t in self.tasks]
        self.queues: list[deque[Inference]] = []
        self.after: dict[str, list[Inference]] = {}
        for task in self.tasks:
            queue: deque[Inference] = deque()
            positional = cutoff_ms is None or (task.start_ms is not None and task.start_ms > cutoff_ms)
            for inference in task.inferences:
                if inference.hook:
                    continue
                if inference.message_ids:
                    self.after.setdefault(inference.message_ids[-1], []).append(inference)
                elif positional:
                    queue.append(inference)
            self.queues.append(queue)
        self.armed: deque[Inference] = deque()
        self.joined: dict[int, tuple[str | None, int]] = {}
        comps = [c for t in self.tasks for c in t.compactions]
        comps.sort(key=lambda c: (c.at_ms is None, c.at_ms or 0))
        self.compactions = comps
        self.comp_positions: list[int | None] = []
        self.task: int | None = None
        self.last: int | None = None
        self.count = 0

    def claim(self, position: int, msg_id: str | None, role: str, created_ms: int | None) -> Inference | None:
        """Take one entry; return the inference it is the response of, if any."""
        comps = self.compactions
        if comps and created_ms is not None:
            done = self.comp_positions
            while len(done) < len(comps) and _before(comps[len(done)].at_ms, created_ms):
                done.append(self.last)
        self.last = position
        self.count += 1
        if created_ms is not None and self.tasks:
            i = bisect.bisect_right(self.starts, created_ms) - 1
            task = self.tasks[i] if i >= 0 else None
            self.task = i if task is not None and (task.end_ms is None or created_ms <= task.end_ms) else None
        found: Inference | None = None
        if role == "assistant":
            if self.armed:
                found = self.armed.popleft()
            elif self.task is not None and self.queues[self.task]:
                found = self.queues[self.task].popleft()
            if found is not None:
                self.joined[found.index] = (msg_id, position)
        if msg_id is not None and self.after:
            waiting = self.after.pop(msg_id, None)
            if waiting:
                self.armed.extend(waiting)
        return found

    def usage_rows(self) -> list[UsageRow]:
        """One row per inference of the record's tasks, in trace order."""
        rows: list[UsageRow] = []
        for task in self.tasks:
            for inf in task.inferences:
                msg_id, seq = self.joined.get(inf.index, (None, None))
                rows.append(inference_row(inf, msg_id, seq))
        return rows

    def growth_rows(self) -> list[GrowthRow]:
        """One ``compaction`` row per compaction, at the last message minted before it."""
        rows: list[GrowthRow] = []
        for n, comp in enumerate(self.compactions):
            position = self.comp_positions[n] if n < len(self.comp_positions) else self.last
            rows.append(
                GrowthRow(
                    position=position if position is not None else 0,
                    event="compaction",
                    messages=(position + 1) if position is not None else 0,
                    at=comp.at,
                    tokens_before=comp.tokens_before,
                    tokens_after=comp.tokens_after,
                    summary=comp.summary,
                )
            )
        return rows


def learned(join: Join | None, title: str | None, paired: Pairing | None = None) -> Summary:
    """What reading a record taught, once all of it was fed to ``join``.

    The usage and compaction rows of its tasks (``None`` when no session names it: the usage on
    the entries stands), its title and, when the engine walked it, its tool pairing.
    """
    if join is None:
        return Summary(title=title, paired=paired)
    return Summary(usage=tuple(join.usage_rows()), growth=tuple(join.growth_rows()), title=title, paired=paired)
