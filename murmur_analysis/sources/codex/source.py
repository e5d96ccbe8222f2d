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

**Incremental export.** ``open`` asks the load (``ReadContext.skip``) about every rollout before
it scans any, named by the thread id of its file name (Codex names each rollout by its thread;
an export skips a rollout only where its earlier read found that id), and scans only those the
load will read, with the parents their forks are matched against. A rollout is appended to and
never rewritten, so the source is :class:`~murmur_analysis.sources.resume.Resumable`: a grown
rollout is read on from where the last read stopped (:meth:`CodexSource.read_range`), going on
from the state of the lines before (:mod:`.carry`). A fork or spawned thread (a rollout whose
``session_meta`` names a parent) is fingerprinted with the parent it was matched against, and
read on too once its own lines follow the copied prefix, while that parent is unchanged. A
compressed rollout, and a rollout whose appended lines change rows before the point (an exit
code for a call it does not hold, a second count of usage rows priced as the fallback model) are
read whole. A rollout longer than the export's
range length is exported a range at a time the same way, each range going on from the one
before; its first range tells a fork, which is then read whole.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import pyarrow.compute as pc

from ...algorithms.pairing import Pairer
from ...core.diagnostics import Diagnostics
from ...core.handoff import Conversation, Pairing, ResumePoint, Summary
from ...core.identity import Identity as FileIdentity
from ...core.model import Entry
from ...core.values import JSON
from ..base import READ_ALL, Earlier, ReadContext, Source
from ..lines import LineRows, joined, report, scan_bytes, scan_lines
from ..resume import AppendOnlyLines, Tail, read_exactly, walked
from .carry import Carry
from .decode import Decoded, Identity, decode, file_id, identities
from .entries import entries
from .fork import NONE, Strip, copied_prefix, fallback_prefix
from .layout import ARCHIVED, Found, default_homes, discover, guess_can_open

__all__ = ["CodexSource"]

#: How many bytes of rollouts are decoded together (one pass of column work over all of them).
_DECODE_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class _Rollout:
    found: Found
    rows: LineRows
    ident: Identity
    #: the lines it could not read, reported as its conversation is handed over (so the rows are its own)
    reported: Diagnostics


def _unknown_lines(rows: Sequence[LineRows], diagnostics: Sequence[Diagnostics]) -> None:
    """A JSON object that is neither an envelope nor a legacy line is named (not guessed at), in its rollout's own.

    Every rollout's rows are looked at joined, at once (no rollout's are sliced).
    """
    if not rows:
        return
    whole = joined(rows)
    kinds = whole.table.column("type")
    odd = pc.indices_nonzero(pc.fill_null(pc.or_kleene(pc.is_null(kinds), pc.equal(kinds, "")), False))
    files = np.searchsorted(whole.starts, odd.to_numpy(), side="right") - 1
    lines = whole.table.column("line").take(odd).to_pylist()
    for i, line in zip(files.tolist(), lines, strict=True):
        diagnostics[i].report(rows[i].path, "unknown_line",
                              f"line {line} is a JSON object but no Codex rollout line (no type, payload or id); "
                              "skipped", line)


def _dedupe(threads: Sequence[tuple[str, Found]], diagnostics: Diagnostics) -> set[int]:
    """One rollout per thread id (given with each): the active copy before the archived one, then the first by path.

    Returns:
        The indexes of the rollouts kept.
    """
    chosen: dict[str, tuple[int, Found]] = {}
    for i, (cid, found) in sorted(enumerate(threads), key=lambda t: (t[1][1].archived, str(t[1][1].path))):
        kept = chosen.get(cid)
        if kept is None:
            chosen[cid] = (i, found)
        elif kept[1].archived == found.archived:
            diagnostics.report(found.path, "duplicate_conversation",
                               f"thread {cid} is also in {kept[1].path}, which is read; this copy is not")
    return {i for i, _ in chosen.values()}


def _point(decoded: Decoded, rows: LineRows, walk: Pairer, before: ResumePoint | None) -> ResumePoint:
    """The point after ``decoded``'s rows (read on from ``before``, else from the first line): not tied to the file."""
    start = before or ResumePoint()
    chars = int(pc.sum(decoded.columns.text_chars).as_py() or 0)
    return ResumePoint(messages=start.messages + len(decoded.columns), lines=start.lines + rows.lines,
                       chars=start.chars + chars, walk=walk.save(), carry=decoded.carry.to_doc())


