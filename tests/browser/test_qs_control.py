"""The QS control panel in Chromium against the real QP/C 7.4 DPP target (dpp-posix64)
on the app's listen:// port, as `mcuprof serve --port listen://...` (issue 25, point 2):
current objects and a query, a peek shown in hex and typed, the global filter with its
mask, an event published, a user command, a refused peek, each with its answer inline.
One app, one target and one page for the module; screenshots at 1280x720 and
1600x1000 in /tmp/qs-panel-*.png."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.helpers import free_port, running_serve
from tests.qs.qsfe import REAL, start_target

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
TARGET = "dpp-posix64"
SIZES = ((1280, 720), (1600, 1000))
WAIT_MS = 15_000


@pytest.fixture(scope="module")
def panel(chromium: Browser, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    if not (REAL / TARGET).exists():
        pytest.skip(f"the real target {REAL / TARGET} is missing")
    # `mcuprof serve` as a user runs it, on the listen:// port the real target connects to.
    data = tmp_path_factory.mktemp("qs-panel") / "data"
    tport = free_port()
    port = f"listen://127.0.0.1:{tport}"
    with running_serve(data, "--port", port, cwd=ROOT, ready=lambda s: s["connected"]) as served:
        target = start_target(TARGET, tport)
        viewport = {"width": 1600, "height": 1000}
        context = chromium.new_context(viewport=viewport, color_scheme="dark")
        try:
            pg = context.new_page()
            errors: list[str] = []
            pg.on("pageerror", lambda exc: errors.append(str(exc)))
            pg.goto(served.url)
            pg.get_by_role("tab", name="QS").click()
            pg.locator("#qs-mode-control").click()
            table = pg.locator("#qs-curr-AO option[value='Table_inst']")
            expect(table).to_have_count(1, timeout=WAIT_MS)
            yield pg
            assert errors == []
        finally:
            context.close()
            target.stop(signal.SIGKILL)


def ack(pg: Page, card: str, pattern: str) -> None:
    expect(pg.locator(f"#{card}-ack")).to_contain_text(re.compile(pattern), timeout=WAIT_MS)


def shots(pg: Page, name: str) -> None:
    for w, h in SIZES:
        pg.set_viewport_size({"width": w, "height": h})
        pg.wait_for_timeout(300)
        pg.screenshot(path=f"/tmp/qs-panel-{name}-{w}x{h}.png")
        pg.locator("#qs-control").evaluate("e => { e.scrollTop = e.scrollHeight; }")
        pg.screenshot(path=f"/tmp/qs-panel-{name}-{w}x{h}-end.png")
        pg.locator("#qs-control").evaluate("e => { e.scrollTop = 0; }")


def test_the_panel_drives_the_real_target(panel: Page) -> None:
    pg = panel
    # Current objects and a query: the answer names the AO's state.
    pg.locator("#qs-curr-AO").select_option("Philo_inst[1]")
    pg.locator("#qs-curr-set-AO").click()
    ack(pg, "qs-ctl-curr", r"Trg-Ack\s+QS_RX_CURR_OBJ")
    expect(pg.locator("#qs-curr-now-AO")).to_have_text("current: Philo_inst[1]", timeout=WAIT_MS)
    pg.locator("#qs-query-AO").click()
    ack(pg, "qs-ctl-curr", r"Query-AO Obj=Philo_inst\[1\],State=Philo_(thinking|hungry|eating)")

    # Memory of the AP object: 16 bytes peeked, in hex and as u8 then u32 values.
    pg.locator("#qs-curr-AP").select_option("Table_inst")
    pg.locator("#qs-curr-set-AP").click()
    ack(pg, "qs-ctl-curr", r"Trg-Ack\s+QS_RX_CURR_OBJ")
    expect(pg.locator("#qs-mem-ap")).to_have_text("Table_inst", timeout=WAIT_MS)
    pg.locator("#qs-mem-peek").click()
    ack(pg, "qs-ctl-mem", r"Trg-Peek Offs=0,Size=1,Num=16")
    expect(pg.locator("#qs-mem-hex")).to_contain_text("+0000")
    expect(pg.locator("#qs-mem-typed tbody tr")).to_have_count(16)
    pg.locator("#qs-mem-type").select_option("u32")
    expect(pg.locator("#qs-mem-typed tbody tr")).to_have_count(4)
    # A peek past the server's bound is refused in one line, and nothing is sent.
    pg.locator("#qs-mem-count").fill("255")
    pg.locator("#qs-mem-peek").click()
    ack(pg, "qs-ctl-mem", r"Refused: peek of 255 x 4 bytes: 1 to 256 bytes allowed")

    # The global filter: all off, the mask in force shown; then all on again.
    pg.locator("#qs-glb-none").click()
    pg.locator("#qs-glb-apply").click()
    ack(pg, "qs-ctl-glb", r"Trg-Ack\s+QS_RX_GLB_FILTER")
    expect(pg.locator("#qs-glb-mask")).to_contain_text("(0 of 128 on)", timeout=WAIT_MS)
    pg.locator("#qs-glb-groups input[data-group='SM']").check()
    expect(pg.locator("#qs-glb-records input[data-rec='1']")).to_be_checked()
    pg.locator("#qs-glb-all").click()
    pg.locator("#qs-glb-apply").click()
    expect(pg.locator("#qs-glb-mask")).to_contain_text("(128 of 128 on)", timeout=WAIT_MS)

    # An event from the dictionary, published; a user command.
    pg.locator("#qs-ev-sig").select_option("SERVE_SIG")
    pg.locator("#qs-ev-action").select_option("publish")
    pg.locator("#qs-ev-send").click()
    ack(pg, "qs-ctl-event", r"Trg-Done QS_RX_EVENT")
    pg.locator("#qs-cmd-id").fill("7")
    pg.locator("#qs-cmd-send").click()
    ack(pg, "qs-ctl-cmd", r"Trg-Ack\s+QS_RX_COMMAND")
    answers = pg.locator("#qs-answers")
    expect(answers).to_contain_text("Query-AO", timeout=WAIT_MS)
    expect(answers).to_contain_text("Trg-Done QS_RX_COMMAND", timeout=WAIT_MS)
    pg.wait_for_function(  # the newest answer is in view
        "() => { const e = document.getElementById('qs-answers');"
        " return e.scrollTop + e.clientHeight >= e.scrollHeight - 4; }"
    )
    assert "Trg-ERR" not in answers.inner_text()
    pg.locator("#qs-ctl-glb details summary").click()
    shots(pg, "control")
