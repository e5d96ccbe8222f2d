"""The ``codex`` source: OpenAI Codex CLI rollouts, read by the native line engine.

Every rollout under a path is read at once by the engine (``native/src/formats/codex.rs``);
each becomes one conversation (:mod:`.decode`), after three decisions across files:

* **One copy of a thread.** A rollout is known by its first ``session_meta`` id. The same
  thread under both ``sessions/`` and ``archived_sessions/`` is read once, from ``sessions/``
  (the active copy, as ccusage prefers it); two copies under the same folder keep the first by
  path and report the other (``duplicate_conversation``).
* **A fork's copied prefix** is the parent's, not the child's (:mod:`.fork`), matched against
  the parent's rows when the parent is in the same load.
* **Parent links**: ``parent_conversation_id`` is the fork's or spawn's parent thread,
  ``parent_call_id`` the spawning call where the rollout names it.

Lines the engine could not read are diagnostics rows (a torn last line once the file has been
still for ``settle_seconds``); a JSON object that is no Codex line is one too (``unknown_line``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pyarrow.compute as pc

from ...core.diagnostics import Diagnostics
from ...core.handoff import Conversation, Summary
from ...core.identity import Identity as FileIdentity
from ...core.model import Entry
from ..base import READ_ALL, ReadContext, Source
from ..lines import LineRows, report, scan_lines
from .decode import Decoded, Identity, decode, identities
from .entries import entries
from .fork import NONE, Strip, copied_prefix, fallback_prefix
from .layout import ARCHIVED, SESSIONS, Found, default_homes, discover, holds_rollouts, is_rollout_file

__all__ = ["CodexSource"]

#: How many bytes of rollouts are decoded together (one pass of column work over all of them).
_DECODE_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class _Rollout:
    found: Found
    rows: LineRows
    ident: Identity


def _unknown_lines(rows: LineRows, diagnostics: Diagnostics) -> None:
    """A JSON object that is neither an envelope nor a legacy line is named (not guessed at)."""
    kinds = rows.table.column("type")
    odd = pc.or_kleene(pc.is_null(kinds), pc.equal(kinds, ""))
    for line in rows.table.column("line").filter(odd).to_pylist():
        diagnostics.report(rows.path, "unknown_line",
                           f"line {line} is a JSON object but no Codex rollout line (no type, payload or id); skipped",
                           line)


def _dedupe(rollouts: list[_Rollout], diagnostics: Diagnostics) -> list[_Rollout]:
    """One rollout per thread id: the active copy before the archived one, then the first by path."""
    chosen: dict[str, _Rollout] = {}
    for r in sorted(rollouts, key=lambda r: (r.found.archived, str(r.found.path))):
        cid = r.ident.conversation_id
        kept = chosen.get(cid)
        if kept is None:
            chosen[cid] = r
        elif kept.found.archived == r.found.archived:
            diagnostics.report(r.found.path, "duplicate_conversation",
                               f"thread {cid} is also in {kept.found.path}, which is read; this copy is not")
    keep = {id(r) for r in chosen.values()}
    return [r for r in rollouts if id(r) in keep]


def _groups(rollouts: list[_Rollout], limit: int) -> Iterator[list[_Rollout]]:
    """Rollouts in order, in groups of about ``limit`` bytes of files."""
    group: list[_Rollout] = []
    size = 0
    for r in rollouts:
        group.append(r)
        size += r.rows.size
        if size >= limit:
            yield group
            group, size = [], 0
    if group:
        yield group


class CodexSource(Source):
    """OpenAI Codex CLI rollouts (``sessions/`` and ``archived_sessions/`` of a Codex home).

    Args:
        settle_seconds: how long a file must be unchanged before its unterminated, unparsable
            last line is reported as ``partial_line`` rather than taken as still being written.

    Example:
        >>> import murmur_analysis as ma
        >>> corpus = ma.load("~/.codex", source="codex")  # doctest: +SKIP
    """

    name: ClassVar[str] = "codex"
    description: ClassVar[str] = "OpenAI Codex CLI rollouts ($CODEX_HOME or ~/.codex: sessions/, archived_sessions/)"

    def __init__(self, *, settle_seconds: float = 5.0) -> None:
        self.settle_seconds = float(settle_seconds)
        self._paths: dict[str, Path] = {}

    @classmethod
    def default_homes(cls) -> list[Path]:
        """The Codex homes that exist: ``$CODEX_HOME``, else ``~/.codex``."""
        return default_homes()

    def guess_can_open(self, path: Path) -> bool:
        """A Codex home (rollouts under ``sessions/`` or ``archived_sessions/``), a tree of rollouts, or a rollout."""
        if not path.is_dir():
            return is_rollout_file(path)
        if any((path / d).is_dir() and holds_rollouts(path / d) for d in (SESSIONS, ARCHIVED)):
            return True
        return bool({SESSIONS, ARCHIVED} & set(path.parts)) and holds_rollouts(path)

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every thread under ``path``, once, in path order (see the module's rules)."""
        rollouts = self._read(discover(path, diagnostics), diagnostics, ctx.text)
        chosen = _dedupe(rollouts, diagnostics)
        by_id = {r.ident.conversation_id: r for r in chosen}
        self._paths.update((cid, r.found.path) for cid, r in by_id.items())
        for group in _groups(chosen, ctx.read_ahead or _DECODE_BYTES):
            parents = [by_id.get(r.ident.parent or "") for r in group]
            for conv, found in self._conversations(group, parents, ctx.text):
                diagnostics.extend(found.rows)  # reported as each conversation is handed over
                yield conv

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode the rollout ``key`` (its path) again, with its parent when the last :meth:`open` read it."""
        path = Path(str(key))
        rollouts = self._read([Found(path, ARCHIVED in path.parts)], diagnostics, True)
        own = rollouts[0]
        parent_path = self._paths.get(own.ident.parent or "")
        parent = None
        if parent_path is not None and parent_path != path:
            parent = self._read([Found(parent_path, ARCHIVED in parent_path.parts)], Diagnostics(self.name), True)[0]
        ((conv, found),) = self._conversations([own], [parent], True, with_entries=True)
        diagnostics.extend(found.rows)
        return conv

    def fingerprint(self, conv: Conversation) -> object:
        """The identities of the rollout and of the parent rollout its copied prefix was matched against."""
        own = self.file_identities(conv)
        parent = conv.extra.get("parent_path")
        if own is None or parent is None:
            return own
        theirs: list[tuple[str, FileIdentity]] | None = self.file_identities(
            Conversation(self.name, "", (), key=parent, path=parent))
        return None if theirs is None else [*own, *theirs]

    def _read(self, found: list[Found], diagnostics: Diagnostics, text: bool) -> list[_Rollout]:
        if not found:
            return []
        out = scan_lines("codex", [f.path for f in found], text=text)
        for rows in out:
            report(rows, diagnostics, self.settle_seconds)
            _unknown_lines(rows, diagnostics)
        return [_Rollout(f, rows, ident) for f, rows, ident in zip(found, out, identities(out), strict=True)]

    def _strip(self, r: _Rollout, parent: _Rollout | None, diagnostics: Diagnostics) -> Strip:
        """Where ``r``'s copied prefix ends (:mod:`.fork`)."""
        ident = r.ident
        if ident.parent is None:
            return NONE
        minted = ident.minted_us if ident.minted_us is not None else ident.created_us
        if parent is not None and parent is not r:
            strip = copied_prefix(r.rows.table, parent.rows.table, ident.created_us)
            if strip.end:
                return strip
            guessed = fallback_prefix(r.rows.table, minted)
            if guessed.end:
                diagnostics.report(r.found.path, "fork_prefix_unmatched",
                                   f"no leading run of this fork's items equals its parent {ident.parent}'s items "
                                   f"up to the fork; the first {guessed.end} rows were cut by the {guessed.rule} rule")
            return guessed
        strip = fallback_prefix(r.rows.table, minted)
        diagnostics.report(r.found.path, "fork_parent_missing",
                           f"the parent thread {ident.parent} is not in this load: its copied prefix was found by "
                           f"the {strip.rule} rule ({strip.end} rows not counted as this thread's)")
        return strip

    def _conversations(self, rollouts: Sequence[_Rollout], parents: Sequence[_Rollout | None], text: bool,
                       with_entries: bool = False) -> list[tuple[Conversation, Diagnostics]]:
        """The rollouts' conversations, decoded together, each with what was found wrong in it."""
        found = [Diagnostics(self.name) for _ in rollouts]
        strips = [self._strip(r, p, d) for r, p, d in zip(rollouts, parents, found, strict=True)]
        decoded = decode([r.rows for r in rollouts], [r.ident for r in rollouts], [s.end for s in strips], text, found)
        return [(self._conversation(r, p, s, d, with_entries), f)
                for r, p, s, d, f in zip(rollouts, parents, strips, decoded, found, strict=True)]

    def _conversation(self, r: _Rollout, parent: _Rollout | None, strip: Strip, decoded: Decoded,
                      with_entries: bool) -> Conversation:
        cols = decoded.columns
        found: list[Entry] = []
        if with_entries and len(cols):  # a handle pages and assembles the entries' blocks
            errors = [None if e is None else bool(e) for e in decoded.errors.to_pylist()]
            found = entries(r.found.path, decoded.lines.to_pylist(), cols.side.to_pylist(), cols.model.to_pylist(),
                            cols.created_at.to_pylist(), errors)
        path = str(r.found.path)
        summary = Summary(usage=decoded.usage, growth=decoded.growth or None, title=decoded.title)
        extra = {"copied_rows": strip.end, "copied_rule": strip.rule,
                 "parent_path": str(parent.found.path) if parent is not None and strip.rule == "parent" else None}
        return Conversation(self.name, r.ident.conversation_id, found, key=path, path=path, columns=[cols],
                            summary=summary, tool_meta=decoded.tool_meta, extra=extra,
                            parent_conversation_id=r.ident.parent, parent_call_id=r.ident.parent_call)
