"""The Claude Code source: session transcripts under a config dir's ``projects/``.

Every file of a load is read in one native scan (the ``claude_code`` format of the line engine,
:mod:`murmur_analysis.sources.lines`), and the responses are counted over all of them at once
(:mod:`.usage`), so a response written into several files (a resumed session's copies, a
subagent's lines mirrored in the main file, a ``/btw`` replay) counts once. The rest (which lines
are messages, their columns, rewinds, titles, compactions) is decided over the load's columns at
once too (:mod:`.whole`, :mod:`.pieces`). Then each file is one conversation, a slice of them:

* a main session ``<session>.jsonl``: ``conversation_id`` is the session id (the file's stem);
* a subagent ``<session>/subagents/agent-<id>.jsonl``: ``<session>/agent-<id>`` (a workflow's
  ``<session>/workflows/<wf>/agent-<id>``; a flat ``agent-<id>.jsonl``: ``<sessionId>/agent-<id>``
  with the session its lines name), with ``parent_conversation_id`` the session and
  ``parent_call_id`` the spawning call (``agent-<id>.meta.json`` ``toolUseId``, else the
  parent's ``tool_result`` whose ``toolUseResult.agentId`` names the agent).

Its messages are its ``user``, ``assistant`` and ``system`` lines, one row each, in file order:
harness lines (``isMeta``) are kept as ``user`` rows with ``origin = "meta"``, the compaction
summary with ``origin = "compact_summary"``, the runtime's error notices (``<synthetic>``,
``isApiErrorMessage``) with ``origin = "api_error"`` and no model. Metadata lines (titles,
summaries, snapshots, queue operations, attachments, progress) are no messages. A rewind's
abandoned branch (:func:`.pieces.abandoned`) is kept, its rows' ``status`` ``abandoned``; its
responses were billed, so they count, once, like any other. A resumed
session's copied lines stay messages of both sessions; their usage counts once.

The title is the last ``ai-title``, else the last ``summary`` line's, else the first line of the
first user text that is not a harness line (that one only when texts are read). A
``compact_boundary`` line is a ``growth`` row of event ``compaction`` (``preTokens``,
``postTokens``, and the summary the following ``isCompactSummary`` line carries).

**Incremental export.** Every conversation's rows may depend on every file of its load, so
``open`` asks the load (``ReadContext.skip``) about each file before it scans any, and scans
none when every one may be skipped. What the fingerprints share is what the rows were read as
of (:meth:`ClaudeCodeSource._epoch`): a digest of every file of the load when it was read whole,
carried on while the files only grow by lines that change no other file's rows
(:mod:`.readon`, checked over a lean scan of the grown files against what the export recorded of
the others, ``ReadContext.earlier``: each file's resume point keeps the keys of its ``uuid`` and
``message.id`` values and its earliest line's time). Then an unchanged file's rows are kept and
a grown one's new lines are read on from where the last read stopped
(:meth:`ClaudeCodeSource.read_range`), or, where they change its own earlier rows (a rewind, a
compaction's summary), that file alone is read whole.
Any other change (a file rewritten, added or gone, a line shared with another file) reads the
whole load again. A flat ``agent-<id>.jsonl`` is named by the session its lines name, so a load
holding one is always read. A file's unreadable lines are reported as its conversation is handed
over, so they are kept with its rows.

**Reading one conversation again** (a handle's entries, a ``load_dask`` task:
:meth:`ClaudeCodeSource.reopen`). A whole load keeps, for every file, what its rows took from
the other files (each message's usage as counted over the load, its usage rows, the call that
spawned it), so a file that is as the load read it is read again alone; any other is read with
its whole load again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ...algorithms.history import context_after
from ...algorithms.pairing import Pairer
from ...core.files import steady
from ...core.handoff import Conversation, ResumePoint, Summary, UsageColumns
from ...core.identity import Identity, Verdict, file_identity, file_identity_ending
from ...core.model import Usage
from ...core.providers import accounting
from ...core.values import JSON
from ..base import READ_ALL, Diagnostics, Earlier, ReadContext, Source
from ..lines import LineRows, one_array, report, scan_bytes, scan_lines
from ..resume import Tail, read_exactly, verdict, walked
from .entries import entries
from .layout import SessionFile, default_homes, files_under, guess_can_open
from .pieces import EntryParts, Messages, abandoned, compactions, spawning_calls, titles
from .readon import Grown, Kept, independent
from .usage import COUNTERS, SYNTHETIC, Counted, count_responses
from .whole import Whole, firsts, mask, true

__all__ = ["FORMAT", "ClaudeCodeSource"]

#: The engine's format of these files.
FORMAT = "claude_code"
_ANTHROPIC = accounting("anthropic")
#: Nothing counted on this line: another line (of this file or of another) holds its response's usage.
_COUNTED_ELSEWHERE = Usage(counted_elsewhere=True)
#: Nothing counted on this line, and nothing to count: a runtime's notice (``<synthetic>``), no model response.
_NO_RESPONSE = Usage()


def _problems(bad: int) -> list[str]:
    """What a response's ``bad_<counter>`` bits say: the counters a line wrote that are no integers."""
    return [f"{field} is not an integer in 0..2**63-1 on a line of this response; that line's value is read as "
            "not reported" for bit, field in enumerate(COUNTERS.values()) if bad >> bit & 1]


