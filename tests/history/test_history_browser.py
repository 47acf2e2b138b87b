"""The History tab in Chromium: a trend drawn from stored, tagged sessions, its change
point marked, and a click on it opening Compare on the builds either side."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from mcuprof.store import SessionStore
from tests.browser.conftest import ROOT, shot
from tests.helpers import running_serve

from .captures import STEP_LABEL, capture

pytestmark = pytest.mark.browser

BUILDS = 16
STEP_AT = 9


@pytest.fixture
def served(tmp_path):
    data = tmp_path / "data"
    with SessionStore(data, autoflush=False) as store:
        for i in range(BUILDS):
            mean = 1000.0 * (1.02 if i >= STEP_AT else 1.0)
            tags = {"branch": "main", "commit": f"c{i:02d}", "board": "f4"}
            store.import_capture(f"nightly {i}", capture(mean, seed=i), tags=tags)
    with running_serve(data, "--no-connect", cwd=ROOT) as s:
        yield s


def test_history_tab_draws_the_trend_and_a_change_point_opens_compare(served, chromium):
    context = chromium.new_context(viewport={"width": 1440, "height": 900}, color_scheme="dark")
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(served.url + "#history")
    pg.fill("#hist-function", STEP_LABEL)
    pg.fill("#hist-where", "branch=main")
    pg.click("#hist-show")
    expect(pg.locator("#hist-note")).to_contain_text(f"{BUILDS} points, 1 change point")
    row = pg.locator("#hist-change-table tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(f"c{STEP_AT:02d}")
    pg.wait_for_function("() => document.querySelector('#hist-plot .scatterlayer .trace')")
    shot(pg, "history-dark")

    # The diamond on the chart: where Plotly drew it, clicked as a user would.
    x, y = pg.evaluate(
        """() => {
        const gd = document.getElementById('hist-plot');
        const t = gd.data.find((d) => d.name === 'change points');
        const L = gd._fullLayout, box = gd.getBoundingClientRect();
        const x = L.xaxis.d2p(t.x[0]), y = L.yaxis.d2p(t.y[0]);
        return [box.left + L._size.l + x, box.top + L._size.t + y];
        }"""
    )
    pg.mouse.click(x, y)
    expect(pg.locator("#tab-compare")).to_have_attribute("aria-selected", "true")
    ids = pg.evaluate(
        "() => [...document.querySelectorAll('#hist-change-table [data-compare]')]"
        ".map((b) => b.dataset.compare)"
    )
    base, new = ids[0].split(":")
    assert int(new) == int(base) + 1
    expect(pg.locator("#cmp-base")).to_have_value(base)
    expect(pg.locator("#cmp-new")).to_have_value(new)
    expect(pg.locator(".cmp-verdict")).to_be_visible()

    # A plain point opens its session in the views (replayed at full speed).
    pg.click("#tab-history")
    x, y = pg.evaluate(
        """() => {
        const gd = document.getElementById('hist-plot');
        const t = gd.data.find((d) => d.name !== 'change points');
        const L = gd._fullLayout, box = gd.getBoundingClientRect();
        return [box.left + L._size.l + L.xaxis.d2p(0), box.top + L._size.t + L.yaxis.d2p(t.y[0])];
        }"""
    )
    pg.mouse.click(x, y)
    expect(pg.locator("#tab-flame")).to_have_attribute("aria-selected", "true")
    # The session's 400 records reach the views.
    pg.wait_for_function(
        "async () => (await (await fetch('/api/state')).json()).health.profile_records === 400",
        polling=200,
    )
    assert not errors, errors
    context.close()
