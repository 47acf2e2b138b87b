"""Issue 24 point 6 in a real Chromium, one page for the module: at 1024x768 the page
does not scroll sideways in either theme, the tabs and Connect/Disconnect each keep one
row, no health value is cut, and the timeline follows the theme (overview mask, fixed
compact rows, the axis's last label inside the canvas)."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.helpers import running_serve

from .conftest import ROOT, capture

pytestmark = pytest.mark.browser

GEOMETRY = """() => {
    const top = (e) => Math.round(e.getBoundingClientRect().top);
    const tabs = [...document.querySelectorAll('[role=tab]')].map(top);
    const cut = [...document.querySelectorAll('.sidebar dd')]
        .filter(e => e.offsetParent && e.scrollWidth > e.clientWidth + 1).map(e => e.id);
    return {scroll: document.documentElement.scrollWidth, width: innerWidth,
            tabRows: new Set(tabs).size, tabTop: tabs[0],
            exportTop: top(document.getElementById('export-button')),
            connect: top(document.getElementById('connect')),
            disconnect: top(document.getElementById('disconnect')),
            port: top(document.getElementById('port-select')), cut};
}"""

# The overview's top-left pixel (above the frames, left of the zoomed-in range): the mask.
MASK_PIXEL = """() => {
    const c = document.getElementById('timeline-overview');
    const d = c.getContext('2d').getImageData(2, 0, 1, 1).data;
    return [d[0], d[1], d[2]];
}"""

AXIS_END = """() => {
    const c = document.getElementById('timeline-plot');
    const g = c.getContext('2d');
    const w = c.width, h = Math.round(24 * (window.devicePixelRatio || 1));
    // The axis strip's rightmost 3 px columns hold no label text (only background).
    const d = g.getImageData(w - 3, 0, 3, h).data;
    const first = [d[0], d[1], d[2]];
    let other = 0;
    for (let i = 0; i < d.length; i += 4) {
        const diff = [0, 1, 2].reduce((s, k) => s + Math.abs(d[i + k] - first[k]), 0);
        if (diff > 150) other++;  // text, not the tick line
    }
    return other;
}"""


@pytest.fixture(scope="module")
def live_page(chromium: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    data = tmp_path_factory.mktemp("layout") / "data"
    with running_serve(data, cwd=ROOT, ready=lambda state: state["connected"] is True) as served:
        context = chromium.new_context(viewport={"width": 1024, "height": 768}, color_scheme="dark")
        pg = context.new_page()
        pg.goto(served.url)
        capture(pg, 1200)
        yield pg
        context.close()


def _theme(pg: Page, theme: str) -> None:
    if pg.evaluate("document.documentElement.dataset.theme") != theme:
        pg.locator("#theme-toggle").click()
    expect(pg.locator("html")).to_have_attribute("data-theme", theme)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_1024_has_no_sideways_scroll_and_one_row_bars(live_page: Page, theme: str) -> None:
    pg = live_page
    _theme(pg, theme)
    for tab in ("Flame graph", "Timeline", "Compare", "Sessions", "QS"):
        pg.get_by_role("tab", name=tab).click()
        geo = pg.evaluate(GEOMETRY)
        assert geo["scroll"] <= geo["width"], (tab, geo)
        assert geo["tabRows"] == 1 and abs(geo["exportTop"] - geo["tabTop"]) < 12, (tab, geo)
        # Connect and Disconnect sit on the connection bar's one row.
        assert geo["connect"] == geo["disconnect"] and abs(geo["connect"] - geo["port"]) < 12, geo
        assert geo["cut"] == [], geo  # e.g. "91.6% of 2.09 s" in the health panel


def test_timeline_follows_the_theme_with_compact_rows(live_page: Page) -> None:
    pg = live_page
    masks = {}
    for theme in ("dark", "light"):
        _theme(pg, theme)
        pg.get_by_role("tab", name="Timeline").click()
        pg.wait_for_function("() => window.mcuprof.timeline.rects().length > 0")
        pg.locator("#timeline-area").hover()
        for _ in range(3):
            pg.keyboard.press("w")  # zoom in: the overview masks both sides
        pg.wait_for_timeout(200)
        masks[theme] = pg.evaluate(MASK_PIXEL)
        assert pg.evaluate("window.mcuprof.timeline.rowPx()") <= 22
        for step in range(6):  # views whose last tick falls near the right edge
            pg.keyboard.press("s" if step % 2 else "d")
            pg.wait_for_timeout(120)
            assert pg.evaluate(AXIS_END) == 0, (theme, step)  # no label cut at the edge
        pg.locator("#timeline-fit").click()
    # Dark mask over the dark strip; in the light theme a light one, not the dark one.
    assert sum(masks["dark"]) < 150, masks
    assert sum(masks["light"]) > 500, masks


def test_speedscope_keys_pick_the_flame_mode_and_search(live_page: Page) -> None:
    """As in speedscope: 1/2/3 pick top-down, bottom-up, sandwich; "/" focuses search."""
    pg = live_page
    pg.get_by_role("tab", name="Flame graph").click()
    pg.locator("#flame-area").click(position={"x": 5, "y": 200})  # focus off the inputs
    for key, mode in (("2", "bottom-up"), ("3", "sandwich"), ("1", "top-down")):
        pg.keyboard.press(key)
        expect(pg.locator(f"[data-flame={mode}]")).to_have_attribute("aria-pressed", "true")
    pg.keyboard.press("/")
    expect(pg.locator("#flame-search")).to_be_focused()
    pg.keyboard.type("2")  # typed into the search box, not taken as a mode key
    expect(pg.locator("[data-flame=top-down]")).to_have_attribute("aria-pressed", "true")
    expect(pg.locator("#flame-search")).to_have_value("2")
    pg.locator("#flame-search").fill("")


PLOT_BG = """() => {
    const svg = document.querySelector('#s12z-timeline .main-svg');
    return svg ? getComputedStyle(svg).backgroundColor : null;
}"""


def test_charts_follow_the_theme_and_the_sandwich_table_fits(live_page: Page) -> None:
    """Plotly charts (S12Z, QS) take the theme's colours, also when it is toggled; at
    1024 px the sandwich table shows its Total column whole."""
    pg = live_page
    base = pg.url.split("#")[0]
    trace = (ROOT / "sample_elfs" / "s12z-demo.trace").read_bytes()
    post = urllib.request.Request(f"{base}api/s12z/import?name=t", data=trace, method="POST")
    urllib.request.urlopen(post, timeout=30).read()
    _theme(pg, "dark")
    pg.get_by_role("tab", name="S12Z").click()
    pg.wait_for_function(f"() => ({PLOT_BG})() !== null", timeout=15_000)
    dark = pg.evaluate(PLOT_BG)
    _theme(pg, "light")
    pg.wait_for_function(f"() => ({PLOT_BG})() !== {dark!r}", timeout=5_000)
    light = pg.evaluate(PLOT_BG)
    # --panel-2 of each theme (#1c2129 dark, #eef1f5 light), as the cards around them.
    assert (dark, light) == ("rgb(28, 33, 41)", "rgb(238, 241, 245)")
    pg.get_by_role("tab", name="Flame graph").click()
    pg.keyboard.press("3")
    pg.locator("#sw-table tbody tr").first.click()
    total = pg.locator("#sw-table th").last.bounding_box()
    wrap = pg.locator("#sw-table-wrap").bounding_box()
    assert total and wrap and total["x"] + total["width"] <= wrap["x"] + wrap["width"] + 1
    pg.keyboard.press("1")


SW_COLUMN = """(i) => [...document.querySelectorAll('#sw-table tbody tr')]
    .map(tr => tr.children[i].textContent)"""


def test_sandwich_table_sorts_by_each_column(live_page: Page) -> None:
    """As speedscope's sandwich table: a header sorts by it, again the other way; Calls
    is a column."""
    pg = live_page
    pg.get_by_role("tab", name="Flame graph").click()
    pg.locator("[data-flame=sandwich]").click()
    expect(pg.locator("#sw-table tbody tr").first).to_be_visible()
    head = pg.locator("#sw-table th")
    expect(head).to_have_text(["Function", "Total", "Self", "Calls"])  # as speedscope
    calls = head.nth(3)
    calls.click()
    expect(calls).to_have_attribute("aria-sort", "descending")
    # "[unknown]" (no function, no calls: "—") sorts as none
    counts = [int(c.replace(",", "")) for c in pg.evaluate(SW_COLUMN, 3) if c != "—"]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1], counts
    head.first.click()
    names = pg.evaluate(SW_COLUMN, 0)
    assert names == sorted(names, key=str.lower) or names == sorted(names), names
    head.first.click()
    expect(head.first).to_have_attribute("aria-sort", "descending")
    assert pg.evaluate(SW_COLUMN, 0) == names[::-1]
    pg.locator("[data-flame=top-down]").click()


def test_tables_do_not_spread_over_a_2560_px_screen(live_page: Page) -> None:
    pg = live_page
    pg.set_viewport_size({"width": 2560, "height": 1440})
    try:
        pg.get_by_role("tab", name="Functions").click()
        expect(pg.locator("#functions-table tbody tr").first).to_be_visible()
        box = pg.locator("#functions-table").bounding_box()
        assert box and box["width"] <= 1700, box
    finally:
        pg.set_viewport_size({"width": 1024, "height": 768})


TABS = """() => { const l = document.getElementById('tabs');
    const tabs = [...l.querySelectorAll('[role=tab]')];
    return {fits: l.scrollWidth <= l.clientWidth + 1, all: tabs.map(t => t.dataset.view),
            shown: tabs.filter(t => !t.hidden).map(t => t.dataset.view)}; }"""


def test_below_1024_the_tabs_that_do_not_fit_go_into_more(live_page: Page) -> None:
    """Point 6: one row of tabs down to 1024 px, an overflow menu below that; every view
    stays one click away and the selected tab stays on the bar."""
    pg = live_page
    expect(pg.locator("#tab-more")).to_be_hidden()  # at 1024 every tab fits
    pg.set_viewport_size({"width": 800, "height": 700})
    try:
        pg.get_by_role("tab", name="Flame graph").click()
        more = pg.locator("#tab-more")
        expect(more).to_be_visible()
        tabs = pg.evaluate(TABS)
        assert tabs["fits"], tabs  # the bar no longer scrolls sideways
        more.click()
        items = pg.locator("#tab-more-list [role=menuitem]")
        moved = items.evaluate_all("(bs) => bs.map(b => b.dataset.view)")
        assert moved and sorted(tabs["shown"] + moved) == sorted(tabs["all"]), (tabs, moved)
        items.last.click()
        picked = pg.locator(f"#tab-{moved[-1]}")
        expect(picked).to_have_attribute("aria-selected", "true")
        expect(picked).to_be_visible()  # the chosen view's tab comes onto the bar
        assert pg.evaluate(TABS)["fits"]
    finally:
        pg.set_viewport_size({"width": 1024, "height": 768})
        pg.get_by_role("tab", name="Flame graph").click()
    expect(pg.locator("#tab-more")).to_be_hidden()
