"""FlexiGPT conversation stores: one pretty JSON file per conversation (formats.md §3).

Layout: ``<store>/conversations_v1/<YYYYMM>/<uuidv7>_<title>.json`` (seed era:
``conversationsv1``). A path may be the data folder holding the store, the store itself, one
month partition, or a single conversation file. ``conversations.fts.sqlite`` (the app's search
index) is not read.

Conversations are listed newest first, in descending UUIDv7 order, like the app: month
partitions newest first, files within one partition newest first.
Each file is decoded by :mod:`.decode`.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import orjson

from ...algorithms.cursor import Paged, paginate
from ...core.files import entry_is_dir, is_dir, listing, read_regular
from ...core.handoff import Conversation, Summary
from ...core.model import Entry
from ...core.paths import user_path
from ..base import READ_ALL, Diagnostics, ReadContext, Source
from .decode import decode
from .layout import FILE, PARTITION, STORE_DIRS, guess_can_open

__all__ = ["SCHEMA_VERSIONS", "STORE_DIRS", "ConversationListItem", "FlexiGPTSource"]

#: The ``schemaVersion`` values this reader decodes (the seed era's and the current one).
SCHEMA_VERSIONS = frozenset({"v1.0.0", "v1"})


@dataclass(frozen=True, slots=True)
class ConversationListItem:
    """One conversation in a listing (the app's ``ConversationListItem`` plus its file).

    Attributes:
        id: the conversation's UUIDv7 (from the file name).
        title: the sanitized title in the file name.
        path: the conversation file.
    """

    id: str
    title: str
    path: str


def _json_files(folder: Path, diagnostics: Diagnostics | None) -> list[str]:
    """The names ending ``.json`` in ``folder``, whatever they are (a reader reports what is no file)."""
    return [e.name for e in listing(folder, diagnostics) if e.name.endswith(".json")]


def _newest_first(folders: list[Path], diagnostics: Diagnostics | None) -> Iterator[Path]:
    """The conversation files of some folders, merged newest first (descending UUIDv7, then name)."""
    found = [(f, name) for f in folders for name in _json_files(f, diagnostics)]

    def key(item: tuple[Path, str]) -> tuple[str, str]:
        m = FILE.match(item[1])
        return (m.group(1).lower() if m else "", item[1])

    for folder, name in sorted(found, key=key, reverse=True):
        yield folder / name


def _store_files(roots: list[Path], diagnostics: Diagnostics | None) -> Iterator[Path]:
    """Every conversation file of some store folders, newest first: month partitions, then loose files.

    Only one partition's names are held at a time.
    """
    parts: set[str] = set()
    loose: list[Path] = []
    for root in roots:
        entries = listing(root, diagnostics)
        parts.update(e.name for e in entries if PARTITION.match(e.name) and entry_is_dir(e))
        if any(e.name.endswith(".json") for e in entries):
            loose.append(root)
    for part in sorted(parts, reverse=True):
        yield from _newest_first([root / part for root in roots if is_dir(root / part)], diagnostics)
    yield from _newest_first(loose, diagnostics)


class FlexiGPTSource(Source):
    """FlexiGPT's JSON conversation store (both schema versions)."""

    name: ClassVar[str] = "flexigpt"
    description: ClassVar[str] = "FlexiGPT conversation stores (conversations_v1/ or conversationsv1/ JSON files)"

    def guess_can_open(self, path: Path) -> bool:
        """A store folder, a folder holding one, a month partition, or a ``<uuid>_<title>.json``."""
        return guess_can_open(path)

    def files(self, path: Path, diagnostics: Diagnostics | None = None) -> Iterator[Path]:
        """Every conversation file under ``path``, newest first.

        Folders that cannot be listed are reported to ``diagnostics`` when it is given.
        """
        if not is_dir(path):
            yield path
            return
        stores = [path / d for d in STORE_DIRS if is_dir(path / d)]
        if stores:
            yield from _store_files(stores, diagnostics)
        elif PARTITION.match(path.name):
            yield from _newest_first([path], diagnostics)
        else:
            yield from _store_files([path], diagnostics)

    def list_conversations(
        self, path: str | os.PathLike[str], cursor: str | None = None, limit: int = 12
    ) -> Paged[ConversationListItem]:
        """One page of the store's listing, newest first, through the cursor core.

        Args:
            path: a store, the folder holding it, a partition or a file.
            cursor: ``None`` for the newest page, or the ``next_cursor`` of the page before.
            limit: page size (the app's default is 12; the cursor core clamps to ``1..=100``).

        Returns:
            The items newest first, the next cursor and the total.

        Raises:
            ReadMessagesError: ``invalid-cursor``.
        """
        items: list[ConversationListItem] = []
        for file in self.files(user_path(path)):
            m = FILE.match(file.name)
            stem = file.name[: -len(".json")]
            cid, _, title = stem.partition("_") if m else (stem, "", "")
            items.append(ConversationListItem(cid, title, str(file)))
        items.reverse()  # the cursor core takes items oldest first
        return paginate(items, cursor, limit)

    def open(self, path: Path, diagnostics: Diagnostics, ctx: ReadContext = READ_ALL) -> Iterator[Conversation]:
        """Every conversation under ``path``, newest first, handed over before its file is read.

        The conversation id is the one in the file's name (``<id>_<title>.json``), as the app's
        listing shows it; a document holding another id is a diagnostics row. A file whose name
        holds no id is read at once, for the id its document holds. A file reached twice
        (through a linked folder) loads once, and two files holding one conversation id both
        load: the loader keys conversations on their files.
        """
        for file in self.files(path, diagnostics):
            conv = self._conversation(str(file), diagnostics)
            if conv is not None:
                yield conv

    def reopen(self, key: Hashable, diagnostics: Diagnostics) -> Conversation:
        """Decode the conversation file ``key`` again (an empty conversation if it became unreadable)."""
        path = str(key)
        conv = self._conversation(path, diagnostics)
        if conv is None:
            return Conversation(self.name, _named_id(path), [], key=path, path=path)
        return conv

    def _conversation(self, path: str, diagnostics: Diagnostics) -> Conversation | None:
        named = FILE.match(Path(path).name)
        if named is not None:  # known by its name: read when its entries are
            cid = named.group(1)
            return Conversation(self.name, cid, self._entries(path, cid, diagnostics), key=path, path=path)
        read = self._read(path, diagnostics)
        if read is None:
            return None
        held, entries, summary = read
        return Conversation(self.name, held or _named_id(path), entries, key=path, path=path, summary=summary)

    def _entries(self, path: str, cid: str, diagnostics: Diagnostics) -> Generator[Entry, None, Summary]:
        """The file's entries, read when iterated; returns what reading them taught."""
        read = self._read(path, diagnostics)
        if read is None:
            return Summary(readable=False)
        held, entries, summary = read
        if held is not None and held != cid:
            diagnostics.report(path, "id_mismatch",
                               f"the document holds id {held!r}, its file name {cid!r}; loaded under the file name's")
        yield from entries
        return summary

    def _read(self, path: str, diagnostics: Diagnostics) -> tuple[str | None, list[Entry], Summary] | None:
        raw = read_regular(path, diagnostics)
        if raw is None:
            return None
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as err:
            diagnostics.report(path, "bad_json", f"not a JSON document ({err}); skipped")
            return None
        if not isinstance(data, dict) or not isinstance(data.get("messages", []), list):
            diagnostics.report(path, "bad_json", "not a FlexiGPT conversation object; skipped")
            return None
        version = data.get("schemaVersion")
        if not isinstance(version, str) or version not in SCHEMA_VERSIONS:  # a list or object too
            diagnostics.report(path, "unknown_schema",
                               f"schemaVersion {version!r} is not one this reader knows "
                               f"({', '.join(sorted(SCHEMA_VERSIONS))}); skipped, as the app skips it")
            return None
        return decode(data, path, diagnostics)


def _named_id(path: str) -> str:
    """The id a conversation file's name gives (what precedes the first ``_``)."""
    return Path(path).stem.split("_")[0]
