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

from typing import TYPE_CHECKING

from ...core.lazy import names_from

if TYPE_CHECKING:
    from .reader import RecordReader, read_messages, walk
    from .source import MurmurSource

__all__ = ["MurmurSource", "RecordReader", "read_messages", "walk"]

#: Where each name lives, imported when first used: paging a record loads the reader alone, and
#: detection the layout (:mod:`.layout`) alone.
__getattr__ = names_from(__name__, {"MurmurSource": ".source", "RecordReader": ".reader", "read_messages": ".reader",
                                    "walk": ".reader"})
