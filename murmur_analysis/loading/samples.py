"""Where the notebooks and reports find their data: a path the user names, else the samples.

The bundled samples (``data/samples`` of the repository, one small corpus of every runtime)
are found next to the installed package, never relative to the working folder, so a notebook
copied anywhere still runs. The environment variable :data:`DATA_VARIABLE` names other data,
:data:`SESSIONS_VARIABLE` the murmur session work dirs whose traces hold its token usage, and
:data:`PRICES_VARIABLE` a file of the user's own prices.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..core.paths import user_path
from ..errors import NoSourceError

__all__ = ["DATA_VARIABLE", "PRICES_VARIABLE", "SESSIONS_VARIABLE", "data_paths", "prices_path", "sample_data",
           "session_paths"]

#: The environment variable that points the notebooks and reports at other data: one path, or
#: several joined with ``os.pathsep`` (``:`` on POSIX).
DATA_VARIABLE = "MURMUR_ANALYSIS_DATA"

#: The environment variable naming murmur session work dirs (or ``trace.jsonl`` files) to join to
#: the records loaded, joined with ``os.pathsep``: the ``sessions`` option of the murmur source.
SESSIONS_VARIABLE = "MURMUR_ANALYSIS_SESSIONS"

#: The environment variable naming a CSV of the user's own prices (``ma.load(..., prices=...)``).
PRICES_VARIABLE = "MURMUR_ANALYSIS_PRICES"


def _named(variable: str) -> list[str]:
    """The paths ``variable`` names, joined with ``os.pathsep``; blanks between separators ignored."""
    return [str(user_path(p)) for p in os.environ.get(variable, "").split(os.pathsep) if p.strip()]


def sample_data() -> Path:
    """The bundled samples: ``data/samples`` beside the installed package.

    Returns:
        The samples folder.

    Raises:
        NoSourceError: the package was installed without the samples (from a wheel); point
            :data:`DATA_VARIABLE` at data or pass paths instead.
    """
    package = Path(__file__).resolve().parents[1]  # murmur_analysis/, beside data/ in a checkout
    samples = package.parent / "data" / "samples"
    if samples.is_dir():
        return samples
    raise NoSourceError(
        f"no bundled samples beside {package}",
        hint=f"set {DATA_VARIABLE} to your data, or install murmur-analysis from a checkout (pip install -e .)",
    )


def data_paths() -> list[str]:
    """The paths a notebook loads by default: :data:`DATA_VARIABLE` if set, else the samples.

    Returns:
        The paths, as strings, in the order given (``~`` expanded).

    Raises:
        NoSourceError: the variable is unset and there are no bundled samples.

    Example:
        >>> import murmur_analysis as ma
        >>> corpus = ma.load(*ma.data_paths())  # doctest: +SKIP
    """
    return _named(DATA_VARIABLE) or [str(sample_data())]


def session_paths() -> list[str]:
    """The murmur session paths a notebook joins by default: :data:`SESSIONS_VARIABLE`, else none.

    With none named, a murmur home's own traces (``sessions/``, ``formations/``) are still joined.

    Returns:
        The paths, as strings, in the order given (``[]`` when the variable is unset).

    Example:
        >>> corpus = ma.load(*ma.data_paths(), options={"murmur": {"sessions": ma.session_paths()}})  # doctest: +SKIP
    """
    return _named(SESSIONS_VARIABLE)


def prices_path() -> str | None:
    """The price file a notebook loads by default: :data:`PRICES_VARIABLE`, else ``None`` (genai-prices alone).

    Returns:
        The path (without surrounding blanks), or ``None`` when the variable is unset or blank.
    """
    named = os.environ.get(PRICES_VARIABLE, "").strip()
    return str(user_path(named)) if named else None
