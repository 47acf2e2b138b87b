"""The dashboard in a real Chromium against a real server on the simulated device."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from mcuprof.paths import default_elf
from mcuprof.symbols import SymbolTable

from .conftest import flame_settled, shot

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def names() -> list[str]:
    return sorted({f.name for f in SymbolTable.from_elf(default_elf()).functions})


TOTAL_CALLS = (
    "[...document.querySelectorAll('#functions-table tbody tr td:nth-child(3)')]"
    ".reduce((s, td) => s + Number(td.textContent.replace(/,/g, '')), 0)"
)


def flame_shows_names(page: Page, names: list[str], timeout: float = 5000) -> None:
    page.wait_for_function(
        """(names) => {
            const rects = (window.mcuprof.flame && window.mcuprof.flame.rects) || [];
            const shown = new Set(rects.map(r => r.text.replace(/…$/, '')));
            return names.some(n => shown.has(n) || shown.has(n.split('(')[0]));
        }""",
        arg=names,
        timeout=timeout,
    )


FLAME_GEOMETRY = """() => {
    const area = document.getElementById('flame-area');
    const box = area.getBoundingClientRect();
    const canvas = document.getElementById('flame-plot').getBoundingClientRect();
    const rects = window.mcuprof.flame.rects;
    return {area: area.clientHeight, canvas: canvas.height, top: canvas.top - box.top,
            row: window.mcuprof.flame.rowPx, rows: new Set(rects.map(r => r.y)).size,
            wide: rects.filter(r => r.w >= 60).length,
            unlabelled: rects.filter(r => r.w >= 60 && !r.text).map(r => r.name)};
}"""

TIMELINE_GEOMETRY = """() => {
    const area = document.getElementById('timeline-area');
    const canvas = document.getElementById('timeline-plot');
    const rects = window.mcuprof.timeline.rects();
    return {room: area.clientHeight, plot: canvas.clientHeight,
            row: window.mcuprof.timeline.rowPx(), boxes: rects.length,
            levels: new Set(rects.map(r => r.depth)).size,
            labelled: rects.filter(r => r.text).length};
}"""

TIMELINE_DRAWN = "() => window.mcuprof.timeline && window.mcuprof.timeline.rects().length > 0"


def assert_flame_fills_panel(page: Page) -> None:
    """Compact fixed rows (issue 24: at most 22 px, as speedscope) in a canvas that fills
    the panel; every frame 60 px wide or more has a label."""
    geo = page.evaluate(FLAME_GEOMETRY)
    assert 18 <= geo["row"] <= 22, geo  # labels stay readable, rows stay compact
    assert geo["canvas"] >= geo["area"] - 1, geo
    assert geo["wide"] > 0 and geo["unlabelled"] == [], geo


def test_start_watch_every_tab_stop_and_export(server, page, names, tmp_path) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready · Simulated device")
    expect(pg.locator("#device-kind")).to_have_text("Simulated device")
    expect(pg.locator("#build-badge")).to_have_text("ELF matches firmware")
    start = pg.get_by_role("button", name="Start", exact=True)
    stop = pg.get_by_role("button", name="Stop", exact=True)
    expect(stop).to_be_disabled()
    expect(pg.get_by_role("button", name="Reset buffers", exact=True)).to_be_enabled()
    expect(pg.get_by_role("button", name="Refresh status", exact=True)).to_be_enabled()
    shot(pg, "01-connected")

    start.click()
    flame_shows_names(pg, names)  # within 5 s of clicking Start
    expect(start).to_be_disabled()
    expect(stop).to_be_enabled()
    expect(pg.locator("#h-state")).to_have_text("profiling")
    pg.wait_for_timeout(1500)  # let the live view run a few updates for the screenshot
    shot(pg, "02-flame-live")
    assert_flame_fills_panel(pg)

    pg.get_by_role("tab", name="Timeline").click()
    pg.wait_for_function(TIMELINE_DRAWN)
    expect(pg.locator("#timeline-info")).to_contain_text("calls in view")
    shot(pg, "03-timeline")
    geo = pg.evaluate(TIMELINE_GEOMETRY)
    # The chart fills the panel with compact fixed rows (issue 24: as the flame graph's).
    assert geo["plot"] >= geo["room"] - 1, geo
    assert 18 <= geo["row"] <= 22, geo

    pg.get_by_role("tab", name="Functions").click()
    rows = pg.locator("#functions-table tbody tr")
    expect(rows.first).to_be_visible()
    first = rows.first.locator("td").first.inner_text()
    assert any(first.startswith(n.split("(")[0]) for n in names), first
    pg.locator("#functions-table th[data-key=calls]").click()
    expect(pg.locator("#functions-table th[data-key=calls]")).to_have_attribute(
        "aria-sort", "descending"
    )
    shot(pg, "04-functions")

    pg.get_by_role("tab", name="Call tree").click()
    tree_rows = pg.locator("#tree-table tbody tr")
    expect(tree_rows.first).to_be_visible()
    shot(pg, "05-calltree")
    pg.get_by_role("button", name="Collapse all").click()
    collapsed = tree_rows.count()
    tree_rows.first.click()  # expands the first root
    pg.wait_for_function(
        "(n) => document.querySelectorAll('#tree-table tbody tr').length > n", arg=collapsed
    )
    pg.get_by_role("button", name="Bottom-up (callers)").click()
    expect(pg.get_by_role("button", name="Bottom-up (callers)")).to_have_class("on")
    expect(tree_rows.first).to_be_visible()
    shot(pg, "05-calltree-bottom-up")

    pg.get_by_role("tab", name="Log").click()
    expect(pg.locator("#log-table tbody")).to_contain_text("profiling started")
    shot(pg, "06-log")

    pg.get_by_role("tab", name="Sessions").click()
    expect(pg.locator("#sessions-mount")).not_to_be_empty()
    expect(pg.locator("#sessions-mount")).not_to_contain_text("not available")
    # The capture being recorded is listed (the shot once caught the list still loading).
    expect(pg.locator("#sessions-table tbody tr")).to_have_count(1)
    # Every column, Export too, fits beside the details at 1440 px: no sideways scroll.
    fits = "(e => e.scrollWidth <= e.clientWidth)(document.querySelector('.sess-list'))"
    assert pg.evaluate(fits)
    shot(pg, "07-sessions")

    pg.get_by_role("tab", name="Compare").click()
    expect(pg.locator("#compare-mount")).not_to_be_empty()
    expect(pg.locator("#compare-mount")).not_to_contain_text("not available")
    # The only session is the capture being recorded: the tab says how to get a comparison.
    expect(pg.locator("#cmp-empty")).to_contain_text("Nothing to compare yet")
    expect(pg.locator("#cmp-base option").first).to_have_text(re.compile(r"^#\d+ \(recording\) "))
    shot(pg, "08-compare")

    pg.get_by_role("tab", name="Flame graph").click()
    stop.click()
    expect(pg.locator("#h-state")).to_have_text("ready")
    expect(start).to_be_enabled()
    expect(stop).to_be_disabled()

    version = json.loads(pg.evaluate("JSON.stringify(window.mcuprof.state.device)"))["fw_version"]
    files = {}
    for label, fmt in (("Flame graph SVG", "svg"), ("Folded stacks", "folded")):
        pg.get_by_role("button", name="Export").click()
        with pg.expect_download() as info:
            pg.get_by_role("menuitem", name=label).click()
        download = info.value
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        assert re.fullmatch(rf"mcuprof-{re.escape(version)}-\d{{8}}-\d{{6}}\.{fmt}", path.name), (
            path.name
        )
        files[fmt] = path.read_text()
    assert any(n in files["folded"] for n in names)
    assert "<svg" in files["svg"] and any(n in files["svg"] for n in names)
    pg.get_by_role("button", name="Export").click()
    with pg.expect_download() as info:
        pg.get_by_role("menuitem", name="Flame graph PNG").click()
    png = tmp_path / info.value.suggested_filename
    info.value.save_as(png)
    assert png.name.startswith(f"mcuprof-{version}-") and png.suffix == ".png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shot(pg, "09-stopped")

    # Now a stored session exists: Compare opens on it against the live capture, already run.
    pg.get_by_role("tab", name="Compare").click()
    expect(pg.locator("#cmp-functions tbody tr").first).to_be_visible()
    expect(pg.locator("#cmp-new")).to_have_value("live")
    sessions = json.loads(pg.evaluate("fetch('/api/sessions').then(r => r.text())"))["sessions"]
    expect(pg.locator("#cmp-base")).to_have_value(str(sessions[0]["id"]))
    expect(pg.locator("#cmp-empty")).to_have_count(0)
    shot(pg, "16-compare-auto")
    assert console.errors == []


def test_search_highlights_and_window_filters(server, page, names) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Start", exact=True).click()
    flame_shows_names(pg, names)
    pg.wait_for_timeout(1000)
    pg.get_by_role("button", name="Stop", exact=True).click()
    expect(pg.locator("#h-state")).to_have_text("ready")
    pg.get_by_label("Search functions").fill("filter")
    expect(pg.locator("#flame-matches")).to_contain_text("frames")
    shot(pg, "10-search")

    pg.get_by_role("tab", name="Functions").click()
    expect(pg.locator("#functions-table tbody tr").first).to_be_visible()
    calls_all = pg.evaluate(TOTAL_CALLS)
    t0, t1 = pg.evaluate("window.mcuprof.state.range")
    pg.evaluate("([a, b]) => window.mcuprof.setWindow([a, b])", [t0, t0 + (t1 - t0) / 50])
    expect(pg.locator("#window-chip")).to_be_visible()
    pg.wait_for_function(f"(all) => ({TOTAL_CALLS}) !== all", arg=calls_all)
    calls_filtered = pg.evaluate(TOTAL_CALLS)
    shot(pg, "11-window")
    pg.get_by_role("button", name="Clear time window").click()
    expect(pg.locator("#window-chip")).to_be_hidden()
    pg.wait_for_function(f"(all) => ({TOTAL_CALLS}) === all", arg=calls_all)
    assert 0 < calls_filtered < calls_all
    assert console.errors == []


def test_errors_show_in_the_page(server, page) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Disconnect", exact=True).click()
    expect(pg.locator("#conn-state")).to_contain_text("Disconnected")
    expect(pg.get_by_role("button", name="Start", exact=True)).to_be_disabled()
    pg.get_by_label("Port", exact=True).select_option("__tcp__")
    pg.get_by_label("TCP URL").fill("socket://127.0.0.1:1")
    pg.get_by_role("button", name="Connect", exact=True).click()
    banner = pg.get_by_role("alert")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("127.0.0.1:1")
    assert "Traceback" not in banner.inner_text()
    shot(pg, "12-connect-error")
    pg.get_by_label("TCP URL").fill("http://evil.example/")
    pg.get_by_role("button", name="Connect", exact=True).click()
    expect(banner).to_contain_text("not allowed")
    pg.get_by_label("Upload ELF").set_input_files(
        files=[{"name": "bad.elf", "mimeType": "application/octet-stream", "buffer": b"not an elf"}]
    )
    expect(banner).to_contain_text("bad.elf: not a readable ELF")
    shot(pg, "13-bad-elf")
    # The browser logs failed fetches (4xx) as console errors; nothing else may appear.
    assert all("status of 4" in e for e in console.errors), console.errors


def test_timeline_drag_selects_a_window_and_flame_click_zooms(server, page, names) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Start", exact=True).click()
    flame_shows_names(pg, names)
    pg.wait_for_timeout(1500)
    pg.get_by_role("button", name="Stop", exact=True).click()
    expect(pg.locator("#h-state")).to_have_text("ready")

    # Click zoom: the clicked frame spans the width, its ancestors stay drawn above it,
    # the path bar names them and Esc goes back.
    flame_settled(pg)
    target = pg.evaluate(
        "() => window.mcuprof.flame.rects.filter(r => r.y > 0 && r.w > 20 && r.w < 600)"
        ".sort((a, b) => b.y - a.y)[0]"
    )
    box = pg.locator("#flame-plot").bounding_box()
    assert box is not None
    pg.mouse.click(box["x"] + target["x"] + target["w"] / 2, box["y"] + target["y"] + 5)
    pg.wait_for_function("(i) => window.mcuprof.flame.focus === i", arg=target["i"], timeout=10_000)
    zoomed = pg.evaluate("(i) => window.mcuprof.flame.rects.find(r => r.i === i)", arg=target["i"])
    width = pg.evaluate("document.getElementById('flame-plot').clientWidth")
    assert zoomed["x"] == 0 and abs(zoomed["w"] - width) < 1
    ancestors = pg.evaluate(
        "(y) => window.mcuprof.flame.rects.filter(r => r.y < y)", arg=zoomed["y"]
    )
    row = pg.evaluate("window.mcuprof.flame.rowPx")
    assert len({a["y"] for a in ancestors}) == round(zoomed["y"] / row) >= 1
    expect(pg.locator("#flame-path")).to_be_visible()
    expect(pg.locator("#flame-path button[aria-current]")).to_have_count(1)
    shot(pg, "14-flame-zoomed")
    assert_flame_fills_panel(pg)
    pg.keyboard.press("Escape")
    pg.wait_for_function("() => window.mcuprof.flame.focus === 0", timeout=10_000)

    pg.get_by_role("tab", name="Timeline").click()
    pg.wait_for_function(TIMELINE_DRAWN)
    pg.get_by_role("button", name="Select range").click()
    box = pg.locator("#timeline-plot").bounding_box()
    assert box is not None
    y = box["y"] + box["height"] / 2
    pg.mouse.move(box["x"] + box["width"] * 0.3, y)
    pg.mouse.down()
    pg.mouse.move(box["x"] + box["width"] * 0.45, y, steps=8)
    pg.mouse.move(box["x"] + box["width"] * 0.6, y, steps=8)
    pg.mouse.up()
    expect(pg.locator("#window-chip")).to_be_visible()
    win = pg.evaluate("window.mcuprof.window")
    rng = pg.evaluate("window.mcuprof.state.range")
    assert rng[0] < win[0] < win[1] < rng[1]
    shot(pg, "15-timeline-selected")
    pg.get_by_role("tab", name="Call tree").click()
    expect(pg.locator("#tree-table tbody tr").first).to_be_visible()
    assert console.errors == []
