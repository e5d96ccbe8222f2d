"""A conversation explorer for Jupyter: pick a conversation, read it newest first, search it.

Pages come from the cursor core (``conversation.read_messages``), exactly as murmur pages a
record; each message is drawn by :mod:`murmur_analysis.transcript_html` (text as text, tool
calls with their input, results with errors highlighted, time, model and tokens), every
transcript string HTML-escaped. Everything runs in the kernel: no network.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from .corpus import ConversationHandle, Corpus
from .cursor import window
from .transcript_html import NOT_REPORTED, entries_html, matches

__all__ = ["EMPTY_CORPUS", "Explorer", "conversation_options", "explorer"]

#: What the explorer says when there is nothing to explore.
EMPTY_CORPUS = "This corpus holds no conversations: load a folder of murmur, litany, FlexiGPT or dispatch data."
_ALL = "all sources"
_SEARCH_LIMIT = 50


def conversation_options(corpus: Corpus, source: str | None = None) -> list[tuple[str, tuple[str, str]]]:
    """The conversations as ``(label, (source, conversation_id))``, most recent first.

    The label reads ``title — source — last time``; a conversation without a title shows its id,
    and one without any time says so (those come last).

    Args:
        corpus: a loaded corpus.
        source: only this source's conversations.
    """
    frame = corpus.conversations
    if source is not None:
        frame = frame[frame["source"] == source]
    frame = frame.sort_values("last_at", ascending=False, na_position="last", kind="stable")
    options = []
    for src, cid, title, last in zip(frame["source"], frame["conversation_id"], frame["title"], frame["last_at"],
                                     strict=True):
        name = title if isinstance(title, str) and title.strip() else cid
        name = " ".join(name.split())
        name = name if len(name) <= 60 else name[:59] + "…"
        when = f"time {NOT_REPORTED}" if pd.isna(last) else last.strftime("%Y-%m-%d %H:%M UTC")
        options.append((f"{name} — {src} — {when}", (src, cid)))
    return options


class Explorer:
    """The explorer's state and widgets (see :func:`explorer`).

    Attributes:
        widget: the ``ipywidgets`` box to display.
        view: the HTML widget showing the current page or search results.
    """

    def __init__(self, corpus: Corpus, page_size: int = 20) -> None:
        import ipywidgets as w

        self.corpus = corpus
        self.page_size = page_size
        sources = sorted({source for source, _ in corpus.conversation_ids()})
        wide = {"description_width": "initial"}
        self.source = w.Dropdown(options=[_ALL, *sources], description="source", style=wide)
        self.picker = w.Dropdown(options=conversation_options(corpus), description="conversation", style=wide,
                                 layout=w.Layout(width="95%"))
        self.older = w.Button(description="older ›", tooltip="the next, older page")
        self.newer = w.Button(description="‹ newer", tooltip="the page before, newer")
        self.search = w.Text(placeholder="search this conversation, then Enter", description="search",
                             continuous_update=False, style=wide)
        self.status = w.HTML()
        self.view = w.HTML()
        self._cursors: list[str | None] = [None]  # the cursor of every page shown so far
        self._next: str | None = None
        self.source.observe(lambda _change: self._filter(), names="value")
        self.picker.observe(lambda _change: self.show(reset=True), names="value")
        self.search.observe(lambda _change: self.show(reset=True), names="value")
        self.older.on_click(lambda _button: self.go_older())
        self.newer.on_click(lambda _button: self.go_newer())
        self.widget = w.VBox([
            w.HBox([self.source, self.search]),
            self.picker,
            w.HBox([self.newer, self.older, self.status]),
            self.view,
        ])
        self.show(reset=True)

    def _handle(self) -> ConversationHandle | None:
        value: Any = self.picker.value
        if value is None:
            return None
        source, cid = value
        return self.corpus.conversation(cid, source=source)

    def _filter(self) -> None:
        source = None if self.source.value == _ALL else self.source.value
        self.picker.options = conversation_options(self.corpus, source)
        self.show(reset=True)

    def show(self, reset: bool = False) -> None:
        """Render the current page (the newest one after ``reset``), or the search's matches."""
        if reset:
            self._cursors = [None]
        handle = self._handle()
        if handle is None:
            self.older.disabled = self.newer.disabled = True
            self.status.value = ""
            self.view.value = f"<p><i>{html.escape(EMPTY_CORPUS)}</i></p>" if not self.corpus.conversation_ids() \
                else "<p><i>No conversation of this source.</i></p>"
            return
        query = self.search.value.strip()
        if query:
            self._show_matches(handle, query)
            return
        cursor = self._cursors[-1]
        page = handle.read_messages(cursor, self.page_size)
        start, end = window(page.total, cursor, self.page_size)
        entries = handle.entries
        shown = [(n + 1, entries[n]) for n in range(end - 1, start - 1, -1)]
        self._next = page.next_cursor
        self.older.disabled = page.next_cursor is None
        self.newer.disabled = len(self._cursors) == 1
        self.status.value = (
            f"<small>messages {start + 1}–{end} of {page.total}, newest first; "
            f"{'older messages follow' if page.next_cursor else 'this page reaches the oldest message'}</small>"
            if page.total else "<small>this conversation has no messages</small>"
        )
        self.view.value = entries_html(shown)

    def _show_matches(self, handle: ConversationHandle, query: str) -> None:
        entries = handle.entries
        found = [(n + 1, entries[n]) for n in range(len(entries) - 1, -1, -1) if matches(entries[n], query)]
        self.older.disabled = self.newer.disabled = True
        cut = len(found) > _SEARCH_LIMIT
        self.status.value = (
            f"<small>{len(found)} of {len(entries)} messages mention “{html.escape(query)}”, newest first"
            f"{f'; the first {_SEARCH_LIMIT} shown' if cut else ''}; clear the search to page again</small>"
        )
        self.view.value = entries_html(found[:_SEARCH_LIMIT], query) if found else "<p><i>No message matches.</i></p>"

    def go_older(self) -> None:
        """Show the next, older page."""
        if self._next is not None:
            self._cursors.append(self._next)
            self.show()

    def go_newer(self) -> None:
        """Show the page before, newer."""
        if len(self._cursors) > 1:
            self._cursors.pop()
            self.show()


def explorer(corpus: Corpus, page_size: int = 20) -> Any:
    """A widget to read a corpus: pick a conversation by title, source and time, page it newest first, search it.

    Args:
        corpus: a loaded corpus (``ma.load(...)``).
        page_size: messages per page (clamped to 1..100 by the cursor core).

    Returns:
        An ``ipywidgets.VBox`` to display in a notebook.

    Example:
        >>> ma.widgets.explorer(ma.load("data/samples"))  # doctest: +SKIP
    """
    return Explorer(corpus, page_size).widget
