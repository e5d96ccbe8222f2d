"""The one exception tree of murmur-analysis.

Every error the library raises on purpose derives from :class:`MurmurAnalysisError`::

    MurmurAnalysisError
    ├── ReadMessagesError      read_messages refused: str() is the WIT error string
    │                          ("not-granted", "invalid-cursor", "unavailable: <reason>")
    ├── SourceError            a path no source can open, or a forced source that cannot
    │   ├── UnknownSourceError     source= names no registered source
    │   └── NoSourceError          no registered source recognises the path
    ├── GitError               a git repository or revision could not be read
    ├── ExportError            a Parquet export could not be written where asked (or another
    │                          export into the same folder is running)
    ├── PriceError             user prices (prices=) that cannot be read
    ├── QueryError             corpus.sql(query) refused by DuckDB (its message)
    ├── UnknownConversationError  corpus.conversation(id) names no loaded conversation
    └── UnknownTableError      corpus.frame(name) names no table (the message lists them)

Unreadable *content* (a malformed line, a blob that is not JSON, a file of an unknown schema
version) is never raised: it becomes a row of the ``diagnostics`` table and the load goes on.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ExportError",
    "GitError",
    "MurmurAnalysisError",
    "NoSourceError",
    "PriceError",
    "QueryError",
    "ReadMessagesError",
    "SourceError",
    "UnknownConversationError",
    "UnknownSourceError",
    "UnknownTableError",
]

ReadMessagesCode = Literal["not-granted", "invalid-cursor", "unavailable"]


class MurmurAnalysisError(Exception):
    """Base of every error murmur-analysis raises.

    The message says what happened in words both the API and the command line use; ``hint``
    says what to do in the API's words (``source=``, ``ma.list_sources()``), ``cli_hint`` the
    same in the command line's (``--source NAME``, ``murmur-analysis sources``).

    Attributes:
        hint: an optional sentence saying what the caller can do about it.
        cli_hint: the same advice for the command line, where its words differ (else ``hint``).
    """

    def __init__(self, message: str, *, hint: str | None = None, cli_hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
        self.cli_hint = cli_hint if cli_hint is not None else hint


class ReadMessagesError(MurmurAnalysisError):
    """A ``read_messages`` call refused, exactly as murmur's host refuses it.

    ``str(error)`` is the WIT error string: ``not-granted``, ``invalid-cursor`` or
    ``unavailable: <reason>``.

    Attributes:
        code: ``"not-granted"``, ``"invalid-cursor"`` or ``"unavailable"``.
        reason: for ``unavailable``, why the record could not be read.
    """

    def __init__(self, code: ReadMessagesCode, reason: str | None = None) -> None:
        text = f"{code}: {reason}" if code == "unavailable" else code
        super().__init__(text)
        self.code: ReadMessagesCode = code
        self.reason = reason


class SourceError(MurmurAnalysisError):
    """A path could not be opened as a conversation source."""


class UnknownSourceError(SourceError):
    """``source=`` named a source that is not registered."""


class NoSourceError(SourceError):
    """No registered source recognises a path."""

    def __init__(
        self,
        message: str,
        *,
        hint: str = "pass source= to force one; ma.list_sources() lists them",
        cli_hint: str = "pass --source NAME to force one; `murmur-analysis sources` lists them",
    ) -> None:
        super().__init__(message, hint=hint, cli_hint=cli_hint)


class GitError(MurmurAnalysisError):
    """A git repository, object or revision could not be read."""


class ExportError(MurmurAnalysisError):
    """An export could not be written where it was asked to go (or read back)."""


class UnknownConversationError(MurmurAnalysisError, KeyError):
    """A conversation id that the corpus does not hold."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class PriceError(MurmurAnalysisError):
    """User prices (``prices=``) that cannot be read.

    A missing file, column, key or number, a file that is not UTF-8 text, or a model priced twice.
    """


class QueryError(MurmurAnalysisError):
    """A SQL query over a corpus (:meth:`~murmur_analysis.corpus.Corpus.sql`) that DuckDB refused.

    ``str(error)`` is DuckDB's message on one line (``Parser Error: syntax error at or near
    ...``, ``Catalog Error: Table with name x does not exist! ...``); the hint names the tables.

    Attributes:
        excerpt: DuckDB's excerpt of the query at the fault (``LINE 1: ...`` and a caret), when it
            gives one.
    """

    def __init__(self, message: str, *, hint: str | None = None, excerpt: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.excerpt = excerpt


class UnknownTableError(MurmurAnalysisError, KeyError):
    """A table name that the corpus does not hold; the message lists the names it does."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""
