"""dispatch courier sessions (formats.md §4): session files, run folders, SQLite mounts, eval traces.

What a path may be:

* a ``*.session.json`` (``--session-file``, a run's session, or a channel bot's
  ``<plugin>/<sha24>.session.json``);
* a folder: ``.dispatch/runs/`` pairs each ``<run_id>.session.json`` with its run record
  ``<run_id>.json``; a channel bot's session folder; or any folder holding these (searched
  recursively, hidden ``.dispatch`` folders included, :data:`SKIP_DIRS` left out);
* a ``session.sqlite`` (table ``dispatch_sessions``, column ``payload_json``), opened read-only;
  its ``dispatch_memory`` rows become the ``memory`` table;
* an eval trace ``evals/<parcel-digest>/<ms>-<case>.dispatch-trace.json``.

Who owns what:

* :mod:`.layout`: file names, run ids, and the walk that finds dispatch's files;
* :mod:`.detect`: which paths are dispatch's (what detection asks);
* :mod:`.documents`: reading a JSON document, and the values read out of one;
* :mod:`.runs`: run records and their final snapshots;
* :mod:`.sessions`: session documents, their entries and their ``dispatch_sessions`` row;
* :mod:`.traces`: eval traces, their entries, tool outcomes and ``dispatch_sessions`` row;
* :mod:`.store`: the SQLite store, its sessions and its memory rows;
* :mod:`.source`: :class:`DispatchSource`, which puts them together.

The source declares no table: ``dispatch_sessions`` and ``memory`` are declared in
:mod:`murmur_analysis.tables.schema`, and the frame builder builds them from the rows handed over (a
session's row in its conversation's summary, memory rows beside the conversations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.lazy import names_from

if TYPE_CHECKING:
    from .layout import SKIP_DIRS
    from .sessions import history_entries
    from .source import DispatchSource
    from .traces import decode_trace

__all__ = ["SKIP_DIRS", "DispatchSource", "decode_trace", "history_entries"]

#: Where each name lives, imported when first used: detection loads :mod:`.detect` alone.
__getattr__ = names_from(__name__, {"SKIP_DIRS": ".layout", "DispatchSource": ".source", "decode_trace": ".traces",
                                    "history_entries": ".sessions"})
