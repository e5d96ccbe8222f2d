"""Which paths are dispatch's: what detection asks, without loading the reader."""

from __future__ import annotations

import os
from pathlib import Path

from ...core.files import file_kind, is_dir, listing
from ..base import Diagnostics
from .layout import DB_SUFFIXES, claims_name, run_id
from .runs import session_of

__all__ = ["guess_can_open"]


def guess_can_open(path: Path) -> bool:
    """A session, trace, run record or dispatch SQLite file, or a folder holding them."""
    if not is_dir(path):
        return os.path.lexists(path) and _claims_file(path)
    if path.name == ".dispatch" or is_dir(path / ".dispatch"):
        return True
    return any(claims_name(e.name) for e in listing(path, None))


def _claims_file(path: Path) -> bool:
    name = path.name
    if claims_name(name):
        return True
    if run_id(name) is not None:  # a run record: claimed when it names its session
        return session_of(path, Diagnostics("dispatch")) is not None
    if name.endswith(DB_SUFFIXES):  # a SQLite file: claimed when it holds dispatch's tables
        from .store import store_tables  # SQLite and the session decoder, only for a file named as a store

        return file_kind(path) == "file" and bool(store_tables(path))
    return False
