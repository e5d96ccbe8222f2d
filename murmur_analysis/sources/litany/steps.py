"""Litany step records: ``steps/<agent-id>/NNN/`` beside the repository, outside git.

Each step folder (1-indexed, zero-padded; ``driver.log`` and other files beside them are not
steps) holds

* ``meta.json``: ``{"commit", "config_commit"?, "workflow_commit"?, "provider"?,
  "dropped_orphans"?, "started_at", "ended_at"}``, pretty-printed; older records lack the
  optional fields;
* ``request.json``: the request sent, whose ``model`` names the step's model;
* ``response.json``: brazen stream events as JSON lines, one segment per attempt, each ending
  ``{"type":"end"}``. ``usage`` events are cumulative within an attempt: each counter is
  taken as last reported, a ``null`` leaving the earlier value standing (litany's
  ``UsageReport::fold``). An attempt ending in ``error`` was discarded; the sealing attempt is
  the last one that finished without error.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ...core.files import entry_is_dir, listing, read_regular_files
from ...core.values import held, iso_datetime
from ..base import Diagnostics

__all__ = ["Attempt", "StepRecord", "parse_response", "read_steps"]


@dataclass
class Attempt:
    """One attempt segment of ``response.json``."""

    number: int
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    finish_reason: str | None = None
    error: str | None = None
    ended: bool = False

    @property
    def succeeded(self) -> bool:
        """Whether the attempt finished without an error."""
        return self.error is None and self.finish_reason is not None


@dataclass
class StepRecord:
    """What one step folder says."""

    step: int
    path: Path
    commit: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    provider: str | None = None
    dropped_orphans: tuple[str, ...] | None = None
    model: str | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def sealing(self) -> Attempt | None:
        """The attempt whose output was kept: the last that finished without error."""
        for attempt in reversed(self.attempts):
            if attempt.succeeded:
                return attempt
        return None


#: The files of a step folder, in the order they are read.
_FILES = ("meta.json", "request.json", "response.json")
#: How many steps' files are read at once (and held until decoded).
STEPS_AT_ONCE = 64


def _json(data: bytes | None, path: str, diags: Diagnostics) -> Any:
    if data is None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        diags.report(path, "bad_json", str(err))
        return None


def _step_dirs(agent_dir: Path, diags: Diagnostics) -> list[tuple[int, str, str]]:
    if not os.path.lexists(agent_dir):
        return []  # an agent that ran no step
    return sorted((int(c.name), c.name, c.path) for c in listing(agent_dir, diags)
                  if c.name.isascii() and c.name.isdigit() and entry_is_dir(c))


def read_steps(agent_dirs: Sequence[Path], diags: Sequence[Diagnostics]) -> list[list[StepRecord]]:
    """The step records of many agents (``steps/<agent-id>/`` each), their files read in batches.

    The files of :data:`STEPS_AT_ONCE` steps are read in one call of the engine's many-file
    reader (:func:`~murmur_analysis.core.files.read_regular_files`) and decoded before the next
    steps' are read, so memory holds the bytes of those steps at most (a ``request.json`` holds
    a whole prompt, and a long agent's grow with its conversation).

    Args:
        agent_dirs: each agent's folder of step records.
        diags: where each agent's problems are reported (one per folder).

    Returns:
        Each agent's records, in step order.
    """
    found = [_step_dirs(d, r) for d, r in zip(agent_dirs, diags, strict=True)]
    steps = [(agent, step) for agent, listed in enumerate(found) for step in listed]
    out: list[list[StepRecord]] = [[] for _ in found]
    for at in range(0, len(steps), STEPS_AT_ONCE):
        batch = steps[at : at + STEPS_AT_ONCE]
        paths = [os.path.join(folder, name) for _a, (_n, _s, folder) in batch for name in _FILES]
        owners = [diags[agent] for agent, _step in batch for _ in _FILES]
        read = iter(read_regular_files(paths, owners, missing_ok=True))
        for agent, (number, name, folder) in batch:
            out[agent].append(_record(agent_dirs[agent], number, name, folder, next(read), next(read), next(read),
                                      diags[agent]))
    return out


def _record(agent_dir: Path, number: int, name: str, folder: str, meta_data: bytes | None,
            request_data: bytes | None, response_data: bytes | None, diags: Diagnostics) -> StepRecord:
    """One step folder's record, from its files' bytes (``None``: absent or unreadable, reported)."""
    rec = StepRecord(number, agent_dir / name)
    meta_path = os.path.join(folder, "meta.json")
    meta = _json(meta_data, meta_path, diags)
    if isinstance(meta, dict):
        rec.commit = meta.get("commit") if isinstance(meta.get("commit"), str) else None
        rec.started_at = held(iso_datetime(meta.get("started_at")), diags, meta_path, "started_at")
        rec.ended_at = held(iso_datetime(meta.get("ended_at")), diags, meta_path, "ended_at")
        rec.provider = meta.get("provider") if isinstance(meta.get("provider"), str) else None
        dropped = meta.get("dropped_orphans")
        if isinstance(dropped, list):
            rec.dropped_orphans = tuple(str(d) for d in dropped)
    elif meta is None:  # unreadable or not JSON was reported where it was read
        if not os.path.exists(meta_path):
            diags.report(meta_path, "missing_file", "the step has no meta.json (an unfinished step?)")
    else:
        diags.report(meta_path, "unknown_schema", "meta.json is not a JSON object")
    request = _json(request_data, os.path.join(folder, "request.json"), diags)
    if isinstance(request, dict) and isinstance(request.get("model"), str):
        rec.model = request["model"]
    rec.attempts = parse_response(response_data or b"", os.path.join(folder, "response.json"), diags)
    return rec


def _error_text(event: dict[str, Any]) -> str:
    message = event.get("message")
    kind = event.get("kind")
    text = message if isinstance(message, str) else "error"
    if isinstance(kind, str):
        return f"{kind}: {text}"
    if isinstance(kind, dict) and kind:
        return f"{next(iter(kind))}: {text}"
    return text


def parse_response(data: bytes, path: str | os.PathLike[str], diags: Diagnostics) -> list[Attempt]:
    """Split ``response.json`` into attempts (see the module docs)."""
    attempts: list[Attempt] = []
    current: Attempt | None = None
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as err:
            diags.report(path, "bad_json", str(err), line=number)
            continue
        if not isinstance(event, dict):
            diags.report(path, "bad_json", "a stream event is not a JSON object", line=number)
            continue
        if current is None:
            current = Attempt(len(attempts) + 1)
            attempts.append(current)
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("model"), str):
            current.model = event["model"]
        elif kind == "usage":
            for counter, value in event.items():
                if counter not in ("type", "v") and value is not None:
                    current.usage[counter] = value
        elif kind == "finish":
            reason = event.get("reason")
            current.finish_reason = reason if isinstance(reason, str) else "unknown"
        elif kind == "error":
            current.error = _error_text(event)
        elif kind == "end":
            current.ended = True
            current = None
    return attempts
