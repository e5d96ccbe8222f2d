"""How Arrow's allocator takes memory from the system: small pages, unless the user says otherwise.

pyarrow allocates through its bundled mimalloc, which (from mimalloc 3) backs large allocations
with transparent huge pages. On Linux, a process's first touch of a huge page may stall while
the kernel compacts memory to find 2 MiB of it free, and a machine whose memory holds a large
page cache (the records just read) compacts often. A load builds its tables from many fresh
allocations of megabytes each: on a 1.25 GB record, the table build took 0.39-0.54 s with huge
pages and 0.19-0.24 s without (``benchmarks/README.md``).

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
