"""murmur-analysis: read AI agents' conversations into Arrow tables and pandas frames.

One cursor core (murmur's newest-first paging) and one assembly core (litany's grouping, tool
pairing and orphan dropping) serve every runtime: murmur records, litany git transcripts,
FlexiGPT conversation stores and dispatch sessions.

Example:
    >>> import murmur_analysis as ma
    >>> corpus = ma.load("data/samples")  # doctest: +SKIP
    >>> page = ma.read_messages("conversation.jsonl", limit=10)  # doctest: +SKIP
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from .core.allocator import prefer_small_pages as _prefer_small_pages
from .core.lazy import names_from as _names_from
from .core.version import __version__ as __version__
from .errors import (
    ExportError,
    GitError,
    MurmurAnalysisError,
    NoSourceError,
    PriceError,
    QueryError,
    ReadMessagesError,
    SourceError,
    UnknownConversationError,
    UnknownSourceError,
    UnknownTableError,
)

# Before anything imports pyarrow: its allocator reads the environment once (core/allocator.py).
_prefer_small_pages()

if _typing.TYPE_CHECKING:
    from .algorithms.assembly import Assembled, assemble, drop_orphans, transcript
    from .algorithms.cursor import Page, PageMessage
    from .algorithms.pairing import ToolCall, pair_tools
    from .analysis import figures as figures
    from .analysis import metrics as metrics
    from .analysis import reports as reports
    from .core import pricing as pricing
    from .core.diagnostics import Diagnostic
    from .core.model import Entry, Message, Usage
    from .corpus import ConversationHandle, Corpus, load, read_parquet
    from .export import ExportResult
    from .export import export as export_parquet
    from .loading.plan import Batch, iter_batches
    from .loading.samples import data_paths, prices_path, sample_data, session_paths
    from .sources.base import Source
    from .sources.litany import assemble_commit
    from .sources.murmur import RecordReader, read_messages, walk
    from .ui import transcript_html as transcript_html
    from .ui import widgets as widgets


#: Modules reachable as attributes (``ma.metrics``), imported on first use: ``widgets`` needs
#: ipywidgets, ``figures`` matplotlib and IPython, and none of them is needed to load a corpus.
#: Each lives in its layer's folder; the attribute is its public name.
_MODULES = {
    "figures": ".analysis.figures",
    "metrics": ".analysis.metrics",
    "pricing": ".core.pricing",
    "reports": ".analysis.reports",
    "transcript_html": ".ui.transcript_html",
    "widgets": ".ui.widgets",
}

#: Every public name with the module it lives in, imported when first used: ``import
#: murmur_analysis`` itself loads neither pandas nor pyarrow nor the engine.
_NAMES = {
    **dict.fromkeys(("Assembled", "assemble", "drop_orphans", "transcript"), ".algorithms.assembly"),
    **dict.fromkeys(("Page", "PageMessage"), ".algorithms.cursor"),
    **dict.fromkeys(("ToolCall", "pair_tools"), ".algorithms.pairing"),
    "Diagnostic": ".core.diagnostics",
    **dict.fromkeys(("Entry", "Message", "Usage"), ".core.model"),
    **dict.fromkeys(("ConversationHandle", "Corpus", "load", "read_parquet"), ".corpus"),
    "ExportResult": ".export",
    **dict.fromkeys(("Batch", "iter_batches"), ".loading.plan"),
    **dict.fromkeys(("data_paths", "prices_path", "sample_data", "session_paths"), ".loading.samples"),
    "Source": ".sources.base",
    "assemble_commit": ".sources.litany",
    **dict.fromkeys(("RecordReader", "read_messages", "walk"), ".sources.murmur"),
}


_name = _names_from(__name__, _NAMES)


def __getattr__(name: str) -> object:
    if name in _MODULES:
        return _importlib.import_module(_MODULES[name], __name__)
    if name == "export_parquet":  # the function; the package keeps its module name, murmur_analysis.export
        value: object = _importlib.import_module(".export", __name__).export
        globals()[name] = value
        return value
    return _name(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_MODULES})


def list_sources() -> dict[str, str]:
    """The registered sources, built-in and plugins, as ``name -> description``.

    (Named so that it does not shadow the subpackage :mod:`murmur_analysis.sources`.)
    """
    from .sources import registry

    return {name: cls.description for name, cls in registry().items()}


__all__ = [
    "Assembled",
    "Batch",
    "ConversationHandle",
    "Corpus",
    "Diagnostic",
    "Entry",
    "ExportError",
    "ExportResult",
    "GitError",
    "Message",
    "MurmurAnalysisError",
    "NoSourceError",
    "Page",
    "PageMessage",
    "PriceError",
    "QueryError",
    "ReadMessagesError",
    "RecordReader",
    "Source",
    "SourceError",
    "ToolCall",
    "UnknownConversationError",
    "UnknownSourceError",
    "UnknownTableError",
    "Usage",
    "assemble",
    "assemble_commit",
    "data_paths",
    "drop_orphans",
    "export_parquet",
    "iter_batches",
    "list_sources",
    "load",
    "pair_tools",
    "prices_path",
    "read_messages",
    "read_parquet",
    "sample_data",
    "session_paths",
    "transcript",
    "walk",
]
