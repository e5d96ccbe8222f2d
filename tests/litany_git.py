"""Helpers that build litany git repositories in a temp folder (through the sample builder)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "data" / "samples"))

from build_litany import RepoBuilder  # noqa: E402

__all__ = ["Branch", "RepoBuilder", "blocks", "j"]

T0 = 1_776_848_400


def j(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def blocks(*items: Mapping[str, Any]) -> bytes:
    return j(list(items))


class Branch:
    """One branch under construction: `put` files, one commit per call, times one minute apart."""

    def __init__(self, repo: RepoBuilder, agent: str, start: int = T0, parent: int | None = None) -> None:
        self.repo = repo
        self.name = f"agents/{agent}"
        self.when = start
        self.parent = parent
        self.marks: list[int] = []

    def put(self, changes: Mapping[str, bytes | str | None], message: str = "commit") -> int:
        self.when += 60
        parent, self.parent = self.parent, None
        mark = self.repo.commit(self.name, changes, self.when, message, parent=parent)
        self.marks.append(mark)
        return mark


def tree(*files: tuple[str, bytes | str]) -> dict[str, bytes | str | None]:
    return {f"messages/{name}": body for name, body in files}
