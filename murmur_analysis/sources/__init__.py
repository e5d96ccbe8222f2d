"""The source registry: built-ins and plugins, registered the same way, found by detection.

Built-in sources are listed in :data:`BUILTIN`; other packages add sources through the
``murmur_analysis.sources`` entry-point group, each entry point naming a
:class:`~murmur_analysis.sources.base.Source` subclass. A plugin that fails to import is a
:class:`PluginWarning`, never a failed import of this package.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import NoSourceError, UnknownSourceError

if TYPE_CHECKING:
    from ..core.diagnostics import Diagnostics
    from ..core.handoff import Conversation
    from .base import Source

__all__ = [
    "BUILTIN",
    "Conversation",
    "Diagnostics",
    "PluginWarning",
    "Source",
    "claimants",
    "default_paths",
    "detect",
    "get_source",
    "registry",
]

ENTRY_POINT_GROUP = "murmur_analysis.sources"

#: Built-in sources as ``name -> "module:Class"``, imported on first use.
BUILTIN: dict[str, str] = {
    "murmur": "murmur_analysis.sources.murmur:MurmurSource",
    "litany": "murmur_analysis.sources.litany:LitanySource",
    "flexigpt": "murmur_analysis.sources.flexigpt:FlexiGPTSource",
    "dispatch": "murmur_analysis.sources.dispatch:DispatchSource",
    "claude_code": "murmur_analysis.sources.claude_code:ClaudeCodeSource",
    "codex": "murmur_analysis.sources.codex:CodexSource",
}


def __getattr__(name: str) -> object:
    # The Source contract loads with the first source (paging a record needs none of it).
    if name == "Source":
        from . import base

        return base.Source
    if name == "Diagnostics":
        from ..core import diagnostics

        return diagnostics.Diagnostics
    if name == "Conversation":
        from ..core import handoff

        return handoff.Conversation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class PluginWarning(UserWarning):
    """A source plugin could not be loaded; the other sources still work."""


def _load_class(target: str) -> type[Source]:
    from .base import Source

    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, Source)):
        raise TypeError(f"{target} is not a murmur_analysis Source subclass")
    return cls


@cache
def registry() -> dict[str, type[Source]]:
    """Every available source class by name: built-ins first, then plugins."""
    from .base import Source

    found: dict[str, type[Source]] = {}
    for name, target in BUILTIN.items():
        try:
            found[name] = _load_class(target)
        except ModuleNotFoundError as err:
            if err.name != target.partition(":")[0]:
                raise
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:
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


def default_paths(source: str | None = None) -> list[Path]:
    """The default homes of every registered source (only ``source``'s when given) that exist here.

    Raises:
        UnknownSourceError: ``source`` names no registered source.
        NoSourceError: no source has a default home on this machine.
    """
    classes = registry()
    if source is not None and source not in classes:
        raise UnknownSourceError(f"no source named {source!r}",
                                 hint=f"registered sources: {', '.join(sorted(classes))}")
    chosen = [classes[source]] if source is not None else list(classes.values())
    homes = list(dict.fromkeys(home for cls in chosen for home in cls.default_homes()))
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
    classes = registry()
    if name not in classes:
        raise UnknownSourceError(
            f"no source named {name!r}", hint=f"registered sources: {', '.join(sorted(classes))}"
        )
    return classes[name](**options)


def _claims(source: Source, path: Path) -> bool:
    """``source.guess_can_open(path)``; a guess that fails on the file system claims nothing."""
    try:
        return bool(source.guess_can_open(path))
    except OSError:
        return False


def claimants(path: Path, sources: Iterable[Source]) -> list[Source]:
    """Every one of ``sources`` whose ``guess_can_open`` claims ``path``, in order.

    A folder may hold several runtimes' data side by side (a murmur home beside a FlexiGPT
    store, a litany workspace and dispatch sessions): each source that recognises it reads its
    own part. A guess that fails on the file system (a folder that cannot be listed) claims
    nothing; the loader reports the folder.
    """
    return [source for source in sources if _claims(source, path)]


def detect(path: Path, options: Mapping[str, Mapping[str, Any]] | None = None) -> Source:
    """The first registered source whose ``guess_can_open`` claims ``path``.

    Args:
        path: the file or folder.
        options: per-source options, by source name, given to the source created.

    Raises:
        NoSourceError: no source recognises the path.
    """
    for name, cls in registry().items():
        source = cls(**(options or {}).get(name, {}))
        if _claims(source, path):
            return source
    raise NoSourceError(f"no source recognises {path}")
