"""The QS tab's Sequence and States views in Chromium: a stored session (the reference
DPP capture, opened so its RTC steps are in the flame graph) and a live QS target
(sim://?proto=qs through a real `mcuprof serve`). Screenshots at 1280x720 and
1600x1000 go to /tmp/qs-flow-*.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import wait_for

from .test_qs_views import REFERENCE, App, qs_app  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

SIZES = ((1280, 720), (1600, 1000))
LANES = [f"Philo_inst[{k}]" for k in range(5)] + ["Table_inst"]


def shots(pg: Page, name: str) -> None:
    for w, h in SIZES:
        pg.set_viewport_size({"width": w, "height": h})
        pg.wait_for_timeout(400)
        pg.screenshot(path=f"/tmp/qs-flow-{name}-{w}x{h}.png")


def lifelines(pg: Page) -> list[str]:
    return pg.eval_on_selector_all(
        "#qsf-seq .qsf-heads title", "els => els.map(e => e.textContent)"
    )


def test_stored_sequence_and_states(qs_app: App, page) -> None:  # noqa: F811
    pg, console = page
    store = qs_app.app.state.store
    writer = store.create("DPP reference", source="import", kind="qs")
    writer.append((REFERENCE / "dpp-posix64.bin").read_bytes())
    sid = writer.finish().id
    pg.set_viewport_size({"width": 1280, "height": 720})
    pg.goto(qs_app.url + "/#qs")
    # Opened (replayed at full speed) so its steps are the flame graph's frames.
    pg.evaluate(
        "sid => window.mcuprof.api.postJSON(`/api/sessions/${sid}/replay`, {speed: 'max'})", sid
    )
    wait_for(lambda: len(qs_app.api("/api/functions")["functions"]) > 10, "the replay", 20)
    pg.select_option("#qs-source", str(sid))
    pg.locator("#qs-view button", has_text="Sequence").click()
    expect(pg.locator("#qsf-note")).to_contain_text("265 events on 6 lifelines", timeout=15000)
    expect(pg.locator("#qsf-seq")).to_be_visible()
    assert lifelines(pg) == LANES
    dispatches = pg.locator("#qsf-seq .disp")
    expect(dispatches.first).to_be_visible()
    rows = qs_app.api("/api/qs/flow", [("session", str(sid))])["rows"]
    assert sum(r["s"] == "dispatch" for r in rows) == 107
    expect(pg.locator("#qsf-note")).to_contain_text("265 events on 6 lifelines")
    assert "session" in pg.locator("#qsf-save-seq").get_attribute("href")
    shots(pg, "sequence-stored")

    # A dispatch click selects its RTC step: the signal's frame, named in the chip.
    first = dispatches.first
    signal = first.locator("text:not(.ts)").text_content().lstrip("▸ ").strip()
    first.click()
    expect(pg.locator("#selection-chip")).to_be_visible()
    expect(pg.locator("#selection-chip")).to_contain_text(f"Selected: {signal}")
    expect(first).to_have_class("qsf-row k-dispatch disp sel")
    fid = pg.evaluate("() => window.mcuprof.selected.fid")
    names = pg.evaluate("() => fetch('/api/functions').then(r => r.json())")["functions"]
    assert next(f for f in names if f["fid"] == fid)["name"] == signal

    # The timeline's window filters the diagram.
    pg.evaluate(
        """() => fetch('/api/qs/flow').then(r => r.json()).then(d => {
            const t = d.rows.filter(r => r.t !== null).map(r => r.t);
            window.mcuprof.setWindow([t[20], t[60]]);
        })"""
    )
    expect(pg.locator("#qsf-note")).to_contain_text("in the timeline's window")
    windowed = int(pg.locator("#qsf-note").inner_text().split()[0])
    assert 40 <= windowed < len(rows)

    # Lifelines from the picker: one less, then the system border added.
    pg.locator("#qsf-picker button[data-name='Philo_inst[0]']").click()
    heads = "n => document.querySelectorAll('#qsf-seq .qsf-heads title').length === n"
    pg.wait_for_function(heads, arg=5)
    pg.locator("#qsf-picker button[data-name='?']").click()
    pg.wait_for_function(heads, arg=6)
    assert lifelines(pg)[-1].startswith("?")
    pg.evaluate("() => window.mcuprof.setWindow(null)")

    pg.locator("#qs-view button", has_text="States").click()
    lanes = pg.locator("#qsf-states .qsf-lane")
    expect(lanes).to_have_count(6)
    span = pg.locator("#qsf-states .qsf-lane[data-obj='Table_inst'] rect.span").first
    span.hover()
    tip = pg.locator("#qsf-tip")
    expect(tip).to_be_visible()
    expect(tip).to_contain_text("Table_inst\nTable_serving\nentered at ")
    assert " µs" in tip.inner_text() and "for " in tip.inner_text()
    shots(pg, "states-stored")
    assert not console.errors, console.errors


def test_live_sequence_and_states(server, page) -> None:
    pg, console = page
    pg.set_viewport_size({"width": 1280, "height": 720})
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Disconnect").click()
    pg.locator("#port-select").select_option("sim://?proto=qs")
    pg.get_by_role("button", name="Connect", exact=True).click()
    expect(pg.locator("#conn-state")).to_contain_text("Ready · Simulated QS target")
    pg.get_by_role("button", name="Start", exact=True).click()
    pg.get_by_role("tab", name="QS").click()
    pg.locator("#qs-view button", has_text="Sequence").click()
    expect(pg.locator("#qsf-seq .disp").first).to_be_visible(timeout=15000)
    last = "els => Math.max(...els.map(e => Number(e.dataset.index)))"
    # Live: it follows the newest rows (scrolled to the bottom) as the target goes on.
    pg.locator("#qsf-box").evaluate("b => { b.scrollTop = b.scrollHeight; }")
    before = pg.eval_on_selector_all("#qsf-seq .qsf-row", last)
    pg.wait_for_function(
        f"n => ({last})([...document.querySelectorAll('#qsf-seq .qsf-row')]) > n",
        arg=before,
        timeout=15000,
    )
    shots(pg, "sequence-live")
    pg.locator("#qs-view button", has_text="States").click()
    expect(pg.locator("#qsf-states .qsf-lane").first).to_be_visible(timeout=10000)
    assert pg.locator("#qsf-states .qsf-lane").count() >= 5
    shots(pg, "states-live")
    pg.get_by_role("button", name="Stop", exact=True).click()
    assert not console.errors, console.errors
