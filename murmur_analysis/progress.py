"""One progress bar for a load: bytes of input read, with a total and an ETA (tqdm).

The total is the size of every file under the paths being loaded; the bar advances by the size
of each conversation's file (or folder, for a git repository) once that conversation is built.
In a notebook ``tqdm.auto`` draws the notebook's own bar.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["ProgressBar"]


def _size(path: Path) -> int:
    """Bytes in a file, or in every file under a folder (symbolic links not followed)."""
    try:
        if path.is_file():
            return path.stat().st_size
        total = 0
        for root, _, files in os.walk(path):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    continue
        return total
    except OSError:
        return 0


class ProgressBar:
    """A :data:`~murmur_analysis.corpus.Progress` callback drawing one tqdm bar.

    Args:
        paths: the paths being loaded (their size is the bar's total).
        disable: tqdm's ``disable``: ``None`` hides the bar when stderr is not a terminal
            (the command line), ``False`` always shows it (``ma.load(progress=True)``).
    """

    def __init__(self, paths: Iterable[str | bytes | os.PathLike[str] | os.PathLike[bytes]],
                 disable: bool | None = False) -> None:
        from tqdm.auto import tqdm

        roots = [Path(os.path.expanduser(os.fsdecode(p))) for p in paths]
        self._roots = roots
        self._counted: set[str] = set()
        self._bar: Any = tqdm(total=sum(_size(r) for r in roots), unit="B", unit_scale=True, unit_divisor=1024,
                              desc="loading", disable=disable, leave=False, dynamic_ncols=True)

    def __call__(self, event: str, detail: str) -> None:
        """Take one progress event of a load."""
        if event == "source":
            self._bar.set_description(detail.partition(":")[0], refresh=False)
        elif event == "read" and detail not in self._counted:
            self._counted.add(detail)
            self._bar.update(min(_size(Path(detail)), self._bar.total - self._bar.n))

    def close(self) -> None:
        """Fill the bar (whatever no conversation was read from is done too) and remove it."""
        self._bar.update(self._bar.total - self._bar.n)
        self._bar.refresh()  # draw the full bar even when the load ended within tqdm's redraw interval
        self._bar.close()
