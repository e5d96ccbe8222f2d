"""The explorer notebook in JupyterLab, driven in a real browser: run all, pick a conversation,
page to older messages and see them."""

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
from pathlib import Path
from typing import Any

import pytest
from browser import chromium
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import murmur_analysis as ma
from murmur_analysis.cursor import window
from murmur_analysis.transcript_html import entry_text

REPO = Path(__file__).resolve().parent.parent
SCREENSHOTS = REPO / "build" / "screenshots"
pytestmark = pytest.mark.slow

PAGE_SIZE = 10  # the explorer notebook's page size


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[str]:
    """JupyterLab on a free loopback port with a token, serving a copy of the explorer notebook."""
    root = tmp_path / "work"
    root.mkdir()
    shutil.copy(REPO / "notebooks" / "00_explore.ipynb", root / "00_explore.ipynb")
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "MPLBACKEND": "Agg"}
    env.pop("MURMUR_ANALYSIS_DATA", None)
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
        yield f"{base}/lab/tree/00_explore.ipynb?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_the_explorer_pages_to_older_messages_in_jupyterlab(lab: str, samples: Path) -> None:
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
            _drive(page, lab, str(title), first.total, start, end)
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer_failed.png"))
            raise
        shown = page.locator(".widget-html .murmur-message").first
        assert expected in shown.inner_text()
        assert snippet in shown.inner_text()
        page.screenshot(path=str(SCREENSHOTS / "jupyterlab_explorer.png"))


def _drive(page: Any, lab: str, title: str, total: int, start: int, end: int) -> None:
    page.goto(lab)
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
    picker = page.locator(".widget-dropdown", has_text="conversation").locator("select")
    picker.wait_for()
    # ipywidgets shows a label's spaces as no-break spaces
    options = [(o.text_content() or "").replace("\xa0", " ") for o in picker.locator("option").all()]
    picker.select_option(index=next(n for n, o in enumerate(options) if o.startswith(title + " — ")))
    page.get_by_text(f"messages {total - PAGE_SIZE + 1}–{total} of {total}").wait_for()
    page.locator("button", has_text="older").first.click()
    page.get_by_text(f"messages {start + 1}–{end} of {total}").wait_for()
