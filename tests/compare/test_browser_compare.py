"""The Sessions and Compare tabs in a real Chromium against a real server."""

from __future__ import annotations

import contextlib
import threading

import pytest
import uvicorn
from playwright.sync_api import Browser, expect
from tests.helpers import free_port

from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path, firmware, kit):
    store = SessionStore(tmp_path / "data")
    before = store.import_capture("before", firmware.capture(kit.demo_tree(), 40), firmware.elf)
    after = store.import_capture("after", firmware.capture(kit.demo_tree(fir=65), 60), firmware.elf)
    port = free_port()
    settings = Settings(http_port=port, autoconnect=False, data_dir=tmp_path / "data")
    app = create_app(settings, store=store)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(3000):  # wait for the server to listen (its effect, not a fixed time)
        if srv.started:
            started.set()
            break
        started.wait(0.01)
    assert srv.started
    yield f"http://127.0.0.1:{port}", store, before, after, app
    srv.should_exit = True
    thread.join(timeout=30)
    store.close()


def test_sessions_and_compare_tabs(server, tmp_path, firmware, kit, chromium: Browser):
    url, store, before, after, app = server
    upload = tmp_path / "upload.bin"
    upload.write_bytes(firmware.capture(kit.demo_tree(pid=40), 10))
    errors: list[str] = []
    with contextlib.closing(
        chromium.new_context(viewport={"width": 1400, "height": 900})
    ) as browser:
        page = browser.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda d: d.accept())
        page.goto(f"{url}/#sessions")

        rows = page.locator("#sessions-table tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0)).to_contain_text("after")

        # Rename and annotate.
        page.locator(f'#sessions-table tr[data-id="{before.id}"]').click()
        # The details panel is rebuilt when its fetch returns: fill the new one, not the old.
        expect(page.locator("#sess-name")).to_have_value("before")
        page.fill("#sess-name", "baseline run")
        page.fill("#sess-notes", "before the FIR change")
        # A refresh rebuilds the panel (as a capture stored meanwhile does): nothing typed
        # is lost, and the name field keeps the focus.
        page.locator("#sess-name").focus()
        page.evaluate("window.mcuprof.emit('sessions-changed')")
        expect(page.locator("#sess-capture")).not_to_have_text("Reading the capture…")
        expect(page.locator("#sess-name")).to_have_value("baseline run")
        expect(page.locator("#sess-notes")).to_have_value("before the FIR change")
        assert page.evaluate("document.activeElement.id") == "sess-name"
        page.click("#sess-save")
        expect(page.locator(f'#sessions-table tr[data-id="{before.id}"]')).to_contain_text(
            "baseline run"
        )
        assert store.get(before.id).notes == "before the FIR change"
        expect(page.locator("#sess-capture")).to_contain_text("240 records")

        # Import by upload.
        page.set_input_files("#sess-import-file", str(upload))
        expect(rows).to_have_count(3)
        imported = store.list()[0]
        assert imported.name == "upload.bin" and imported.source == "import"

        # Baseline -> Compare tab, against the "after" session.
        page.locator(f'#sessions-table tr[data-id="{before.id}"]').click()
        page.click("#sess-compare")
        expect(page.locator("#view-compare")).to_be_visible()
        page.select_option("#cmp-new", str(after.id))
        fir = page.locator('#cmp-functions tr[data-key="fir_filter"]')
        # Two diffs computed on a loaded 2-core machine can take over expect's 5 s.
        expect(fir).to_contain_text("+30.0%", timeout=30_000)
        expect(page.locator("#cmp-summary")).to_contain_text("baseline run")
        # One name everywhere (issue 34): a static is named as in every view, its file
        # not in the name (the row's key, which matches the captures, keeps it).
        static = page.locator('#cmp-functions tr[data-key="control_iteration [main.c]"] td.name')
        expect(static).to_have_text("control_iteration")
        frames = "window.mcuprof.diffFlame.rects"
        page.wait_for_function(f"() => {frames}.some(r => r.name === 'fir_filter')")
        fir_frame, same = (
            page.evaluate(f"(n) => {frames}.find(r => r.name === n)", name)
            for name in ("fir_filter", "sensor_take")
        )
        assert fir_frame["color"] == "rgb(255,0,0)"  # the largest growth: full red
        # sensor_take's time per call did not change (its share fell only because
        # fir_filter grew): the verdict calls it unchanged, so its frame stays neutral.
        assert same["color"] == "rgb(235,235,235)"
        box = page.locator("#cmp-flame-canvas").bounding_box()
        assert box is not None
        page.mouse.move(
            box["x"] + fir_frame["x"] + fir_frame["w"] / 2, box["y"] + fir_frame["y"] + 5
        )
        expect(page.locator(".cmp-tip")).to_contain_text("self share change: +")
        href = page.get_attribute("#cmp-export-svg", "href")
        assert href and f"base={before.id}" in href and f"new={after.id}" in href

        # Delete the imported session (the confirm dialog is accepted).
        page.click("#tab-sessions")
        page.locator(f'#sessions-table tr[data-id="{imported.id}"]').click()
        page.click("#sess-delete")
        expect(rows).to_have_count(2)
        assert not store.raw_path(imported.id).exists()

        # Open = replay at maximum speed into the live views.
        page.locator(f'#sessions-table tr[data-id="{after.id}"]').click()
        page.click("#sess-open")
        expect(page.locator("#view-flame")).to_be_visible()
        live = app.state.live
        tick = threading.Event()
        for _ in range(6000):
            live.ingest()
            if live.profile_records() == 360:
                break
            tick.wait(0.01)
        assert live.profile_records() == 360
    assert errors == []
