"""The source registry: built-ins and plugins, registered the same way, found by detection.

Built-in sources are listed in :data:`BUILTIN`; other packages add sources through the
``murmur_analysis.sources`` entry-point group, each entry point naming a
:class:`~murmur_analysis.sources.base.Source` subclass. A plugin that fails to import is a
:class:`PluginWarning`, never a failed import of this package.

Detection asks a built-in source through its layout module, which tells its files apart
without importing the source: a load imports only the sources that claim its paths.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.lazy import names_from
from ..errors import NoSourceError, UnknownSourceError

if TYPE_CHECKING:
    from ..core.diagnostics import Diagnostics
    from ..core.handoff import Conversation
    from .base import Source

__all__ = [
    "BUILTIN",
    "Builtin",
    "Conversation",
    "Diagnostics",
    "PluginWarning",
    "Source",
    "claims",
    "default_paths",
    "detect",
    "get_source",
    "names",
    "plugins",
    "registry",
]

ENTRY_POINT_GROUP = "murmur_analysis.sources"

class Builtin(NamedTuple):
    """Where a built-in source lives.

    Attributes:
        source: its class, as ``"module:Class"``, imported when the source is first made.
        layout: the module that tells its files apart (where they are), imported alone: its
            ``guess_can_open(path)`` is what the source's ``guess_can_open`` answers, and its
            ``default_homes()`` (a runtime with a fixed home) what the source's ``default_homes`` does.
    """

    source: str
    layout: str


_PKG = "murmur_analysis.sources"
#: Built-in sources by name, in the order they are asked.
BUILTIN: dict[str, Builtin] = {
    "murmur": Builtin(f"{_PKG}.murmur:MurmurSource", f"{_PKG}.murmur.layout"),
    "litany": Builtin(f"{_PKG}.litany:LitanySource", f"{_PKG}.litany.workspaces"),
    "flexigpt": Builtin(f"{_PKG}.flexigpt:FlexiGPTSource", f"{_PKG}.flexigpt.layout"),
    "dispatch": Builtin(f"{_PKG}.dispatch:DispatchSource", f"{_PKG}.dispatch.detect"),
    "claude_code": Builtin(f"{_PKG}.claude_code:ClaudeCodeSource", f"{_PKG}.claude_code.layout"),
    "codex": Builtin(f"{_PKG}.codex:CodexSource", f"{_PKG}.codex.layout"),
}


#: The Source contract loads with the first source (paging a record needs none of it).
__getattr__ = names_from(__name__, {"Source": ".base", "Diagnostics": "..core.diagnostics",
                                    "Conversation": "..core.handoff"})


class PluginWarning(UserWarning):
    """A source plugin could not be loaded; the other sources still work."""


def _load_class(target: str) -> type[Source]:
    from .base import Source

    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, Source)):
        raise TypeError(f"{target} is not a murmur_analysis Source subclass")
    return cls


def _import(module_name: str) -> ModuleType | None:
    """A built-in's module, or ``None`` when this installation does not have it."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        return None


def _layout(name: str) -> ModuleType | None:
    """The layout module of built-in source ``name`` (``None``: no built-in of that name is here)."""
    builtin = BUILTIN.get(name)
    return None if builtin is None else _import(builtin.layout)


@cache
def plugins() -> dict[str, type[Source]]:
    """Every source plugin installed, by entry-point name.

    A plugin that cannot be loaded, or that takes a name already registered, is a :class:`PluginWarning`.
    """
    from importlib.metadata import entry_points

    from .base import Source

    found: dict[str, type[Source]] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in BUILTIN or ep.name in found:
            warnings.warn(f"source plugin {ep.name!r} ({ep.value}) shadows a source already registered; ignored",
                          PluginWarning, stacklevel=2)
            continue
        try:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, Source)):
                raise TypeError("the entry point does not name a Source subclass")
        except Exception as err:  # noqa: BLE001 - any failure of third-party code is a warning
            warnings.warn(f"source plugin {ep.name!r} ({ep.value}) could not be loaded: {err!r}",
                          PluginWarning, stacklevel=2)
            continue
        found[ep.name] = cls
    return found


