"""A conversation explorer for Jupyter: filter the conversations, search them all, read one newest first.

Pages come from the cursor core (``conversation.read_messages``), exactly as murmur pages a
record; each message is drawn by :mod:`murmur_analysis.ui.transcript_html` (text as text, tool
calls with their input, results with errors highlighted, time, model and tokens), every
transcript string HTML-escaped. The controls stay above the transcript, which scrolls in its own
pane. Everything runs in the kernel: no network.
"""

from __future__ import annotations

import html
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pandas as pd

from ..algorithms.cursor import encode_cursor, window
from ..corpus import ConversationHandle, Corpus
from .transcript_html import DETAILS, NOT_REPORTED, counted_on, entries_html, matches, snippet, unreported

__all__ = ["EMPTY_CORPUS", "Explorer", "Match", "conversation_options", "explorer", "unreported_note"]

#: What the explorer says when there is nothing to explore.
EMPTY_CORPUS = ("This corpus holds no conversations: load a Claude Code or Codex home, or a folder of murmur, "
                "litany, FlexiGPT or dispatch data.")
_ALL = "all sources"
_SEARCH_LIMIT = 50
_NAME_CHARS = 60

#: Why a source leaves a detail unreported on every message, when the reason is the source's own.
_WHY = {
    ("murmur", "model"): "murmur writes each response's model and tokens in its session traces, not in the record",
    ("murmur", "tokens"): "murmur writes each response's model and tokens in its session traces, not in the record",
    ("murmur", "time"): "murmur times a message by its id (a UUIDv7), and these ids carry no time",
    ("dispatch", "time"): "a dispatch session's history keeps each message's role and text only",
    ("dispatch", "model"): "a dispatch session's history keeps each message's role and text only",
    ("dispatch", "tokens"): "a dispatch session's history keeps each message's role and text only",
}
_SESSIONS_HINT = (
    'name the session work dirs: ma.load(..., options={"murmur": {"sessions": [DIR]}}), a notebook\'s '
    "SESSIONS, or --sessions DIR (the command line, notebooks/report.py)"
)


def _name(title: Any, conversation_id: str) -> str:
    """A conversation's one-line name: its title, else its id, cut to :data:`_NAME_CHARS`."""
    name = title if isinstance(title, str) and title.strip() else conversation_id
    name = " ".join(name.split())
    return name if len(name) <= _NAME_CHARS else name[:_NAME_CHARS - 1] + "…"


def conversation_options(
    corpus: Corpus,
    source: str | None = None,
    *,
    errors: bool = False,
    since: date | None = None,
    until: date | None = None,
) -> list[tuple[str, tuple[str, str]]]:
    """The conversations as ``(label, (source, conversation_id))``, most recent first.

    The label reads ``title — source — last time``; a conversation without a title shows its id,
    and one without any time says so (those come last).

    Args:
        corpus: a loaded corpus.
        source: only this source's conversations.
        errors: only conversations with at least one failed tool call (``tool_errors > 0``).
        since: only conversations active on or after this day (UTC): their last time is on it or later.
        until: only conversations active on or before this day (UTC): their first time is on it or
            earlier. With either date set, a conversation without any time is left out.
    """
    frame = corpus.conversations
    if source is not None:
        frame = frame[frame["source"] == source]
    if errors:
        frame = frame[frame["tool_errors"].fillna(0) > 0]
    keep = pd.Series(True, index=frame.index)
    if since is not None:
        keep &= (frame["last_at"] >= pd.Timestamp(since, tz="UTC")).fillna(False).astype(bool)
    if until is not None:
        first = frame["first_at"].fillna(frame["last_at"])
        keep &= (first < pd.Timestamp(until + timedelta(days=1), tz="UTC")).fillna(False).astype(bool)
    frame = frame[keep]
    frame = frame.sort_values("last_at", ascending=False, na_position="last", kind="stable")
    options = []
    for src, cid, title, last in zip(frame["source"], frame["conversation_id"], frame["title"], frame["last_at"],
                                     strict=True):
        when = f"time {NOT_REPORTED}" if pd.isna(last) else last.strftime("%Y-%m-%d %H:%M UTC")
        options.append((f"{_name(title, cid)} — {src} — {when}", (src, cid)))
    return options


