"""Debian's Chromium driven by Playwright, offline: the browser is never downloaded."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run"]


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Debian's, which ``.ci/run`` installs)."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists() or shutil.which("chromium"), "Debian's chromium is missing: apt-get install chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
