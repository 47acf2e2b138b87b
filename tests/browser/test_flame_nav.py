"""Issue 34 item 2 in a real Chromium: the flame graph is moved around as in speedscope
(wheel, drag, keys, minimap), its axis and minimap follow the view, the detail panel
names the frame, Enter on a search match zooms to it; the sandwich's table has shares,
bars and "[unknown]"."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.helpers import running_serve

from .conftest import ROOT, Server, capture, flame_settled

pytestmark = pytest.mark.browser

VIEW = "() => { const f = window.mcuprof.flame; return [f.vx0, f.vx1, f.focusId]; }"
TICKS = "() => document.getElementById('flame-axis').dataset.ticks"
# The labels and where the first of them is: a pan shorter than a tick step moves them
# without changing what they read.
AXIS = (
    "() => { const d = document.getElementById('flame-axis').dataset; return [d.ticks, d.first]; }"
)
REGION = "() => window.mcuprof.flameNav.minimap.region"


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _moved(pg: Page, before: list) -> list:
    """The view once a redraw has shown a change from ``before``."""
    pg.wait_for_function(f"(b) => JSON.stringify(({VIEW})()) !== JSON.stringify(b)", arg=before)
    pg.wait_for_function("() => new Promise(r => requestAnimationFrame(() => r(true)))")
    return pg.evaluate(VIEW)


def _span(view: list) -> float:
    return view[1] - view[0]


def test_wheel_keys_drag_minimap_detail_and_search_zoom(server, page) -> None:
    pg, console = page
    pg.goto(server.url)
    capture(pg, 1500)
    flame_settled(pg)
    box = pg.locator("#flame-plot").bounding_box()
    start = pg.evaluate(VIEW)
    assert start == [0, 1, None]
    ticks0 = pg.evaluate(TICKS)
    assert ticks0.startswith("0 ms|"), ticks0
    region0 = pg.evaluate(REGION)
    assert region0["x"] == 0 and region0["w"] == pytest.approx(box["width"], abs=1)

    # Ctrl+wheel (a pinch is the same event) zooms in at the pointer: the point under
    # it stays, so a zoom at 3/4 of the width moves the view's left edge right.
    pg.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + 30)
    pg.keyboard.down("Control")
    pg.mouse.wheel(0, -200)
    pg.keyboard.up("Control")
    zoomed = _moved(pg, start)
    assert _span(zoomed) < 0.5 and zoomed[0] > 0.2, zoomed
    assert (zoomed[0] + 0.75 * _span(zoomed)) == pytest.approx(0.75, abs=1e-6)
    ticks1 = pg.evaluate(TICKS)
    assert ticks1 != ticks0 and not ticks1.startswith("0 ms|"), ticks1
    region1 = pg.evaluate(REGION)
    assert region1["w"] < region0["w"] / 2 and region1["x"] > 0.2 * box["width"], region1

    # A sideways wheel, and Shift with a vertical one, pan: the axis and the region move.
    axis1 = pg.evaluate(AXIS)
    pg.mouse.wheel(-150, 0)
    panned = _moved(pg, zoomed)
    assert panned[0] < zoomed[0] and _span(panned) == pytest.approx(_span(zoomed))
    assert pg.evaluate(AXIS) != axis1
    assert pg.evaluate(REGION)["x"] < region1["x"]
    pg.keyboard.down("Shift")
    pg.mouse.wheel(0, 100)
    pg.keyboard.up("Shift")
    back = _moved(pg, panned)
    assert back[0] > panned[0]

    # Keys when the graph has focus: W zooms in, S out, D and arrows pan, 0 resets.
    pg.locator("#flame-area").focus()
    before = pg.evaluate(VIEW)
    pg.keyboard.press("w")
    after_w = _moved(pg, before)
    assert _span(after_w) == pytest.approx(_span(before) / 1.5)
    pg.keyboard.press("+")
    after_plus = _moved(pg, after_w)
    assert _span(after_plus) < _span(after_w)
    pg.keyboard.press("d")
    after_d = _moved(pg, after_plus)
    assert after_d[0] > after_plus[0]
    pg.keyboard.press("ArrowLeft")
    after_left = _moved(pg, after_d)
    assert after_left[0] < after_d[0]
    pg.keyboard.press("s")
    after_s = _moved(pg, after_left)
    assert _span(after_s) > _span(after_left)
    ticks_keys = pg.evaluate(TICKS)
    pg.keyboard.press("0")
    assert _moved(pg, after_s) == [0, 1, None]
    assert pg.evaluate(TICKS) == ticks0 != ticks_keys
    assert pg.evaluate(REGION) == region0

    # Typing in the search box does not move the view.
    search = pg.get_by_label("Search functions")
    search.fill("")
    search.press("w")
    search.press("0")
    assert pg.evaluate(VIEW) == [0, 1, None]
    search.fill("")

    # Drag pans (and is no click: nothing is zoomed into).
    pg.locator("#flame-area").focus()
    pg.keyboard.press("w")
    pg.keyboard.press("w")
    zoomed = _moved(pg, [0, 1, None])
    y = box["y"] + 10
    pg.mouse.move(box["x"] + 600, y)
    pg.mouse.down()
    pg.mouse.move(box["x"] + 500, y, steps=5)
    pg.mouse.move(box["x"] + 400, y, steps=5)
    pg.mouse.up()
    dragged = _moved(pg, zoomed)
    assert dragged[0] > zoomed[0] and dragged[2] is None, dragged
    assert dragged[0] - zoomed[0] == pytest.approx(200 / box["width"] * _span(zoomed), rel=0.05)

    # The minimap: drag the visible region to the left end; the view follows.
    mm = pg.locator("#flame-minimap").bounding_box()
    reg = pg.evaluate(REGION)
    cx = mm["x"] + reg["x"] + reg["w"] / 2
    cy = mm["y"] + reg["y"] + reg["h"] / 2
    pg.mouse.move(cx, cy)
    pg.mouse.down()
    pg.mouse.move(cx - 150, cy, steps=4)
    pg.mouse.move(mm["x"] + 1, cy, steps=4)
    pg.mouse.up()
    moved = _moved(pg, dragged)
    assert moved[0] == 0 and _span(moved) == pytest.approx(_span(dragged)), moved
    assert pg.evaluate(REGION)["x"] == pytest.approx(0, abs=0.5)
    assert pg.evaluate(TICKS).startswith("0 ms|")

    # The detail panel: the frame under the pointer, this instance and all of them,
    # and the function's per-call timings once the pointer rests.
    pg.keyboard.press("0")
    flame_settled(pg, 100)
    rect = pg.evaluate(
        "() => window.mcuprof.flame.rects.filter(r => r.fid >= 0 && r.text)"
        ".sort((a, b) => b.w - a.w)[0]"
    )
    pg.mouse.move(box["x"] + rect["x"] + rect["w"] / 2, box["y"] + rect["y"] + rect["h"] / 2)
    panel = pg.locator("#flame-detail")
    expect(panel.locator(".fd-name")).to_contain_text(rect["text"])
    expect(panel.locator("[data-part=instance]")).to_contain_text("calls")
    expect(panel.locator("[data-part=function]")).to_contain_text("of the function")
    expect(panel.locator("[data-part=timing]")).to_contain_text("p99", timeout=5000)
    fns = {f["fid"]: f for f in _get(f"{server.url}api/functions")["functions"]}
    p50 = pg.evaluate(
        f"fetch('/api/distribution?fid={rect['fid']}').then(r => r.json()).then(d => d.p50_us)"
    )
    assert fns[rect["fid"]]["p50_us"] == pytest.approx(p50)

    # Enter on a search match zooms to it: the match fills the width, its ancestors above;
    # Esc comes back to the view before it.
    pg.locator("#flame-area").focus()
    pg.keyboard.press("s")  # already whole: no change
    pg.keyboard.press("w")
    before_search = _moved(pg, [0, 1, None])
    search.fill("filter")
    search.press("Enter")
    expect(pg.locator("#flame-matches")).to_contain_text("match 1 of ")
    current = pg.evaluate(
        """() => { const f = window.mcuprof.flame;
            const r = f.rects.find(x => x.i === f.currentI);
            return {name: f.data.names[f.currentI], focus: f.focus, i: f.currentI,
                    x: r.x, w: r.w, width: f.canvas.clientWidth}; }"""
    )
    assert current["focus"] == current["i"] and "filter" in current["name"], current
    assert current["x"] == 0 and current["w"] == pytest.approx(current["width"], abs=1)
    expect(pg.locator("#flame-path")).to_be_visible()
    expect(pg.locator("#flame-path button[aria-current]")).to_have_attribute(
        "title", current["name"]
    )
    pg.mouse.move(box["x"] + 2, box["y"] + box["height"] - 2)  # off the frames
    expect(panel.locator(".fd-name")).to_contain_text(current["name"])
    search.press("Escape")
    assert pg.evaluate(VIEW) == before_search  # Esc steps back at once
    total = int(re.search(r"match 1 of (\d+)", pg.inner_text("#flame-matches")).group(1))
    if total > 1:
        search.press("Enter")
        expect(pg.locator("#flame-matches")).to_contain_text(f"match 2 of {total}")
        assert pg.evaluate("() => window.mcuprof.flame.focus") == pg.evaluate(
            "() => window.mcuprof.flame.currentI"
        )
    assert console.errors == []


@pytest.fixture
def orphans(tmp_path: Path) -> Iterator[Server]:
    """The simulated firmware with an instrumented main that never returns: every stack
    lacks its root, so the time sits under "[unknown]"."""
    data = tmp_path / "data"
    with running_serve(
        data, "--port", "sim://?main=1", cwd=ROOT, ready=lambda state: state["connected"]
    ) as served:
        yield Server(served.url, served.process, data)


def test_sandwich_table_has_shares_bars_and_unknown(orphans, page) -> None:
    server = orphans
    pg, console = page
    pg.goto(server.url)
    capture(pg, 1500)
    pg.get_by_role("button", name="Sandwich").click()
    expect(pg.locator("#sw-table tbody tr").first).to_be_visible()
    out = _get(f"{server.url}api/functions")
    fns = out["functions"]
    assert out["unknown_us"] > 0
    # the width of the flame graph's "[unknown]" frame
    flame = _get(f"{server.url}api/flame")
    k = flame["name"].index(flame["names"].index("[unknown]"))
    assert flame["total"][k] / flame["units_per_us"] == pytest.approx(out["unknown_us"])
    rows = pg.locator("#sw-table tbody tr")
    expect(rows).to_have_count(len(fns) + 1)
    unknown = pg.locator("#sw-table tr[data-fid='-1']")
    expect(unknown.locator("td.name")).to_have_text("[unknown]")
    pct = 100 * out["unknown_us"] / out["profiled_us"]
    expect(unknown.locator("td.bar-cell").first.locator(".p")).to_have_text(_pct(pct))
    top = max(fns, key=lambda f: f["total_us"])
    row = pg.locator(f"#sw-table tr[data-fid='{top['fid']}']")
    total_cell, self_cell = row.locator("td.bar-cell").all()
    assert total_cell.locator(".p").inner_text() == _pct(top["pct"])
    assert self_cell.locator(".p").inner_text() == _pct(top["self_pct"])
    # The bar is as long as the share, in its cell.
    bar = total_cell.locator(".bar").bounding_box()
    cell = total_cell.bounding_box()
    assert bar["width"] == pytest.approx(cell["width"] * top["pct"] / 100, abs=2)

    # The halves share the height, each with its axis; the handle moves the split.
    row.click()
    expect(pg.locator("#sw-name")).to_have_text(top["label"])
    halves = (
        "() => ['sw-callers-half', 'sw-callees-half']"
        ".map(id => document.getElementById(id).clientHeight)"
    )
    a, b = pg.evaluate(halves)
    assert abs(a - b) <= 2, (a, b)
    for axis in ("#sw-callers-axis", "#sw-callees-axis"):
        pg.wait_for_function(
            f"() => document.querySelector('{axis}').dataset.ticks?.startsWith('0%|')"
        )
    handle = pg.locator("#sw-split").bounding_box()
    x = handle["x"] + handle["width"] / 2
    pg.mouse.move(x, handle["y"] + 3)
    pg.mouse.down()
    pg.mouse.move(x, handle["y"] + 120, steps=5)
    pg.mouse.up()
    a2, b2 = pg.evaluate(halves)
    assert a2 > a + 100 and b2 < b - 100, (a2, b2)
    assert console.errors == []


def _pct(p: float) -> str:
    """The page's fmtPct."""
    return f"{p:.{0 if p >= 99.95 else 1 if p >= 9.995 else 2}f}%"
