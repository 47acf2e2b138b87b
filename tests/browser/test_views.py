"""Issue 10 in a real Chromium: numbers agree across views, the flame graph and timeline
behave like speedscope and Perfetto, replay ends cleanly, exports carry a title; and
screenshots of every view at three window sizes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .conftest import FLAME_READY, SHOTS, capture

pytestmark = pytest.mark.browser

MCUPROF = [sys.executable, "-m", "mcuprof"]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _capture(pg: Page, url: str, ms: int = 2500) -> None:
    pg.goto(url)
    capture(pg, ms)


def test_window_applies_to_the_flame_graph_and_shares_agree(server, page) -> None:
    pg, console = page
    _capture(pg, server.url)
    t0, t1 = pg.evaluate("window.mcuprof.state.range")
    win = [t0 + (t1 - t0) * 0.25, t0 + (t1 - t0) * 0.6]
    pg.evaluate("(w) => window.mcuprof.setWindow(w)", win)
    pg.wait_for_function(
        "(w) => { const d = window.mcuprof.flame.data; return d && d.raw.window"
        " && Math.abs(d.raw.window[0] - w[0]) < 1e-3; }",
        arg=win,
    )
    flame = pg.evaluate("window.mcuprof.flame.data.raw")
    server_side = _get(f"{server.url}api/functions?t0={win[0]}&t1={win[1]}")
    # The windowed flame total is the server's window total (profiled time).
    assert abs(flame["total_us"] - server_side["profiled_us"]) <= 1e-3 * flame["nodes"]
    expect(pg.locator("#flame-info")).to_contain_text("profiled")
    expect(pg.locator("#flame-foot")).to_contain_text("Coverage")
    expect(pg.locator("#flame-foot")).to_contain_text("of the window")
    # Frames 60 px wide or more carry their name.
    rects = pg.evaluate("window.mcuprof.flame.rects")
    wide = [r for r in rects if r["w"] >= 60]
    assert wide and all(r["text"] for r in wide), [r for r in wide if not r["text"]]
    assert all(r["text"].endswith("…") or r["text"] for r in wide)

    # One function: the flame tooltip, the Functions row and the bottom-up tree agree.
    top = max(server_side["functions"], key=lambda f: f["total_us"])
    frame = next(r for r in rects if r["fid"] == top["fid"] and r["w"] > 30)
    box = pg.locator("#flame-plot").bounding_box()
    assert box is not None
    pg.mouse.move(box["x"] + frame["x"] + frame["w"] / 2, box["y"] + frame["y"] + 5)
    tip = pg.locator("#flame-tip")
    expect(tip).to_be_visible()
    tip_text = tip.inner_text()
    m = re.search(r"Function, all frames: total ([\d.]+)% · self ([\d.]+)%", tip_text)
    assert m, tip_text
    assert "100% = profiled time of the window" in tip_text
    pg.get_by_role("tab", name="Functions").click()
    row = pg.locator(f"#functions-table tbody tr[data-fid='{top['fid']}']")
    expect(row).to_be_visible()
    cells = row.locator("td").all_inner_texts()
    # the shares are the last two columns (P99 came before Max)
    assert cells[-2].endswith(f"{m.group(1)}%") and cells[-1] == f"{m.group(2)}%", (
        cells,
        m.groups(),
    )
    pg.get_by_role("tab", name="Call tree").click()
    pg.get_by_role("button", name="Bottom-up (callers)").click()
    tree_row = pg.locator("#tree-table tbody tr", has_text=top["name"].split("(")[0]).first
    expect(tree_row).to_be_visible()
    tcells = tree_row.locator("td").all_inner_texts()
    assert tcells[4].endswith(f"{m.group(1)}%") and tcells[5] == f"{m.group(2)}%", tcells
    assert console.errors == []


def test_live_updates_continue_while_a_window_is_set(server, page) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Start", exact=True).click()
    expect(pg.get_by_role("button", name="Stop", exact=True)).to_be_enabled()
    pg.wait_for_function(FLAME_READY, timeout=10_000)
    pg.wait_for_function("() => window.mcuprof.state.range")
    t0 = pg.evaluate("window.mcuprof.state.range[0]")
    # A window reaching past the present: new records fall in it.
    pg.evaluate("(t) => window.mcuprof.setWindow([t, t + 3600e6])", t0)
    pg.wait_for_function("() => window.mcuprof.flame.data && window.mcuprof.flame.data.raw.window")
    first = pg.evaluate("window.mcuprof.flame.data.raw.total_us")
    pg.wait_for_function(
        "(v) => window.mcuprof.flame.data.raw.total_us > v * 1.2", arg=first, timeout=10_000
    )
    pg.get_by_role("button", name="Stop", exact=True).click()
    assert console.errors == []


def test_flame_modes_zoom_sandwich_and_selection(server, page) -> None:
    pg, console = page
    _capture(pg, server.url)
    # One colour per function, stable across a redraw.
    colours: dict[str, set[str]] = {}
    for r in pg.evaluate("window.mcuprof.flame.rects"):
        if r["fid"] >= 0:
            colours.setdefault(r["name"], set()).add(r["color"])
    assert colours and all(len(c) == 1 for c in colours.values()), colours
    pg.get_by_role("button", name="Root to bottom").click()
    expect(pg.get_by_role("button", name="Root to top")).to_be_visible()
    flipped = pg.evaluate("window.mcuprof.flame.rects")
    root = next(r for r in flipped if r["i"] == 0)
    assert root["y"] + root["h"] >= pg.evaluate("window.mcuprof.flame.canvas.clientHeight") - 2
    for r in flipped:
        if r["fid"] >= 0:
            assert r["color"] in colours[r["name"]]
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / "20-flame-root-at-bottom.png"))
    pg.get_by_role("button", name="Root to top").click()

    pg.get_by_role("button", name="Bottom-up", exact=True).click()
    pg.wait_for_function("() => window.mcuprof.flame.data.raw.mode === 'bottom-up'")
    pg.screenshot(path=str(SHOTS / "21-flame-bottom-up.png"))

    # Functions row click selects the function in the flame graph and timeline.
    pg.get_by_role("tab", name="Functions").click()
    row = pg.locator("#functions-table tbody tr").first
    fid = int(row.get_attribute("data-fid") or "-1")
    row.click()
    expect(row).to_have_class(re.compile("selected"))
    assert pg.evaluate("window.mcuprof.flame.selectedFid") == fid

    pg.get_by_role("tab", name="Flame graph").click()
    pg.get_by_role("button", name="Sandwich").click()
    pg.wait_for_function("() => window.mcuprof.sandwich.callees.rects.length > 0")
    callers = pg.evaluate("window.mcuprof.sandwich.callers.rects")
    callees = pg.evaluate("window.mcuprof.sandwich.callees.rects")
    assert callers[0]["fid"] == fid == callees[0]["fid"]
    expect(pg.locator("#sw-name")).not_to_have_text("—")
    pg.screenshot(path=str(SHOTS / "22-flame-sandwich.png"))

    pg.get_by_role("tab", name="Timeline").click()
    pg.wait_for_function("() => window.mcuprof.timeline.rects().length > 0")
    boxes = pg.evaluate("window.mcuprof.timeline.rects()")
    assert any(b["fid"] == fid for b in boxes)
    assert console.errors == []


def test_timeline_details_keys_axis_and_overview(server, page) -> None:
    pg, console = page
    _capture(pg, server.url, ms=2000)
    pg.get_by_role("tab", name="Timeline").click()
    pg.wait_for_function("() => window.mcuprof.timeline.rects().length > 0")
    full = pg.evaluate("window.mcuprof.timeline.view()")
    pg.mouse.move(*_centre(pg, "#timeline-plot"))
    for _ in range(12):
        pg.keyboard.press("w")
    pg.wait_for_function(
        "(f) => { const v = window.mcuprof.timeline.view();"
        " return v[1] - v[0] < (f[1] - f[0]) / 5; }",
        arg=full,
    )
    before = pg.evaluate("window.mcuprof.timeline.view()")
    pg.keyboard.press("d")
    after = pg.evaluate("window.mcuprof.timeline.view()")
    assert after[0] > before[0]
    pg.wait_for_function(
        "() => window.mcuprof.timeline.rects().some(r => r.count === 1 && r.w >= 60)",
        timeout=5000,
    )
    boxes = pg.evaluate("window.mcuprof.timeline.rects()")
    wide = [b for b in boxes if b["w"] >= 60 and b["count"] == 1]
    assert all(b["text"] for b in wide), wide
    # Merged boxes keep the colour of their longest call (a name, not grey).
    box = max(wide, key=lambda b: b["w"])
    canvas = pg.locator("#timeline-plot").bounding_box()
    assert canvas is not None
    pg.mouse.click(canvas["x"] + box["x"] + box["w"] / 2, canvas["y"] + box["y"] + box["h"] / 2)
    details = pg.locator("#timeline-details")
    expect(details).to_be_visible()
    for field in ("File", "Start", "Duration", "Self", "Depth", "Call path"):
        expect(details).to_contain_text(field)
    d = pg.evaluate("window.mcuprof.timeline.details")
    assert d["name"] == box["name"] and d["depth"] == box["depth"]
    assert 0 <= d["self_us"] <= d["dur_us"] and len(d["path"]) == d["depth"]
    assert re.search(r"\d (s|ms|µs)$", details.locator("dd").nth(2).inner_text())
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / "23-timeline-details.png"))
    assert console.errors == []


def _centre(pg: Page, sel: str) -> tuple[float, float]:
    box = pg.locator(sel).bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + min(box["height"] / 2, 120)


def test_counts_agree_across_list_detail_cli_and_log(server, page) -> None:
    pg, console = page
    _capture(pg, server.url, ms=1500)
    pg.get_by_role("tab", name="Log").click()
    stored = pg.locator("#log-table tbody tr", has_text="stored in session").last
    expect(stored).to_be_visible()
    m = re.search(r"([\d,]+) records stored in session (\d+)", stored.inner_text())
    assert m, stored.inner_text()
    logged, sid = int(m.group(1).replace(",", "")), int(m.group(2))
    pg.get_by_role("tab", name="Sessions").click()
    row = pg.locator(f"#sessions-table tr[data-id='{sid}']")
    expect(row).to_be_visible()
    listed = int(re.sub(r"[^\d]", "", row.locator("td").nth(_records_column(pg)).inner_text()))
    row.click()
    expect(pg.locator("#sess-detail")).to_contain_text("records")
    detail = pg.locator("#sess-detail").inner_text()
    dm = re.search(r"([\d,]+) records over", detail)
    assert dm, detail
    cli = json.loads(
        subprocess.run(
            [*MCUPROF, "sessions", "show", str(sid), "--json", "--data-dir", str(server.data_dir)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert logged == listed == int(dm.group(1).replace(",", "")) == cli["capture"]["records"]
    assert console.errors == []


def _records_column(pg: Page) -> int:
    heads = pg.locator("#sessions-table thead th").all_inner_texts()
    return next(i for i, h in enumerate(heads) if h.strip().lower().startswith("records"))


def test_garbage_import_is_refused_and_replay_ends_cleanly(server, page) -> None:
    pg, console = page
    _capture(pg, server.url, ms=1500)
    pg.get_by_role("tab", name="Sessions").click()
    rows = pg.locator("#sessions-table tbody tr")
    # The server's list, and the table once it has caught up with it (a session stored
    # as the tab opens can reach the table a moment after its first row shows).
    count = len(_get(f"{server.url}api/sessions")["sessions"])
    expect(rows).to_have_count(count)
    pg.locator("#sess-import-file").set_input_files(
        files=[{"name": "README.md", "mimeType": "text/plain", "buffer": b"# Not a capture\n" * 40}]
    )
    banner = pg.get_by_role("alert")
    expect(banner).to_contain_text("no valid packet")
    expect(banner).to_contain_text("README.md")
    assert "\n" not in banner.locator(".banner-text").inner_text()
    expect(rows).to_have_count(count)
    assert len(_get(f"{server.url}api/sessions")["sessions"]) == count  # nothing stored
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / "24-garbage-import.png"))
    pg.locator("#banner .banner-close").click()

    # Replay: progress shown, Start disabled, then it ends by itself and the device is back.
    pg.locator("[data-speed='1x']").first.click()
    pg.locator("#sess-replay").first.click()
    expect(pg.locator("#btn-stop")).to_have_text("Stop replay")
    expect(pg.get_by_role("button", name="Start", exact=True)).to_be_disabled()
    expect(pg.locator("#replay-box")).to_be_visible()
    pg.screenshot(path=str(SHOTS / "25-replay-progress.png"))
    expect(pg.locator("#btn-stop")).to_have_text("Stop", timeout=20_000)
    expect(pg.locator("#replay-box")).to_be_hidden()
    expect(pg.locator("#conn-state")).to_contain_text("Ready · Simulated device")
    expect(pg.get_by_role("button", name="Start", exact=True)).to_be_enabled()
    expect(pg.locator("#sess-replay-stop")).to_be_hidden()
    # The stored capture, replayed into the views: its windowed flame total is the server's.
    pg.get_by_role("tab", name="Flame graph").click()
    t0, t1 = pg.evaluate("window.mcuprof.state.range")
    win = [t0 + (t1 - t0) * 0.1, t0 + (t1 - t0) * 0.5]
    pg.evaluate("(w) => window.mcuprof.setWindow(w)", win)
    pg.wait_for_function(
        "(w) => { const d = window.mcuprof.flame.data; return d && d.raw.window"
        " && Math.abs(d.raw.window[0] - w[0]) < 1e-3; }",
        arg=win,
    )
    flame_total = pg.evaluate("window.mcuprof.flame.data.raw.total_us")
    server_total = _get(f"{server.url}api/functions?t0={win[0]}&t1={win[1]}")["profiled_us"]
    assert abs(flame_total - server_total) <= 1e-3 * 3000
    pg.get_by_role("button", name="Clear time window").click()
    # Start after a replay records a real capture.
    pg.get_by_role("button", name="Start", exact=True).click()
    expect(pg.locator("#h-state")).to_have_text("profiling")
    pg.wait_for_timeout(800)
    # The state reads "ready" as soon as the link stops; the session is closed when the
    # Stop request answers.
    with pg.expect_response(lambda r: r.url.endswith("/api/stop")) as stopped:
        pg.get_by_role("button", name="Stop", exact=True).click()
    assert stopped.value.ok
    expect(pg.locator("#h-state")).to_have_text("ready")
    newest = max(_get(f"{server.url}api/sessions")["sessions"], key=lambda s: s["id"])
    assert newest["status"] == "complete" and newest["records"] > 0
    assert all("status of 4" in e for e in console.errors), console.errors


def test_exports_carry_the_title(server, page, tmp_path: Path) -> None:
    pg, console = page
    _capture(pg, server.url, ms=1500)
    fw = pg.evaluate("window.mcuprof.state.device.fw_version")
    for fmt, suffix in (("svg", ".svg"), ("html", ".html"), ("png", ".png")):
        pg.get_by_role("button", name="Export").click()
        with pg.expect_download() as dl:
            pg.locator(f"[data-export={fmt}]").click()
        path = tmp_path / f"export{suffix}"
        dl.value.save_as(path)
        if fmt == "png":
            data = path.read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
            width = int.from_bytes(data[16:20], "big")
            assert width == 3200  # 1600 px at 2x density
            continue
        text = path.read_text(encoding="utf-8")
        assert f"firmware {fw}" in text and "captured" in text and "whole capture" in text
        assert "profiled" in text
    assert console.errors == []


SIZES = ((1280, 720), (1600, 1000), (2560, 1440))
VIEWS = ("Flame graph", "Timeline", "Functions", "Call tree", "Log", "Sessions", "Compare")


def test_screenshots_of_every_view_at_three_sizes(server, page) -> None:
    """For looking at: every view at a laptop, desktop and 4K-ish size."""
    pg, console = page
    _capture(pg, server.url, ms=1500)
    _capture(pg, server.url, ms=2500)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in SIZES:
        pg.set_viewport_size({"width": width, "height": height})
        for view in VIEWS:
            pg.get_by_role("tab", name=view).click()
            if view == "Flame graph":
                pg.wait_for_function(FLAME_READY)
            if view == "Timeline":
                pg.wait_for_function("() => window.mcuprof.timeline.rects().length > 0")
            if view == "Compare":
                # Opens on the two newest non-empty sessions, already compared.
                expect(pg.locator("#cmp-functions tbody tr").first).to_be_visible(timeout=15_000)
                sessions = _get(f"{server.url}api/sessions")["sessions"]
                newest = sorted((s["id"] for s in sessions if s["records"]), reverse=True)[:2]
                expect(pg.locator("#cmp-base")).to_have_value(str(newest[1]))
                expect(pg.locator("#cmp-new")).to_have_value(str(newest[0]))
                expect(pg.locator("#cmp-legend")).to_contain_text(
                    "its change in self time per call"
                )
                # The table fits the window (it may be redrawn meanwhile: ask the page).
                pg.wait_for_function(
                    "(w) => { const t = document.getElementById('cmp-functions');"
                    " return t && t.getBoundingClientRect().right <= w + 1; }",
                    arg=width,
                )
            pg.wait_for_timeout(200)  # the last redraw settles
            slug = view.lower().replace(" ", "-")
            pg.screenshot(path=str(SHOTS / f"size-{width}x{height}-{slug}.png"))
            # Nothing spills sideways out of the page.
            assert pg.evaluate("document.documentElement.scrollWidth") <= width + 1, view
    assert console.errors == []


def test_a_mismatched_elf_is_said_in_the_banner(server, page) -> None:
    pg, console = page
    pg.goto(server.url)
    expect(pg.locator("#conn-state")).to_contain_text("Ready")
    pg.get_by_role("button", name="Disconnect", exact=True).click()
    expect(pg.locator("#conn-state")).to_contain_text("Disconnected")
    pg.get_by_label("Port", exact=True).select_option("__tcp__")
    pg.get_by_label("TCP URL").fill("sim://?mismatch=1")
    pg.get_by_role("button", name="Connect", exact=True).click()
    expect(pg.locator("#build-badge")).to_have_class(re.compile("mismatch"))
    banner = pg.locator("#banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("does not match the firmware")
    expect(banner).to_contain_text("not trustworthy")
    # The banner floats over the page: the panels below do not move.
    assert pg.evaluate("getComputedStyle(document.getElementById('banner')).position") == "fixed"
    SHOTS.mkdir(parents=True, exist_ok=True)
    pg.screenshot(path=str(SHOTS / "26-elf-mismatch-banner.png"))
    assert all("status of 4" in e for e in console.errors), console.errors
