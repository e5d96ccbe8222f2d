"""Figures and tables for notebooks and reports that a reader gets at a glance.

Every figure leaves as a PNG image with alt text (so an HTML export is accessible and the image
can be saved as a file); every table shows a null as "not reported", never as ``0``. Figures are
built on ``matplotlib.figure.Figure`` rather than ``pyplot``, so nothing is drawn twice, and every
text given to them is drawn as written: titles, tool and model names come from data, and a ``$``, a
backslash, ``_`` or ``^`` there is that character, never mathtext (which only matplotlib's own tick
numbers, such as ``10³`` on a log scale, still use).
"""

from __future__ import annotations

import io
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import pandas as pd
from matplotlib.axis import Axis
from matplotlib.backend_bases import RendererBase
from matplotlib.category import StrCategoryFormatter
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, Formatter, FuncFormatter

__all__ = ["NOT_REPORTED", "SOURCE_COLOURS", "bar_labels", "category", "figure", "image", "source_colour", "table"]

#: How a null is shown to a reader.
NOT_REPORTED = "not reported"
_NOWRAP_CHARS = 40  # text columns no longer than this stay on one line
_WRAP_WIDTH = "14em"  # longer ones wrap, in a column at least this wide (never a word a line)


#: Tick formatters whose labels are the caller's text: strings given (``set_yticks(ys, labels)``),
#: categories (``barh(labels, ...)``), a function's strings. Matplotlib's own formatters of numbers
#: keep their mathtext (``10³`` on a log scale).
_CALLER_TICKS = (FixedFormatter, FuncFormatter, StrCategoryFormatter)


def _escaped(text: str) -> str:
    """``text`` as mathtext draws it exactly as written: every ``$`` escaped, nothing else."""
    return text.replace("$", r"\$")


class _LiteralTicks(Formatter):
    """The caller's tick formatter, its labels escaped so that they are drawn as written."""

    def __init__(self, caller: Formatter) -> None:
        self.caller = caller

    def __call__(self, x: float, pos: int | None = None) -> str:
        return _escaped(self.caller(x, pos))

    def format_ticks(self, values: Any) -> list[str]:
        return [_escaped(label) for label in self.caller.format_ticks(values)]

    def get_offset(self) -> str:
        return _escaped(self.caller.get_offset())

    def set_locs(self, locs: Any) -> None:
        self.caller.set_locs(locs)

    def format_data(self, value: float) -> str:
        return self.caller.format_data(value)

    def format_data_short(self, value: float) -> str:
        return self.caller.format_data_short(value)


class _LiteralFigure(Figure):
    """A figure that draws the caller's text as written, whoever made the text and when.

    Labels in these figures come from data (conversation titles, tool and model names, ids), and
    matplotlib's mathtext reads text between two ``$`` as math: it would garble them or fail the
    whole drawing. So every text is drawn with mathtext off (titles, axis labels, legends, bar
    labels, annotations), except the tick labels, which the drawing itself makes: there the
    caller's labels are escaped, and matplotlib's own numbers keep their mathtext.
    """

    def draw(self, renderer: RendererBase) -> None:
        """Draw the figure with every text of the caller's drawn literally."""
        made_by_axes: set[int] = set()
        for axis in self.findobj(Axis):
            for ticker in (axis.major, axis.minor):
                if isinstance(ticker.formatter, _CALLER_TICKS):
                    literal = _LiteralTicks(ticker.formatter)
                    literal.set_axis(axis)
                    ticker.formatter = literal
            ticks = [*axis.majorTicks, *axis.minorTicks]
            made_by_axes.update(id(text) for tick in ticks for text in (tick.label1, tick.label2))
            made_by_axes.add(id(axis.offsetText))
        for text in self.findobj(Text):
            if id(text) not in made_by_axes:
                text.set_parse_math(False)
        super().draw(renderer)


def figure(width: float = 8.0, height: float = 4.0, rows: int = 1, cols: int = 1, **kwargs: Any) -> tuple[Any, Any]:
    """A new figure and its axes, not registered with ``pyplot`` (nothing is shown until :func:`image`).

    Every text given to it (titles, labels, tick labels, legends, bar labels, annotations) is drawn
    as written, never as mathtext (see ``_LiteralFigure``): a label from data needs no escaping.

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
    fig = _LiteralFigure(figsize=(width, height), layout="constrained")
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


#: Each built-in runtime's colour, the same in every figure (colour-blind-safe hues, far apart).
SOURCE_COLOURS = {
    "murmur": "#4c72b0", "litany": "#dd8452", "flexigpt": "#55a868", "dispatch": "#c44e52",
    "claude_code": "#8172b3", "codex": "#937860",
}
_MORE_COLOURS = ("#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")


def source_colour(source: str) -> str:
    """The colour of ``source`` in every figure; a plugin's source gets one of a few more, by its name."""
    if source in SOURCE_COLOURS:
        return SOURCE_COLOURS[source]
    return _MORE_COLOURS[sum(source.encode()) % len(_MORE_COLOURS)]


def bar_labels(ax: Any, bars: Any, texts: Iterable[str], inside: bool = False, upright: bool = False) -> None:
    """Write a text at the end of each bar (a count, a value).

    Args:
        ax: the axes.
        bars: the container ``ax.barh`` (or ``ax.bar``) returned.
        texts: one text per bar.
        inside: put the text in the middle of the bar (white) instead of after its end.
        upright: turn the text a quarter (for narrow vertical bars side by side, whose labels
            would run into each other).
    """
    ax.bar_label(bars, labels=list(texts), label_type="center" if inside else "edge", padding=0 if inside else 3,
                 fontsize="small", color="white" if inside else "black", rotation=90 if upright else 0)


def table(frame: pd.DataFrame, percent: Sequence[str] = (), precision: int = 2) -> Any:
    """A frame styled for reading: nulls as "not reported", thousands separated, no index.

    Times show to the minute in UTC, text is left-aligned and numbers right-aligned (headings
    too); numbers,
    times and short text stay on one line, and longer text wraps in a column wide enough to read
    (an id without spaces breaks anywhere).

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
    styler = styler.set_table_styles({name: [{"selector": "th.col_heading", "props": "text-align: left"}]
                                      for name in text}, overwrite=False)
    one_line: list[Hashable] = [
        name for name in shown.columns if name not in text or _longest(shown[name]) <= _NOWRAP_CHARS
    ]
    wrapped = [name for name in text if name not in one_line]
    styler = styler.set_properties(subset=wrapped, **{"min-width": _WRAP_WIDTH, "overflow-wrap": "anywhere"})
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
