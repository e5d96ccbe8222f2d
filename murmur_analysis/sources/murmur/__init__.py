"""murmur: a JSONL record per context, with optional trace files beside it.

- :mod:`.record`: murmur's line rules (serde_json, through the native engine) and headers.
- :mod:`.index`: the persisted line index of a record.
- :mod:`.reader`: the record reader the cursor core pages through.
- :mod:`.engine`: the native scan of many records into typed columns.
- :mod:`.sessions`: where session traces are.
- :mod:`.trace_events`: trace events as values (inferences and their usage, compactions, tasks).
- :mod:`.trace`: the trace index (tasks by context id).
- :mod:`.join`: records joined to their traces (usage, growth).
- :mod:`.source`: the source: discovery and decoding of a murmur home.

``RecordReader``, ``read_messages`` and ``walk`` are this source's, and this package is their
canonical home (``murmur_analysis.sources.murmur.walk``); ``murmur_analysis`` re-exports them
as ``ma.walk`` and so on, the spelling the notebooks use.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from .reader import RecordReader, read_messages, walk
    from .source import MurmurSource

__all__ = ["MurmurSource", "RecordReader", "read_messages", "walk"]

#: Where each name lives, imported when first used: paging a record loads the reader alone.
_NAMES = {"MurmurSource": ".source", "RecordReader": ".reader", "read_messages": ".reader", "walk": ".reader"}


def __getattr__(name: str) -> object:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value: object = getattr(_importlib.import_module(_NAMES[name], __name__), name)
    globals()[name] = value
    return value
