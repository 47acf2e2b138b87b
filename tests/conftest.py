"""Fixtures every test package may use."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from playwright.sync_api import Browser, expect, sync_playwright

from tests.helpers import CHROMIUM, CHROMIUM_ARGS, built_once

ROOT = Path(__file__).resolve().parents[1]

# Tests time nothing (bench/ does): no per-example deadline, which a busy machine (four
# workers, a Chromium) trips on an example that takes 0.2 ms when rerun.
settings.register_profile("mcuprof", deadline=None)
settings.load_profile("mcuprof")
# Nor are pages timed: an assertion on what a page shows waits up to 15 s, not
# Playwright's 5 s, which a loaded CI host once ran out on a 250 ms debounce.
expect.set_options(timeout=15_000)


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


def _make_firmware(build_dir: Path) -> None:
    done = subprocess.run(
        ["make", "-C", str(ROOT / "firmware"), f"BUILD_DIR={build_dir}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"firmware build failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="session")
def firmware_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both demo firmwares (mcuprof-demo.elf, mcuprof-qsdemo.elf) built from source with
    `make -C firmware`, once per run (needs arm-none-eabi-gcc: a missing cross compiler
    fails here, it is never skipped)."""
    return built_once(tmp_path_factory, "firmware-build", _make_firmware)
