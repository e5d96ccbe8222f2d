"""What a Codex rollout's rows after a point depend on, besides the lines after it.

A rollout is appended to and never rewritten, so its lines after a resume point can be read on
their own (:meth:`~murmur_analysis.sources.codex.CodexSource.read_range`) once these facts of
the lines before are known. A whole read (or a read on) leaves them in the point's
:attr:`~murmur_analysis.core.handoff.ResumePoint.carry`, as JSON values:

* ``provider``: the thread's ``model_provider`` (its first ``session_meta``: the lines after the
  point hold none);
* ``model``: the ``turn_context`` model in force (an assistant message's and a call's model);
* ``total``: the last ``total_token_usage`` (the delta rule of :mod:`.usage` compares each
  event with the one before);
* ``assistant``: the last assistant message, counted back from the point (-1: the last message),
  and ``linked``: whether a usage row already reports on it (a usage row links to the last
  assistant message at or before it);
* ``compacted``: whether the last message already has its compaction row (one per message a
  compaction follows), or there is no message to give one;
* ``codes`` and ``said``: the exit codes by call id, and the ids whose code is the output's own
  (it wins over ``exec_command_end``'s);
* ``assumed``: the usage rows priced as the fallback model (one diagnostics row counts them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ...core.values import JSON

__all__ = ["Carry"]

#: Names a carry of this layout (a point whose carry is not one is read whole).
_KIND = "codex/1"


@dataclass(frozen=True)
class Carry:
    """The state of a rollout's lines before a point that the rows after it go on from (see the module doc)."""

    provider: str | None = None
    model: str | None = None
    total: list[int | None] | None = None
    assistant: int | None = None
    linked: bool = False
    compacted: bool = True
    codes: dict[str, int] = field(default_factory=dict)
    said: frozenset[str] = frozenset()
    assumed: int = 0

    def to_doc(self) -> dict[str, JSON]:
        """The carry as JSON values (:attr:`~murmur_analysis.core.handoff.ResumePoint.carry`)."""
        codes: dict[str, JSON] = dict(self.codes)
        total: list[JSON] | None = list(self.total) if self.total is not None else None
        said: list[JSON] = [*sorted(self.said)]
        return {"kind": _KIND, "provider": self.provider, "model": self.model, "total": total,
                "assistant": self.assistant, "linked": self.linked, "compacted": self.compacted, "codes": codes,
                "said": said, "assumed": self.assumed}

    @classmethod
    def from_doc(cls, doc: Mapping[str, JSON]) -> Carry | None:
        """The carry :meth:`to_doc` wrote; ``None`` when ``doc`` is none of this layout (read the file whole)."""
        if doc.get("kind") != _KIND:
            return None
        provider, model, total, assistant = doc.get("provider"), doc.get("model"), doc.get("total"), doc.get(
            "assistant")
        codes, said, assumed = doc.get("codes"), doc.get("said"), doc.get("assumed")
        linked, compacted = doc.get("linked"), doc.get("compacted")
        if not (_text(provider) and _text(model) and _count(assistant, True) and isinstance(linked, bool)
                and isinstance(compacted, bool) and _count(assumed, False) and isinstance(codes, dict)
                and isinstance(said, list)):
            return None
        if total is not None and not (isinstance(total, list) and all(_count(v, True) for v in total)):
            return None
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in codes.values()) or not all(
                isinstance(s, str) for s in said):
            return None
        return cls(provider if isinstance(provider, str) else None, model if isinstance(model, str) else None,
                   [v if isinstance(v, int) else None for v in total] if isinstance(total, list) else None,
                   assistant if isinstance(assistant, int) else None, linked, compacted,
                   {k: v for k, v in codes.items() if isinstance(v, int)},
                   frozenset(s for s in said if isinstance(s, str)), assumed if isinstance(assumed, int) else 0)


def _text(value: JSON) -> bool:
    return value is None or isinstance(value, str)


def _count(value: JSON, nullable: bool) -> bool:
    return (nullable and value is None) or (isinstance(value, int) and not isinstance(value, bool))
