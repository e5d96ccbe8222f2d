"""A conversation explorer for Jupyter: pick a conversation, page it newest first.

It pages through the same cursor core as everything else (``conversation.read_messages``) and
shows every transcript string HTML-escaped: transcripts are data, never markup.
"""

from __future__ import annotations

import html
from typing import Any

from .corpus import Corpus
from .cursor import Page

__all__ = ["Explorer", "explorer", "page_html"]

_ROLE_COLOURS = {"user": "#1f6feb", "assistant": "#8250df", "tool": "#9a6700", "system": "#57606a"}
_PREVIEW_CHARS = 2_000


def page_html(page: Page, preview_chars: int = _PREVIEW_CHARS) -> str:
    """Render a page as HTML, every transcript string escaped.

    Args:
        page: a page from any ``read_messages``.
        preview_chars: characters of each message's content to show.

    Returns:
        An HTML fragment: one block per message, newest first, and the page's position.
    """
    parts = []
    for message in page.messages:
        text = message.content
        cut = len(text) > preview_chars
        shown = html.escape(text[:preview_chars]) + (" …" if cut else "")
        colour = _ROLE_COLOURS.get(message.role, "#57606a")
        parts.append(
            '<div style="margin:4px 0;padding:4px 8px;border-left:3px solid {c}">'
            '<b style="color:{c}">{role}</b> <small>{id}</small>'
            '<pre style="white-space:pre-wrap;margin:2px 0">{text}</pre></div>'.format(
                c=colour, role=html.escape(message.role), id=html.escape(message.id or ""), text=shown
            )
        )
    more = "older messages follow" if page.next_cursor else "this page reaches the oldest message"
    parts.append(f"<small>{len(page.messages)} of {page.total} messages; {more}</small>")
    return "".join(parts)


class Explorer:
    """The explorer's state and widgets (see :func:`explorer`).

    Attributes:
        widget: the ``ipywidgets`` box to display.
    """

    def __init__(self, corpus: Corpus, page_size: int = 20) -> None:
        import ipywidgets as w

        self.corpus = corpus
        self.page_size = page_size
        ids = corpus.conversation_ids()
        self.picker = w.Dropdown(
            options=[(f"{source}: {cid}", (source, cid)) for source, cid in ids], description="conversation"
        )
        self.older = w.Button(description="older ›")
        self.newer = w.Button(description="‹ newer")
        self.view = w.HTML()
        self._cursors: list[str | None] = [None]  # the cursor of every page shown so far
        self._next: str | None = None
        self.picker.observe(lambda _change: self.show(reset=True), names="value")
        self.older.on_click(lambda _button: self.go_older())
        self.newer.on_click(lambda _button: self.go_newer())
        self.widget = w.VBox([self.picker, w.HBox([self.newer, self.older]), self.view])
        if ids:
            self.show(reset=True)

    def show(self, reset: bool = False) -> None:
        """Render the current page (the newest one after ``reset``)."""
        if reset:
            self._cursors = [None]
        value: Any = self.picker.value
        if value is None:
            self.view.value = "<i>no conversations loaded</i>"
            return
        source, cid = value
        page = self.corpus.conversation(cid, source=source).read_messages(self._cursors[-1], self.page_size)
        self._next = page.next_cursor
        self.older.disabled = page.next_cursor is None
        self.newer.disabled = len(self._cursors) == 1
        self.view.value = page_html(page)

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
    """A widget to browse a corpus: pick a conversation, page it newest first.

    Args:
        corpus: a loaded corpus (``ma.load(...)``).
        page_size: messages per page (clamped to 1..100 by the cursor core).

    Returns:
        An ``ipywidgets.VBox`` to display in a notebook.

    Example:
        >>> ma.widgets.explorer(ma.load("data/samples"))  # doctest: +SKIP
    """
    return Explorer(corpus, page_size).widget
