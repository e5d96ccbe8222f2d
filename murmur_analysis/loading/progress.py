"""One progress bar for a load: bytes of input read, with a total and an ETA (tqdm).

The bar counts each conversation's own input: the file it is read from (or the folder, for a
git repository), once however many conversations it holds. Its total is the size of exactly
those inputs, found before the load by the load's own plan (:class:`~murmur_analysis.loading.plan.LoadPlan`)
run with every conversation skipped, so it knows what the load will read, and nothing else
under the paths counts (a big file no source reads, a folder no source enters). The bar
advances by a conversation's input once that conversation is built. A bar that is not shown
(stderr is not a terminal) finds nothing beforehand. In a notebook ``tqdm.auto`` draws the
notebook's own bar.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.files import display
from .discovery import PathArg

__all__ = ["ProgressBar"]


def _size(path: Path) -> int:
    """Bytes in a file, or in every file under a folder (symbolic links not followed).

    A folder is walked with a stack of its own, so a chain of folders of any depth is sized.
    """
    try:
        if not path.is_dir():
            return path.stat().st_size if path.is_file() else 0
    except OSError:
        return 0
    total = 0
    folders = [os.fspath(path)]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir():
                            if not entry.is_symlink():
                                folders.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def _inputs(paths: Iterable[PathArg], source: str | None,
            options: Mapping[str, Mapping[str, Any]] | None) -> dict[str, int]:
    """The bytes of each conversation's input the load of ``paths`` reads, by the path its ``read`` event names.

    The load's plan is run with every conversation skipped (``keep`` says no, ``skip`` lets
    the sources leave them unread), so the conversations found are the load's, each once.

    Raises:
        FileNotFoundError: a path that does not exist (as :func:`~murmur_analysis.load` raises).
        NoSourceError: a readable path no source recognises (and the other errors of a load's plan).
    """
    from .plan import LoadPlan

    sizes: dict[str, int] = {}
    plan = LoadPlan(paths, source, options, text=False)
    for event in plan.events(keep=lambda _src, _conv: False, skip=lambda _src, _conv: True):
        conv = event.conversation
        if event.kind == "skipped" and conv is not None and conv.path:
            shown = display(conv.path)  # as the load's ``read`` event names it
            if shown not in sizes:
                sizes[shown] = _size(Path(conv.path))
    return sizes


class ProgressBar:
    """A :data:`~murmur_analysis.corpus.Progress` callback drawing one tqdm bar.

    Args:
        paths: the paths being loaded.
        disable: tqdm's ``disable``: ``None`` hides the bar when stderr is not a terminal
            (the command line), ``False`` always shows it (``ma.load(progress=True)``).
        source: the ``source=`` of the load (a forced source reads what it finds).
        options: the ``options=`` of the load.

    Raises:
        FileNotFoundError: a path that does not exist, when the bar is shown (as
            :func:`~murmur_analysis.load` raises for it).
        NoSourceError: a readable path no source recognises, when the bar is shown (and the
            other errors of a load's plan).
    """

    def __init__(self, paths: Iterable[PathArg], disable: bool | None = False, source: str | None = None,
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        from tqdm.auto import tqdm

        self._bar: Any = tqdm(total=0, unit="B", unit_scale=True, unit_divisor=1024, desc="loading",
                              disable=disable, leave=False, dynamic_ncols=True)
        #: Each input not yet read, by the path the load names it with, and its bytes.
        self._unread: dict[str, int] = {}
        if self._bar.disable:
            return
        try:
            self._unread = _inputs(paths, source, options)
        except BaseException:
            self._bar.close()
            raise
        self._bar.total = sum(self._unread.values())
        self._bar.refresh()

    @property
    def total(self) -> int:
        """The bytes of input the load reads (``0`` for a bar that is not shown)."""
        return int(self._bar.total)

    @property
    def done(self) -> int:
        """The bytes of input read so far."""
        return int(self._bar.n)

    def __call__(self, event: str, detail: str) -> None:
        """Take one progress event of a load."""
        if event == "source":
            self._bar.set_description(detail.partition(":")[0], refresh=False)
        elif event == "read":
            self._bar.update(self._unread.pop(detail, 0))

    def close(self) -> None:
        """Fill the bar (whatever no conversation was read from is done too) and remove it."""
        self._bar.update(self._bar.total - self._bar.n)
        self._bar.refresh()  # draw the full bar even when the load ended within tqdm's redraw interval
        self._bar.close()