def response_usages(responses: pa.Table) -> list[Usage]:
    """Each response's counters (the rows of :attr:`.usage.Counted.responses`), normalized the Anthropic way."""
    counters = [responses.column(name).to_pylist() for name in COUNTERS]
    split = responses.column("has_cache_breakdown").to_pylist()
    bad = np.zeros(responses.num_rows, np.int64)
    for bit, name in enumerate(COUNTERS):
        bad |= true(responses.column(f"bad_{name}")).astype(np.int64) << bit
    tiers, speeds = responses.column("service_tier").to_pylist(), responses.column("speed").to_pylist()
    normalize, rule = Usage.normalize, _ANTHROPIC
    out = []
    for u_in, u_out, u_read, u_write, u_5m, u_1h, has_split, flags, tier, speed in zip(
            *counters, split, bad.tolist(), tiers, speeds, strict=True):
        extra = {}
        if isinstance(tier, str):
            extra["service_tier"] = tier
        if isinstance(speed, str):
            extra["speed"] = speed
        out.append(normalize(
            input_tokens=u_in, output_tokens=u_out, cache_read_tokens=u_read, cache_write_tokens=u_write,
            cache_write_5m_tokens=u_5m if has_split else None, cache_write_1h_tokens=u_1h if has_split else None,
            cache_in_input=rule.cache_in_input, reasoning_in_output=rule.reasoning_in_output,
            cache_write_slice=rule.cache_write_slice, extra=extra, problems=_problems(flags) if flags else (),
        ))
    return out


def _ranks(w: Whole) -> list[int]:
    """Each file's rank when files are ordered by their earliest line's time (untimed last), then load order."""
    ts = w.table.column("ts_us")
    earliest: list[int | None] = [None] * w.files
    full = np.flatnonzero(np.diff(w.starts) > 0)
    if len(full):
        heads = w.starts[full]
        timed = np.add.reduceat(mask(pc.is_valid(ts)).astype(np.int64), heads)
        low = np.minimum.reduceat(pc.fill_null(ts, np.iinfo(np.int64).max).to_numpy(zero_copy_only=False), heads)
        for i, k, v in zip(full.tolist(), timed.tolist(), low.tolist(), strict=True):
            earliest[i] = int(v) if k else None
    order = sorted(range(w.files), key=lambda i: (earliest[i] is None, earliest[i] or 0, i))
    ranks = [0] * w.files
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


