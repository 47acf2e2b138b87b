"""A real `mcuprof serve` on the simulated device, and Debian's Chromium via Playwright."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, expect

from tests.helpers import running_serve

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
FLAME_READY = "() => window.mcuprof.flame && window.mcuprof.flame.rects.length > 3"


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    data = tmp_path / "data"
    with running_serve(data, cwd=ROOT, ready=lambda state: state["connected"] is True) as served:
        yield Server(served.url, served.process, data)


@dataclass
class Console:
    errors: list[str] = field(default_factory=list)

    def on_message(self, msg: ConsoleMessage) -> None:
        if msg.type == "error":
            url = (msg.location or {}).get("url")  # which request failed, for the report
            self.errors.append(f"{msg.text} [{url}]" if url else msg.text)


@pytest.fixture
def page(chromium: Browser, tmp_path: Path) -> Iterator[tuple[Page, Console]]:
    # Dark, as the screenshots were before the light theme (Playwright defaults to light).
    context = chromium.new_context(
        viewport={"width": 1440, "height": 900}, accept_downloads=True, color_scheme="dark"
    )
    pg = context.new_page()
    console = Console()
    pg.on("console", console.on_message)
    pg.on("pageerror", lambda exc: console.errors.append(f"page error: {exc}"))
    yield pg, console
    context.close()


def shot(page: Page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def capture(pg: Page, ms: int) -> None:
    """Start on the page's device, let ``ms`` of profile arrive, Stop."""
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Start", exact=True).click()
    pg.wait_for_function(FLAME_READY, timeout=10_000)
    pg.wait_for_timeout(ms)
    pg.get_by_role("button", name="Stop", exact=True).click()
    expect(pg.locator("#h-state")).to_have_text("ready")


def flame_settled(pg: Page, looks_ms: int = 300) -> None:
    """Wait until two looks at the flame graph ``looks_ms`` apart agree. After Stop the
    in-flight records arrive and redraw it: a click aimed from an earlier look may land
    on another frame (a CI try once zoomed into the wrong one)."""
    rects = "() => JSON.stringify(window.mcuprof.flame.rects.map(r => [r.i, r.x, r.y, r.w]))"
    last = None
    for _ in range(60):
        now = pg.evaluate(rects)
        if now == last:
            return
        last = now
        pg.wait_for_timeout(looks_ms)
    raise AssertionError("the flame graph kept changing after Stop")
