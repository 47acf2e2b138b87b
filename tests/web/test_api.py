"""Every JSON route, against the real simulated device and the sample ELF."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from mcuprof.protocol import Metadata, decode_stream

from .conftest import ORIGIN, capture, sample_function_names, wait_for

POST = {"Origin": ORIGIN}


def test_page_and_assets_are_served_without_a_cdn(idle_client: TestClient) -> None:
    page = idle_client.get("/")
    assert page.status_code == 200
    html = page.text
    # Every view draws on its own canvas: the page loads no chart library.
    assert "plotly" not in html.lower()
    assert "https://" not in html and "http://" not in html
    for name in ("Start", "Stop", "Reset buffers", "Refresh status", "Connect", "Disconnect"):
        assert f">{name}</button>" in html
    plotly = idle_client.get("/vendor/plotly.min.js")
    assert plotly.status_code == 200
    assert plotly.headers["content-type"].startswith("text/javascript")
    assert len(plotly.content) > 1_000_000
    for asset in (
        "js/main.js",
        "js/flame.js",
        "js/flamecanvas.js",
        "js/timeline.js",
        "css/app.css",
    ):
        assert idle_client.get(f"/static/{asset}").status_code == 200, asset
    assert idle_client.get("/static/../backend/mcuprof/web/app.py").status_code == 404


def test_state_after_autoconnect_shows_the_simulated_device(client: TestClient) -> None:
    state = client.get("/api/state").json()
    assert state["connected"] is True
    device = state["device"]
    assert device["simulated"] is True and device["label"] == "Simulated device"
    assert device["fw_version"]
    assert device["mcu_clock_hz"] > 0 and device["timer_freq"] > 0
    assert device["build_check"] == {"state": "match", "message": "ELF matches firmware"}
    assert state["elf"]["kind"] == "sample"
    assert state["health"]["state"] == "ready"


def test_ports_lists_the_simulated_device(idle_client: TestClient) -> None:
    data = idle_client.get("/api/ports").json()
    assert data["simulated"] == {"port": "sim://", "label": "Simulated device"}
    assert isinstance(data["ports"], list)
    for port in data["ports"]:
        assert set(port) == {"device", "description", "vid_pid"}


def test_full_capture_through_every_view(client: TestClient) -> None:
    names = sample_function_names()
    capture(client, 300)
    r = client.post("/api/stop", headers=POST)
    assert r.status_code == 200 and r.json()["health"]["state"] == "ready"

    flame = client.get("/api/flame").json()
    assert flame["parent"][0] == -1 and all(
        0 <= p < i for i, p in enumerate(flame["parent"][1:], 1)
    )
    assert len(flame["key"]) == len(set(flame["key"])) == flame["nodes"]
    assert set(flame["names"]) & names
    assert flame["nodes"] <= 3000
    small = client.get("/api/flame", params={"max_nodes": 12}).json()
    assert small["nodes"] <= 12

    funcs = client.get("/api/functions").json()["functions"]
    assert funcs and {f["name"] for f in funcs} <= names | {"[unknown]"}
    row = funcs[0]
    for key in (
        "label",
        "file",
        "line",
        "calls",
        "total_us",
        "self_us",
        "mean_us",
        "min_us",
        "max_us",
        "pct",
    ):
        assert key in row
    assert row["min_us"] <= row["mean_us"] <= row["max_us"]

    for mode in ("top-down", "bottom-up"):
        tree = client.get("/api/tree", params={"mode": mode}).json()
        assert tree["mode"] == mode and tree["root"]["k"]
    assert client.get("/api/tree", params={"mode": "sideways"}).status_code == 422

    state = client.get("/api/state").json()
    t0, t1 = state["range"]
    line = client.get("/api/timeline", params={"width": 400}).json()
    assert line["empty"] is False and line["range"] == [t0, t1]
    assert line["names"] and set(line["names"]) & names
    assert len(line["start_us"]) == len(line["dur_us"]) == len(line["depth"]) == len(line["frame"])
    # Level of detail: a narrow window at the same width never returns more boxes than calls.
    zoom = client.get(
        "/api/timeline", params={"t0": t0, "t1": t0 + (t1 - t0) / 10, "width": 400}
    ).json()
    assert zoom["t0_us"] == t0 and zoom["records"] <= line["records"]

    # A time window filters the other views.
    mid = t0 + (t1 - t0) / 2
    window = {"t0": t0, "t1": mid}
    part = client.get("/api/functions", params=window).json()
    whole = client.get("/api/functions").json()
    assert sum(f["calls"] for f in part["functions"]) < sum(f["calls"] for f in whole["functions"])
    assert client.get("/api/flame", params=window).json()["window"] == [t0, mid]
    assert client.get("/api/tree", params=window).json()["window"] == [t0, mid]
    assert client.get("/api/flame", params={"t0": mid, "t1": t0}).status_code == 400
    assert client.get("/api/flame", params={"t0": t0}).status_code == 400


def test_exports_carry_names_version_and_time(client: TestClient) -> None:
    names = sample_function_names()
    capture(client, 300)
    assert client.post("/api/stop", headers=POST).status_code == 200
    version = client.get("/api/state").json()["device"]["fw_version"]
    safe = re.sub(r"[^\w.-]", "_", version)
    pattern = re.compile(rf'attachment; filename="mcuprof-{re.escape(safe)}-\d{{8}}-\d{{6}}(\.|-)')
    bodies = {}
    for fmt in ("svg", "folded", "speedscope", "chrome", "csv", "callgrind", "html", "raw"):
        r = client.get(f"/api/export/{fmt}")
        assert r.status_code == 200, (fmt, r.text[:200])
        assert pattern.match(r.headers["content-disposition"]), r.headers["content-disposition"]
        bodies[fmt] = r.content
    folded = bodies["folded"].decode()
    assert any(n in folded for n in names)
    for line in folded.splitlines():
        stack, value = line.rsplit(" ", 1)
        assert int(value) > 0 and stack
    assert b"<svg" in bodies["svg"] and any(n.encode() in bodies["svg"] for n in names)
    json.loads(bodies["speedscope"])
    json.loads(bodies["chrome"])
    assert bodies["csv"].splitlines()[0]
    html = bodies["html"]
    # Offline, and drawn by the page's own flame component; titled like the SVG.
    assert b"class FlameCanvas" in html and b"<script src" not in html
    assert b"import " not in html.split(b"<script>")[1].split(b"const data")[0][:200]
    for body in (html, bodies["svg"]):
        assert f"firmware {version}".encode() in body and b"whole capture" in body
    assert any(json.dumps(n).encode() in html for n in names)
    events, stats = decode_stream(bodies["raw"])
    assert isinstance(events[0], Metadata) and events[0].fw_version == version
    assert stats.records >= 300
    windowed = client.get("/api/export/folded", params={"t0": 0, "t1": 1e15})
    assert windowed.status_code == 200
    assert client.get("/api/export/pdf").status_code == 400
    # Issue 35: a window of ±1e308 made a 650-character download name.
    huge = client.get("/api/export/folded", params={"t0": -1e308, "t1": 1e308})
    assert huge.status_code == 400
    assert huge.json()["error"] == "the time window must lie within ±1e+18 µs"


def test_exports_before_any_capture_are_refused_politely(idle_client: TestClient) -> None:
    for fmt in ("svg", "folded", "raw", "html"):
        r = idle_client.get(f"/api/export/{fmt}")
        assert r.status_code == 400
        assert "Start" in r.json()["error"]


def test_commands_without_a_device_say_so(idle_client: TestClient) -> None:
    for path in ("/api/start", "/api/stop", "/api/reset", "/api/status"):
        r = idle_client.post(path, headers=POST)
        assert r.status_code == 400
        assert "not connected" in r.json()["error"]


def test_connect_disconnect_and_errors(idle_client: TestClient) -> None:
    r = idle_client.post("/api/connect", json={"port": "sim://", "baud": 115200}, headers=POST)
    assert r.status_code == 200, r.text
    assert r.json()["connected"] is True
    again = idle_client.post("/api/connect", json={"port": "sim://"}, headers=POST)
    assert again.status_code == 400 and "already connected" in again.json()["error"]
    status = idle_client.post("/api/status", headers=POST)
    assert status.status_code == 200 and status.json()["status"]["is_profiling"] is False
    assert idle_client.post("/api/reset", headers=POST).status_code == 200
    r = idle_client.post("/api/disconnect", headers=POST)
    assert r.status_code == 200 and r.json()["connected"] is False
    log = [e["message"] for e in idle_client.get("/api/log").json()["entries"]]
    assert any("connected" in m for m in log) and "disconnected" in log


@pytest.mark.parametrize(
    ("port", "needle"),
    [
        ("/dev/does-not-exist", "no such serial port"),
        ("http://evil.example/", "not allowed"),
        ("spy:///dev/ttyS0?file=/tmp/x", "not allowed"),
        ("/etc/passwd", "not a serial port"),
        ("sim://?elf=/etc/hostname", "command line"),
        ("sim://?bogus=1", "unknown sim:// option"),
        ("socket://127.0.0.1:1", "127.0.0.1:1"),
    ],
)
def test_bad_ports_give_one_line_errors(idle_client: TestClient, port: str, needle: str) -> None:
    r = idle_client.post("/api/connect", json={"port": port}, headers=POST)
    assert r.status_code == 400, r.text
    message = r.json()["error"]
    assert needle in message and "\n" not in message
    assert idle_client.get("/api/state").json()["connected"] is False


def test_device_not_answering_is_reported(idle_client: TestClient) -> None:
    r = idle_client.post(
        "/api/connect", json={"port": "sim://?mute=GET_METADATA&boot=0"}, headers=POST
    )
    assert r.status_code == 400
    assert "METADATA" in r.json()["error"]
    errors = [e for e in idle_client.get("/api/log").json()["entries"] if e["level"] == "error"]
    assert errors


def test_nack_is_reported_in_the_page(idle_client: TestClient) -> None:
    r = idle_client.post("/api/connect", json={"port": "sim://?nack=START"}, headers=POST)
    assert r.status_code == 200, r.text
    r = idle_client.post("/api/start", headers=POST)
    assert r.status_code == 400
    assert "NACK" in r.json()["error"]
    log = idle_client.get("/api/log").json()["entries"]
    assert any("NACK" in e["message"] for e in log)


def test_build_id_mismatch_is_flagged(idle_client: TestClient) -> None:
    r = idle_client.post("/api/connect", json={"port": "sim://?mismatch=1"}, headers=POST)
    assert r.status_code == 200
    check = r.json()["device"]["build_check"]
    assert check["state"] == "mismatch"
    assert re.fullmatch(
        r"ELF does not match the firmware \(device 0x[0-9a-f]{8}, ELF 0x[0-9a-f]{8}\)",
        check["message"],
    )


def test_bad_request_bodies_are_one_line(idle_client: TestClient) -> None:
    r = idle_client.post(
        "/api/connect", content=b"{not json", headers={**POST, "Content-Type": "application/json"}
    )
    assert r.status_code == 422
    assert r.json()["error"].startswith("bad request")
    r = idle_client.post("/api/connect", json={"port": "sim://", "baud": 10}, headers=POST)
    assert r.status_code == 400 and "baud" in r.json()["error"]


def test_log_since_and_metrics(idle_client: TestClient) -> None:
    idle_client.post("/api/connect", json={"port": "/dev/nope"}, headers=POST)
    idle_client.post("/api/connect", json={"port": "sim://"}, headers=POST)
    entries = idle_client.get("/api/log").json()["entries"]
    assert entries
    later = idle_client.get("/api/log", params={"since": entries[0]["seq"]}).json()["entries"]
    assert later == entries[1:]
    metrics = idle_client.get("/api/metrics").json()
    assert {"updates", "latency_p50_ms", "latency_p95_ms", "frame_p95_ms"} <= set(metrics)


def test_sessions_router_is_mounted_and_records_captures(client: TestClient) -> None:
    capture(client, 100)
    client.post("/api/stop", headers=POST)
    sessions = client.get("/api/sessions").json()["sessions"]
    assert sessions and sessions[0]["status"] == "complete"
    assert sessions[0]["raw_bytes"] > 0


def test_websocket_pushes_updates_with_the_flame_graph(client: TestClient) -> None:
    names = sample_function_names()
    with client.websocket_connect("ws://127.0.0.1:8000/ws", headers=POST) as ws:
        assert json.loads(ws.receive_text())["type"] == "hello"
        capture(client, 100)
        seen = None
        for _ in range(200):
            msg = json.loads(ws.receive_text())
            if msg["type"] == "update" and msg.get("flame") and set(msg["flame"]["names"]) & names:
                seen = msg
                break
        assert seen is not None
        assert seen["health"]["state"] == "profiling"
        assert seen["flame"]["nodes"] <= 3000
        assert "recv_ts" in seen
        ws.send_text(
            json.dumps(
                {"type": "drawn", "seq": seen["seq"], "recv_ts": seen["recv_ts"], "frame_ms": 5}
            )
        )
        ws.send_text("not json")  # ignored, not fatal
        wait_for(
            lambda: client.get("/api/metrics").json()["latency_samples"] >= 1, "latency sample"
        )
    assert client.get("/api/metrics").json()["frame_p50_ms"] == 5


def test_overflow_warning_lights_while_overflows_grow(idle_client: TestClient) -> None:
    # A firmware far faster than a 9600-baud link: the device ring buffer overflows.
    port = "sim://?rate=20000&baud=9600&buffer=64"
    assert idle_client.post("/api/connect", json={"port": port}, headers=POST).status_code == 200
    assert idle_client.post("/api/start", headers=POST).status_code == 200
    health = wait_for(
        lambda: (h := idle_client.get("/api/state").json()["health"])["overflow_warning"] and h,
        "the overflow warning",
    )
    assert health["overflows"] > 0
    log = idle_client.get("/api/log").json()["entries"]
    assert any("overflow" in e["message"] and e["level"] == "warning" for e in log)


def test_every_tab_gets_the_same_live_updates(client: TestClient) -> None:
    url = "ws://127.0.0.1:8000/ws"
    with (
        client.websocket_connect(url, headers=POST) as a,
        client.websocket_connect(url, headers=POST) as b,
    ):
        assert json.loads(a.receive_text())["type"] == "hello"
        assert json.loads(b.receive_text())["type"] == "hello"
        capture(client, 50)
        seqs = []
        for ws in (a, b):
            while True:
                msg = json.loads(ws.receive_text())
                if msg.get("flame") and msg["flame"]["nodes"] > 1:
                    seqs.append(msg["seq"])
                    break
        assert all(s > 0 for s in seqs)


def test_binary_frames_on_the_websocket_are_ignored(client: TestClient) -> None:
    with client.websocket_connect("ws://127.0.0.1:8000/ws", headers=POST) as ws:
        assert json.loads(ws.receive_text())["type"] == "hello"
        ws.send_bytes(b"\x00\x01")
        ws.send_text(json.dumps({"type": "drawn", "recv_ts": 0, "frame_ms": 1}))
        wait_for(lambda: client.get("/api/metrics").json()["frame_samples"] >= 1, "the report")


def test_replaying_a_stored_session_feeds_the_live_views(client: TestClient) -> None:
    capture(client, 200)
    client.post("/api/stop", headers=POST)
    sid = client.get("/api/sessions").json()["sessions"][0]["id"]
    r = client.post(f"/api/sessions/{sid}/replay", json={"speed": "max"}, headers=POST)
    assert r.status_code == 200, r.text
    assert r.json()["replay"]["label"].startswith("Replay of session")
    # At max speed the replay may be over by the first look: it ends by itself, its
    # records stay in the views and the simulator is connected again.
    state = wait_for(
        lambda: (
            (s := client.get("/api/state").json())["health"]["profile_records"] >= 200
            and s["health"]["replay"] is None
            and s["connected"]
            and s
        ),
        "the replayed records, and the replay's end",
    )
    assert state["device"]["replay"] is False and state["device"]["simulated"] is True
    log = [e["message"] for e in client.get("/api/log").json()["entries"]]
    assert any(m.startswith("Replay of session") for m in log)
    assert len(client.get("/api/sessions").json()["sessions"]) == 1  # not recorded again
