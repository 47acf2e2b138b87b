"""Issue 32 item 4 in the page: the Compare tab shows the gate's three verdicts (regressed,
unchanged, inconclusive) in its table, its verdict box and the differential flame graph,
coloured by the metric the gate judged; the percentile basis gives the CLI's verdicts."""

from __future__ import annotations

import contextlib
import json
import threading

import pytest
import uvicorn
from playwright.sync_api import Browser, expect
from tests.compare.captures import bursty_capture
from tests.helpers import free_port

from mcuprof.cli import main
from mcuprof.store import SessionStore
from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path, firmware):
    store = SessionStore(tmp_path / "data")
    before = store.import_capture("before", bursty_capture(firmware, 11),
                                  firmware.elf)  # fmt: skip
    after = store.import_capture("after", bursty_capture(firmware, 12, grow=1.3), firmware.elf)
    port = free_port()
    settings = Settings(http_port=port, autoconnect=False, data_dir=tmp_path / "data")
    srv = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, store=store), host="127.0.0.1", port=port, log_level="warning"
        )
    )
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(3000):  # wait for the server to listen (its effect, not a fixed time)
        if srv.started:
            break
        started.wait(0.01)
    assert srv.started
    yield f"http://127.0.0.1:{port}", store, before, after
    srv.should_exit = True
    thread.join(timeout=30)
    store.close()


def test_compare_tab_shows_the_three_verdicts(server, firmware, capsys, chromium: Browser):
    url, store, before, after = server
    errors: list[str] = []
    with contextlib.closing(chromium.new_context(viewport={"width": 1400, "height": 900})) as bc:
        page = bc.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{url}/#sessions")
        expect(page.locator(f'#sessions-table tr[data-id="{after.id}"] td.lost')).to_contain_text(
            "(5.00%)"
        )
        page.locator(f'#sessions-table tr[data-id="{before.id}"]').click()
        page.click("#sess-compare")
        expect(page.locator("#view-compare")).to_be_visible()
        page.select_option("#cmp-new", str(after.id))
        for name, verdict in (
            ("control_step", "regressed"),
            ("fir_filter", "inconclusive"),
            ("sensor_take", "unchanged"),
        ):
            cell = page.locator(f'#cmp-functions tr[data-key="{name}"] td.v-{verdict}')
            expect(cell).to_have_text(verdict, timeout=30_000)
        expect(page.locator('[data-section="inconclusive"]')).to_contain_text("fir_filter")
        expect(page.locator("#cmp-verdict")).to_contain_text("lost 1,470 of")
        frames = "window.mcuprof.diffFlame.rects"
        page.wait_for_function(f"() => {frames}.some(r => r.name === 'fir_filter')")
        colour = {
            name: page.evaluate(f"(n) => {frames}.find(r => r.name === n).color", name)
            for name in ("control_step", "fir_filter", "sensor_take")
        }
        assert colour["control_step"].startswith("rgb(255,")  # red: it regressed
        assert colour["control_step"] != "rgb(255,255,255)"
        assert colour["fir_filter"] == "rgb(240,200,90)"  # diff.js INCONCLUSIVE_COLOUR
        assert colour["sensor_take"] == "rgb(235,235,235)"

        # The p99 basis: the page and `mcuprof compare --basis p99` agree, function by function.
        page.select_option("#cmp-basis", "p99")
        expect(page.locator("#cmp-legend")).to_contain_text("p99 of the self time per call")
        shown = page.evaluate(
            "() => Object.fromEntries([...document.querySelectorAll('#cmp-functions tbody tr')]"
            ".map((tr) => [tr.dataset.key, tr.querySelector('td[class*=\"v-\"]')?.textContent]))"
        )
    main(["compare", str(before.id), str(after.id), "--basis", "p99", "--json",
          "--data-dir", str(store.data_dir)])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert {v["key"]: v["verdict"] for v in report["verdicts"]} == {
        k: v for k, v in shown.items() if v
    }
    assert errors == []
