"""The QS tab in Chromium: QSPY's lines, filtered by object and signal through the
chips, queue and pool margins and an application-record plot, a live stream that the
log follows, and target strings shown as text. Screenshots at three window sizes.

Until the QS live source is merged, the tests feed the app's QsMonitor directly with
events decoded from the reference capture and from the simulated QS target's bytes
(the monitor is the listener that source calls); switch to the live source then.
"""

from __future__ import annotations

import json
import re
import struct
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Page, expect

from mcuprof.link.qs_sim import QSSimDevice
from mcuprof.link.simulator import SimOptions
from mcuprof.protocol.qs import QSDecoder, decode_capture, encode_frame
from mcuprof.qs.margins import margins
from mcuprof.qs.text import render_lines
from mcuprof.web.app import create_app
from mcuprof.web.server import server_config
from mcuprof.web.settings import Settings
from tests.helpers import free_port
from tests.web.conftest import wait_for

from .conftest import shot

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference" / "qs"
MARKUP = "<img src=x onerror=window.__pwned=1>"


class App:
    def __init__(self, url: str, app) -> None:
        self.url = url
        self.app = app
        self.monitor = app.state.qs_monitor

    def api(self, path: str, params: list[tuple[str, str]] | None = None) -> dict:
        query = "?" + urllib.parse.urlencode(params) if params else ""
        with urllib.request.urlopen(self.url + path + query, timeout=10) as r:
            return json.loads(r.read())


