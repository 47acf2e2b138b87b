"""The Sessions tab's Open goes to the flame graph as soon as the open is accepted: the
list's refresh after it asks for the session's details, whose counts read the whole
capture (40 s for a 36M-record session, bench/open.py), and the page waited for them
before showing the flame graph (issue 33, item 2)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from mcuprof.history.summary import keep_summary
from mcuprof.paths import default_elf
from mcuprof.store import open_store
from tests.helpers import running_serve
from tests.web.test_open_summary import named_capture

from .conftest import FLAME_READY, ROOT


def test_open_shows_the_flame_graph_before_the_details_answer(page, tmp_path: Path) -> None:
    pg: Page = page[0]
    data = tmp_path / "data"
    with open_store(data) as store:
        sid = store.import_capture("big one", named_capture(2000), default_elf()).id
        keep_summary(store, sid)
    with running_serve(data, "--no-connect", cwd=ROOT) as served:
        pg.goto(served.url)
        pg.locator("#tab-sessions").click()
        row = pg.locator(f"#sessions-table tr[data-id='{sid}']")
        row.click()
        expect(pg.locator("#sess-open")).to_be_enabled()
        held = []  # the details' request, never answered: a capture that takes long to count
        pg.route(lambda url: url.endswith(f"/api/sessions/{sid}"), lambda r: held.append(r))
        pg.locator("#sess-open").click()
        expect(pg.locator("#tab-flame")).to_have_attribute("aria-selected", "true")
        pg.wait_for_function(FLAME_READY, timeout=20_000)
        # The list's refresh asks for the details after the flame graph's tab is shown (a
        # loaded host may send it after the graph is drawn): they are asked for, and the
        # graph stays drawn while they go unanswered.
        for _ in range(150):
            if held:
                break
            pg.wait_for_timeout(100)
        assert held, "the session's details were never asked for"
        assert pg.evaluate(FLAME_READY)
