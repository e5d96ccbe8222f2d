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

**Incremental export.** Every conversation's rows may depend on every file of its load, so a
load is read whole or not at all: ``open`` asks the load (``ReadContext.skip``) about each file
before it scans any, and scans none when every one may be skipped (an export of a home none of
whose files changed, appeared or went: each fingerprint holds a digest of all of them). Else it
reads every file, as a load does. A flat ``agent-<id>.jsonl`` is named by the session its lines
name, so a load holding one is always read. No file is read on from a point.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from ...core.files import steady
from ...core.handoff import Conversation, Summary, UsageRow
from ...core.identity import file_identity
from ...core.model import Usage
from ...core.providers import accounting
from ..base import READ_ALL, Diagnostics, ReadContext, Source
from ..lines import report, scan_lines
from .entries import entries
from .layout import SessionFile, default_homes, files_under, looks_like_claude, projects_of
from .pieces import EntryParts, Messages, abandoned, compactions, spawning_calls, titles
from .usage import COUNTERS, SYNTHETIC, Counted, count_responses
from .whole import Whole, firsts, mask, true

__all__ = ["FORMAT", "ClaudeCodeSource"]

#: The engine's format of these files.
FORMAT = "claude_code"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ANTHROPIC = accounting("anthropic")
#: Nothing counted on this line: another line holds its response's usage (or it is no response).
_COUNTED_ELSEWHERE = Usage()


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
    out = []
    for i, (u_in, u_out, u_read, u_write, u_5m, u_1h) in enumerate(zip(*counters, strict=True)):
        extra = {k: v for k, v in (("service_tier", tiers[i]), ("speed", speeds[i])) if isinstance(v, str)}
        out.append(Usage.normalize(
            input_tokens=u_in, output_tokens=u_out, cache_read_tokens=u_read, cache_write_tokens=u_write,
            cache_write_5m_tokens=u_5m if split[i] else None, cache_write_1h_tokens=u_1h if split[i] else None,
            cache_in_input=_ANTHROPIC.cache_in_input, reasoning_in_output=_ANTHROPIC.reasoning_in_output,
            cache_write_slice=_ANTHROPIC.cache_write_slice, extra=extra,
            problems=_problems(int(bad[i])) if bad[i] else (),
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
        self._digests: dict[str, str] = {}

    @classmethod
    def default_homes(cls) -> list[Path]:
        """The Claude Code config dirs that exist (``CLAUDE_CONFIG_DIR``'s, else the two defaults)."""
        return default_homes()

    def guess_can_open(self, path: Path) -> bool:
        """A config dir, a ``projects/`` dir or a project dir holding sessions, or a session ``.jsonl``."""
        if path.is_dir():
            return projects_of(path) is not None
        return looks_like_claude(path)

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every transcript under ``path``, each a conversation (see the module doc)."""
        files = files_under(path, diagnostics)
        if files and ctx.skip is not None and self._skipped(files, path, ctx.skip):
            for f in files:
                yield self._unread(f, path)
            return
        yield from self._load(files, path, diagnostics, ctx.text)

    def _unread(self, f: SessionFile, root: Path) -> Conversation:
        """A file found, not read: its conversation as the load names it (its session from its place)."""
        cid = f.name if f.agent is None else f"{f.session}/{f.name}"
        return Conversation(self.name, cid, [], key=(str(f.path), str(root)), path=str(f.path))

    def _skipped(self, files: list[SessionFile], root: Path, skip: Callable[[Conversation], bool]) -> bool:
        """Whether the load may skip every file of ``root`` (asked before any is scanned)."""
        self._digests[str(root)] = _digest(files)
        if any(f.session is None for f in files):  # a flat agent file's session is in its lines
            return False
        return all([skip(self._unread(f, root)) for f in files])  # every one asked: each decided for

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """The conversation of one file again, read with the load it was found in (its usage depends on it)."""
        assert isinstance(key, tuple) and len(key) == 2
        file, root = key
        for conv in self._load(files_under(Path(root), diagnostics), Path(root), diagnostics, True):
            if conv.path == file:
                return conv
        return Conversation(self.name, Path(file).stem, [], key=key, path=file)

    def fingerprint(self, conv: Conversation) -> object:
        """The file's identity, whether it is steady, and a digest of every file of its load.

        A response's owner is decided over the whole load (copies, replays, mirrored subagent
        lines), so a change to any file of it reads every conversation of it again; a file
        rewritten in place (Claude Code back-fills usage and rewrites tails) changes its identity.
        """
        own = self.file_identities(conv)
        if own is None or not isinstance(conv.key, tuple):
            return None
        return [own, steady(Path(own[0][0]), self.settle_seconds), self._digests.get(str(conv.key[1]))]

    # ------------------------------------------------------------------------------ reading

    def _load(self, files: list[SessionFile], root: Path, diagnostics: Diagnostics,
              text: bool) -> Iterator[Conversation]:
        if not files:
            return
        rows = scan_lines(FORMAT, [f.path for f in files], text=text)
        self._digests[str(root)] = _digest(files)
        for r in rows:
            report(r, diagnostics, self.settle_seconds)
        w = Whole.of(rows)
        messages = Messages.of(w)
        counted = count_responses(w, _ranks(w))
        sessions = _sessions(files, w)
        spawns = spawning_calls(files, w, sessions)
        usage_rows, usages = _usage(counted, messages)
        parts = EntryParts.build(w, messages, text, abandoned(w))
        growth, names = compactions(messages, text), titles(w, messages)
        odd = _odd_lines(messages)
        for i, f in enumerate(files):
            session = sessions[i]
            if f.agent is None:
                cid, parent, call = f.name, None, None
            else:
                cid = f"{session}/{f.name}" if session else f.name
                parent, call = session, f.spawned_by or spawns.get((session, f.agent))
            for line in odd.get(i, ()):
                diagnostics.report(f.path, "not_a_message", "its message is not a JSON object; read as a message with "
                                                            "no content", line)
            columns = parts.of(i, usages[i])
            a, b = messages.span(i)
            summary = Summary(usage=tuple(usage_rows[i]), growth=growth[i] or None, title=names[i])
            view = entries(f.path, messages.m.column("line").slice(a, b - a), columns, usages[i])
            yield Conversation(self.name, cid, view, key=(str(f.path), str(root)), path=str(f.path), columns=[columns],
                               summary=summary, parent_conversation_id=parent, parent_call_id=call)


def _digest(files: Sequence[SessionFile]) -> str:
    """A digest of the identities of every file of a load (what each of its conversations' rows depend on)."""
    identities = [(str(f.path), file_identity(f.path)) for f in files]
    return hashlib.blake2b(orjson.dumps(identities), digest_size=16).hexdigest()


def _odd_lines(messages: Messages) -> dict[int, list[int]]:
    """Per file, the lines of message lines whose ``message`` is no JSON object."""
    odd = np.flatnonzero(mask(pc.equal(messages.m.column("message_kind"), "other")))
    files = np.searchsorted(messages.starts, odd, side="right") - 1
    lines = messages.m.column("line").take(pa.array(odd, pa.int64())).to_pylist()
    out: dict[int, list[int]] = {}
    for f, line in zip(files.tolist(), lines, strict=True):
        out.setdefault(f, []).append(int(line))
    return out


def _usage(counted: Counted, messages: Messages) -> tuple[list[list[UsageRow]], list[list[Usage | None] | None]]:
    """Per file, its usage rows, and each of its messages' usage (a response's first line holds it)."""
    n_files = len(messages.starts) - 1
    per_message = np.full(len(messages.index), None, object)
    covered = np.flatnonzero(counted.covered)
    covered = covered[messages.position[covered] >= 0]
    held = np.zeros(len(messages.index), bool)
    held[np.searchsorted(messages.index, covered)] = True
    per_message[held] = _COUNTED_ELSEWHERE
    resp = counted.responses
    out: list[list[UsageRow]] = [[] for _ in range(n_files)]
    if resp.num_rows:
        usages = response_usages(resp)
        rows = resp.column("row").to_numpy()
        at = np.searchsorted(messages.index, rows)
        values = np.empty(len(usages), object)
        values[:] = usages
        per_message[at] = values
        held[at] = True
        seqs = messages.position[rows].tolist()
        files = np.searchsorted(messages.starts, at, side="right") - 1
        models, ids = resp.column("model").to_pylist(), resp.column("msg_id").to_pylist()
        sessions, times = resp.column("session_id").to_pylist(), resp.column("ts_us").to_pylist()
        for i, (usage, f, ts) in enumerate(zip(usages, files.tolist(), times, strict=True)):
            model, msg_id, session = models[i], ids[i], sessions[i]
            out[f].append(UsageRow(
                usage, message_id=msg_id if isinstance(msg_id, str) else None, seq=seqs[i],
                model=model if isinstance(model, str) and model != SYNTHETIC else None, provider="anthropic",
                created_at=None if ts is None else _EPOCH + timedelta(microseconds=int(ts)), found_in="entry",
                accounting="anthropic", provider_source="runtime",
                session_id=session if isinstance(session, str) else None))
    has = np.zeros(n_files, bool)
    has[np.searchsorted(messages.starts, np.flatnonzero(held), side="right") - 1] = True
    per_file: list[list[Usage | None] | None] = []
    for i in range(n_files):
        a, b = messages.span(i)
        per_file.append(per_message[a:b].tolist() if has[i] else None)
    return out, per_file
