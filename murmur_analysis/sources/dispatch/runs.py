"""dispatch run records (``.dispatch/runs/<run_id>.json``) and their final snapshots.

A run record (``RunRecord``, ``dispatch-cli/src/runs.rs``) holds the run's times, status,
parcel and courier, and names where its session lives (``session_file``). dispatch writes
``<run_id>.final.json`` before it rewrites the record, and reading a record consumes the
snapshot (``refresh_run_record``): a snapshot beside a record that still says ``running``
means the run finished, as the snapshot says.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...core.files import file_kind
from ...core.values import json_str
from ..base import Diagnostics
from .documents import read_json
from .layout import FINAL_SUFFIX, SESSION_SUFFIX, beside

__all__ = ["run_record", "session_of"]


def run_record(record_path: Path, diagnostics: Diagnostics) -> dict[str, Any] | None:
    """A run record, brought to its final state by ``<run_id>.final.json`` when one stands beside it."""
    record = read_json(record_path, diagnostics) if os.path.lexists(record_path) else None
    final_path = beside(record_path, FINAL_SUFFIX)
    final = read_json(final_path, diagnostics) if os.path.lexists(final_path) else None
    for value, where in ((record, record_path), (final, final_path)):
        if value is not None and not isinstance(value, dict):
            diagnostics.report(where, "not_a_run_record", "not a dispatch run record (not a JSON object); "
                               "its run's times and status are unknown")
    record = record if isinstance(record, dict) else None
    if isinstance(final, dict):
        return {**(record or {}), **final}
    return record


def session_of(record_path: Path, diagnostics: Diagnostics) -> Path | None:
    """Where a run record's session lives: beside it, or where its ``session_file`` says.

    A relative ``session_file`` is looked for beside the record, then, for a record in
    ``.dispatch/runs/``, in the parcel's folder that holds ``.dispatch``.
    """
    near = beside(record_path, SESSION_SUFFIX)
    if os.path.lexists(near):
        return near
    record = run_record(record_path, diagnostics)
    named = json_str(record.get("session_file")) if record else None
    if not named:
        return None
    where = Path(named)
    candidates = [where] if where.is_absolute() else [record_path.parent / where]
    runs = record_path.parent
    if not where.is_absolute() and runs.name == "runs" and runs.parent.name == ".dispatch":
        candidates.append(record_path.parent.parent.parent / where)  # the parcel's folder
    return next((c for c in candidates if file_kind(c) == "file"), None)