class CodexSource(AppendOnlyLines, Source):
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
        return guess_can_open(path)

    def _unread(self, found: Found, earlier: Callable[[Conversation], Earlier | None] | None = None) -> Conversation:
        """A rollout found, not read: named by its file's thread id (what an export asks ``ReadContext.skip`` of).

        A fork is fingerprinted with the parent its last read matched its copied prefix against
        (``earlier``: what the export recorded), so that its rows are kept, or read on, only
        while that parent is as it was.
        """
        path = str(found.path)
        conv = Conversation(self.name, file_id(found.path), (), key=path, path=path)
        known = earlier(conv) if earlier is not None else None
        fp = known.fingerprint if known is not None else None
        parent = fp[1][0] if isinstance(fp, list) and len(fp) == 2 and isinstance(fp[1], list) and fp[1] else None
        return replace(conv, extra={"parent_path": parent}) if isinstance(parent, str) else conv

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every thread under ``path``, once, in path order (see the module's rules).

        A rollout the load will not read (``ctx.skip``) is not scanned, unless a fork that is read
        is matched against it; it is handed over found but not read.
        """
        found = discover(path, diagnostics)
        skip = ctx.skip
        skipped = [skip is not None and skip(self._unread(f, ctx.earlier)) for f in found]
        rollouts = self._read([f for f, s in zip(found, skipped, strict=True) if not s], ctx.text)
        read = iter(rollouts)
        items: list[_Rollout | Found] = [f if s else next(read) for f, s in zip(found, skipped, strict=True)]
        threads = [(file_id(i.path), i) if isinstance(i, Found) else (i.ident.conversation_id, i.found) for i in items]
        kept = _dedupe(threads, diagnostics)
        chosen = [item for n, item in enumerate(items) if n in kept]
        for n, copy in enumerate(items):
            if n not in kept and isinstance(copy, _Rollout):  # a copy left out: what its lines were is said still
                diagnostics.extend(copy.reported.rows)
        by_id = {threads[n][0]: items[n] for n in sorted(kept)}
        self._paths.update((cid, item.path if isinstance(item, Found) else item.found.path)
                           for cid, item in by_id.items())
        parents = self._parents([r for r in chosen if isinstance(r, _Rollout)], by_id, ctx.text)
        group: list[_Rollout] = []
        size, limit = 0, ctx.read_ahead or _DECODE_BYTES
        for item in [*chosen, None]:
            if isinstance(item, Found):
                yield self._unread(item, ctx.earlier)
                continue
            if item is not None:
                group.append(item)
                size += item.rows.size
            if group and (item is None or size >= limit):
                made = self._conversations(group, [parents.get(r.ident.parent or "") for r in group], ctx.text)
                for r, (conv, diags) in zip(group, made, strict=True):
                    diagnostics.extend([*r.reported.rows, *diags.rows])  # reported as each conversation is handed over
                    yield conv
                group, size = [], 0

    def _parents(self, read: Sequence[_Rollout], by_id: dict[str, _Rollout | Found], text: bool) -> dict[str, _Rollout]:
        """The parents the forks of ``read`` are matched against, by thread id: scanned here if the load skips them."""
        parents = {cid: r for cid, r in by_id.items() if isinstance(r, _Rollout)}
        wanted = {r.ident.parent for r in read if r.ident.parent is not None}
        unread = [f for cid, f in by_id.items() if cid in wanted and isinstance(f, Found)]
        if unread:  # their lines were reported when they were read: not again
            parents.update((file_id(r.found.path), r) for r in self._read(unread, text))
        return parents

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode the rollout ``key`` (its path) again, with its parent when the last :meth:`open` read it."""
        return self._whole(Path(str(key)), diagnostics, True, with_entries=True)

    def _whole(self, path: Path, diagnostics: Diagnostics, text: bool, with_entries: bool = False) -> Conversation:
        rollouts = self._read([Found(path, ARCHIVED in path.parts)], text)
        own = rollouts[0]
        diagnostics.extend(own.reported.rows)
        parent_path = self._paths.get(own.ident.parent or "")
        parent = None
        if parent_path is not None and parent_path != path:
            parent = self._read([Found(parent_path, ARCHIVED in parent_path.parts)], text)[0]
        ((conv, found),) = self._conversations([own], [parent], text, with_entries=with_entries)
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

    # ------------------------------------------------------------------ reading on (Resumable)

    def resumable(self, conv: Conversation, before: JSON, now: JSON) -> bool:
        """A rollout fingerprinted as before but for its own file, or a long one read by ranges (``before`` None).

        A fork's fingerprint names its parent's file too: it is read on while the parent is as it
        was (its copied prefix was matched against it), and read whole when asked for by ranges
        (its first range says it is one: :meth:`read_range`). A compressed rollout is read whole
        (it is decompressed whole).
        """
        if conv.path is None or conv.path.endswith(".zst"):
            return False
        return super().resumable(conv, before, now)

    def read_range(self, conv: Conversation, fd: int, start: int, end: int, point: ResumePoint,
                   diagnostics: Diagnostics, text: bool, scratch: Path) -> Tail | None:
        """The rows of the bytes ``start:end`` of ``conv``'s rollout, going on from ``point`` (and its carry).

        ``None`` (read it whole) when the point carries no Codex state, when the bytes are of a
        fork, when an exit code among them is for a call or result before the point, when
        usage rows both before and after it are priced as the fallback model (its diagnostics
        row counts them all), or when the resumed pairing walk is not exact.
        """
        carry = Carry.from_doc(point.carry) if start else None
        if (start and carry is None) or conv.path is None:
            return None
        rows = _scan_range(Path(conv.path), fd, start, end, point.lines, text)
        if rows is None:
            return None
        found = Diagnostics(self.name)
        report(rows, found, self.settle_seconds)
        _unknown_lines([rows], [found])
        ident = Identity(conv.conversation_id, provider=carry.provider) if carry else identities([rows])[0]
        if ident.parent is not None:
            return None
        (decoded,) = decode([rows], [ident], [0], text, [found], [carry])
        if not decoded.alone or (carry is not None and carry.assumed and decoded.carry.assumed > carry.assumed):
            return None
        walk = walked(decoded.columns, point)
        paired = walk.pairing()
        if not walk.exact:
            return None
        diagnostics.extend(found.rows)
        read = replace(self._handed(conv, decoded, paired), resume=None)
        return Tail(read, _point(decoded, rows, walk, point), walk.answered, decoded.reported)

    def read_whole(self, conv: Conversation, diagnostics: Diagnostics, text: bool) -> Conversation:
        """``conv``'s rollout read whole, as :meth:`open` reads it (with the parent it read)."""
        return self._whole(Path(str(conv.key)), diagnostics, text)

    # ---------------------------------------------------------------------------- decoding

    def _read(self, found: list[Found], text: bool) -> list[_Rollout]:
        if not found:
            return []
        out = scan_lines("codex", [f.path for f in found], text=text)
        reported = [Diagnostics(self.name) for _ in out]
        for rows, own in zip(out, reported, strict=True):
            report(rows, own, self.settle_seconds)
        _unknown_lines(out, reported)
        return [_Rollout(f, rows, ident, own)
                for f, rows, ident, own in zip(found, out, identities(out), reported, strict=True)]

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
        # The pairing walks run here, not in the frame builder: their states are where a read on goes on from.
        walks = [walked(d.columns, None) for d in decoded]
        paired = Pairer.pairings(walks)  # every rollout's at once
        return [(self._conversation(r, p, s, d, w, pairing, with_entries), f)
                for r, p, s, d, w, pairing, f in zip(rollouts, parents, strips, decoded, walks, paired, found,
                                                      strict=True)]

    def _conversation(self, r: _Rollout, parent: _Rollout | None, strip: Strip, decoded: Decoded, walk: Pairer,
                      paired: Pairing, with_entries: bool) -> Conversation:
        cols = decoded.columns
        found: list[Entry] = []
        if with_entries and len(cols):  # a handle pages and assembles the entries' blocks
            found = entries(r.found.path, decoded.lines.to_pylist(), cols.side.to_pylist(), cols.model.to_pylist(),
                            cols.created_at.to_pylist())
        path = str(r.found.path)
        extra = {"copied_rows": strip.end, "copied_rule": strip.rule,
                 "parent_path": str(parent.found.path) if parent is not None and strip.rule == "parent" else None}
        # a fork is read on once its own lines follow the copied prefix (the prefix is then whole)
        copied = r.ident.parent is not None and strip.end >= r.rows.num_rows
        plain = not copied and r.rows.error is None and not path.endswith(".zst")
        conv = Conversation(self.name, r.ident.conversation_id, found, key=path, path=path, extra=extra,
                            parent_conversation_id=r.ident.parent, parent_call_id=r.ident.parent_call)
        point = _point(decoded, r.rows, walk, None) if plain else None
        return replace(self._handed(conv, decoded, paired), resume=point)

    @staticmethod
    def _handed(conv: Conversation, decoded: Decoded, paired: Pairing) -> Conversation:
        """``conv`` with the rows ``decoded`` holds."""
        summary = Summary(usage=decoded.usage, growth=decoded.growth or None, title=decoded.title, paired=paired)
        return replace(conv, columns=[decoded.columns], summary=summary, tool_meta=decoded.tool_meta)


def _scan_range(path: Path, fd: int, start: int, end: int, lines: int, text: bool) -> LineRows | None:
    """The engine's rows of the bytes ``start:end`` of ``path`` (open as ``fd``), line numbers going on from ``lines``.

    The bytes are read once, so what is scanned ends at ``end`` even if the rollout grows
    meanwhile. ``None`` when they cannot be read.
    """
    data = read_exactly(fd, start, end)
    if data is None:
        return None
    rows = scan_bytes("codex", path, data, lines + 1, text=text)
    return None if rows.error is not None else rows
