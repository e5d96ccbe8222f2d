"""The Claude Code source: session transcripts under a config dir's ``projects/``.

Every file of a load is read in one native scan (the ``claude_code`` format of the line engine,
:mod:`murmur_analysis.sources.lines`), and the responses are counted over all of them at once
(:mod:`.usage`), so a response written into several files (a resumed session's copies, a
subagent's lines mirrored in the main file, a ``/btw`` replay) counts once. Then each file is one
conversation:

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
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ...core.files import steady
from ...core.handoff import Conversation, Summary, UsageRow
from ...core.identity import file_identity
from ...core.model import Usage
from ...core.providers import accounting
from ..base import READ_ALL, Diagnostics, ReadContext, Source
from ..lines import LineRows, report, scan_lines
from .entries import entries
from .layout import SessionFile, default_homes, files_under, looks_like_claude, projects_of
from .pieces import abandoned, compactions, entry_columns, spawning_calls, title
from .usage import COUNTERS, SYNTHETIC, count_responses

__all__ = ["FORMAT", "ClaudeCodeSource"]

#: The engine's format of these files.
FORMAT = "claude_code"
_MESSAGES = pa.array(["user", "assistant", "system"])
_STR = pa.string()
_I64 = pa.int64()
_TIMESTAMP = pa.timestamp("us", tz="UTC")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ANTHROPIC = accounting("anthropic")
#: Nothing counted on this line: another line holds its response's usage (or it is no response).
_COUNTED_ELSEWHERE = Usage()


def _time(us: Any) -> datetime | None:
    return None if us is None or pd.isna(us) else _EPOCH + timedelta(microseconds=int(us))


def _value(v: Any) -> int | None:
    return None if v is None or pd.isna(v) else int(v)


def response_usage(resp: dict[str, Any]) -> Usage:
    """One response's counters (a row of :attr:`.usage.Counted.responses`), normalized the Anthropic way."""
    split = bool(_value(resp["has_cache_breakdown"]))
    problems = [f"{field} is not an integer in 0..2**63-1 on a line of this response; that line's value is read as "
                "not reported" for name, field in COUNTERS.items() if _value(resp[f"bad_{name}"]) == 1]
    extra = {k: resp[k] for k in ("service_tier", "speed") if isinstance(resp[k], str)}
    return Usage.normalize(
        input_tokens=_value(resp["u_input"]), output_tokens=_value(resp["u_output"]),
        cache_read_tokens=_value(resp["u_cache_read"]), cache_write_tokens=_value(resp["u_cache_creation"]),
        cache_write_5m_tokens=_value(resp["u_cache_5m"]) if split else None,
        cache_write_1h_tokens=_value(resp["u_cache_1h"]) if split else None,
        cache_in_input=_ANTHROPIC.cache_in_input, reasoning_in_output=_ANTHROPIC.reasoning_in_output,
        cache_write_slice=_ANTHROPIC.cache_write_slice, extra=extra, problems=problems,
    )


def _ranks(rows: Sequence[LineRows]) -> list[int]:
    """Each file's rank when files are ordered by their first line's time (untimed last), then load order."""
    firsts = [pc.min(r.table.column("ts_us")).as_py() for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (firsts[i] is None, firsts[i] or 0, i))
    ranks = [0] * len(rows)
    for rank, i in enumerate(order):
        ranks[i] = rank
    return ranks


def _first(column: pa.ChunkedArray | pa.Array, last: bool = False) -> Any:
    present = pc.drop_null(column)
    return present[-1 if last else 0].as_py() if len(present) else None


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
        yield from self._load(files, path, diagnostics, ctx.text)

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
        identities = [(str(f.path), file_identity(f.path)) for f in files]
        self._digests[str(root)] = hashlib.blake2b(orjson.dumps(identities), digest_size=16).hexdigest()
        for r in rows:
            report(r, diagnostics, self.settle_seconds)
        counted = count_responses(rows, _ranks(rows))
        sessions = [f.session or _first(r.table.column("session_id")) for f, r in zip(files, rows, strict=True)]
        spawns = spawning_calls(files, rows, sessions)
        by_file: dict[int, list[dict[str, Any]]] = {}
        for record in counted.responses.to_dict("records"):
            by_file.setdefault(int(record["file"]), []).append({str(k): v for k, v in record.items()})
        for i, (f, r) in enumerate(zip(files, rows, strict=True)):
            session = sessions[i]
            if f.agent is None:
                cid, parent, call = f.name, None, None
            else:
                cid = f"{session}/{f.name}" if session else f.name
                parent, call = session, f.spawned_by or spawns.get((session, f.agent))
            yield self._conversation(f, r, cid, (str(f.path), str(root)), counted.covered[i], by_file.get(i), text,
                                     diagnostics, parent, call)

    def _conversation(self, f: SessionFile, rows: LineRows, cid: str, key: tuple[str, str], covered: np.ndarray,
                      responses: list[dict[str, Any]] | None, text: bool, diagnostics: Diagnostics,
                      parent: str | None, call: str | None) -> Conversation:
        t = rows.table
        index = np.flatnonzero(pc.is_in(t.column("type"), value_set=_MESSAGES).to_numpy(zero_copy_only=False))
        position = np.full(t.num_rows, -1, np.int64)
        position[index] = np.arange(len(index))
        m = t.take(pa.array(index))
        odd = np.flatnonzero(pc.equal(m.column("message_kind"), "other").to_numpy(zero_copy_only=False))
        for at in odd.tolist():
            diagnostics.report(f.path, "not_a_message", "its message is not a JSON object; read as a message with no "
                                                        "content", int(m.column("line")[at].as_py()))
        usage_rows, usages = self._usage(responses, position, covered, len(index))
        summary = Summary(usage=tuple(usage_rows), growth=compactions(m, text) or None, title=title(t, m))
        columns = entry_columns(m, rows, index, position, usages, text, abandoned(rows)[index])
        view = entries(f.path, m.column("line").to_pylist(), columns.id.to_pylist(), columns.side.to_pylist(),
                       columns.model.to_pylist(), columns.created_at.to_pylist(), usages)
        return Conversation(self.name, cid, view, key=key, path=str(f.path), columns=[columns], summary=summary,
                            parent_conversation_id=parent, parent_call_id=call)

    @staticmethod
    def _usage(responses: list[dict[str, Any]] | None, position: np.ndarray, covered: np.ndarray,
               n: int) -> tuple[list[UsageRow], list[Usage | None] | None]:
        """The file's usage rows, and each message's usage (its response's first line holds it)."""
        per_message: list[Usage | None] = [None] * n
        for row in np.flatnonzero(covered).tolist():
            if position[row] >= 0:
                per_message[int(position[row])] = _COUNTED_ELSEWHERE
        out: list[UsageRow] = []
        for resp in responses or ():
            usage = response_usage(resp)
            seq = int(position[int(resp["row"])])
            per_message[seq] = usage
            model = resp["model"] if isinstance(resp["model"], str) and resp["model"] != SYNTHETIC else None
            msg_id, session = resp["msg_id"], resp["session_id"]
            out.append(UsageRow(usage, message_id=msg_id if isinstance(msg_id, str) else None, seq=seq,
                                model=model, provider="anthropic", created_at=_time(resp["ts_us"]), found_in="entry",
                                accounting="anthropic", provider_source="runtime",
                                session_id=session if isinstance(session, str) else None))
        return out, (per_message if any(u is not None for u in per_message) else None)

