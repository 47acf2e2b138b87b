"""A real `mcuprof serve` on the simulated device, and Debian's Chromium via Playwright."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    port = free_port()
    data = tmp_path / "data"
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcuprof",
            "serve",
            "--http-port",
            str(port),
            "--data-dir",
            str(data),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "api/state", timeout=2) as r:
                if b'"connected":true' in r.read():
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError((tmp_path / "serve.log").read_text())
        time.sleep(0.1)
    try:
        yield Server(url, proc, data)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@dataclass
class Console:
    errors: list[str] = field(default_factory=list)

    def on_message(self, msg: ConsoleMessage) -> None:
        if msg.type == "error":
            self.errors.append(msg.text)


@pytest.fixture
def page(chromium: Browser, tmp_path: Path) -> Iterator[tuple[Page, Console]]:
    context = chromium.new_context(viewport={"width": 1440, "height": 900}, accept_downloads=True)
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