def _sessions(files: Sequence[SessionFile], w: Whole) -> list[str | None]:
    """Each file's session: its place's, else the first ``sessionId`` its lines name."""
    named = w.table.column("session_id")
    at = firsts(np.flatnonzero(mask(pc.is_valid(named))), w.starts)
    found = named.take(pa.array(np.maximum(at, 0), pa.int64())).to_pylist() if w.table.num_rows else [None] * w.files
    return [f.session or (v if i >= 0 else None) for f, i, v in zip(files, at.tolist(), found, strict=True)]


class ClaudeCodeSource(Source):
    """Claude Code session transcripts, with subagents, usage counted once per response.

    Args:
        settle_seconds: how long a file must be unchanged before its unterminated, unparsable
            last line is reported as ``partial_line`` rather than taken as still being written.
    """

    name: ClassVar[str] = "claude_code"
    description: ClassVar[str] = ("Claude Code sessions (~/.claude/projects, ~/.config/claude/projects, "
                                  "CLAUDE_CONFIG_DIR)")

    def __init__(self, *, settle_seconds: float = 5.0) -> None:
        self.settle_seconds = float(settle_seconds)
        self._epochs: dict[str, JSON] = {}  # by root: what every conversation's rows of it were read as of
        self._grown: dict[str, tuple[SessionFile, Grown]] = {}  # by path: a file found grown, as checked
        self._identities: dict[str, Identity | None] = {}  # by path: each file's identity, as the digest took it
        self._ends: dict[str, bool | None] = {}  # by path: whether the file ended at a line's end, as it took it
        # by conversation key (file, root): what the last whole load of the root gave the file (reopen)
        self._held: dict[tuple[str, str], _Held] = {}

    @classmethod
    def default_homes(cls) -> list[Path]:
        """The Claude Code config dirs that exist (``CLAUDE_CONFIG_DIR``'s, else the two defaults)."""
        return default_homes()

    def guess_can_open(self, path: Path) -> bool:
        """A config dir, a ``projects/`` dir or a project dir holding sessions, or a session ``.jsonl``."""
        return guess_can_open(path)

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every transcript under ``path``, each a conversation (see the module doc)."""
        files = files_under(path, diagnostics)
        if ctx.skip is not None:
            unread = [self._unread(f, path) for f in files]
            self._epochs[str(path)] = self._epoch(files, unread, ctx.earlier)
            if files and self._skipped(files, unread, ctx.skip):
                yield from unread
                return
        yield from self._load(files, path, diagnostics, ctx.text)

    def _unread(self, f: SessionFile, root: Path) -> Conversation:
        """A file found, not read: its conversation as the load names it (its session from its place)."""
        cid = f.name if f.agent is None else f"{f.session}/{f.name}"
        return Conversation(self.name, cid, [], key=(str(f.path), str(root)), path=str(f.path))

    def _skipped(self, files: list[SessionFile], unread: list[Conversation], skip: Callable[[Conversation], bool],
                 ) -> bool:
        """Whether the load may skip every file of a root (asked before any is scanned; ``unread``: each one's)."""
        if any(f.session is None for f in files):  # a flat agent file's session is in its lines
            return False
        return all([skip(conv) for conv in unread])  # every one asked: each decided for

    def _epoch(self, files: list[SessionFile], unread: list[Conversation],
               earlier: Callable[[Conversation], Earlier | None] | None) -> JSON:
        """What the rows of every file of a root are as of: the earlier read's, or this home as it is.

        The earlier read's when every file is as it was or only grew, and what they grew by
        changes no other file's rows (:func:`.readon.independent`, over a lean scan of the
        grown files and what the others' points kept): then an unchanged file's rows are kept
        and a grown one's read on. Else a digest
        of every file's identity, which every conversation's fingerprint holds, so that any
        change reads the whole home again. ``unread`` holds each file's conversation, found
        and not read.
        """
        fresh: JSON = [self._digest(files), len(files)]
        if earlier is None or not files or any(f.session is None for f in files):
            return fresh
        known = [earlier(conv) for conv in unread]
        epochs = [k.fingerprint[2] if k is not None and isinstance(k.fingerprint, list) and len(k.fingerprint) == 3
                  else None for k in known]
        first = epochs[0]
        if not (isinstance(first, list) and len(first) == 2 and first[1] == len(files)
                and all(e == first for e in epochs)):
            return fresh
        grown: list[Grown] = []
        same: list[tuple[int, Earlier]] = []
        for i, (f, k) in enumerate(zip(files, known, strict=True)):
            assert k is not None
            verdict = _verdict(k, f.path, self._identities.get(str(f.path)))
            if verdict == "grew" and k.point is not None:
                grown.append(Grown(i, k.point.lines, 0, 0))
            elif verdict != "same":
                return fresh
            else:
                same.append((i, k))
        if not grown:
            return first
        kept: dict[int, Kept] = {}
        for i, k in same:  # what each unchanged file's last read kept, read only now that a file grew
            if k.point is not None and (held := Kept.from_doc(k.point.carry.get("kept"))) is not None:
                kept[i] = held
        scanned = [i for i in range(len(files)) if i not in kept]  # the grown, and any whose last read kept nothing
        lean = scan_lines(FORMAT, [files[i].path for i in scanned], text=False)
        if any(r.error is not None for r in lean):
            return fresh
        at = {i: k for k, i in enumerate(scanned)}
        sized = [replace(g, end=lean[at[g.file]].end, size=lean[at[g.file]].size) for g in grown]
        checked = independent(files, Whole.of(lean), scanned, sized, kept)
        if checked is None:
            return fresh
        for g in checked:
            self._grown[str(files[g.file].path)] = (files[g.file], g)
        return first

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """The conversation of one file again, as its load read it.

        What its rows take from the other files of its load (which copy of a response counts,
        the call that spawned a subagent) was kept by that load (:class:`_Held`): while the file
        is as the load read it, only that file is read again. Else the whole load is.
        """
        assert isinstance(key, tuple) and len(key) == 2
        file, root = key
        held = self._held.get((str(file), str(root)))
        if held is not None and held.identity is not None and held.identity == file_identity(Path(file)):
            rows = scan_lines(FORMAT, [held.file.path], text=True)
            reported = Diagnostics(self.name)
            if rows[0].error is None and Messages.of(Whole.of(rows)).span(0)[1] == held.messages:
                ((conv, _),) = self._conversations([held.file], rows, Path(root), reported, True, alone=held)
                diagnostics.extend(reported.rows)
                return replace(conv, key=key)
        return self._one(key, diagnostics, True)

    def _one(self, key: Hashable, diagnostics: Diagnostics, text: bool) -> Conversation:
        assert isinstance(key, tuple) and len(key) == 2
        file, root = key
        for conv in self._load(files_under(Path(root), diagnostics), Path(root), diagnostics, text):
            if conv.path == file:
                return conv
        return Conversation(self.name, Path(file).stem, [], key=key, path=file)

    def _digest(self, files: Sequence[SessionFile]) -> str:
        """A digest of the identities of every file of a load (what each of its conversations' rows depend on).

        The identities are kept: a file's fingerprint is the identity its load's digest took.
        """
        found = [(str(f.path), *file_identity_ending(f.path)) for f in files]
        identities = [(path, identity) for path, identity, _ in found]
        self._identities.update(identities)
        self._ends.update((path, ends) for path, _, ends in found)
        return hashlib.blake2b(orjson.dumps(identities), digest_size=16).hexdigest()

    def file_identities(self, conv: Conversation) -> list[tuple[str, Identity]] | None:
        """The file's identity as its load's digest took it (taken now if none did)."""
        known = self._identities.get(conv.path) if conv.path is not None else None
        if known is not None and conv.path is not None:
            return [(conv.path, known)]
        return super().file_identities(conv)

    def fingerprint(self, conv: Conversation) -> object:
        """The file's identity, whether it is steady, and what every file of its load is read as of.

        A response's owner is decided over the whole load (copies, replays, mirrored subagent
        lines), so a change to any file of it reads every conversation of it again, unless the
        files only grew by lines that change no other file's rows (:meth:`_epoch`); a file
        rewritten in place (Claude Code back-fills usage and rewrites tails) changes its identity.
        """
        own = self.file_identities(conv)
        if own is None or not isinstance(conv.key, tuple):
            return None
        path = own[0][0]
        return [own, steady(Path(path), self.settle_seconds, self._ends.get(path)), self._epochs.get(str(conv.key[1]))]

    # ------------------------------------------------------------------ reading on (Resumable)

    def resumable(self, conv: Conversation, before: JSON, now: JSON) -> bool:
        """A file found grown by lines that change no other file's rows, nor its own earlier ones.

        Never by ranges (``before`` ``None``): a range of a file is not read apart from the home.
        """
        found = self._grown.get(str(conv.path))
        return (found is not None and found[1].alone and isinstance(before, list) and isinstance(now, list)
                and len(before) == len(now) == 3 and before[1:] == now[1:])

    def read_range(self, conv: Conversation, fd: int, start: int, end: int, point: ResumePoint,
                   diagnostics: Diagnostics, text: bool, scratch: Path) -> Tail | None:
        """The rows of the lines ``conv``'s file grew by since ``point``, read alone, as the lean scan checked them.

        They are read as far as that scan read the file: when it has grown again since, only
        that far, and the tail's point is ``None`` (the next read is whole). ``None`` when the
        file was not checked, or the lines read now are not the lines checked, or the resumed
        pairing walk is not exact.
        """
        found = self._grown.get(str(conv.path))
        if found is None or conv.path is None or not isinstance(conv.key, tuple):
            return None
        f, g = found
        stop = end if end == g.size else g.end  # grown again since it was checked: only what was checked
        if not g.alone or g.lost is None or point.lines != g.lines or g.end < start or end < g.size:
            return None
        data = read_exactly(fd, start, stop)
        if data is None:
            return None
        rows = scan_bytes(FORMAT, Path(conv.path), data, point.lines + 1, text=text)
        if rows.error is not None or start + rows.end != g.end or rows.num_rows != len(g.lost):
            return None
        reported = Diagnostics(self.name)
        ((read, walk),) = self._conversations([f], [rows], Path(conv.key[1]), reported, text, g.lost, point)
        if not walk.exact:
            return None
        diagnostics.extend(reported.rows)
        summary = replace(read.summary, title=g.title) if read.summary is not None else None
        return Tail(replace(read, resume=None, summary=summary), read.resume if stop == end else None,
                    walk.answered, retitled=True)

    def cut(self, fd: int, target: int, end: int, window: int) -> int | None:
        """No file is read by ranges (see :meth:`resumable`)."""
        return None

    def read_whole(self, conv: Conversation, diagnostics: Diagnostics, text: bool) -> Conversation:
        """``conv``'s file read whole, with its load (its usage depends on every file of it)."""
        return self._one(conv.key, diagnostics, text)

    # ------------------------------------------------------------------------------ reading

    def _load(self, files: list[SessionFile], root: Path, diagnostics: Diagnostics,
              text: bool) -> Iterator[Conversation]:
        if not files:
            return
        rows = scan_lines(FORMAT, [f.path for f in files], text=text)
        self._epochs.setdefault(str(root), [self._digest(files), len(files)])  # the identities taken now, kept
        for conv, _ in self._conversations(files, rows, root, diagnostics, text):
            yield conv

    def _conversations(self, files: list[SessionFile], rows: list[LineRows], root: Path, diagnostics: Diagnostics,
                       text: bool, lost: np.ndarray | None = None, before: ResumePoint | None = None,
                       alone: _Held | None = None) -> Iterator[tuple[Conversation, Pairer]]:
        """Each file's conversation from its rows, with the pairing walk that paired it.

        ``before``: the rows are the lines a file grew by since that point (``files`` is that
        one file), their pairing walk going on from its state, and ``lost`` their rewind marks
        as a read of the whole file decides them. ``alone``: ``files`` is one file read alone,
        and what depends on the other files of its load is what that load gave it.
        """
        w = Whole.of(rows)
        messages = Messages.of(w)
        sessions = _sessions(files, w)
        spawns: dict[tuple[str | None, str], str] = {}
        if alone is None:
            spawns = spawning_calls(files, w, sessions)
            usage_rows, usages = _usage(count_responses(w, _ranks(w)), messages)
        else:
            usage_rows, usages = [alone.usage_rows], [alone.usage]
        parts = EntryParts.build(w, messages, text, abandoned(w) if lost is None else lost)
        growth, names = compactions(messages, text), titles(w, messages)
        odd = _odd_lines(messages)
        start = before if before is not None else ResumePoint()
        named = [(alone.conversation_id, alone.parent, alone.call)] if alone is not None else [
            _named(f, session, spawns) for f, session in zip(files, sessions, strict=True)]
        if before is None and alone is None:  # kept for every file at once, for a handle of any of them
            for i, (f, (cid, parent, call)) in enumerate(zip(files, named, strict=True)):
                a, b = messages.span(i)
                self._held[(str(f.path), str(root))] = _Held(f, self._identities.get(str(f.path)), cid, b - a,
                                                usage_rows[i], usages[i], parent, call)
        every = [parts.of(i, usages[i]) for i in range(len(files))]
        walks = [walked(columns, before) for columns in every]
        pairings = Pairer.pairings(walks)  # every file's at once
        kept = Kept.each(w.table, w.starts)
        for i, f in enumerate(files):
            cid, parent, call = named[i]
            # reported as its conversation is handed over, so that the rows are its own (kept with its rows)
            report(rows[i], diagnostics, self.settle_seconds)
            for line in odd.get(i, ()):
                diagnostics.report(f.path, "not_a_message", "its message is not a JSON object; read as a message with "
                                                            "no content", line)
            own, columns, walk, paired = usages[i], every[i], walks[i], pairings[i]
            a, b = messages.span(i)
            held: Kept | None = kept[i]
            if before is not None:  # the file's keys are all of its lines': the earlier ones' too, or none kept
                earlier = Kept.from_doc(before.carry.get("kept"))
                held = earlier.joined(held) if earlier is not None and held is not None else None
            point = ResumePoint(messages=start.messages + b - a, lines=start.lines + rows[i].lines,
                                chars=start.chars + int(pc.sum(columns.text_chars).as_py() or 0), walk=walk.save(),
                                carry={"kept": held.to_doc()} if held is not None else {},
                                context=context_after(own, start.context) if own else start.context)
            summary = Summary(usage=usage_rows[i], growth=growth[i] or None, title=names[i], paired=paired)
            view = entries(f.path, messages.m.column("line").slice(a, b - a), columns, own)
            yield Conversation(self.name, cid, view, key=(str(f.path), str(root)), path=str(f.path), columns=[columns],
                               summary=summary, parent_conversation_id=parent, parent_call_id=call,
                               resume=point), walk


def _named(f: SessionFile, session: str | None,
           spawns: dict[tuple[str | None, str], str]) -> tuple[str, str | None, str | None]:
    """A file's conversation id, the conversation that spawned it and the call that did (a subagent's)."""
    if f.agent is None:
        return f.name, None, None
    return (f"{session}/{f.name}" if session else f.name), session, f.spawned_by or spawns.get((session, f.agent))


@dataclass(frozen=True, slots=True)
class _Held:
    """What a whole load gave one file's conversation from the other files, to read that file alone again.

    Attributes:
        file: the file.
        identity: its identity as the load's digest took it.
        conversation_id: its conversation (a flat subagent file's names its session).
        messages: how many messages the load read in it.
        usage_rows: its usage rows: the responses the load counted in it.
        usage: each message's usage as the load counted it (``None``: none of them carries any).
        parent: the conversation that spawned it (a subagent's session).
        call: the call that spawned it.
    """

    file: SessionFile
    identity: Identity | None
    conversation_id: str
    messages: int
    usage_rows: UsageColumns
    usage: list[Usage | None] | None
    parent: str | None
    call: str | None


def _verdict(known: Earlier, path: Path, identity: Identity | None) -> Verdict:
    """Whether the file at ``path`` is the one an earlier read read (``same``), it grown, or another.

    ``identity``: the file's identity as this load's digest took it. Equal to the identity the
    earlier read's fingerprint holds, it is that file, unchanged (the rule of
    :mod:`~murmur_analysis.core.identity`), and the file is not opened again; else the earlier
    read's resume point tells growth from replacement.
    """
    fp = known.fingerprint
    own = fp[0] if isinstance(fp, list) and fp else None
    if (identity is not None and isinstance(own, list) and len(own) == 1 and isinstance(own[0], list)
            and own[0][1:] == [identity]):
        return "same"
    if known.point is not None and known.point.at is not None:
        return verdict(known.point, path)
    return "replaced"


def _odd_lines(messages: Messages) -> dict[int, list[int]]:
    """Per file, the lines of message lines whose ``message`` is no JSON object."""
    odd = np.flatnonzero(mask(pc.equal(messages.m.column("message_kind"), "other")))
    files = np.searchsorted(messages.starts, odd, side="right") - 1
    lines = messages.m.column("line").take(pa.array(odd, pa.int64())).to_pylist()
    out: dict[int, list[int]] = {}
    for f, line in zip(files.tolist(), lines, strict=True):
        out.setdefault(f, []).append(int(line))
    return out


def _usage(counted: Counted, messages: Messages) -> tuple[list[UsageColumns], list[list[Usage | None] | None]]:
    """Per file, its usage rows, and each of its messages' usage (a response's first line holds it)."""
    n_files = len(messages.starts) - 1
    per_message = np.full(len(messages.index), None, object)
    covered = np.flatnonzero(counted.covered)
    covered = covered[messages.position[covered] >= 0]
    held = np.zeros(len(messages.index), bool)
    held[np.searchsorted(messages.index, covered)] = True
    notices = held & mask(pc.equal(messages.m.column("model"), SYNTHETIC))
    per_message[held & ~notices] = _COUNTED_ELSEWHERE
    per_message[notices] = _NO_RESPONSE
    resp = counted.responses
    usages = response_usages(resp) if resp.num_rows else []
    rows = resp.column("row").to_numpy()
    at = np.searchsorted(messages.index, rows)
    if usages:
        values = np.empty(len(usages), object)
        values[:] = usages
        per_message[at] = values
        held[at] = True

    def column(name: str) -> pa.Array | None:  # none when no response is (the table has no such column)
        return one_array(resp.column(name)) if resp.num_rows else None

    model = column("model")
    every = UsageColumns.of(
        usages, message_id=column("msg_id"), seq=pa.array(messages.position[rows], pa.int64()),
        model=None if model is None else pc.if_else(pc.equal(model, SYNTHETIC), pa.scalar(None, pa.string()), model),
        created_us=column("ts_us"), session_id=column("session_id"),
        provider="anthropic", found_in="entry", accounting="anthropic", provider_source="runtime")
    # the responses are in row order, so each file's are a run of them
    bounds = np.searchsorted(at, messages.starts).tolist()
    out = [every.slice(bounds[i], bounds[i + 1]) for i in range(n_files)]
    has = np.zeros(n_files, bool)
    has[np.searchsorted(messages.starts, np.flatnonzero(held), side="right") - 1] = True
    per_file: list[list[Usage | None] | None] = []
    for i in range(n_files):
        a, b = messages.span(i)
        per_file.append(per_message[a:b].tolist() if has[i] else None)
    return out, per_file
