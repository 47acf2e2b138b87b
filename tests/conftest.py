"""Fixtures every test package may use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.helpers import CHROMIUM, CHROMIUM_ARGS


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    """Debian's Chromium through Playwright's sync API.

    Module scope on purpose: while a sync Playwright instance lives, its asyncio loop
    counts as running on the main thread, which breaks asyncio.run() and any other
    Playwright user in later test modules.
    """
    assert Path(CHROMIUM).exists(), "Chromium is missing: run `make sysdeps`"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
