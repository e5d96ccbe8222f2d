"""litany: a transcript of files committed to one git branch per agent.

- :mod:`.entries`: one committed entry file decoded.
- :mod:`.replay`: the branch's commits replayed in order.
- :mod:`.steps`: the step records under ``steps/<agent>/``.
- :mod:`.source`: the source: workspaces, repositories and branches.
"""

from .source import LitanySource, Replayer, assemble_commit

__all__ = ["LitanySource", "Replayer", "assemble_commit"]