def unreported_note(corpus: Corpus, source: str, conversation_id: str, missing: Collection[str]) -> str:
    """The one sentence that says which details no message of a conversation reports, and why.

    Args:
        corpus: the corpus the conversation is in.
        source: its source.
        conversation_id: its id.
        missing: the details unreported on every message (``transcript_html.unreported``).

    Returns:
        An HTML fragment (``""`` when nothing is missing), every string from the data escaped.
    """
    named = [d for d in DETAILS if d in missing]
    if not named:
        return ""
    reasons: dict[str, list[str]] = {}
    for detail in named:
        reasons.setdefault(_WHY.get((source, detail), "the runtime recorded none"), []).append(detail)
    parts = []
    for reason, details in reasons.items():
        if source == "murmur" and ("model" in details or "tokens" in details):
            usage = corpus.usage
            traced = (usage["source"] == "murmur") & (usage["found_in"] == "trace")
            if (traced & (usage["conversation_id"] == conversation_id)).any():
                reason += "; the session traces joined to it report none"
            elif traced.any():
                reason += "; no session trace loaded joins this conversation"
            else:
                reason += f"; no session trace was loaded: {_SESSIONS_HINT}"
        listed = " and ".join([", ".join(details[:-1]), details[-1]] if len(details) > 1 else details)
        parts.append(f"{listed} ({reason})")
    return (f'<div class="murmur-note" style="margin:4px 0;padding:4px 8px;background:#f6f8fa;color:#57606a;'
            f'border-radius:4px"><small>No message of this conversation reports its {html.escape("; ".join(parts))}.'
            "</small></div>")


@dataclass(frozen=True, slots=True)
class Match:
    """One message a search found.

    Attributes:
        source: the conversation's source.
        conversation_id: the conversation.
        index: the message's 0-based place in the conversation (its number less one).
    """

    source: str
    conversation_id: str
    index: int