@pytest.fixture
def qs_app(tmp_path: Path) -> Iterator[App]:
    port = free_port()
    settings = Settings(data_dir=tmp_path / "data", http_port=port, autoconnect=False)
    app = create_app(settings)
    server = uvicorn.Server(server_config(app, settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "uvicorn to start")
    yield App(f"http://127.0.0.1:{port}", app)
    server.should_exit = True
    thread.join(timeout=10)


def reference_events() -> list:
    events, _ = decode_capture((REFERENCE / "dpp-posix64.bin").read_bytes())
    return events


def sim_bytes(seconds: float) -> bytes:
    now = [0.0]
    device = QSSimDevice(SimOptions(proto="qs", seed=5), clock=lambda: now[0], baud=115_200)
    out = bytearray()
    for _ in range(int(seconds * 100)):
        now[0] += 0.01
        out += device.poll()
    return bytes(out)


def visible_lines(pg: Page) -> list[str]:
    return pg.eval_on_selector_all("#qs-log .qs-row .qs-text", "els => els.map(e => e.textContent)")


def info(pg: Page) -> str:
    return pg.locator("#qs-log-info").inner_text()


def open_qs(pg: Page, url: str) -> None:
    pg.goto(url + "/#qs")
    expect(pg.locator("#qs-log .qs-row").first).to_be_visible(timeout=15000)


def test_qs_tab_shows_filters_and_plots_the_reference_capture(qs_app: App, page) -> None:
    pg, console = page
    events = reference_events()
    qspy = list(render_lines(events))
    qs_app.monitor.qs_events(events)
    open_qs(pg, qs_app.url)
    expect(pg.locator("#qs-log-info")).to_have_text(f"{len(qspy)} lines")  # 937: no comma
    # Following: the newest lines are in view, exactly QSPY's.
    shown = visible_lines(pg)
    assert shown and shown == qspy[len(qspy) - len(shown) :]
    expect(pg.locator("#qs-summary")).to_contain_text("QP 740 · build 261122_182611")

    # Margins: one trace (and one low-water line) per queue and pool, numbers as `qs margins`.
    want = margins(events)
    pg.wait_for_function("() => document.querySelector('#qs-margins-plot')?.data?.length > 0")
    traces = pg.evaluate(
        "() => document.querySelector('#qs-margins-plot').data.map(t => [t.name, t.y.length])"
    )
    assert [t for t in traces if "low-water" not in t[0]] == [[m.name, len(m.free)] for m in want]
    assert len(traces) == 2 * len(want)
    rows = pg.eval_on_selector_all(
        "#qs-margins-table tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))",
    )
    assert [(r[0], int(r[3]), int(r[4])) for r in rows] == [
        (m.name + m.kind, m.lowest_free, m.low_water) for m in want
    ]
    axis = pg.evaluate("() => document.querySelector('#qs-margins-plot').layout.xaxis.title.text")
    assert "target time" in axis

    # The application record PHILO_STAT: its numeric argument plotted over time.
    pg.wait_for_function("() => document.querySelector('#qs-app-plot')?.data?.length > 0")
    app = pg.evaluate("() => document.querySelector('#qs-app-plot').data.map(t => [t.name, t.y])")
    stats = [e for e in events if getattr(e, "rec", None) == 100 and hasattr(e, "values")]
    assert app == [["PHILO_STAT arg 0 (U8)", [e.values[0][0].value for e in stats]]]

    for w, h in ((1280, 720), (1600, 1000), (2560, 1440)):
        pg.set_viewport_size({"width": w, "height": h})
        pg.wait_for_timeout(400)
        shot(pg, f"qs-reference-{w}x{h}")
        if w < 1500:  # one column: the plots are under the log
            pg.eval_on_selector("#qs-body", "b => { b.scrollTop = b.scrollHeight; }")
            pg.wait_for_timeout(300)
            shot(pg, f"qs-reference-{w}x{h}-plots")
            pg.eval_on_selector("#qs-body", "b => { b.scrollTop = 0; }")
    pg.set_viewport_size({"width": 1600, "height": 1000})
    # Lines longer than the panel scroll sideways rather than being cut.
    widest, room = pg.evaluate(
        "() => [Math.max(...[...document.querySelectorAll('#qs-log .qs-row')]"
        ".map(r => r.scrollWidth)), document.querySelector('#qs-log').scrollWidth]"
    )
    assert widest <= room

    # Filter by object through its chip: the count is the API's, every line names it.
    pg.locator('#qs-chips-obj .qs-chip[data-value="Philo_inst[2]"]').click()
    matched = qs_app.api("/api/qs/log", [("obj", "Philo_inst[2]")])["matched"]
    expect(pg.locator("#qs-log-info")).to_have_text(f"{matched} matching lines")
    lines = visible_lines(pg)
    assert lines and all("=Philo_inst[2]" in line for line in lines)
    # ...and by signal as well: both filters apply.
    pg.locator('#qs-chips-sig .qs-chip[data-value="EAT_SIG"]').click()
    both = qs_app.api("/api/qs/log", [("obj", "Philo_inst[2]"), ("sig", "EAT_SIG")])
    expect(pg.locator("#qs-log-info")).to_have_text(f"{both['matched']} matching lines")
    pg.wait_for_timeout(200)
    lines = visible_lines(pg)
    assert lines == [line["text"] for line in both["lines"]][-len(lines) :]
    assert all("Philo_inst[2]" in line and "Sig=EAT_SIG" in line for line in lines)
    expect(pg.locator('#qs-chips-sig .qs-chip[data-value="EAT_SIG"]')).to_have_attribute(
        "aria-pressed", "true"
    )
    shot(pg, "qs-filtered-1600x1000")
    # "Save lines" downloads exactly the filtered lines, as text.
    with pg.expect_download() as download:
        pg.click("#qs-log-save")
    saved = Path(download.value.path()).read_text().splitlines()
    assert saved == [line["text"] for line in both["lines"]]
    # A group chip narrows further; text search too.
    pg.locator('#qs-chips-group .qs-chip[data-value="SM"]').click()
    sm = [("obj", "Philo_inst[2]"), ("sig", "EAT_SIG"), ("group", "SM")]
    expect(pg.locator("#qs-log-info")).to_have_text(
        f"{qs_app.api('/api/qs/log', sm)['matched']} matching lines"
    )
    pg.locator("#qs-clear-filters").click()
    pg.fill("#qs-log-search", "hungry->philo_eating")
    found = qs_app.api("/api/qs/log", [("q", "hungry->philo_eating")])
    expect(pg.locator("#qs-log-info")).to_have_text(f"{found['matched']} matching lines")
    assert not console.errors, console.errors


def test_live_log_follows_new_lines_and_shows_target_strings_as_text(qs_app: App, page) -> None:
    pg, console = page
    data = sim_bytes(2.0)
    decoder = QSDecoder()
    qs_app.monitor.qs_reset()
    qs_app.monitor.qs_events(decoder.feed(data))
    open_qs(pg, qs_app.url)
    first = qs_app.monitor.summary()["lines"]
    expect(pg.locator("#qs-log-info")).to_have_text(f"{first:,} lines")
    # More arrives while the page watches: an object whose dictionary name is markup,
    # then a post to it. Sequence numbers continue the simulator's.
    seq = qs_app.monitor.summary()["records"] + 1  # frames so far, QS_EMPTY included
    evil = 0x2000_0900
    more = encode_frame(seq, 61, struct.pack("<I", evil) + MARKUP.encode() + b"\0")
    post = struct.pack("<IIHIBBBB", 99_000_000, 0, 4, evil, 0, 0, 3, 2)  # ts sdr sig obj ...
    more += encode_frame(seq + 1, 14, post)
    qs_app.monitor.qs_events(decoder.feed(more + sim_bytes(0.5)))
    total = qs_app.monitor.summary()["lines"]
    expect(pg.locator("#qs-log-info")).to_have_text(f"{total:,} lines", timeout=10000)
    last = qs_app.api("/api/qs/log", [("limit", "1")])["lines"][-1]["text"]
    pg.wait_for_function(
        "(t) => [...document.querySelectorAll('#qs-log .qs-text')].some(e => e.textContent === t)",
        arg=last,
    )
    # The markup is a chip label and a line's text, never an element.
    chip = pg.locator("#qs-chips-obj .qs-chip", has_text=MARKUP)
    expect(chip).to_have_count(1)
    chip.click()
    # The post names it (the dictionary line carries a raw pointer, not an object).
    expect(pg.locator("#qs-log-info")).to_have_text("1 matching line")
    expect(pg.locator("#qs-log .qs-row")).to_have_count(1)
    (line,) = visible_lines(pg)
    assert line.startswith(f"0099000000 AO-Post  Sdr=NULL,Obj={MARKUP},Evt<Sig=EAT_SIG,")
    # It is a queue in the margins too: a table row and a plot trace, as text.
    # The margins refresh on their own poll: a loaded machine may need more than 5 s.
    expect(pg.locator("#qs-margins-table tbody tr", has_text=MARKUP)).to_have_count(
        1, timeout=15000
    )
    # (Plotly reads markup in trace names: the name it gets is escaped.)
    pg.wait_for_function(
        "() => document.querySelector('#qs-margins-plot').data"
        ".some(t => t.name === '&lt;img src=x onerror=window.__pwned=1&gt;')"
    )
    assert pg.evaluate(
        "() => window.__pwned === undefined && !document.querySelector('#qs-body img')"
    )
    pg.set_viewport_size({"width": 1280, "height": 720})
    shot(pg, "qs-live-markup-1280x720")
    assert not console.errors, console.errors


def test_empty_state_and_a_stored_session_as_source(qs_app: App, page) -> None:
    pg, console = page
    pg.set_viewport_size({"width": 1280, "height": 720})
    pg.goto(qs_app.url + "/#qs")
    expect(pg.locator("#qs-empty")).to_be_visible()
    expect(pg.locator("#qs-empty")).to_contain_text("No QS data yet")
    shot(pg, "qs-empty-1280x720")
    store = qs_app.app.state.store
    writer = store.create("DPP reference", source="import", kind="qs")
    writer.append((REFERENCE / "dpp-posix64.bin").read_bytes())
    sid = writer.finish().id
    pg.reload()
    expect(pg.locator("#qs-source option")).to_have_count(2)
    pg.select_option("#qs-source", str(sid))
    expect(pg.locator("#qs-log .qs-row").first).to_be_visible(timeout=10000)
    expect(pg.locator("#qs-log-info")).to_have_text("937 lines")
    expect(pg.locator("#qs-margins-table tbody tr")).to_have_count(7)
    assert not console.errors, console.errors


def test_log_search_takes_a_regex_and_says_when_it_is_not_one(qs_app: App, page) -> None:
    """Issue 24 item 14: the QS log search is a case-insensitive regex, as the flame
    graph's; one that does not parse is a message beside the box, and nothing throws."""
    pg, console = page
    events = reference_events()
    qspy = list(render_lines(events))
    qs_app.monitor.qs_events(events)
    open_qs(pg, qs_app.url)
    pattern = r"sig=(eat|done)_sig"
    want = [line for line in qspy if re.search(pattern, line, re.IGNORECASE)]
    assert want and len(want) < len(qspy)
    pg.fill("#qs-log-search", pattern)
    expect(pg.locator("#qs-log-info")).to_have_text(f"{len(want)} matching lines")
    pg.wait_for_timeout(200)
    shown = visible_lines(pg)
    assert shown and shown == want[-len(shown) :]
    pg.fill("#qs-log-search", "Sig=(EAT")
    note = pg.locator("#qs-search-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Not a valid regular expression")
    expect(pg.locator("#qs-log-info")).to_have_text(f"{len(want)} matching lines")
    expect(pg.locator("#banner")).to_be_hidden()
    # The API refuses it in one line too (a 400, not a 500).
    bad = urllib.parse.urlencode([("q", "Sig=(EAT")])
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{qs_app.url}/api/qs/log?{bad}", timeout=10)
    assert err.value.code == 400 and "not a valid regular expression" in err.value.read().decode()
    pg.fill("#qs-log-search", "")
    expect(note).to_be_hidden()
    assert not console.errors, console.errors
