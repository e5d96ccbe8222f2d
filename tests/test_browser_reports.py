"""Every HTML report opens in a real browser, 1280 pixels wide, with every figure loaded, no console
error, no request leaving the file, the headings of its notebook, no corpus repr echoed, every
cost heading in view and no page wider than the window; a screenshot of each is kept."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser import chromium

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
SCREENSHOTS = REPO / "build" / "screenshots"
WIDTH = 1280  # a laptop's window: every cost column must show there without scrolling

# Each table heading that names a cost, where it is, and the box it is clipped by (its scrolling output).
COST_HEADINGS = """() => Array.from(document.querySelectorAll('th')).filter(t => /cost/.test(t.textContent)).map(t => {
  const r = t.getBoundingClientRect();
  const box = t.closest('.jp-OutputArea-output').getBoundingClientRect();
  return {text: t.textContent.trim(), left: r.left, right: r.right, boxLeft: box.left, boxRight: box.right};
})"""

pytestmark = pytest.mark.slow


def _report_module() -> Any:
    spec = importlib.util.spec_from_file_location("report", REPO / "notebooks" / "report.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory, samples: Path) -> Path:
    out = tmp_path_factory.mktemp("report")
    index = _report_module().build([str(samples)], out, NOTEBOOKS)
    assert index == out / "index.html"
    return out


def _headings(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found += [m.group(1).strip() for m in re.finditer(r"^#{1,2} (.+)$", cell.source, re.MULTILINE)]
    return found


def _open(browser: Any, url: str, screenshot: Path) -> dict[str, Any]:
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    errors: list[str] = []
    outside: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(re.compile(r"^(?!file:|data:)"), lambda route: (outside.append(route.request.url), route.abort()))
    page.goto(url, wait_until="load")
    images = page.evaluate(
        "() => Array.from(document.images).map(i => ({src: i.src.slice(0, 60), alt: i.alt,"
        " complete: i.complete, width: i.naturalWidth}))"
    )
    text = page.inner_text("body")
    stderr = page.evaluate(
        "() => document.querySelectorAll('[data-mime-type=\"application/vnd.jupyter.stderr\"]').length"
    )
    costs = page.evaluate(COST_HEADINGS)
    page_width = page.evaluate("() => document.documentElement.scrollWidth")
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(screenshot), full_page=True)
    page.close()
    return {"errors": errors, "outside": outside, "images": images, "text": text, "stderr": stderr, "costs": costs,
            "page_width": page_width}


def test_every_report_shows_its_figures_and_headings(reports: Path) -> None:
    cost_pages: set[str] = set()
    with chromium() as browser:
        for notebook in NOTEBOOKS:
            html = reports / f"{notebook.stem}.html"
            seen = _open(browser, html.as_uri(), SCREENSHOTS / f"{notebook.stem}.png")
            assert seen["errors"] == [], notebook.name
            assert seen["outside"] == [], f"{notebook.name} fetches from the network"
            figures = sorted((reports / "figures").glob(f"{notebook.stem}-*.png"))
            assert len([i for i in seen["images"] if i["src"].startswith("data:image/png")]) == len(figures)
            for image in seen["images"]:
                assert image["complete"] and image["width"] > 0, (notebook.name, image["src"])
                assert image["alt"].strip() and "No description" not in image["alt"], (notebook.name, image["src"])
            for heading in _headings(notebook):
                assert heading.replace("**", "") in seen["text"], (notebook.name, heading)
            assert seen["stderr"] == 0 and "Traceback" not in seen["text"], f"{notebook.name} shows an error or warning"
            assert "<Corpus" not in seen["text"], f"{notebook.name} echoes the corpus repr"
            assert seen["page_width"] <= WIDTH, f"{notebook.name} is wider than the window"
            for cost in seen["costs"]:  # in the window and not scrolled out of its table's box
                assert 0 <= cost["boxLeft"] <= cost["left"] and cost["right"] <= min(cost["boxRight"], WIDTH), \
                    (notebook.name, cost)
            cost_pages.update([notebook.stem] if seen["costs"] else [])
        assert cost_pages >= {"00_explore", "01_token_usage_and_cost"}


def test_the_index_links_every_report_and_shows_every_figure(reports: Path) -> None:
    with chromium() as browser:
        seen = _open(browser, (reports / "index.html").as_uri(), SCREENSHOTS / "index.png")
    assert seen["errors"] == [] and seen["outside"] == []
    figures = list((reports / "figures").glob("*.png"))
    assert len(seen["images"]) == len(figures) >= 6
    assert all(i["complete"] and i["width"] > 0 and i["alt"].strip() for i in seen["images"])
    for notebook in NOTEBOOKS:
        assert _headings(notebook)[0] in seen["text"]
