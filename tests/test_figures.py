"""Tables show nulls as "not reported" and transcript strings as text; figures carry alt text."""

from __future__ import annotations

import base64
import contextlib
import copy
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from IPython.core.formatters import DisplayFormatter
from matplotlib.backends.backend_agg import RendererAgg
from test_flexigpt import REALISTIC, write

from murmur_analysis import figures

REPO = Path(__file__).resolve().parent.parent


def test_a_table_shows_a_null_as_not_reported_never_zero_and_escapes_text() -> None:
    frame = pd.DataFrame({
        "title": pd.array(["<b>bold</b>", None], dtype=pd.ArrowDtype(pa.string())),
        "tokens": pd.array([1234567, None], dtype=pd.ArrowDtype(pa.int64())),
        "share": [0.25, None],
    })
    html = figures.table(frame, percent=["share"]).to_html()
    assert "&lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    assert "1,234,567" in html and "25.0%" in html
    assert html.count(">not reported<") == 3 and ">0<" not in html


def _css(html: str, selector_part: str) -> dict[str, str]:
    """Every CSS declaration of ``html``'s style sheet whose selector names ``selector_part``."""
    found: dict[str, str] = {}
    for selectors, body in re.findall(r"([^{}]+)\{([^}]*)\}", html.split("</style>")[0]):
        if any(sel.strip().endswith(selector_part) for sel in selectors.split(",")):
            found.update((k.strip(), v.strip()) for k, v in (d.split(":", 1) for d in body.split(";") if ":" in d))
    return found


def test_long_text_wraps_in_a_readable_column_and_text_headings_align_with_their_text() -> None:
    frame = pd.DataFrame({"title": ["a title " * 8, "short"], "id": ["x" * 60, "y"], "kind": ["k", "j"],
                          "cost_usd": [0.5, 0.25]})
    html = figures.table(frame).to_html()
    for n, name in enumerate(frame.columns):
        cell, heading = _css(html, f"_row0_col{n}"), _css(html, f"th.col_heading.col{n}")
        if name in ("title", "id"):  # longer than one line: they wrap, but never to a word a line
            assert cell.get("min-width") == "14em" and "white-space" not in cell, name
        else:
            assert cell["white-space"] == "nowrap" and "min-width" not in cell, name
        assert heading.get("text-align") == ("left" if name != "cost_usd" else None), name


def test_category_labels_read_as_text_not_tuples() -> None:
    assert figures.category("litany", "gpt-5-mini") == "litany · gpt-5-mini"
    assert figures.category("dispatch", None) == "dispatch · not reported"


def test_a_figure_leaves_as_a_png_with_its_alt_text() -> None:
    fig, ax = figures.figure(3, 2)
    ax.bar(["a"], [1])
    image = figures.image(fig, alt="One bar of height 1.")
    data, metadata = DisplayFormatter().format(image)
    png = data["image/png"]
    png = base64.b64decode(png) if isinstance(png, str) else png  # IPython hands it over as base64 text
    assert png.startswith(b"\x89PNG") and metadata["image/png"]["alt"] == "One bar of height 1."
    with pytest.raises(ValueError):
        figures.image(fig, alt=" ")



@contextlib.contextmanager
def drawn_texts() -> Iterator[list[tuple[str, bool]]]:
    """Every string the PNG renderer draws meanwhile, with whether it was drawn as mathtext."""
    seen: list[tuple[str, bool]] = []
    original = RendererAgg.draw_text

    def record(self: RendererAgg, gc: Any, x: float, y: float, s: str, prop: Any, angle: float,
               ismath: bool | str = False, mtext: Any = None) -> None:
        seen.append((s, bool(ismath)))
        original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RendererAgg, "draw_text", record)
        yield seen


# Titles, tool and model names as people write them: shell one-liners, prices, TeX, snake_case.
HOSTILE = ["grep '^$' vs sed 's/^$//'", "It costs $5 and $10", r"\frac{a}{b} $\alpha$", "run_$x$^2",
           "C:\\temp\\new_file", "gpt-5_mini^$", r"echo \$HOME $"]
label_text = st.text(st.sampled_from("ab $\\_^{}%#&~'/"), min_size=1, max_size=24).filter(lambda t: t.strip())


