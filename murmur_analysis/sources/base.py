"""What a source is, and what it hands to the cores.

A source only *decodes*: it finds conversations under a path, reads their files and turns them
into :class:`Conversation` objects holding ordered :class:`~murmur_analysis.core.model.Entry`
values plus whatever side facts the runtime recorded (trace usage, tool timings, steps). It
never sorts, pages, pairs or counts: the cursor and assembly cores and the frame builder do
that, once, for every source.

The hand-off is one-way (:mod:`murmur_analysis.core.handoff`): a conversation gets every fact at
construction, or its entries' generator returns a :class:`~murmur_analysis.core.handoff.Summary`
when its stream ends; nothing is written into it afterwards, by the source or by the loader.
Rows that belong to no conversation are yielded beside the conversations as
:class:`~murmur_analysis.core.handoff.TableRows`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from ..core.diagnostics import Diagnostics
from ..core.handoff import Conversation, ResumePoint, TableRows
from ..core.identity import Identity, file_identity
from ..core.values import JSON

#: ``Diagnostics`` is re-exported here for source authors: ``open`` receives one.
__all__ = ["READ_ALL", "Diagnostics", "Earlier", "ReadContext", "Source"]


@dataclass(frozen=True)
class Earlier:
    """What the consumer recorded of a conversation when it last had its rows (an export's state).

    Attributes:
        fingerprint: the source's :meth:`Source.fingerprint` of it then, as JSON values.
        resume: where that read stopped, as recorded (:meth:`ResumePoint.to_doc
            <murmur_analysis.core.handoff.ResumePoint.to_doc>`), if the source left a point.
    """

    fingerprint: JSON
    resume: JSON = None

    @cached_property
    def point(self) -> ResumePoint | None:
        """Where that read stopped, tied to the file (read from :attr:`resume` when first asked for)."""
        return ResumePoint.from_doc(self.resume)


@dataclass(frozen=True)
class ReadContext:
    """What a load wants of one :meth:`Source.open`: given as an argument, never set on the source.

    Attributes:
        text: whether the load fills the text columns; a source that builds its own columns
            leaves their texts null when false.
        skip: conversations the consumer will not have read: ``skip(conv)`` true promises it,
            so a source may yield such a conversation found but not read (any
            ``Conversation`` with its key and path). The consumer decides what happens to it
            (its earlier rows kept, or read on from a point through
            :class:`~murmur_analysis.sources.resume.Resumable`); the source never calls it back.
        read_ahead: how many bytes of input a source may decode ahead of the conversation
            being consumed (``None``: as the source sees fit).
        earlier: what the consumer recorded of a conversation at its last read (``None``:
            nothing), asked before ``skip``: a source whose conversations' rows depend on one
            another (Claude Code counts a response once over a whole home) tells from it which
            files only grew, and whether what they grew by leaves the others' rows as they were.
    """

    text: bool = True
    skip: Callable[[Conversation], bool] | None = None
    read_ahead: int | None = None
    earlier: Callable[[Conversation], Earlier | None] | None = None


#: A plain read: text on, nothing skipped, read-ahead as the source sees fit.
READ_ALL = ReadContext()


class Source(ABC):
    """A conversation source: finds and decodes one runtime's files.

    Subclasses set :attr:`name` and :attr:`description` and implement
    :meth:`guess_can_open`, :meth:`open` and :meth:`reopen`. Register a third-party source
    under the ``murmur_analysis.sources`` entry-point group (the entry point names the class).
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        """Create the source; ``options`` are source-specific (``load(options={name: {...}})``).

        Raises:
            TypeError: an option this source does not take.
        """
        if options:
            raise TypeError(f"source {self.name!r} takes no option {sorted(options)}")

    @classmethod
    def default_homes(cls) -> list[Path]:
        """Where this runtime keeps its data on this machine by default, the folders that exist.

        ``ma.load()`` with no path reads every registered source's default homes (as ccusage
        does with no argument). The default is none: a runtime without a fixed home is read
        from the paths given.
        """
        return []

    @abstractmethod
    def guess_can_open(self, path: Path) -> bool:
        """Whether ``path`` looks like this source's data (cheap: names and a peek at most)."""

    @abstractmethod
    def open(
        self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL
    ) -> Iterator[Conversation | TableRows]:
        """Every conversation under ``path``, decoded (and rows of tables no conversation holds).

        Unreadable input is reported to ``diagnostics`` and skipped; nothing is raised for it.
        ``ctx`` says what the load wants (text or not, what it skips, how far to read ahead).
        """

    @abstractmethod
    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode again the conversation :attr:`Conversation.key` names."""

    def fingerprint(self, conv: Conversation) -> object:
        """What identifies the input ``conv`` is decoded from, as JSON values; ``None``: unknown.

        Two equal fingerprints promise equal rows, so an incremental export keeps a
        conversation's rows while its fingerprint stays the same and reads it again otherwise.
        Called before the conversation's entries are read. The default takes the
        :func:`~murmur_analysis.core.identity.file_identity` of every file the conversation's key or
        path names; a source whose rows depend on more overrides it.
        """
        return self.file_identities(conv)

    def file_identities(self, conv: Conversation) -> list[tuple[str, Identity]] | None:
        """``(path, identity)`` of every file ``conv``'s key or path names (``None``: one cannot be known)."""
        key = conv.key if isinstance(conv.key, tuple) else (conv.key,)
        named = [k for k in (*key, conv.path) if isinstance(k, str) and k]
        files = [p for p in dict.fromkeys(named) if os.path.isfile(p)]
        if not files:
            return None
        identities = [(p, file_identity(p)) for p in files]
        known = [(p, i) for p, i in identities if i is not None]
        return known if len(known) == len(identities) else None
