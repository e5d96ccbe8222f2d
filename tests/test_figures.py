"""Tables show nulls as "not reported" and transcript strings as text; figures carry alt text."""

from __future__ import annotations

import base64

import pandas as pd
import pyarrow as pa
import pytest
from IPython.core.formatters import DisplayFormatter

from murmur_analysis import figures


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
