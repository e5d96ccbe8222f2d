"""Figures and tables for notebooks and reports that a reader gets at a glance.

Every figure leaves as a PNG image with alt text (so an HTML export is accessible and the image
can be saved as a file); every table shows a null as "not reported", never as ``0``. Figures are
built on ``matplotlib.figure.Figure`` rather than ``pyplot``, so nothing is drawn twice.
"""

from __future__ import annotations

import io
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import pandas as pd

__all__ = ["NOT_REPORTED", "bar_labels", "category", "figure", "image", "table"]

#: How a null is shown to a reader.
NOT_REPORTED = "not reported"
_NOWRAP_CHARS = 40  # text columns no longer than this stay on one line


def figure(width: float = 8.0, height: float = 4.0, rows: int = 1, cols: int = 1, **kwargs: Any) -> tuple[Any, Any]:
    """A new figure and its axes, not registered with ``pyplot`` (nothing is shown until :func:`image`).

    Args:
        width: inches.
        height: inches.
        rows: rows of axes.
        cols: columns of axes.
        **kwargs: passed to ``Figure.subplots`` (``sharex``, ``sharey``, ``squeeze``, ...).

    Returns:
        ``(figure, axes)``: one ``Axes`` for a 1x1 grid, else the array of them (as
        ``Figure.subplots`` gives them).
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(rows, cols, **kwargs)


def image(fig: Any, alt: str, dpi: int = 110) -> Any:
    """The figure as a PNG image carrying alt text, for display in a notebook.

    Args:
        fig: a matplotlib figure.
        alt: one or two sentences saying what the figure shows, for readers who cannot see it.
        dpi: resolution.

    Returns:
        An ``IPython.display.Image`` whose output metadata holds ``alt``.

    Raises:
        ValueError: ``alt`` is empty.
    """
    from IPython.display import Image

    if not alt.strip():
        raise ValueError("a figure needs alt text")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return Image(data=buffer.getvalue(), format="png", metadata={"alt": alt})  # type: ignore[no-untyped-call]


def category(*parts: Any) -> str:
    """One readable label from several key parts: ``"litany · gpt-5-mini"``, never a tuple.

    A null part reads "not reported".
    """
    return " · ".join(NOT_REPORTED if _is_null(p) else str(p) for p in parts)


def bar_labels(ax: Any, bars: Any, texts: Iterable[str], inside: bool = False) -> None:
    """Write a text at the end of each horizontal bar (a count, a value).

    Args:
        ax: the axes.
        bars: the container ``ax.barh`` returned.
        texts: one text per bar.
        inside: put the text in the middle of the bar (white) instead of after its end.
    """
    ax.bar_label(bars, labels=list(texts), label_type="center" if inside else "edge", padding=0 if inside else 3,
                 fontsize="small", color="white" if inside else "black")


def table(frame: pd.DataFrame, percent: Sequence[str] = (), precision: int = 2) -> Any:
    """A frame styled for reading: nulls as "not reported", thousands separated, no index.

    Times show to the minute in UTC, text is left-aligned and numbers right-aligned; numbers,
    times and short text stay on one line.

    Args:
        frame: any frame.
        percent: columns holding shares (0..1), shown as percentages.
        precision: decimals of other float columns.

    Returns:
        A pandas ``Styler`` (rendered as HTML in a notebook).
    """
    shown = frame.reset_index(drop=True)
    formats: dict[str, Any] = {}
    text: list[Hashable] = []
    for name in shown.columns:
        kind = shown[name].dtype
        if pd.api.types.is_datetime64_any_dtype(kind) or "timestamp" in str(kind):
            formats[name] = _minute
        elif name in percent:
            formats[name] = "{:.1%}"
        elif pd.api.types.is_integer_dtype(kind):
            formats[name] = "{:,}"
        elif pd.api.types.is_float_dtype(kind):
            formats[name] = f"{{:,.{precision}f}}"
        else:
            text.append(name)
    styler = shown.style.format(formats, na_rep=NOT_REPORTED, escape="html").hide(axis="index")
    styler = styler.set_properties(subset=text, **{"text-align": "left"})
    one_line: list[Hashable] = [
        name for name in shown.columns if name not in text or _longest(shown[name]) <= _NOWRAP_CHARS
    ]
    return styler.set_properties(subset=one_line, **{"white-space": "nowrap"})


def _longest(column: pd.Series) -> int:
    lengths = column.astype("string").str.len().dropna()
    return int(lengths.max()) if len(lengths) else 0


def _minute(value: Any) -> str:
    return NOT_REPORTED if _is_null(value) else f"{value.tz_convert('UTC'):%Y-%m-%d %H:%M} UTC"


def _is_null(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
