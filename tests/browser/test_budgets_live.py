"""serve --budgets in a real Chromium: a budget that breaks while the simulated device
runs is counted in Health, marked in Functions, and logged once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.helpers import running_serve

from .conftest import ROOT, capture

pytestmark = pytest.mark.browser

BUDGETS = """
[[budget]]
function = "fir_filter"
max_us = 1

[[budget]]
function = "fir_filter"
p50_us = 1000000
"""


def test_a_budget_breaking_live(tmp_path, page) -> None:
    pg, console = page
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(BUDGETS)
    ready = lambda state: state["connected"] is True  # noqa: E731
    with running_serve(
        tmp_path / "data", "--budgets", str(budgets), cwd=ROOT, ready=ready
    ) as served:
        pg.goto(served.url)
        expect(pg.locator("#h-budgets")).to_be_visible()
        capture(pg, 800)
        expect(pg.locator("#h-budgets")).to_have_text("1 of 2 broken")
        pg.get_by_role("tab", name="Functions").click()
        row = pg.locator("#functions-table tbody tr", has_text="fir_filter")
        expect(row.locator(".budget-mark")).to_be_visible()
        expect(pg.locator("#functions-table .budget-mark")).to_have_count(1)
        pg.get_by_role("tab", name="Log").click()
        lines = pg.locator("#log-table tbody tr", has_text="budget 1 (fir_filter) broken")
        expect(lines).to_have_count(1)
        expect(lines).to_contain_text("max")
    assert console.errors == []


def test_a_bad_budgets_file_stops_serve_with_one_line(tmp_path) -> None:
    import subprocess
    import sys

    bad = tmp_path / "b.toml"
    bad.write_text('[[budget]]\nfunction = "x"\np98_us = 1\n')
    out = subprocess.run(
        [sys.executable, "-m", "mcuprof", "serve", "--budgets", str(bad), "--no-connect"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "unknown key 'p98_us'" in out.stderr
