"""Text from outside is rendered as text: function names from a hostile ELF and a
session name carrying markup, escape sequences, NUL, an RTL override and sheer length
appear verbatim in the page, and none of it becomes an element or runs."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from mcuprof.paths import default_elf
from mcuprof.symbols import SymbolTable
from tests.helpers import running_serve

from .conftest import ROOT, shot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

MARKUP = "<img src=x onerror=window.__pwned=1>"
SESSION_NAME = MARKUP + "\x1b[31m\u202eRTL\x00" + "W" * 150


def hostile_elf(tmp_path: Path) -> tuple[Path, list[str]]:
    """The sample ELF with long C function names overwritten in place (.strtab and the
    DWARF strings), same length, so nothing else (the .text CRC, the build ID) changes."""
    data = bytes(default_elf().read_bytes())
    evil = []
    for name, markup in (
        ("TIMER1_IRQHandler", "<b id=pw>\u202e</b>"),
        ("window_energy", "<i>\x1b\u202e</i>"),
        ("sensor_sample", "<u>\x1b\u202e</u>"),
    ):
        new = (markup.encode() + b"x" * len(name))[: len(name)]
        old = b"\0" + name.encode() + b"\0"
        assert old in data, name
        data = data.replace(old, b"\0" + new + b"\0")
        evil.append(name)
    path = tmp_path / "hostile.elf"
    path.write_bytes(data)
    # (The symbol reader already shows control characters as '?'; the markup stays.)
    names = [
        f.name for f in SymbolTable.from_elf(path).functions if f.name[:3] in ("<b ", "<i>", "<u>")
    ]
    assert len(names) == len(evil) and not set(evil) & {
        f.name for f in SymbolTable.from_elf(path).functions
    }
    return path, names


def _call(url: str, method: str, body: dict | None = None) -> dict:
    origin = url.split("/api/")[0]
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Origin": origin, "Content-Type": "application/json"},
        method=method,
    )
    with urllib.request.urlopen(request, timeout=30) as reply:
        return json.loads(reply.read())


def test_hostile_names_render_as_text(chromium, tmp_path) -> None:
    elf, evil = hostile_elf(tmp_path)
    data = tmp_path / "data"
    with running_serve(
        data, "--elf", str(elf), cwd=ROOT, ready=lambda s: s["connected"] is True
    ) as served:
        base = served.url.rstrip("/")
        _call(f"{base}/api/start", "POST")
        context = chromium.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto(served.url)
        page.get_by_role("tab", name="Functions").click()
        cells = page.locator("#functions-table tbody td.name")
        page.wait_for_function(
            "(evil) => [...document.querySelectorAll('#functions-table tbody td.name')]"
            ".some(td => evil.includes(td.textContent.trim()))",
            arg=evil,
            timeout=20_000,
        )
        shown = {t.strip() for t in cells.all_text_contents()}
        assert shown & set(evil)
        shot(page, "hostile-functions")
        _call(f"{base}/api/stop", "POST")
        sessions = _call(f"{base}/api/sessions", "GET")["sessions"]
        sid = sessions[0]["id"]
        renamed = _call(f"{base}/api/sessions/{sid}", "PATCH", {"name": SESSION_NAME})
        stored = renamed.get("session", renamed)["name"]
        page.get_by_role("tab", name="Sessions").click()
        row = page.locator("#sessions-mount td.name").first
        expect(row).to_contain_text(MARKUP)
        assert row.text_content() == stored  # every character, as text
        shot(page, "hostile-sessions")
        injected = page.evaluate(
            "() => ({pw: document.getElementById('pw') !== null,"
            " img: document.querySelectorAll("
            "'#sessions-mount img, #functions-table :is(b, i, u)').length,"
            " pwned: window.__pwned === 1})"
        )
        context.close()
    assert injected == {"pw": False, "img": 0, "pwned": False}
    assert dialogs == []
