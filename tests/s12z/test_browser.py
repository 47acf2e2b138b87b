"""The S12Z tab in a real Chromium against a real `mcuprof serve`: import the sample
trace with its ELF, see the destination table, the interrupt histogram and timeline,
the TBOVF loss in the health card's place, and export."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from mcuprof.paths import sample_elfs_dir
from mcuprof.s12z import load_firmware, load_trace
from mcuprof.s12z.analysis import analyse
from tests.helpers import running_serve

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-artifacts" / "screenshots"
TRACE = sample_elfs_dir() / "s12z-demo.trace"
ELF = sample_elfs_dir() / "s12z-demo.elf"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    with running_serve(tmp_path / "data", cwd=ROOT, ready=lambda s: s["connected"]) as served:
        yield served.url


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_import_sample_trace_and_see_tables_and_histogram(chromium, server, tmp_path) -> None:
    expected = analyse(load_trace(TRACE.read_bytes()), load_firmware(ELF), 32e6)
    context = chromium.new_context(viewport={"width": 1280, "height": 720}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(server + "#s12z")
        expect(page.locator("#s12z-empty")).to_contain_text("No S12Z traces yet")
        expect(page.locator("#s12z-elf")).to_have_value("sample:s12z-demo.elf")
        page.fill("#s12z-bus", "32")
        page.set_input_files("#s12z-file", str(TRACE))
        expect(page.locator("#banner")).to_contain_text("Imported S12Z trace")

        table = page.locator("#s12z-functions tbody tr")
        expect(table).to_have_count(len(expected["functions"]))
        shown = [
            (
                r.locator("td").nth(0).inner_text(),
                int(r.locator("td").nth(1).inner_text().replace(",", "")),
                r.locator("td").nth(2).inner_text(),
            )
            for r in table.all()
        ]
        assert [(f, n) for f, n, _ in shown] == [
            (f["function"], f["entries"]) for f in expected["functions"]
        ]
        assert shown[0][2] == f"{expected['functions'][0]['share']:.1f}%"
        # The histogram is a Plotly bar chart with one bar per vector, named by its ISR.
        page.wait_for_function(
            "() => document.querySelectorAll('#s12z-histogram g.point').length === 2"
        )
        labels = page.evaluate(
            "() => [...document.querySelectorAll('#s12z-histogram .ytick text')]"
            ".map(t => t.textContent)"
        )
        assert {label.split()[0] for label in labels} == {"Timer0_ISR", "SCI0_ISR"}
        bars = page.evaluate("() => document.getElementById('s12z-histogram').data[0].x")
        assert sorted(bars) == sorted(v["count"] for v in expected["interrupts"]["vectors"])
        points = page.evaluate(
            "() => document.getElementById('s12z-timeline').data"
            ".reduce((n, t) => n + t.x.length, 0)"
        )
        assert points == expected["interrupts"]["total"]
        # The trace's health replaces the live health card, with the TBOVF loss.
        expect(page.locator("#health")).to_be_hidden()
        expect(page.locator("#s12z-health")).to_be_visible()
        expect(page.locator("#s12z-loss")).to_contain_text(
            "Data lost: trace buffer overflow (TBOVF)"
        )
        expect(page.locator("#s12z-summary")).to_contain_text("TBOVF")
        expect(page.locator("#s12z-summary")).to_contain_text("data lost")
        shot(page, "s12z-1280x720")

        page.set_viewport_size({"width": 1600, "height": 1000})
        page.wait_for_timeout(300)
        shot(page, "s12z-1600x1000")

        page.click("#s12z-export")
        with page.expect_download() as dl:
            page.click("[data-export='csv:functions']")
        rows = list(csv.DictReader(io.StringIO(Path(dl.value.path()).read_text())))
        assert [(r["function"], int(r["entries"])) for r in rows] == [
            (f["function"], f["entries"]) for f in expected["functions"]
        ]

        # Back on another tab, the live health card returns.
        page.click("#tab-flame")
        expect(page.locator("#health")).to_be_visible()
        expect(page.locator("#s12z-health")).to_be_hidden()
        # The Sessions tab lists the trace and opens it in the S12Z tab.
        page.click("#tab-sessions")
        expect(page.locator("#sess-capture")).to_contain_text("S12Z trace")
        expect(page.locator("#sess-replay")).to_be_disabled()
        page.click("#sess-open")
        expect(page.locator("#view-s12z")).to_be_visible()
        expect(table).to_have_count(len(expected["functions"]))
        assert errors == []
    finally:
        context.close()


def test_hostile_symbol_names_are_shown_as_text(chromium, server, tmp_path) -> None:
    """Names come from the ELF, which the user may not have built: never markup."""
    from mcuprof.s12z.elfwrite import Section, Symbol, vector_table, write_elf
    from mcuprof.s12z.flow import End, Interrupt, Jump, Start, encode_flow

    evil_isr = '<img src=x onerror="window.__pwned=1"> & co'
    evil_func = "%{x}<b>bold</b>"
    text = Section(".text", 0xFE0000, bytes(0x40), executable=True)
    vectors = Section(".vectors", 0xFFFE00, vector_table({0x1CC: 0xFE0020}, 0xFE0000))
    elf = tmp_path / "s12z-hostile.elf"
    elf.write_bytes(
        write_elf(
            [text, vectors],
            [Symbol(evil_func, 0xFE0000, 0x20), Symbol(evil_isr, 0xFE0020, 0x20)],
        )
    )
    trace = tmp_path / "hostile.trace"
    trace.write_bytes(
        encode_flow([Start(0xFE0000), Interrupt(0xE6, 100), Jump(0xFE0004), End("term")])
    )
    context = chromium.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        page.goto(server)
        page.set_input_files("#elf-upload", str(elf))
        expect(page.locator("#elf-select")).to_contain_text("s12z-hostile.elf")
        page.click("#tab-s12z")
        page.select_option("#s12z-elf", label="s12z-hostile.elf")
        page.set_input_files("#s12z-file", str(trace))
        expect(page.locator("#s12z-functions tbody tr td.name")).to_have_text([evil_func])
        page.wait_for_function(
            "() => document.querySelectorAll('#s12z-histogram .ytick text').length === 1"
        )
        tick = page.evaluate(
            "() => document.querySelector('#s12z-histogram .ytick text').textContent"
        )
        assert tick.startswith(evil_isr)
        assert page.locator("#s12z-body img, #s12z-body b").count() == 0
        assert page.evaluate("() => window.__pwned") is None
    finally:
        context.close()
