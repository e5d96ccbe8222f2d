"""litany: a transcript of files committed to one git branch per agent.

- :mod:`.entries`: one committed entry file decoded.
- :mod:`.replay`: the ``messages/`` files of a repository decoded, each blob once.
- :mod:`.branch`: a branch's commits decoded into the events of its history, which the
  history core (:mod:`murmur_analysis.algorithms.history`) counts.
- :mod:`.steps`: the step records under ``steps/<agent>/``.
- :mod:`.spend`: which step committed each model entry, and the usage rows.
- :mod:`.workspaces`: where the workspaces and repositories are.
- :mod:`.source`: the source: each branch handed over unread, and read when iterated.
- :mod:`.git`, :mod:`.gitlog`: git run safely, and its log parsed.

``assemble_commit`` is this source's, and this package is its canonical home
(``murmur_analysis.sources.litany.assemble_commit``); ``ma.assemble_commit`` re-exports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.lazy import names_from

if TYPE_CHECKING:
    from .source import LitanySource, Replayer, assemble_commit

__all__ = ["LitanySource", "Replayer", "assemble_commit"]

#: Where each name lives, imported when first used: detection loads the layout (:mod:`.workspaces`) alone.
__getattr__ = names_from(__name__, {"LitanySource": ".source", "Replayer": ".source", "assemble_commit": ".source"})
