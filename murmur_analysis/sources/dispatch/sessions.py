"""dispatch session documents (``CourierSession``): a history, and its ``dispatch_sessions`` row.

A session's ``history`` holds plain ``{role, content}`` strings: no ids, no times, no tool
calls, no token usage. Each becomes one entry whose ``seq`` is its index; ``message_id``,
``created_at`` and every token counter are null: nothing is invented. The run's own times,
status and parcel are in the ``dispatch_sessions`` row the session's summary carries.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ...core.handoff import Summary
from ...core.model import Entry, Text, Unknown
from ...core.values import datetime_of_ms, held, json_count, json_int, json_str
from ..base import Diagnostics
from .documents import document, printable_row

__all__ = ["Found", "history_entries", "read_session", "read_session_document", "session_summary"]


@dataclass(frozen=True, slots=True)
class Found:
    """What is known of a session before its document is read: where it was found, and its run.

    Attributes:
        kind: ``run``, ``session_file``, ``channel`` or ``sqlite``.
        path: the file it lives in.
        record: its run record (brought to its final state), for a run's session.
        channel: the channel plugin folder, for a channel bot's session.
        session_id: the session id the store keys it on, for a ``session.sqlite`` row.
        record_path: the run record's file, for a run's session.
    """

    kind: str
    path: str
    record: Mapping[str, Any] | None = None
    channel: str | None = None
    session_id: str | None = None
    record_path: str | None = None


def history_entries(history: Any) -> list[Entry]:
    """A session's ``history`` as entries: position = index, no ids, no times."""
    entries: list[Entry] = []
    for index, item in enumerate(history if isinstance(history, list) else []):
        role, content = (item.get("role"), item.get("content")) if isinstance(item, Mapping) else (None, None)
        if isinstance(role, str) and isinstance(content, str):
            entries.append(Entry(index, role, (Text(content),)))
        else:
            entries.append(Entry(index, role if isinstance(role, str) else "unknown", (Unknown(item),)))
    return entries


def session_summary(data: Mapping[str, Any], found: Found, messages: int, diagnostics: Diagnostics) -> Summary:
    """A read session's summary: its label as the title, and its ``dispatch_sessions`` row.

    A run time no timestamp holds is a ``bad_time`` row naming the run record, and is null.
    """
    rec = found.record or {}
    where = found.record_path or found.path

    def time(name: str) -> datetime | None:
        return held(datetime_of_ms(json_count(rec.get(name))), diagnostics, where, name)

    row = {
        "kind": found.kind,
        "session_id": found.session_id or json_str(data.get("id")),
        "run_id": json_str(rec.get("run_id")),
        "parcel_digest": json_str(data.get("parcel_digest")) or json_str(rec.get("parcel_digest")),
        "parcel_name": json_str(rec.get("parcel_name")),
        "entrypoint": json_str(data.get("entrypoint")),
        "label": json_str(data.get("label")),
        "channel": found.channel,
        "courier": json_str(rec.get("courier")),
        "status": json_str(rec.get("status")),
        "exit_code": json_int(rec.get("exit_code")),
        "turn_count": json_int(data.get("turn_count")),
        "elapsed_ms": json_int(data.get("elapsed_ms")),
        "history_messages": messages,
        "started_at": time("started_at_ms"),
        "stopped_at": time("stopped_at_ms"),
        "error": json_str(rec.get("last_error")),
        "path": found.path,
    }
    return Summary(title=json_str(data.get("label")), rows={"dispatch_sessions": (printable_row(row),)})


def read_session_document(path: Path, diagnostics: Diagnostics) -> dict[str, Any] | None:
    """A session file's document, or ``None`` once reported (unreadable, not JSON, no history list)."""
    return document(path, "history", diagnostics, "not_a_session", "a dispatch CourierSession")


def read_session(found: Found, diagnostics: Diagnostics) -> Generator[Entry, None, Summary]:
    """A session file's entries, read when first asked for; returns the session's summary.

    A file that holds no session gives no entries, a diagnostics row, and no row of any
    table.
    """
    data = read_session_document(Path(found.path), diagnostics)
    if data is None:
        return Summary(readable=False)
    entries = history_entries(data["history"])
    yield from entries
    return session_summary(data, found, len(entries), diagnostics)