def _draw_everywhere(labels: list[str]) -> bytes:
    """Every kind of label a notebook draws from data, from ``labels``; the figure as PNG bytes."""
    fig, (ax, fixed) = figures.figure(8, 3, cols=2)
    bars = ax.barh(labels, range(1, len(labels) + 1))  # the labels as category tick labels
    figures.bar_labels(ax, bars, labels)
    ax.set_title(labels[0])
    ax.set_xlabel(labels[-1])
    ax.text(0.5, 0, labels[-1])
    ax.annotate(labels[0], (0.5, 0.5))
    ax.legend([bars], [labels[0]], title=labels[-1])
    fixed.barh(range(len(labels)), [10.0 ** (i + 1) for i in range(len(labels))])
    fixed.set_yticks(range(len(labels)), labels)  # the labels as given tick labels
    fixed.set_xscale("log")  # and matplotlib's own tick labels, 10^n
    fig.suptitle(labels[0])
    fig.legend([bars], [labels[-1]], loc="outside lower center")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _literal(labels: list[str], drawn: list[tuple[str, bool]]) -> bool:
    """Every label was drawn as written, and the only mathtext drawn is matplotlib's numbers."""
    maths = [s for s, math in drawn if math]
    return set(labels) <= {s for s, math in drawn if not math} and all(s.startswith(r"$\mathdefault{") for s in maths)


def test_labels_from_data_are_drawn_literally_never_as_mathtext() -> None:
    with drawn_texts() as drawn:
        png = _draw_everywhere(HOSTILE)
    assert png.startswith(b"\x89PNG")
    assert _literal(HOSTILE, drawn)
    assert any(s.startswith(r"$\mathdefault{10^{") for s, math in drawn if math)  # log ticks still read 10³


def test_ticks_made_while_drawing_are_literal_too() -> None:
    fig, ax = figures.figure(3, 2)
    ax.plot([0, 1], [0, 1])
    ax.xaxis.set_major_formatter(lambda v, _pos: f"${v:g} to ${v + 1:g}")  # prices as tick labels
    with drawn_texts() as drawn:
        figures.image(fig, alt="A line from 0 to 1.")
    assert "$0 to $1" in {s for s, _ in drawn} and not any(math for _, math in drawn)


@given(st.lists(label_text, min_size=1, max_size=4, unique=True))
def test_any_label_text_renders_as_itself(labels: list[str]) -> None:
    with drawn_texts() as drawn:
        assert _draw_everywhere(labels).startswith(b"\x89PNG")
    assert _literal(labels, drawn)


@pytest.mark.slow
def test_the_reports_are_written_when_titles_tools_and_models_hold_dollars(tmp_path: Path) -> None:
    """Conversations titled like shell one-liners and prices, a tool and a model named with ``$``,
    ``_``, ``^`` and a backslash: every notebook (titles in the growth panels, tools in the error bars,
    models in the token bars, an orphan per conversation) runs and the index is written."""
    for n, title in enumerate(["grep '^$' vs sed 's/^$//'", "It costs $5 and $10"]):
        doc = copy.deepcopy(REALISTIC)
        doc["id"] = f"01987561-cb00-7de6-8f3e-{n:012d}"
        doc["title"] = title
        doc["messages"][0]["modelParam"]["name"] = "gpt-$5$_mini^\\"
        doc["messages"][1]["outputs"][1]["functionToolCall"]["name"] = "get_$weather$"
        answer = doc["messages"][2]["inputs"][0]["functionToolOutput"]
        answer.update(name="get_$weather$", callID="call_$gone$" if n else answer["callID"])  # one orphan
        write(tmp_path / "data" / "conversations_v1" / "202508" / f"{doc['id']}_{n}.json", doc)
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, str(REPO / "notebooks" / "report.py"), "--data", str(tmp_path / "data"),
                           "--out", str(out)], capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 0, done.stderr[-3000:]
    stems = [p.stem for p in sorted((REPO / "notebooks").glob("*.ipynb"))]
    assert all((out / f"{stem}.html").is_file() for stem in stems)
    index = (out / "index.html").read_text(encoding="utf-8")
    assert all(f'href="{stem}.html"' in index for stem in stems)
    assert "It costs $5 and $10" in index  # the growth figure's alt text names the conversation
    assert sorted(p.name for p in (out / "figures").glob("04_conversation_growth-*.png"))
