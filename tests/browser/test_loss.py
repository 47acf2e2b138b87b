"""Issue 32 item 3: a session captured live with loss reopens showing the Lost count it
had at Stop: in the Sessions list, in the health panel once opened, and in
``mcuprof sessions show --json``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from playwright.sync_api import expect

from tests.browser.conftest import FLAME_READY, ROOT
from tests.helpers import running_serve
from tests.web.conftest import wait_for

# A firmware far faster than the link: the device's ring overflows and drops records.
LOSSY = "sim://?rate=50000&baud=115200&buffer=256&seed=5"


def _lost(text: str) -> int:
    found = re.search(r"\+ ([\d,]+) lost", text)
    assert found, text
    return int(found.group(1).replace(",", ""))


def _stored(url: str) -> bool:
    with urllib.request.urlopen(f"{url}api/log", timeout=10) as r:
        entries = json.loads(r.read())["entries"]
    return any("stored in session" in e["message"] for e in entries)


def test_a_lossy_session_reopens_with_its_lost_count(page, tmp_path: Path) -> None:
    pg, console = page
    data = tmp_path / "data"
    with running_serve(
        data, "--port", LOSSY, cwd=ROOT, ready=lambda state: state["connected"] is True
    ) as served:
        pg.goto(served.url)
        expect(pg.locator("#conn-state")).to_contain_text("Ready")
        pg.get_by_role("button", name="Start", exact=True).click()
        pg.wait_for_function(FLAME_READY, timeout=10_000)
        expect(pg.locator("#h-overflows")).not_to_have_text(re.compile(r"^(—|0)$"), timeout=10_000)
        pg.get_by_role("button", name="Stop", exact=True).click()
        # The page reads "After Stop" from the STOP's ACK on, while the ring still drains:
        # the figures are final once the session is stored (its row in the list).
        wait_for(lambda: _stored(served.url), "the session stored")
        with urllib.request.urlopen(f"{served.url}api/state", timeout=10) as r:
            at_stop = json.loads(r.read())["health"]["loss"]
        assert at_stop > 0
        # the page shows the final figures once their update arrives
        expect(pg.locator("#h-reconcile")).to_contain_text(f"+ {at_stop:,} lost", timeout=20_000)
        assert _lost(pg.locator("#h-reconcile").inner_text()) == at_stop

        pg.get_by_role("tab", name="Sessions").click()
        row = pg.locator("#sessions-table tbody tr").first
        expect(row.locator("td.lost")).to_contain_text(f"{at_stop:,}")
        sid = int(row.get_attribute("data-id") or 0)
        row.click()
        expect(pg.locator("#sess-capture")).to_contain_text(f"lost {at_stop:,} of")
        with pg.expect_response(lambda r: r.url.endswith("/replay") and r.request.method == "POST"):
            pg.locator("#sess-open").click()
        expect(pg.locator("#source-kind")).to_have_text("Stored session", timeout=20_000)
        expect(pg.locator("#h-reconcile")).to_contain_text("as at Stop", timeout=20_000)
        assert _lost(pg.locator("#h-reconcile").inner_text()) == at_stop
        expect(pg.locator("#h-loss")).to_contain_text(f"{at_stop:,}")

        shown = subprocess.run(
            [sys.executable, "-m", "mcuprof", "sessions", "show", str(sid), "--json"],
            env={**os.environ, "MCUPROF_DATA_DIR": str(data)},
            capture_output=True,
            check=True,
            cwd=ROOT,
        )
        loss = json.loads(shown.stdout)["loss"]
        assert loss["lost"] == at_stop
        assert loss["overflows"] > 0 and loss["stretches"]
    assert not console.errors, console.errors
