"""A litany branch's spend: which step committed each model entry, and the usage rows it gives.

A step whose ``response.json`` reported usage gives one row per attempt (``found_in="response"``;
``sealed`` false for spend on a discarded attempt); a model entry whose step's sealing attempt
reported no usage (or that no step claims) gives its own row (``found_in="entry"``). The entry's
usage is the sealing attempt's, so the two are never both counted. Entries a child branch
inherited from its parent's commits are the parent's spend and give no row.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ...core.handoff import UsageRow
from ...core.model import Entry, Usage
from ...core.providers import Resolved, resolve
from .entries import normalize_usage
from .steps import StepRecord

__all__ = ["Spend", "StepIndex", "settle"]


class StepIndex:
    """Which step a commit of the branch belongs to: the last whose read state precedes it."""

    def __init__(self, records: list[StepRecord], index_of: dict[str, int]) -> None:
        points = sorted((index_of[r.commit], r.step, r) for r in records if r.commit in index_of)
        self._at = [p[0] for p in points]
        self._records = [p[2] for p in points]

    def of(self, commit_index: int) -> StepRecord | None:
        """The step record owning the commit at ``commit_index`` on the branch, if any."""
        i = bisect.bisect_left(self._at, commit_index)
        return self._records[i - 1] if i else None


@dataclass(frozen=True, slots=True)
class Spend:
    """What the steps and entries of a branch spent.

    Attributes:
        usage: the usage rows, response rows of each step first, then entry rows.
        entries: the head's entries, each response's usage settled (the sealing attempt's,
            where a step claims the entry).
        settled: the settled usage of each entry replaced, by the identity of the entry decoded.
        linked: the usage each sealed row links to a message id.
    """

    usage: tuple[UsageRow, ...]
    entries: list[Entry]
    settled: dict[int, Usage]
    linked: dict[str, Usage]

    def usage_of(self, entry: Entry) -> Usage | None:
        """The response usage of ``entry`` (of any state of the branch) for its context tokens.

        Its own, as the steps settled it, or else the sealed row linked to its id.
        """
        if entry.usage is not None:
            return self.settled.get(id(entry), entry.usage)
        return self.linked.get(entry.id or "")


def _usage_key(u: Usage) -> tuple[int | None, ...]:
    """The counters as written, whatever accounting read them: equal for an entry and its attempt."""
    total = u.input_total_tokens if u.provider_input_tokens is None else None
    return (u.provider_input_tokens, total, u.provider_output_tokens, u.cache_read_tokens, u.cache_write_tokens,
            u.reasoning_tokens, u.context_window)


def _match_outputs(
    entries: Sequence[Entry], records: list[StepRecord], placed: dict[str, StepRecord | None],
    sealed_usage: dict[int, Usage], theirs: set[str],
) -> dict[str, StepRecord]:
    """Which step committed each model entry.

    A step whose read-state commit is on the branch owns the model entries added after it (and
    before the next such step); among them the one whose usage equals the sealing attempt's
    is its output, else the first. A step whose commit is not on the branch (history rewritten
    by a rebase, a ``meta.json`` that cannot be read) is matched by content: the first model
    entry no step claims whose counters equal its sealing attempt's (the entry's usage is the
    sealing attempt's, formats.md §2).
    """
    model = [e for e in entries if e.side == "assistant" and e.id not in theirs]
    owner: dict[str, StepRecord] = {}
    claimed: set[int] = set()

    def take(rec: StepRecord, pool: list[Entry], placed_pool: bool) -> bool:
        want = sealed_usage.get(rec.step)
        pick = next((e for e in pool if want is not None and e.usage is not None
                     and _usage_key(e.usage) == _usage_key(want)), None)
        if pick is None and placed_pool and pool:
            pick = pool[0]
        if pick is None:
            return False
        owner[pick.id or ""] = rec
        claimed.add(rec.step)
        return True

    placed_with: dict[int, list[Entry]] = {}  # the model entries each step's commit range holds, by id(record)
    for e in model:
        rec = placed.get(e.id or "")
        if rec is not None:
            placed_with.setdefault(id(rec), []).append(e)
    for rec in records:
        pool = [e for e in placed_with.get(id(rec), ()) if (e.id or "") not in owner]
        take(rec, pool, True)
    for rec in records:
        if rec.step not in claimed and rec.step in sealed_usage:
            take(rec, [e for e in model if (e.id or "") not in owner], False)
    return owner


def settle(
    entries: Sequence[Entry], records: list[StepRecord], steps: StepIndex, added_at: dict[str, int], theirs: set[str]
) -> Spend:
    """The usage rows of a branch, and its entries with each response's usage settled.

    Args:
        entries: the head's entries in order.
        records: the agent's step records.
        steps: which step owns each commit of the branch.
        added_at: the index of the commit adding each entry, by entry id.
        theirs: ids of the entries the branch inherited from a parent agent's commits.
    """
    placed = {e.id or "": steps.of(added_at[e.id or ""]) for e in entries}
    attempts_usage: dict[tuple[int, int], tuple[Usage, str | None, Resolved]] = {}
    sealed_usage: dict[int, Usage] = {}
    for rec in records:
        for attempt in rec.attempts:
            model = rec.model or attempt.model
            api = resolve(rec.provider, model)
            u = normalize_usage(attempt.usage, api)
            if u is not None:
                attempts_usage[(rec.step, attempt.number)] = (u, model, api)
                if attempt is rec.sealing:
                    sealed_usage[rec.step] = u
    owner = _match_outputs(entries, records, placed, sealed_usage, theirs)
    output_of = {r.step: e for e in entries if (r := owner.get(e.id or "")) is not None}
    usage: list[UsageRow] = []
    for rec in records:
        sealing = rec.sealing
        out = output_of.get(rec.step)
        for attempt in rec.attempts:
            found = attempts_usage.get((rec.step, attempt.number))
            if found is None:
                continue
            u, model, api = found
            sealed = attempt is sealing
            linked = out if sealed else None
            usage.append(UsageRow(
                u, linked.id if linked else None, linked.position if linked else None,
                model or (out.model if out else None), rec.provider, rec.ended_at, attempt.number, sealed, "response",
                api.accounting.family, api.source,
            ))
    settled_entries = list(entries)
    settled: dict[int, Usage] = {}
    for i, e in enumerate(entries):
        claim = owner.get(e.id or "")
        if e.usage is None or e.id in theirs:
            continue
        if claim is not None and claim.step in sealed_usage:
            # The step's sealing attempt reported this response: its row counts it, and its
            # normalization (by the API the step recorded) is the message's.
            settled[id(e)] = sealed_usage[claim.step]
            settled_entries[i] = replace(e, usage=sealed_usage[claim.step])
            continue
        provider = claim.provider if claim else None
        api = resolve(provider, e.model)
        usage.append(UsageRow(e.usage, e.id, e.position, e.model, provider, e.created_at, found_in="entry",
                              accounting=api.accounting.family, provider_source=api.source))
    links = {r.message_id: r.usage for r in usage if r.message_id is not None and r.sealed is not False}
    return Spend(tuple(usage), settled_entries, settled, links)
