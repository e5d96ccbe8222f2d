"""How Arrow's allocator takes memory from the system: small pages, unless the user says otherwise.

pyarrow allocates through its bundled mimalloc, which (from mimalloc 3) backs large allocations
with transparent huge pages. A load builds its tables from many fresh allocations of megabytes
each, so what it pays is the first touch of new memory. Where that memory comes slowly in 2 MiB
pieces, as on the container-on-a-virtual-machine the benchmarks run on, huge pages cost more
than small ones: a fresh 8 MB array took 16-18 ms in four huge-page faults there, 4-5 ms in
small pages, and the table build of a 1.25 GB record 0.39-0.54 s against 0.19-0.24 s
(``benchmarks/README.md``). Memory just freed by an earlier process came fast (1 ms for 8 MB in
huge pages); a machine where huge pages always come that fast loads a little faster with them:
set ``MIMALLOC_ALLOW_THP=1`` there.

mimalloc reads its options from the environment once, when pyarrow's library is loaded, so
:func:`prefer_small_pages` runs when ``murmur_analysis`` is imported, before it imports pyarrow.
A process that imported pyarrow first (pandas does) keeps mimalloc's own choice; setting
``MIMALLOC_ALLOW_THP=0`` in the environment before Python starts applies it there too. A value
the user set is never changed.
"""

from __future__ import annotations

import os

__all__ = ["THP_OPTION", "prefer_small_pages"]

#: The environment variable mimalloc reads for whether it may use transparent huge pages.
THP_OPTION = "MIMALLOC_ALLOW_THP"


def prefer_small_pages() -> None:
    """Ask mimalloc not to use transparent huge pages, unless ``MIMALLOC_ALLOW_THP`` is set already."""
    os.environ.setdefault(THP_OPTION, "0")
