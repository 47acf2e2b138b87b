"""The dashboard on a QS target: Chromium connects the page to the simulated QP
application, starts, sees RTC steps per active object in the flame graph and the
Functions table, stops, and exports (issue 11, item 3 and "Done when")."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from .conftest import shot

pytestmark = pytest.mark.browser

PHILOS = [f"Philo_inst[{i}]" for i in range(5)]
SIZES = ((1280, 720), (1600, 1000), (2560, 1440))


def test_qs_target_live_start_stop_export(server, page, tmp_path) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready · Simulated device")
    pg.get_by_role("button", name="Disconnect").click()
    expect(pg.locator("#conn-state")).to_contain_text("Disconnected")
    pg.locator("#port-select").select_option("sim://?proto=qs")
    expect(pg.locator("#proto-select")).to_have_value("qs")
    expect(pg.locator("#proto-field")).to_be_hidden()  # the QS simulator speaks only QS
    pg.locator("#port-select").select_option("__tcp__")
    expect(pg.locator("#proto-field")).to_be_visible()  # a TCP target may speak either
    pg.locator("#port-select").select_option("sim://?proto=qs")
    pg.get_by_role("button", name="Connect", exact=True).click()
    expect(pg.locator("#conn-state")).to_contain_text("Ready · Simulated QS target")
    expect(pg.locator("#device-kind")).to_have_text("Simulated QS target")
    expect(pg.locator("#fw-version")).to_have_text("QP 7.4.0")
    # QS-RX commands replace the MiniProfiler buffer/status buttons.
    expect(pg.get_by_role("button", name="Reset target")).to_be_enabled()
    expect(pg.get_by_role("button", name="Target info")).to_be_enabled()
    expect(pg.get_by_role("button", name="Reset buffers", exact=True)).to_be_hidden()

    start = pg.get_by_role("button", name="Start", exact=True)
    stop = pg.get_by_role("button", name="Stop", exact=True)
    start.click()
    expect(pg.locator("#h-state")).to_have_text("profiling")
    # RTC steps per active object: the flame graph's root frames are the objects.
    pg.wait_for_function(
        """(philos) => {
            const rects = (window.mcuprof.flame && window.mcuprof.flame.rects) || [];
            const shown = new Set(rects.map(r => r.name));
            return philos.filter(p => shown.has(p)).length >= 3;
        }""",
        arg=PHILOS,
        timeout=15000,
    )
    expect(pg.locator("#flame-foot")).to_contain_text("outside RTC steps")
    expect(pg.locator("#h-qs-frames")).not_to_have_text("—")
    expect(pg.locator("#h-qs-bad")).to_have_text("0")
    # No ELF is used for a QS target: the picker says so instead of showing one.
    elf = pg.locator("#elf-select")
    expect(elf).to_be_disabled()
    assert elf.evaluate("s => s.selectedOptions[0].textContent").startswith("Not used: QS")
    pg.get_by_role("button", name="Target info").click()
    pg.get_by_role("button", name="Tick", exact=True).click()
    for w, h in SIZES:
        pg.set_viewport_size({"width": w, "height": h})
        pg.wait_for_timeout(700)
        shot(pg, f"qs-01-flame-{w}x{h}")

    pg.get_by_role("tab", name="Functions").click()
    rows = pg.locator("#functions-table tbody tr")
    expect(rows.first).to_be_visible()
    names = rows.locator("td:first-child").all_inner_texts()
    assert any(n.startswith("Philo_inst[") for n in names), names
    assert any(n.endswith("_SIG") for n in names), names
    for w, h in SIZES:
        pg.set_viewport_size({"width": w, "height": h})
        pg.wait_for_timeout(400)
        shot(pg, f"qs-02-functions-{w}x{h}")

    # The QS tab is fed by the same live source (its monitor is a listener of it): QSPY's
    # lines for the simulated DPP, filterable by an active object, and its queue margins.
    pg.get_by_role("tab", name="QS").click()
    expect(pg.locator("#qs-log .qs-row").first).to_be_visible(timeout=15000)
    lines = pg.eval_on_selector_all(
        "#qs-log .qs-row .qs-text", "els => els.map(e => e.textContent)"
    )
    assert any("Philo_inst[" in line for line in lines), lines[:20]
    pg.wait_for_function(
        "() => document.querySelector('#qs-margins-plot')?.data?.length > 0", timeout=15000
    )
    shot(pg, "qs-03-live-qs-tab-1600x1000")

    pg.get_by_role("tab", name="Flame graph").click()
    stop.click()
    expect(pg.locator("#h-state")).to_have_text("ready")
    expect(start).to_be_enabled()

    files = {}
    for fmt in ("folded", "speedscope", "chrome", "csv"):
        pg.get_by_role("button", name="Export").click()
        with pg.expect_download() as info:
            pg.locator(f"[data-export={fmt}]").click()
        path = tmp_path / info.value.suggested_filename
        info.value.save_as(path)
        assert path.name.startswith("mcuprof-QP_7.4.0-"), path.name
        files[fmt] = path.read_text()
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in files["folded"].splitlines()]
    assert stacks and all(len(s) == 3 for s in stacks), stacks[:3]
    assert {s[0] for s in stacks} & set(PHILOS)
    assert all(s[2].endswith("_SIG") for s in stacks)
    for fmt in ("speedscope", "chrome", "csv"):
        assert "Philo_inst[" in files[fmt] and "TIMEOUT_SIG" in files[fmt], fmt
    shot(pg, "qs-03-stopped")

    # Stop stored a QS session; the Sessions tab lists it and opens it into the views.
    sessions = json.loads(pg.evaluate("fetch('/api/sessions').then(r => r.text())"))["sessions"]
    stored = sessions[0]
    assert stored["kind"] == "qs" and stored["records"] > 0, stored
    live_folded = files["folded"]
    pg.get_by_role("tab", name="Sessions").click()
    pg.locator(f"#sessions-table tr[data-id='{stored['id']}']").click()
    # The replay is attached when its request answers; only then does "Ready" below mean
    # that it has ended (the state read the same before it began).
    with pg.expect_response(lambda r: r.url.endswith("/replay") and r.request.method == "POST"):
        pg.locator("#sess-open").click()
    # The replay ends by itself and the QS target is reconnected. The line read "Ready ·
    # Simulated QS target" before the replay too, so wait for the server to say it ended.
    pg.wait_for_function(
        "() => fetch('/api/state').then(r => r.json()).then(s => !s.device.replay)",
        timeout=20_000,
        polling=200,
    )
    expect(pg.locator("#conn-state")).to_contain_text("Ready · Simulated QS target", timeout=20_000)
    pg.get_by_role("tab", name="Flame graph").click()
    pg.wait_for_function(
        "(p) => (window.mcuprof.flame.rects || []).some(r => r.name === p)", arg=PHILOS[0]
    )
    reopened = pg.evaluate("fetch('/api/export/folded').then(r => r.text())")
    assert sorted(reopened.splitlines()) == sorted(live_folded.splitlines())
    shot(pg, "qs-04-opened-session")
    assert console.errors == []
