"""serve --budgets in a real Chromium: a budget that breaks while the simulated device
runs is counted in Health, marked in Functions, and logged once; a budgets file loaded in
the page replaces the server's, its broken budget is marked in the flame graph, and its Log
line's link shows the first call over on the timeline."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers import running_serve

from .conftest import FLAME_READY, ROOT, capture, shot

pytestmark = pytest.mark.browser

BUDGETS = """
[[budget]]
function = "fir_filter"
max_us = 1

[[budget]]
function = "fir_filter"
p50_us = 1000000
"""


def test_a_budget_breaking_live(tmp_path, page) -> None:
    pg, console = page
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(BUDGETS)
    ready = lambda state: state["connected"] is True  # noqa: E731
    with running_serve(
        tmp_path / "data", "--budgets", str(budgets), cwd=ROOT, ready=ready
    ) as served:
        pg.goto(served.url)
        expect(pg.locator("#h-budgets")).to_be_visible()
        capture(pg, 800)
        expect(pg.locator("#h-budgets")).to_have_text("1 of 2 broken")
        pg.get_by_role("tab", name="Functions").click()
        row = pg.locator("#functions-table tbody tr", has_text="fir_filter")
        expect(row.locator(".budget-mark")).to_be_visible()
        expect(pg.locator("#functions-table .budget-mark")).to_have_count(1)
        pg.get_by_role("tab", name="Log").click()
        lines = pg.locator("#log-table tbody tr", has_text="budget 1 (fir_filter) broken")
        expect(lines).to_have_count(1)
        expect(lines).to_contain_text("max")
    assert console.errors == []


LOADED = b"""
[[budget]]
function = "fir_filter"
max_us = 1
"""


def test_a_budgets_file_loaded_in_the_page_breaks_live(tmp_path, page) -> None:
    pg, console = page
    ready = lambda state: state["connected"] is True  # noqa: E731
    with running_serve(tmp_path / "data", "--sim-rate", "3000", cwd=ROOT, ready=ready) as served:
        pg.goto(served.url)
        expect(pg.locator("#h-budgets")).to_be_hidden()
        expect(pg.locator("#conn-state")).to_contain_text("Ready")
        pg.get_by_role("button", name="Start", exact=True).click()
        pg.wait_for_function(FLAME_READY, timeout=10_000)
        # While the device runs: a bad file is refused with the server's one line...
        bad = {"name": "bad.toml", "mimeType": "text/plain", "buffer": b"[[budget]]\np98_us = 1\n"}
        pg.set_input_files("#budgets-upload", files=[bad])
        expect(pg.locator("#banner")).to_contain_text("bad.toml: budget 1: unknown key 'p98_us'")
        expect(pg.locator("#h-budgets")).to_be_hidden()
        # ...a good one replaces the (empty) budgets and breaks.
        good = {"name": "live.toml", "mimeType": "text/plain", "buffer": LOADED}
        pg.set_input_files("#budgets-upload", files=[good])
        expect(pg.locator("#h-budgets")).to_have_text("1 of 1 broken")
        expect(pg.locator("#budgets-status")).to_contain_text("live.toml: 1 of 1 broken")
        pg.wait_for_function(
            "() => { const r = window.mcuprof.flame.rects;"
            " return r.some(f => f.budget && f.name === 'fir_filter')"
            " && r.every(f => !f.budget || f.name === 'fir_filter'); }",
            timeout=10_000,
        )
        shot(pg, "32-budgets-flame-mark")
        pg.get_by_role("tab", name="Log").click()
        line = pg.locator("#log-table tbody tr", has_text="budget 1 (fir_filter) broken")
        expect(line).to_have_count(1)
        shot(pg, "33-budgets-log-link")
        link = line.get_by_role("button", name="show on the timeline")
        expect(link).to_be_visible()
        span = served_span(served.url)
        link.click()
        expect(pg.get_by_role("tab", name="Timeline")).to_have_attribute("aria-selected", "true")
        # zoomed to the call, as much again either side
        pg.wait_for_function(
            "(c) => { const v = window.mcuprof.timeline.view(); const w = c[1] - c[0];"
            " return v && v[0] <= c[0] && v[1] >= c[1] && v[1] - v[0] <= 3 * w + 2; }",
            arg=span,
            timeout=10_000,
        )
        # and that call is drawn there, on its own
        pg.wait_for_function(
            "(c) => window.mcuprof.timeline.rects().some(r => r.name === 'fir_filter'"
            " && r.count === 1 && Math.abs(r.start - c[0]) < 0.01)",
            arg=span,
            timeout=10_000,
        )
        # A QS step's budget names a path (object;state;signal): only that path's frame
        marked = pg.evaluate(MARK_A_PATH)
        assert marked == [["AO_Table;serving;EAT_SIG", True], ["AO_Philo;serving;EAT_SIG", False]]
    # the one refusal, the bad file's 400
    assert len(console.errors) == 1 and "status of 400" in console.errors[0], console.errors
    assert "name=bad.toml" in console.errors[0]


MARK_A_PATH = """async () => {
    const { FlameCanvas } = await import('/static/js/flamecanvas.js');
    const fc = new FlameCanvas(document.createElement('canvas'));
    const names = ['all', 'AO_Table', 'serving', 'EAT_SIG', 'AO_Philo', 'serving', 'EAT_SIG'];
    fc.setData({ parent: [-1, 0, 1, 2, 0, 4, 5], depth: [0, 1, 2, 3, 1, 2, 3],
        x: [0, 0, 0, 0, 10, 10, 10], total: [20, 10, 10, 10, 10, 10, 10],
        self: [0, 0, 0, 10, 0, 0, 10], calls: [0, 1, 1, 1, 1, 1, 1], key: [-1, 1, 2, 3, 4, 5, 6],
        name: [0, 1, 2, 3, 4, 5, 6], names, labels: names, where: names.map(() => ''),
        fid: [-2, 1, 2, 3, 4, 2, 3], units_per_us: 1 });
    fc.marked = new Set(['AO_Table;serving;EAT_SIG']);
    fc.draw(800, 200, 1);
    return fc.rects.filter(r => r.name === 'EAT_SIG')
        .map(r => [(r.x < 400 ? 'AO_Table' : 'AO_Philo') + ';serving;EAT_SIG', r.budget]);
}"""


def served_span(url: str) -> list[float]:
    """The first call over of the broken budget, as the server gives it (the Log's link
    took the same answer's span: the first call over does not change as calls arrive)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"{url}api/budgets", timeout=10) as r:
        [v] = json.loads(r.read())["verdicts"]
    return v["first_over_span_us"]


def test_a_bad_budgets_file_stops_serve_with_one_line(tmp_path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "b.toml"
    bad.write_text('[[budget]]\nfunction = "x"\np98_us = 1\n')
    out = subprocess.run(
        [sys.executable, "-m", "mcuprof", "serve", "--budgets", str(bad), "--no-connect"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "unknown key 'p98_us'" in out.stderr
