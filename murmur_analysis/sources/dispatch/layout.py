"""Where dispatch keeps its files: their names, run ids, and the walk that finds them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ...core.files import listing, report_kind
from ..base import Diagnostics

__all__ = [
    "DB_SUFFIXES",
    "FINAL_SUFFIX",
    "SESSION_SUFFIX",
    "SKIP_DIRS",
    "TRACE_SUFFIX",
    "beside",
    "claims_name",
    "files",
    "is_channel_session",
    "run_id",
    "stem",
    "trace_id",
]

_RUN_ID = re.compile(r"^[0-9]+-[0-9a-f]{1,64}$")
_CHANNEL_SESSION = re.compile(r"^[0-9a-f]{24}\.session\.json$")
_DIGEST = re.compile(r"^[0-9a-f]{12,128}$")  # a parcel digest in hex
#: Folders a recursive search never enters: version control, dependencies, build output, built parcels.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", "target", "parcels"})
SESSION_SUFFIX = ".session.json"
#: ``<run_id>.final.json``: the run's final state, written before the record is.
FINAL_SUFFIX = ".final.json"
DB_SUFFIXES = (".sqlite", ".sqlite3", ".db")
TRACE_SUFFIX = ".dispatch-trace.json"


def run_id(name: str) -> str | None:
    """The run id of a run record's file name ``<run_id>.json``, or ``None``."""
    return name[:-5] if name.endswith(".json") and _RUN_ID.match(name[:-5]) else None


def beside(record_or_session: Path, suffix: str) -> Path:
    """The file of the same run beside ``record_or_session`` with ``suffix`` (``.json``, ``.session.json``, ...)."""
    name = record_or_session.name
    for known in (SESSION_SUFFIX, FINAL_SUFFIX, ".json"):
        if name.endswith(known):
            return record_or_session.with_name(name[: -len(known)] + suffix)
    return record_or_session.with_name(name + suffix)


def claims_name(name: str) -> bool:
    """Whether a file of this name is dispatch's by its name alone (a session, a trace, ``session.sqlite``)."""
    return name.endswith((SESSION_SUFFIX, TRACE_SUFFIX)) or name == "session.sqlite"


def is_channel_session(name: str) -> bool:
    """Whether the name is a channel bot's session file, ``<sha24>.session.json``."""
    return _CHANNEL_SESSION.match(name) is not None


def stem(name: str, suffix: str) -> str:
    """The file name less ``suffix`` (less its last extension when it has another suffix)."""
    return name[: -len(suffix)] if name.endswith(suffix) else Path(name).stem


def trace_id(path: Path) -> str:
    """An eval trace's conversation id, from where dispatch writes it: ``evals/<parcel digest>/<stem>``.

    ``eval:<digest[:12]>/<file stem>``; the digest is left empty when the folder holding the
    trace is not named by one. Known from the path alone, so the trace is read only when its
    entries are.
    """
    folder = path.parent.name
    digest = folder[:12] if _DIGEST.match(folder) else ""
    return f"eval:{digest}/{stem(path.name, TRACE_SUFFIX)}"


def files(folder: Path, diagnostics: Diagnostics) -> Iterator[Path]:
    """The files under ``folder`` dispatch reads (by name), depth first in name order.

    Hidden folders are entered (``.dispatch``); :data:`SKIP_DIRS` and links to folders are not.
    A folder that cannot be listed is a diagnostics row. The walk keeps its own stack (one
    listing per folder being walked), so a chain of folders of any depth is walked.
    """
    walking = [iter(listing(folder, diagnostics))]
    while walking:
        entry = next(walking[-1], None)
        if entry is None:
            walking.pop()  # this folder is done: on with its parent's next entry
            continue
        try:
            is_folder = entry.is_dir(follow_symlinks=False)
        except OSError:
            is_folder = False
        if is_folder and entry.name.endswith((SESSION_SUFFIX, TRACE_SUFFIX)):
            report_kind(entry.path, "folder", diagnostics)
        elif is_folder:
            if entry.name not in SKIP_DIRS:
                walking.append(iter(listing(Path(entry.path), diagnostics)))
        elif claims_name(entry.name) or run_id(entry.name) is not None or entry.name.endswith(DB_SUFFIXES):
            yield Path(entry.path)
