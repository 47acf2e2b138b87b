"""/api/qs/flow: the sequence diagram and state timeline views, live and stored, the
window filter, the bounds and the exports (equal to `mcuprof qs seq`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mcuprof.cli import main as mcuprof_main
from mcuprof.protocol.qs import decode_capture
from mcuprof.qs import flowlog
from mcuprof.qs.rtc import rtc_steps
from mcuprof.web.app import create_app
from mcuprof.web.routes import qs_flow
from mcuprof.web.settings import Settings as AppSettings

from .test_monitor_api import BASE, feed_live, store_session

SEQ = Path(__file__).parent / "seq"
LISTS = {p.name: p.read_bytes().split(b"\n", 1)[0][3:].decode() for p in SEQ.glob("*.seq")}
G = LISTS["dpp-posix64.1.seq"]


@pytest.fixture(scope="module")
def client(tmp_path_factory, capture) -> Iterator[TestClient]:
    """One app for the module (the app's start is most of a test's time): the live
    monitor fed the reference capture, and the same capture stored as a session."""
    data = tmp_path_factory.mktemp("flow") / "data"
    app = create_app(AppSettings(data_dir=data, http_port=8000, autoconnect=False))
    with TestClient(app, base_url=BASE) as c:
        feed_live(c, capture)
        c.sid = store_session(c, capture)  # type: ignore[attr-defined]
        yield c


def _no_version(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "version"}


def test_rows_lanes_and_dispatch_steps(client, capture):
    events, _ = decode_capture(capture)
    flow = client.get("/api/qs/flow").json()
    # Default lanes: the objects that get events, by name (DPP: the five Philos, Table).
    assert flow["names"] == [f"Philo_inst[{k}]" for k in range(5)] + ["Table_inst"]
    assert flow["cut"] == 0 and flow["items_dropped"] == 0
    assert {o["name"] for o in flow["objects"]} >= set(flow["names"])
    shapes = {r["s"] for r in flow["rows"]}
    assert {"arrow", "publish", "state", "dispatch", "time_event"} <= shapes
    # Each dispatch row carries its RTC step's duration: the step the flame graph shows.
    steps = {s.index: s for s in rtc_steps(events).steps}
    dispatches = [r for r in flow["rows"] if r["s"] == "dispatch"]
    assert len(dispatches) == len(steps) == 107
    for r in dispatches:
        s = steps[r["i"]]
        assert (r["obj"], r["l"], r["state"], r["ts"], r["dur"]) == (
            s.obj, s.signal, s.state, s.start, float(s.duration)
        )  # fmt: skip
    states = client.get("/api/qs/flow/states").json()
    assert [lane["obj"] for lane in states["lanes"]] == flow["names"]
    table = next(lane for lane in states["lanes"] if lane["obj"] == "Table_inst")["spans"]
    assert table[0][2] == "Table_serving" and table[0][1] == 1537722241.0
    assert table[0][4] == "serving"  # the short name, as QSPY's -g writes <serving>
    assert table[-1][1] is None  # still in its last state
    assert states["end"] == client.get("/api/qs/summary").json()["last_t"]


def test_window_filter_changes_the_items(client):
    whole = client.get("/api/qs/flow").json()["rows"]
    t0, t1 = whole[20]["t"], whole[60]["t"]
    part = client.get("/api/qs/flow", params={"t0": t0, "t1": t1}).json()
    rows = part["rows"]
    assert part["window"] == [t0, t1]
    assert 40 <= len(rows) < len(whole)
    assert all(t0 <= r["t"] <= t1 for r in rows if r["t"] is not None)
    assert [r["i"] for r in rows if r["t"] is not None] == [
        r["i"] for r in whole if r["t"] is not None and t0 <= r["t"] <= t1
    ]
    spans = client.get("/api/qs/flow/states", params={"t0": t0, "t1": t1}).json()["lanes"]
    every = client.get("/api/qs/flow/states").json()["lanes"]
    assert sum(len(lane["spans"]) for lane in spans) < sum(len(lane["spans"]) for lane in every)
    end = client.get("/api/qs/summary").json()["last_t"]
    for lane in spans:
        for a, b, _state, _index, _label in lane["spans"]:
            assert a <= t1 and (b if b is not None else end) >= t0
    # The export of a window is that window's diagram.
    text = client.get("/api/qs/flow/export.seq", params={"g": G, "t0": t0, "t1": t1})
    whole_text = client.get("/api/qs/flow/export.seq", params={"g": G})
    assert 0 < len(text.content) < len(whole_text.content)
    assert f"-{t0:.0f}-{t1:.0f}us.seq" in text.headers["content-disposition"]


def test_stored_and_live_give_the_same(client):
    sid = client.sid
    for path, params in (
        ("/api/qs/flow", {}),
        ("/api/qs/flow", {"g": "Table_inst,?,Philo_inst[2]"}),
        ("/api/qs/flow/states", {}),
        ("/api/qs/flow/states", {"t0": 1530000000, "t1": 1560000000}),
    ):
        live = client.get(path, params=params).json()
        stored = client.get(path, params=params | {"session": sid}).json()
        assert live.get("rows") or live.get("lanes")
        assert _no_version(stored) == _no_version(live)


@pytest.mark.parametrize("golden", ["dpp-posix64.1.seq", "dpp-posix64.5.seq"])
def test_export_is_mcuprof_qs_seq(client, ref_dir, tmp_path, golden):
    sid = client.sid
    g = LISTS[golden]
    out = tmp_path / "cli.seq"
    assert (
        mcuprof_main(["qs", "seq", str(ref_dir / "dpp-posix64.bin"), "-g", g, "-o", str(out)]) == 0
    )
    live = client.get("/api/qs/flow/export.seq", params={"g": g})
    stored = client.get("/api/qs/flow/export.seq", params={"g": g, "session": sid})
    assert live.content == stored.content == out.read_bytes() == (SEQ / golden).read_bytes()
    assert "-session" not in live.headers["content-disposition"]
    assert f"-session{sid}-DPP_on_QS-seq.seq" in stored.headers["content-disposition"]
    svg = tmp_path / "cli.svg"
    capture = str(ref_dir / "dpp-posix64.bin")
    assert mcuprof_main(["qs", "seq", capture, "-g", g, "--svg", "-o", str(svg)]) == 0
    got = client.get("/api/qs/flow/export.svg", params={"g": g, "session": sid})
    assert got.headers["content-type"] == "image/svg+xml"
    assert got.content == svg.read_bytes()


def test_bad_lists_get_one_line(client):
    r = client.get("/api/qs/flow", params={"g": ",".join("abcdefghijk")})
    assert (
        r.status_code == 400 and r.json()["error"] == "g: the object list has 11 names, at most 10"
    )
    r = client.get("/api/qs/flow/export.seq", params={"g": "x" * 2000})
    assert r.status_code == 422
    r = client.get("/api/qs/flow", params={"t0": 5})
    assert r.status_code == 400 and "t1" in r.json()["error"]


def test_bounds_are_counted(client, capture, monkeypatch):
    """Last in the module: it refills the shared app's live monitor."""
    monkeypatch.setattr(qs_flow, "FLOW_ROWS_MAX", 50)
    monkeypatch.setattr(qs_flow, "STATE_SPANS_PAGE", 10)
    monitor = client.app.state.qs_monitor
    monitor.qs_reset()
    monitor.flow = flowlog.FlowLog(items_max=100, spans_max=5)
    events, _ = decode_capture(capture)
    monitor.qs_events(events)
    flow = client.get("/api/qs/flow").json()
    assert len(flow["rows"]) == 50 and flow["cut"] > 0
    assert flow["items"] == 100 and flow["items_dropped"] == 309 - 100
    states = client.get("/api/qs/flow/states").json()
    assert sum(len(lane["spans"]) for lane in states["lanes"]) == 10
    assert states["cut"] == 5 + 6 - 10 and states["dropped"] == 39 - 5
    text = client.get("/api/qs/flow/export.seq", params={"g": G}).text
    assert text.endswith("a stored session exports them all\n")
    assert "209 earlier events were no longer kept" in text
