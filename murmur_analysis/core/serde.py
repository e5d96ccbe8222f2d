"""serde_json's text of JSON values, and murmur's lowering of a message line to what a hook receives.

Both run in the native engine (``murmur_analysis.engine._native``, built from ``native/``), so the text
is serde_json's own ``to_string`` (compact, keys sorted, serde's number formatting). The cursor
core pages with them and the assembly core writes tool inputs with them; they read no file.
"""

from __future__ import annotations

from typing import NamedTuple

from ..engine import _native

__all__ = ["Lowered", "lower", "lower_value", "serde_text"]


class Lowered(NamedTuple):
    """One message as murmur's host lowers it for a hook (the lifecycle ``message``)."""

    role: str  #: the line's ``role``
    content: str  #: serde_json's text of the ``content`` (or of the tool envelope)
    id: str | None  #: the line's string ``id``, if any
    source_id: str | None  #: the line's string ``source_id``, if any


def lower(line: bytes) -> Lowered:
    """The lifecycle ``message`` murmur hands a hook, from one message line.

    Returns:
        The message; its ``content`` is serde_json's text of the line's ``content`` (``""``
        without one), or for a ``tool`` message of the envelope
        ``{"__murmur_tool_msg__":true,"body":…,"is_error":…,"tool_call_id":…}``.

    Raises:
        ValueError: the line is not a message.
    """
    return Lowered(*_native.lower(line))


def lower_value(line: dict[str, object]) -> Lowered:
    """:func:`lower` of a line already parsed (:func:`murmur_analysis.sources.murmur.record.parse`).

    Raises:
        ValueError: the value is not a message.
    """
    return Lowered(*_native.lower_value(line))


def serde_text(value: object) -> str:
    """serde_json's ``to_string`` of a JSON value: compact, keys sorted (murmur's encoding).

    Raises:
        TypeError: the value holds something JSON cannot (a lone surrogate among them: a Rust
            string, as serde_json writes, cannot hold one).
    """
    try:
        text: str = _native.to_json(value)
    except UnicodeEncodeError as err:
        raise TypeError(f"not JSON text: {err.reason} ({err.object[err.start:err.end]!r})") from err
    return text
