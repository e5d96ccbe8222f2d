"""Names a package hands out from its modules, each module imported when one of its names is first used."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["names_from"]


def names_from(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` that imports each name where it lives, when first asked.

    Args:
        package: the package's ``__name__``.
        where: each name, and the module (relative to ``package``) it lives in.

    Returns:
        The function to assign to the package's ``__getattr__``: it keeps what it found in the
        package, so a name is looked up once, and raises ``AttributeError`` for any other name.
    """
    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
