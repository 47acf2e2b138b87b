"""Issue 24, the rest: the differential flame graph is the main flame graph's component,
the web diff checks timer frequencies as the CLI does, every session row offers every
export, the HTML export has a search, QS log search takes a regex, and the health panel
shows the decoder's bounded losses. One `mcuprof serve` (two captures) for the module."""

from __future__ import annotations

import csv
import json
import re
import struct
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Browser, Page, expect

from mcuprof.link.qs_sim import QSSimDevice
from mcuprof.link.simulator import SimOptions
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.protocol.qs import QSDecoder, Record, encode_frame
from tests.helpers import running_serve

from .conftest import FLAME_READY, Server

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _post(url: str) -> dict:
    req = urllib.request.Request(url, data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def _record(url: str, records: int) -> None:
    """Start on the simulated device, wait for ``records`` profile records, Stop."""
    _post(f"{url}api/start")
    deadline = time.monotonic() + 20
    while _get(f"{url}api/state")["health"]["profile_records"] < records:
        assert time.monotonic() < deadline, "the simulated device sent nothing"
        time.sleep(0.05)
    _post(f"{url}api/stop")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("ui-exports") / "data"
    with running_serve(data, cwd=ROOT, ready=lambda s: s["connected"] is True) as srv:
        _record(srv.url, 300)
        _record(srv.url, 300)
        yield Server(srv.url, srv.process, data)


@pytest.fixture
def pg(chromium: Browser) -> Iterator[Page]:
    context = chromium.new_context(
        viewport={"width": 1440, "height": 900}, accept_downloads=True, color_scheme="dark"
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == []


# Frames drawn wider than 1% of the graph, by row then left to right: (row, name).
ORDER = """(fc) => { const w = Math.max(...fc.rects.map(r => r.w));
    return fc.rects.filter(r => r.w > w / 100).sort((a, b) => a.y - b.y || a.x - b.x)
        .map(r => [Math.round(r.y / fc.rowPx), r.name]); }"""


def test_diff_flame_is_the_main_flame_component(served: Server, pg: Page) -> None:
    """Item 1: the Compare tab's flame graph has the main one's row height, frame order
    and orientation (its toggle flips both)."""
    pg.goto(served.url)
    pg.wait_for_function(FLAME_READY)
    main = pg.evaluate(f"({ORDER})(window.mcuprof.flame)")
    row = pg.evaluate("window.mcuprof.flame.rowPx")
    pg.get_by_role("tab", name="Compare").click()
    expect(pg.locator("#cmp-verdict")).to_be_visible(timeout=20_000)
    # Widths from the live capture: the data the main flame graph shows.
    with pg.expect_response(lambda r: "/api/sessions/diff?" in r.url and "new=live" in r.url):
        pg.select_option("#cmp-new", "live")
    pg.wait_for_function("() => window.mcuprof.diffFlame.rects.length > 3")
    diff = pg.evaluate(f"({ORDER})(window.mcuprof.diffFlame)")
    assert len(main) > 3 and diff == main, (diff, main)
    assert pg.evaluate("window.mcuprof.diffFlame.rowPx") == row
    heights = {r["h"] for r in pg.evaluate("window.mcuprof.diffFlame.rects")}
    assert heights == {row - 1}, heights  # as the main graph's: the row less the gap
    # Root at the top as in the Flame graph tab; the toggle flips every flame graph.
    root = "() => window.mcuprof.diffFlame.rects.find(r => r.i === 0)"
    assert pg.evaluate(root)["y"] == 0
    pg.locator("#cmp-flip").click()
    height = pg.evaluate("document.getElementById('cmp-flame-canvas').clientHeight")
    assert pg.evaluate(root)["y"] == height - row
    assert pg.evaluate("window.mcuprof.flameFlip") is True
    expect(pg.locator("#flame-flip")).to_have_text("Root to top")


def _import(url: str, name: str, data: bytes) -> dict:
    req = urllib.request.Request(
        f"{url}api/sessions/import?name={urllib.parse.quote(name)}", data=data, method="POST"
    )
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())["session"]


def test_a_timer_frequency_mismatch_is_one_line_in_the_compare_tab(served: Server, pg: Page):
    """Item 2: the web diff refuses a pair with different timer frequencies as the CLI
    does, and the page says so in one line where the result would be."""
    first = min(_get(f"{served.url}api/sessions")["sessions"], key=lambda s: s["id"])
    hz = first["metadata"]["timer_freq"]
    rec = np.zeros(4, dtype=RECORD_DTYPE)
    rec["entry_time"], rec["duration"] = [10, 20, 30, 40], 5
    meta = Metadata(25_000_000, 2 * hz, 0, "other clock")
    other = _import(served.url, "other clock", encode_metadata(meta) + encode_profile_data(rec))
    pg.goto(f"{served.url}#compare")
    expect(pg.locator(f"#cmp-new option[value='{other['id']}']")).to_be_attached()
    pg.select_option("#cmp-base", str(first["id"]))
    pg.select_option("#cmp-new", str(other["id"]))
    summary = pg.locator("#cmp-summary")
    expect(summary).to_contain_text(f"timer frequencies differ: BASE {hz:,} Hz, NEW {2 * hz:,} Hz")
    assert "\n" not in summary.inner_text()
    expect(pg.locator("#cmp-flame")).to_be_hidden()
    expect(pg.locator("#cmp-verdict")).to_be_hidden()
    _post_delete(served.url, other["id"])  # the other tests see the two captures only


def _post_delete(url: str, sid: int) -> None:
    req = urllib.request.Request(f"{url}api/sessions/{sid}", method="DELETE")
    urllib.request.urlopen(req, timeout=10).close()


def test_each_session_row_offers_every_export(served: Server, pg: Page, tmp_path: Path) -> None:
    """Item 3: a session row offers the Export menu's formats; each downloads that
    session's export (not the live capture's), named and titled with the session."""
    first = min(_get(f"{served.url}api/sessions")["sessions"], key=lambda s: s["id"])
    sid = first["id"]
    pg.goto(f"{served.url}#sessions")
    menu = pg.locator("#export-menu [data-export]")
    expect(menu.first).to_be_attached()
    formats = menu.evaluate_all("(bs) => bs.map(b => b.dataset.export)")
    row = pg.locator(f"#sessions-table tr[data-id='{sid}']")
    offered = row.locator("[data-session-export]")
    expect(offered).to_have_count(len(formats))  # the table is filled after the page loads
    assert offered.evaluate_all("(bs) => bs.map(b => b.dataset.sessionExport)") == formats
    files = {}
    for fmt in formats:
        row.locator("summary").click()
        with pg.expect_download() as dl:
            row.locator(f"[data-session-export={fmt}]").click()
        files[fmt] = tmp_path / dl.value.suggested_filename
        dl.value.save_as(files[fmt])
        assert f"-session{sid}-" in dl.value.suggested_filename, (fmt, dl.value.suggested_filename)
    raw = urllib.request.urlopen(f"{served.url}api/sessions/{sid}/raw", timeout=10).read()
    assert files["raw"].read_bytes() == raw
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(first["started_at"]))
    svg = files["svg"].read_text(encoding="utf-8")
    assert f"captured {when} · session {sid} ({first['name']})" in svg
    # Every record is one call: the CSV's calls add up to the session's record count.
    with files["csv"].open(encoding="utf-8", newline="") as f:
        assert sum(int(r["calls"]) for r in csv.DictReader(f)) == first["records"]
    assert files["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(path.stat().st_size > 0 for path in files.values())


def test_an_open_session_export_menu_survives_a_refresh(served: Server, pg: Page) -> None:
    """The sessions table is rebuilt when a capture starts or stops: a row's Export menu
    the user has open stays open, on the same session."""
    before = {s["id"] for s in _get(f"{served.url}api/sessions")["sessions"]}
    sid = min(before)
    pg.goto(f"{served.url}#sessions")
    rows = pg.locator("#sessions-table tbody tr")
    expect(rows).to_have_count(2)
    pg.locator(f"#sessions-table tr[data-id='{sid}'] summary").click()
    item = pg.locator(f"#sessions-table tr[data-id='{sid}'] [data-session-export=raw]")
    expect(item).to_be_visible()
    _record(served.url, 50)  # Start and Stop: a third session, and the table rebuilt
    try:
        expect(rows).to_have_count(3)
        expect(item).to_be_visible()
        assert pg.locator("details.sess-export[open]").count() == 1
    finally:
        for s in _get(f"{served.url}api/sessions")["sessions"]:
            if s["id"] not in before:
                _post_delete(served.url, s["id"])  # the other tests see the two captures only


def test_html_export_has_a_search(served: Server, pg: Page, tmp_path: Path) -> None:
    """Item 4: the standalone HTML export, opened from a file, searches as the page does:
    a regex over function names, the match count, the rest dimmed, next / previous."""
    html = urllib.request.urlopen(f"{served.url}api/export/html", timeout=30).read().decode()
    path = tmp_path / "flame.html"
    path.write_text(html, encoding="utf-8")
    data = json.loads(re.search(r"^const data = (.*);$", html, re.MULTILINE).group(1))
    pattern = "^(fir|sensor)_"
    names = [data["names"][k] for k in data["name"]]  # per row
    found = [
        i
        for i, name in enumerate(names)
        if i > 0 and data["fid"][i] >= 0 and re.search(pattern, name, re.IGNORECASE)
    ]
    assert found and len(found) < len(names) - 1
    pg.goto(path.as_uri())
    pg.fill("#search", pattern)
    matches = pg.locator("#matches")
    expect(matches).to_contain_text(f"{len(found)} frames, ")
    assert pg.evaluate("fc.rowPx") == 20  # the page's fixed rows, not stretched to the window
    drawn = pg.evaluate("fc.rects.map(r => [r.i, r.color])")
    dim = {color for i, color in drawn if i > 0 and i not in found}
    lit = {color for i, color in drawn if i in found}
    assert dim and lit and not dim & lit, (dim, lit)  # matches keep colour, the rest is dimmed
    hits = pg.evaluate("fc.hits()")
    assert sorted(hits) == sorted(i for i in found if i in {i for i, _ in drawn})
    pg.locator("#search").press("Enter")
    expect(matches).to_contain_text(f"match 1 of {len(hits)} · ")
    assert pg.evaluate("fc.currentI") == hits[0]
    pg.locator("#next").click()
    expect(matches).to_contain_text(f"match 2 of {len(hits)} · ")
    pg.locator("#prev").click()
    expect(matches).to_contain_text(f"match 1 of {len(hits)} · ")
    pg.fill("#search", "no_such_function_at_all")
    expect(matches).to_have_text("no match")
    pg.fill("#search", "fir_filter(")  # not a regex: searched as text, nothing thrown
    expect(matches).to_have_text("no match")


def _qs_capture_past_the_dictionary() -> tuple[bytes, int]:
    """The simulated QS target's boot, then 3,000 object dictionary entries: past QSPY's
    2,048, so the decoder drops (and counts) the rest."""
    now = [0.0]
    device = QSSimDevice(SimOptions(proto="qs", seed=5), clock=lambda: now[0], baud=115_200)
    boot = bytearray()
    for _ in range(5):
        now[0] += 0.01
        boot += device.poll()
    seq = sum(isinstance(e, Record) for e in QSDecoder().feed(bytes(boot))) + 1
    frames = []
    for i in range(3000):
        obj = 0x3000_0000 + 4 * i
        frames.append(
            encode_frame(seq + i, 61, struct.pack("<I", obj) + f"obj{i}".encode() + b"\0")
        )
    decoder = QSDecoder()
    decoder.feed(bytes(boot) + b"".join(frames))
    return bytes(boot) + b"".join(frames), decoder.stats.dictionary_overflow


def test_health_names_a_bounded_loss(served: Server, pg: Page) -> None:
    """Item 6: a stored QS capture that hit the dictionary bound, opened: the health panel
    names the loss with the decoder's count (nothing is said while no bound is hit)."""
    data, overflow = _qs_capture_past_the_dictionary()
    assert overflow > 0
    req = urllib.request.Request(
        f"{served.url}api/sessions/import?name=dict&kind=qs", data=data, method="POST"
    )
    with urllib.request.urlopen(req, timeout=20) as r:
        sid = json.loads(r.read())["session"]["id"]
    pg.goto(served.url)
    expect(pg.locator("#h-qs-bounds")).to_be_hidden()
    pg.get_by_role("tab", name="Sessions").click()
    pg.locator(f"#sessions-table tr[data-id='{sid}']").click()
    pg.locator("#sess-open").click()
    bounds = pg.locator("#h-qs-bounds")
    expect(bounds).to_have_text(f"dictionary overflow {overflow:,}", timeout=30_000)
    expect(pg.locator("#h-qs-bounds-k")).to_have_text("Bounded losses")