class Explorer:
    """The explorer's state and widgets (see :func:`explorer`).

    Attributes:
        widget: the ``ipywidgets`` box to display: :attr:`controls` above :attr:`view`.
        controls: the filters, the conversation picker, the search and its results, the paging.
        view: the HTML widget showing the current page, in a pane that scrolls on its own.
        source: the source filter.
        errors: the "has tool errors" filter.
        since: the first day (UTC) of the date filter.
        until: the last day (UTC) of the date filter.
        picker: the conversations the filters leave.
        search: text searched in every conversation the picker lists.
        results: the messages found, each opening its conversation at that message.
    """

    def __init__(self, corpus: Corpus, page_size: int = 20) -> None:
        import ipywidgets as w

        self.corpus = corpus
        self.page_size = page_size
        sources = sorted({source for source, _ in corpus.conversation_ids()})
        wide = {"description_width": "initial"}
        self.source = w.Dropdown(options=[_ALL, *sources], description="source", style=wide)
        self.errors = w.Checkbox(value=False, description="has tool errors", indent=False,
                                 layout=w.Layout(width="auto"))
        self.since = w.DatePicker(description="from", style=wide)
        self.until = w.DatePicker(description="to", style=wide)
        self.picker = w.Dropdown(options=conversation_options(corpus), description="conversation", style=wide,
                                 layout=w.Layout(width="auto", flex="1 1 auto"))
        self.listed = w.HTML(layout=w.Layout(flex="0 0 auto", margin="0 0 0 8px"))
        self.search = w.Text(placeholder="search every conversation listed, then Enter", description="search",
                             continuous_update=False, style=wide, layout=w.Layout(width="60%"))
        self.found = w.HTML()
        self.results = w.Select(options=[], rows=2, layout=w.Layout(width="95%", display="none"))
        self.older = w.Button(description="older ›", tooltip="the next, older page")
        self.newer = w.Button(description="‹ newer", tooltip="the page before, newer")
        self.status = w.HTML()
        # The transcript scrolls in its own pane, so the controls above it stay in view while reading.
        self.view = w.HTML(layout=w.Layout(max_height="65vh", overflow="auto", border="1px solid #d0d7de",
                                           padding="0 4px"))
        self._cursor: str | None = None  # the current page's cursor; None is the newest page
        self._next: str | None = None
        self._newer: str | None = None
        self._quiet = False
        self._missing: dict[tuple[str, str], tuple[frozenset[str], dict[int, int]]] = {}
        for control in (self.source, self.errors, self.since, self.until):
            control.observe(lambda _change: self._filter(), names="value")
        self.picker.observe(lambda _change: self._picked(), names="value")
        self.search.observe(lambda _change: self._search(), names="value")
        self.results.observe(lambda _change: self._result(), names="value")
        self.older.on_click(lambda _button: self.go_older())
        self.newer.on_click(lambda _button: self.go_newer())
        self.controls = w.VBox([
            w.HBox([self.source, self.errors, self.since, self.until]),
            w.HBox([self.picker, self.listed], layout=w.Layout(width="100%")),
            w.HBox([self.search, self.found]),
            self.results,
            w.HBox([self.newer, self.older, self.status]),
        ])
        self.controls.add_class("murmur-explorer-controls")
        self.view.add_class("murmur-explorer-view")
        self.widget = w.VBox([self.controls, self.view])
        self._count()
        self.show(reset=True)

    def _handle(self) -> ConversationHandle | None:
        value: Any = self.picker.value
        if value is None:
            return None
        source, cid = value
        return self.corpus.conversation(cid, source=source)

    def _query(self) -> str:
        return str(self.search.value).strip()

    def _count(self) -> None:
        shown, total = len(self.picker.options), len(self.corpus.conversation_ids())
        dated = self.since.value is not None or self.until.value is not None
        self.listed.value = (f"<small>{shown} of {total} conversations"
                             f"{' (those without a time are left out while a date is set)' if dated else ''}</small>")

    def _filter(self) -> None:
        source = None if self.source.value == _ALL else self.source.value
        self._quiet = True
        try:
            self.picker.options = conversation_options(self.corpus, source, errors=bool(self.errors.value),
                                                       since=self.since.value, until=self.until.value)
        finally:
            self._quiet = False
        self._count()
        self._search()

    def _picked(self) -> None:
        if not self._quiet:
            self.show(reset=True)

    def show(self, reset: bool = False) -> None:
        """Render the current page (the newest one after ``reset``), the search's text marked in it."""
        if reset:
            self._cursor = None
        handle = self._handle()
        if handle is None:
            self.older.disabled = self.newer.disabled = True
            self.status.value = ""
            self.view.value = f"<p><i>{html.escape(EMPTY_CORPUS)}</i></p>" if not self.corpus.conversation_ids() \
                else "<p><i>No conversation matches these filters.</i></p>"
            return
        page = handle.read_messages(self._cursor, self.page_size)
        start, end = window(page.total, self._cursor, self.page_size)
        entries = handle.entries
        shown = [(n + 1, entries[n]) for n in range(end - 1, start - 1, -1)]
        self._next = page.next_cursor
        newer_end = end + self.page_size
        self._newer = None if newer_end >= page.total else encode_cursor(newer_end)
        self.older.disabled = page.next_cursor is None
        self.newer.disabled = self._cursor is None
        key = (handle.source, handle.conversation_id)
        if key not in self._missing:
            self._missing[key] = (unreported(entries), counted_on(entries))
        missing, on = self._missing[key]
        note = unreported_note(self.corpus, handle.source, handle.conversation_id, missing)
        self.view.value = note + entries_html(shown, self._query() or None, said=missing, on=on)
        # The page's label changes last, so once it names a page the page itself has been sent.
        self.status.value = (
            f"<small>messages {start + 1}–{end} of {page.total}, newest first; "
            f"{'older messages follow' if page.next_cursor else 'this page reaches the oldest message'}</small>"
            if page.total else "<small>this conversation has no messages</small>"
        )

    def find(self, query: str) -> tuple[list[Match], bool]:
        """The messages that mention ``query``, in every conversation the picker lists.

        Conversations in the picker's order (most recent first), each one's messages newest first;
        at most :data:`_SEARCH_LIMIT` of them.

        Returns:
            ``(matches, cut)``: ``cut`` is true when more messages mention it than were kept.
        """
        found: list[Match] = []
        for _label, (source, cid) in self.picker.options:
            entries = self.corpus.conversation(cid, source=source).read_entries()  # not kept: only a match opens
            for n in range(len(entries) - 1, -1, -1):
                if matches(entries[n], query):
                    if len(found) == _SEARCH_LIMIT:
                        return found, True
                    found.append(Match(source, cid, n))
        return found, False

    def _search(self) -> None:
        query = self._query()
        self._quiet = True
        try:
            if not query:
                self.results.options = []
                self.results.layout.display = "none"
                self.found.value = ""
            else:
                found, cut = self.find(query)
                titles = self.corpus.conversations.set_index(["source", "conversation_id"])["title"]
                self.results.options = [
                    (f"{_name(titles.get((m.source, m.conversation_id)), m.conversation_id)} — {m.source} — "
                     f"#{m.index + 1}: {snippet(self._entry(m), query)}", m) for m in found
                ]
                self.results.value = None
                self.results.rows = min(max(len(found), 2), 8)
                self.results.layout.display = "flex" if found else "none"
                conversations = len({(m.source, m.conversation_id) for m in found})
                one = len(found) == 1
                self.found.value = (
                    f"<small>{'the first ' if cut else ''}{len(found)} message{'' if one else 's'} "
                    f"in {conversations} of the {len(self.picker.options)} conversations listed "
                    f"mention{'s' if one else ''} "
                    f"“{html.escape(query)}”; pick one to open its conversation there</small>"
                    if found else
                    f"<small>no message of the {len(self.picker.options)} conversations listed mentions "
                    f"“{html.escape(query)}”</small>"
                )
        finally:
            self._quiet = False
        self.show(reset=True)

    def _entry(self, match: Match) -> Any:
        return self.corpus.conversation(match.conversation_id, source=match.source).entries[match.index]

    def _result(self) -> None:
        value: Any = self.results.value
        if not self._quiet and value is not None:
            self.open(value)

    def open(self, match: Match) -> None:
        """Show ``match``'s conversation at the page whose newest (topmost) message is the match."""
        self._quiet = True
        try:
            self.picker.value = (match.source, match.conversation_id)
        finally:
            self._quiet = False
        total = len(self.corpus.conversation(match.conversation_id, source=match.source).entries)
        self._cursor = None if match.index + 1 >= total else encode_cursor(match.index + 1)
        self.show()

    def go_older(self) -> None:
        """Show the next, older page."""
        if self._next is not None:
            self._cursor = self._next
            self.show()

    def go_newer(self) -> None:
        """Show the page before, newer."""
        if self._cursor is not None:
            self._cursor = self._newer
            self.show()


def explorer(corpus: Corpus, page_size: int = 20) -> Any:
    """A widget to read a corpus: filter the conversations, search them all, page one newest first.

    Filter by source, by "has tool errors" and by date (from, to; UTC), pick a conversation by
    title, source and time, page it newest first, or search every conversation listed and open
    one at a message found.

    Args:
        corpus: a loaded corpus (``ma.load(...)``).
        page_size: messages per page (clamped to 1..100 by the cursor core).

    Returns:
        An ``ipywidgets.VBox`` to display in a notebook.

    Example:
        >>> ma.widgets.explorer(ma.load("data/samples"))  # doctest: +SKIP
    """
    return Explorer(corpus, page_size).widget
