"""QS times you can trust in Chromium (issue 34, point 4), against the real QP/C 7.4 DPP
target (dpp-posix64) on `mcuprof serve --port listen://...`: the device card says the
tick rate is assumed and shows the one measured from the target's frames beside it,
within 5% of its clock (the POSIX port's QS_onGetTime counts 0.1 µs: 10 MHz), warns
and applies it; a target restart is a dashed segment boundary on the timeline; an
assertion raises the red banner naming its module and location, the state says
"target asserted"; the stored session keeps the applied rate and is re-read with
another. About 15 s of capture; screenshots in /tmp/qs-time-*.png."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from tests.helpers import free_port, running_serve
from tests.qs.qsfe import REAL, start_target

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TARGET = "dpp-posix64"
POSIX_TICK_HZ = 10_000_000
WAIT_MS = 30_000
ASSERTING = {"action": "post", "ao": "Table_inst", "signal": "HUNGRY_SIG", "params": "09"}


def test_tick_rate_restart_and_assertion_on_the_page(chromium: Browser, tmp_path: Path) -> None:
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    tport = free_port()
    port = f"listen://127.0.0.1:{tport}"
    with running_serve(
        tmp_path / "data", "--port", port, cwd=ROOT, ready=lambda s: s["connected"]
    ) as served:
        context = chromium.new_context(viewport={"width": 1440, "height": 900})
        target = start_target(TARGET, tport)
        try:
            pg = context.new_page()
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(served.url)
            pg.get_by_role("button", name="Start").click()
            expect(pg.locator("#timer-freq")).to_contain_text("assumed", timeout=WAIT_MS)
            expect(pg.locator("#source-text")).to_contain_text("--qs-tick-hz")
            expect(pg.locator("#h-qs-tick")).to_contain_text("1 MHz assumed")

            apply = pg.locator("#tick-apply")
            expect(apply).to_be_visible(timeout=WAIT_MS)  # after 10 s of frames
            measured = pg.locator("#tick-estimate").inner_text()
            mhz = float(re.match(r"([\d.]+) MHz", measured).group(1))
            assert abs(mhz * 1e6 / POSIX_TICK_HZ - 1) < 0.05, measured
            expect(pg.locator("#tick-note")).to_contain_text("not the 1 MHz")
            expect(pg.locator("#h-warning")).to_contain_text("apply the estimate")
            pg.screenshot(path="/tmp/qs-time-estimate.png")
            apply.click()
            expect(pg.locator("#timer-freq")).to_contain_text("· measured")
            expect(pg.locator("#tick-note")).to_be_hidden()
            expect(pg.locator("#source-text")).not_to_contain_text("--qs-tick-hz")

            # A restart: Reset target ends the program, as a board reboots; it comes back.
            pg.get_by_role("button", name="Reset target").click()
            assert target.proc.wait(timeout=10) == 0
            target = start_target(TARGET, tport)
            pg.get_by_role("tab", name="Timeline").click()
            expect(pg.locator("#timeline-info")).to_contain_text(
                "target reset(s): each starts a new segment", timeout=WAIT_MS
            )
            assert int(pg.locator("#timeline-plot").get_attribute("data-segments")) >= 1
            pg.screenshot(path="/tmp/qs-time-segments.png")

            # An assertion: Table gets a HUNGRY event from philosopher 9 of 5.
            pg.wait_for_function(
                """async (body) => (await fetch('/api/qs/control/event', {method: 'POST',
                  headers: {'Content-Type': 'application/json'}, body})).ok""",
                arg=json.dumps(ASSERTING),
                timeout=WAIT_MS,
                polling=500,
            )
            banner = pg.locator("#assert-banner")
            expect(banner).to_be_visible(timeout=WAIT_MS)
            expect(banner).to_contain_text("module table.c, location 192")
            expect(pg.locator("#h-state")).to_have_text("target asserted")
            expect(pg.locator("#conn-state")).to_contain_text("Target asserted")
            pg.screenshot(path="/tmp/qs-time-assert.png")

            # The session keeps the rate it was read with, and is re-read with another.
            pg.get_by_role("button", name="Stop").click()
            pg.get_by_role("tab", name="Sessions").click()
            row = pg.locator("#sessions-table tr[data-id='1']")
            expect(row).to_contain_text("complete")  # Stop has stored it (its rate too)
            row.click()
            rate = pg.locator("#sess-info dd", has_text="MHz")
            expect(rate).to_have_text(re.compile(r"^(9\.9\d*|10(\.0\d*)?) MHz$"))
            pg.locator("#sess-tick").fill("1000000")
            pg.locator("#sess-tick-set").click()
            expect(pg.locator("#sess-info dd", has_text="MHz")).to_have_text("1 MHz")
            assert errors == []
        finally:
            context.close()
            target.stop(signal.SIGKILL)