def _builtin_class(name: str) -> type[Source] | None:
    """Built-in source ``name``'s class, imported (``None``: this installation does not have it)."""
    target = BUILTIN[name].source
    return None if _import(target.partition(":")[0]) is None else _load_class(target)


@cache
def registry() -> dict[str, type[Source]]:
    """Every available source class by name: built-ins first, then plugins (every built-in is imported)."""
    found = {name: cls for name in BUILTIN if (cls := _builtin_class(name)) is not None}
    found.update(plugins())
    return found


def names() -> list[str]:
    """Every registered source's name, built-ins first, without importing a built-in source."""
    return [*(name for name in BUILTIN if _layout(name) is not None), *plugins()]


def claims(name: str, path: Path, make: Callable[[str], Source]) -> bool:
    """Whether source ``name`` claims ``path`` (its ``guess_can_open``).

    A built-in is asked through its layout, without importing the source; any other source is
    made by ``make(name)`` and asked. A folder may hold several runtimes' data side by side:
    each source that claims it reads its own part. A guess that fails on the file system (a
    folder that cannot be listed) claims nothing; the loader reports the folder.
    """
    layout = _layout(name)
    guess: Callable[[Path], bool] = layout.guess_can_open if layout is not None else make(name).guess_can_open
    try:
        return bool(guess(path))
    except OSError:
        return False


def default_paths(source: str | None = None) -> list[Path]:
    """The default homes of every registered source (only ``source``'s when given) that exist here.

    Raises:
        UnknownSourceError: ``source`` names no registered source.
        NoSourceError: no source has a default home on this machine.
    """
    known = names()
    if source is not None and source not in known:
        raise UnknownSourceError(f"no source named {source!r}",
                                 hint=f"registered sources: {', '.join(sorted(known))}")
    chosen = [source] if source is not None else known
    homes = list(dict.fromkeys(home for name in chosen for home in _default_homes(name)))
    if not homes:
        raise NoSourceError(
            "no path given, and no runtime's default home exists on this machine",
            hint="pass a path (a file or folder of any runtime), or set a runtime's home "
                 "(CLAUDE_CONFIG_DIR for Claude Code, CODEX_HOME for Codex)",
            cli_hint="give SRC (a file or folder of any runtime), or set a runtime's home "
                     "(CLAUDE_CONFIG_DIR for Claude Code, CODEX_HOME for Codex)",
        )
    return homes


def get_source(name: str, **options: Any) -> Source:
    """A fresh instance of the source registered as ``name``, given ``options``.

    Raises:
        UnknownSourceError: no source has that name.
    """
    cls = _builtin_class(name) if name in BUILTIN else plugins().get(name)
    if cls is None:
        classes = registry()
        if name not in classes:
            raise UnknownSourceError(
                f"no source named {name!r}", hint=f"registered sources: {', '.join(sorted(classes))}"
            )
        cls = classes[name]
    return cls(**options)


def _default_homes(name: str) -> list[Path]:
    """Source ``name``'s default homes that exist: a built-in's from its layout, without importing the source."""
    layout = _layout(name)
    if layout is None:
        return plugins()[name].default_homes()
    homes: Callable[[], list[Path]] | None = getattr(layout, "default_homes", None)
    return [] if homes is None else homes()


def detect(path: Path, options: Mapping[str, Mapping[str, Any]] | None = None) -> Source:
    """The first registered source whose ``guess_can_open`` claims ``path``.

    Args:
        path: the file or folder.
        options: per-source options, by source name, given to the source created.

    Raises:
        NoSourceError: no source recognises the path.
    """
    def make(name: str) -> Source:
        return get_source(name, **(options or {}).get(name, {}))

    for name in names():
        if claims(name, path, make):
            return make(name)
    raise NoSourceError(f"no source recognises {path}")
