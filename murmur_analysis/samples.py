"""Where the notebooks and reports find their data: a path the user names, else the samples.

The bundled samples (``data/samples`` of the repository, one small corpus of every runtime)
are found next to the installed package, never relative to the working folder, so a notebook
copied anywhere still runs. The environment variable :data:`DATA_VARIABLE` names other data.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import NoSourceError
from .paths import user_path

__all__ = ["DATA_VARIABLE", "data_paths", "sample_data"]

#: The environment variable that points the notebooks and reports at other data: one path, or
#: several joined with ``os.pathsep`` (``:`` on POSIX).
DATA_VARIABLE = "MURMUR_ANALYSIS_DATA"


def sample_data() -> Path:
    """The bundled samples: ``data/samples`` beside the installed package.

    Returns:
        The samples folder.

    Raises:
        NoSourceError: the package was installed without the samples (from a wheel); point
            :data:`DATA_VARIABLE` at data or pass paths instead.
    """
    package = Path(__file__).resolve().parent
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
    named = [str(user_path(p)) for p in os.environ.get(DATA_VARIABLE, "").split(os.pathsep) if p.strip()]
    return named or [str(sample_data())]
