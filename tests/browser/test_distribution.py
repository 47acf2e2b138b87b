"""The Functions view's distribution panel in a real Chromium: the P99 column, the
selected function's histogram with its percentiles, and a bucket's first call shown on
the timeline."""

from __future__ import annotations

import json
import urllib.request

import pytest
from playwright.sync_api import expect

from .conftest import capture, shot

pytestmark = pytest.mark.browser


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def test_distribution_panel_and_a_bucket_on_the_timeline(server, page) -> None:
    pg, console = page
    pg.goto(server.url)
    capture(pg, 1500)
    top = max(_get(f"{server.url}api/functions")["functions"], key=lambda f: f["calls"])
    k = _get(f"{server.url}api/distribution?fid={top['fid']}")["buckets"]["k"][-1]
    first = _get(f"{server.url}api/distribution/bucket?fid={top['fid']}&k={k}")["calls"][0]
    pg.get_by_role("tab", name="Functions").click()
    expect(pg.locator("#functions-table thead")).to_contain_text("P99")
    row = pg.locator(f"#functions-table tbody tr[data-fid='{top['fid']}']")
    row.click()
    panel = pg.locator("#functions-dist")
    expect(panel).to_be_visible()
    expect(pg.locator("#functions-dist-name")).to_have_text(top["name"])
    stats = pg.locator("#functions-dist-stats")
    for word in ("calls", "p50", "p99", "p99.9", "max", "std"):
        expect(stats).to_contain_text(word)
    bars = pg.locator("#functions-dist-plot .barlayer .point path")
    expect(bars.first).to_be_attached(timeout=10_000)
    marks = pg.locator("#functions-dist-plot .annotation-text")
    expect(marks.first).to_be_attached()
    # Every mark is named once, and no label is drawn over another (p99, p99.9 and max
    # of a short capture are often one call: they share a label).
    texts = marks.evaluate_all("els => els.map((e) => e.textContent)")
    named = [w for t in texts for w in t.replace(" = ", ",").replace(", ", ",").split(",")]
    assert sorted(named) == sorted(["p50", "p90", "p99", "p99.9", "max"]), texts
    boxes = [b for b in (m.bounding_box() for m in marks.all()) if b is not None]
    assert len(boxes) == len(texts)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart_x = a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            apart_y = a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"]
            assert apart_x or apart_y, texts
    shot(pg, "30-functions-distribution")
    # The slowest bucket: the timeline shows its first call.
    box = bars.last.bounding_box()
    assert box is not None
    pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] - 1)
    pg.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] - 1)
    expect(pg.get_by_role("tab", name="Timeline")).to_have_attribute("aria-selected", "true")
    expect(pg.locator("#banner")).to_contain_text("in this bucket")
    # zoomed to the call, as much again either side
    pg.wait_for_function(
        "(c) => { const v = window.mcuprof.timeline.view(); const w = c[1] - c[0];"
        " return v && v[0] <= c[0] && v[1] >= c[1] && v[1] - v[0] <= 3 * w + 2; }",
        arg=first,
        timeout=10_000,
    )
    pg.wait_for_function(
        "(fid) => window.mcuprof.timeline.rects().some(r => r.fid === fid && r.count === 1)",
        arg=top["fid"],
        timeout=10_000,
    )
    # At 1024 px every column that stays is in view: the shares are not scrolled away.
    # (Last: the histogram redraws after a resize, and a click read before it lands astray.)
    pg.get_by_role("tab", name="Functions").click()
    pg.set_viewport_size({"width": 1024, "height": 700})
    wrap = pg.locator("#view-functions .table-wrap").bounding_box()
    last = pg.locator("#functions-table th[data-key='self_pct']").bounding_box()
    assert wrap is not None and last is not None
    assert last["x"] + last["width"] <= wrap["x"] + wrap["width"] + 1
    assert console.errors == []
