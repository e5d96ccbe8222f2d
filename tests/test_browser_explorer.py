"""The explorer notebook in JupyterLab, driven in a real browser: run all, pick a conversation,
page to older messages and see them; search across conversations and open one at the message
found, filter by tool errors and by date, read with the controls in view, and see model-written
markup as text."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from browser import chromium
from murmur_home import T0, call, msg, record, text, tool
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

import murmur_analysis as ma
from murmur_analysis.algorithms.cursor import window
from murmur_analysis.ui.transcript_html import entry_text
from murmur_analysis.ui.widgets import conversation_options

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "build" / "screenshots"
pytestmark = pytest.mark.slow

PAGE_SIZE = 10  # the explorer notebook's page size
DAY = 86_400_000
MARCH = T0 + 73 * DAY  # 2026-03-15, a day no sample conversation is active on
NEEDLE = "zebra-crossing-42"
EVIL_TITLE = "<script>window.__pwned = 1</script> hostile title"
EVIL_TEXT = '<img src=x onerror="window.__pwned = 2"> and <b>not bold</b>'


def _hostile_home(home: Path) -> Path:
    """Two murmur conversations on 2026-03-15: one titled and answered with markup, one holding the needle."""
    record(home, "xss", "ctx", [msg("user", MARCH, text(EVIL_TITLE)), msg("assistant", MARCH + 10, text(EVIL_TEXT))])
    record(home, "haystack", "ctx", [
        msg("user", MARCH - 3_600_000, text("find it")),
        msg("assistant", MARCH - 3_599_000, call("call_1", "grep", {"pattern": "zebra"})),
        tool(MARCH - 3_598_000, "call_1", body=f"found {NEEDLE} in notes.txt"),
        *[msg("assistant", MARCH - 3_597_000 + n, text(f"more hay {n}"), n=n) for n in range(1, 13)],
    ])
    return home


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hostile_home(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, samples: Path, hostile: Path) -> Iterator[dict[str, str]]:
    """JupyterLab on a free loopback port with a token, serving copies of the explorer notebook (one
    per test, each with its own kernel) that load the samples and a hostile murmur home."""
    tmp_path = tmp_path_factory.mktemp("lab")
    root = tmp_path / "work"
    root.mkdir()
    copies = ("pages", "search")
    for name in copies:
        shutil.copy(REPO / "notebooks" / "00_explore.ipynb", root / f"explore_{name}.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "MPLBACKEND": "Agg",
           "MURMUR_ANALYSIS_DATA": os.pathsep.join([str(samples), str(hostile)])}
    env.pop("MURMUR_ANALYSIS_SESSIONS", None)
    env.pop("MURMUR_ANALYSIS_PRICES", None)
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None",
         "--LabApp.extension_manager=readonly", *(["--allow-root"] if os.geteuid() == 0 else [])],
        stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                assert server.poll() is None, (tmp_path / "lab.log").read_text()
                assert time.monotonic() < deadline, "JupyterLab did not start"
                time.sleep(0.5)
        yield {name: f"{base}/lab/tree/explore_{name}.ipynb?token={token}" for name in copies}
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_the_explorer_pages_to_older_messages_in_jupyterlab(lab: dict[str, str], samples: Path) -> None:
    corpus = ma.load(samples)
    source, cid = "litany", "20260422T090000Z-3f2a9c1e"
    handle = corpus.conversation(cid, source=source)
    first = handle.read_messages(None, PAGE_SIZE)
    assert first.next_cursor is not None
    start, end = window(first.total, first.next_cursor, PAGE_SIZE)
    newest_of_next = handle.entries[end - 1]
    expected = f"#{end} · "
    snippet = entry_text(newest_of_next).strip().splitlines()[0][:30]
    title = corpus.conversations.set_index(["source", "conversation_id"]).loc[(source, cid), "title"]

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(90_000)
        try:
            _drive(page, lab["pages"], str(title), first.total, start, end)
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer_failed.png"))
            raise
        shown = page.locator(".widget-html .murmur-message").first
        # The page's label and the page are two widgets the browser draws in turn: wait for the page.
        expect(shown).to_contain_text(expected, timeout=90_000)
        assert snippet in shown.inner_text()
        page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer.png"))


def _run_all(page: Any, url: str) -> None:
    """Open the notebook at ``url`` and run all its cells."""
    page.goto(url)
    page.wait_for_selector(".jp-Notebook")
    kernel_dialog = page.locator(".jp-Dialog button", has_text="Select")
    try:
        kernel_dialog.wait_for(timeout=5_000)
        kernel_dialog.click()
    except PlaywrightTimeout:
        pass  # the kernel started without asking
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached")
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def _options(select: Any) -> list[str]:
    # ipywidgets shows a label's spaces as no-break spaces
    return [(o.text_content() or "").replace("\xa0", " ") for o in select.locator("option").all()]


def _chosen(select: Any) -> str:
    """The label of the option ``select`` shows as chosen."""
    return str(select.evaluate("s => s.selectedIndex < 0 ? '' : s.options[s.selectedIndex].textContent")).replace(
        "\xa0", " ")


def _drive(page: Any, lab: str, title: str, total: int, start: int, end: int) -> None:
    _run_all(page, lab)
    picker = page.locator(".widget-dropdown", has_text="conversation").locator("select")
    picker.wait_for()
    options = _options(picker)
    picker.select_option(index=next(n for n, o in enumerate(options) if o.startswith(title + " — ")))
    page.get_by_text(f"messages {total - PAGE_SIZE + 1}–{total} of {total}").wait_for()
    page.locator("button", has_text="older").first.click()
    page.get_by_text(f"messages {start + 1}–{end} of {total}").wait_for()


def test_the_explorer_searches_filters_keeps_its_controls_in_view_and_shows_markup_as_text(
        lab: dict[str, str], samples: Path, hostile: Path) -> None:
    corpus = ma.load(samples, hostile)
    everything = conversation_options(corpus)
    with_errors = conversation_options(corpus, errors=True)
    in_march = conversation_options(corpus, since=date(2026, 3, 1), until=date(2026, 3, 31))
    assert len(everything) > len(with_errors) > 0 and {v for _, v in in_march} == {
        ("murmur", "xss/ctx"), ("murmur", "haystack/ctx")}
    needle_at = next(n for n, e in enumerate(corpus.conversation("haystack/ctx").entries) if NEEDLE in entry_text(e))

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(90_000)
        try:
            _run_all(page, lab["search"])
            explorer = page.locator(".murmur-explorer-controls").first
            explorer.wait_for()
            controls = page.locator(".murmur-explorer-controls")
            view = page.locator(".murmur-explorer-view").first
            picker = controls.locator(".widget-dropdown", has_text="conversation").locator("select")
            picker.wait_for()
            assert len(_options(picker)) == len(everything)
            assert page.evaluate("() => window.__pwned") is None  # no model-written script or handler ran
            assert any(o.startswith(EVIL_TITLE) for o in _options(picker))  # a title shows as written

            # Search every conversation: the needle is in one the explorer does not show first.
            assert not _chosen(picker).startswith("find it")
            search = controls.locator(".widget-text", has_text="search").locator("input")
            search.fill(NEEDLE)
            search.press("Enter")
            results = controls.locator(".widget-select select")
            results.locator("option").first.wait_for()
            assert [o.split(" — ")[0] for o in _options(results)] == ["find it"]
            results.locator("option").first.click()
            controls.get_by_text(f"messages {max(needle_at + 2 - PAGE_SIZE, 1)}–{needle_at + 1} of 15").wait_for()
            first = view.locator(".murmur-message").first
            expect(first).to_contain_text(f"#{needle_at + 1} · ", timeout=90_000)
            assert first.locator("mark", has_text=NEEDLE).count() == 1
            assert _chosen(picker).startswith("find it")
            page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer_found.png"))
            search.fill("")
            search.press("Enter")

            # Model-written markup in a message is text too.
            picker.select_option(index=next(n for n, o in enumerate(_options(picker)) if o.startswith(EVIL_TITLE)))
            view.get_by_text(EVIL_TEXT).wait_for()
            page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer_markup.png"))
            assert page.evaluate("() => window.__pwned") is None
            assert view.locator("img, b:text('not bold')").count() == 0

            # "has tool errors" narrows the list to the conversations with failed tool calls.
            controls.locator(".widget-checkbox", has_text="has tool errors").locator("input").check()
            controls.get_by_text(f"{len(with_errors)} of {len(everything)} conversations").wait_for()
            assert _options(picker) == [label for label, _ in with_errors]
            controls.locator(".widget-checkbox", has_text="has tool errors").locator("input").uncheck()
            controls.get_by_text(f"{len(everything)} of {len(everything)} conversations").wait_for()

            # The date filter keeps the conversations active between its days (UTC).
            dates = controls.locator(".widget-datepicker input")
            dates.nth(0).fill("2026-03-01")
            dates.nth(1).fill("2026-03-31")
            controls.get_by_text(f"{len(in_march)} of {len(everything)} conversations").wait_for()
            assert _options(picker) == [label for label, _ in in_march]
            dates.nth(0).fill("")
            dates.nth(1).fill("")
            controls.get_by_text(f"{len(everything)} of {len(everything)} conversations").wait_for()

            # Read a long page: the transcript scrolls in its pane, the controls stay in view.
            picker.select_option(index=0)
            controls.get_by_text("messages 19–28 of 28").wait_for()
            expect(view.locator(".murmur-message").first).to_contain_text("#28 · ", timeout=90_000)
            explorer.evaluate("c => c.scrollIntoView({block: 'start'})")
            pane = view.evaluate("v => ({height: v.clientHeight, range: v.scrollHeight - v.clientHeight})")
            assert pane["range"] > 200, pane  # the page is longer than its pane
            view.hover()
            page.mouse.wheel(0, pane["range"] // 2)
            page.wait_for_function("() => document.querySelector('.murmur-explorer-view').scrollTop > 100")
            box, window_height = explorer.bounding_box(), page.viewport_size["height"]
            assert box is not None and 0 <= box["y"] < window_height and box["y"] + box["height"] <= window_height
            page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer_search.png"))
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer_search_failed.png"))
            raise
