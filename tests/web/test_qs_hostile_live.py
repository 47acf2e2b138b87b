"""A live QS target on listen:// that sends what issue 26 found hostile: the session
records it, Stop answers, and the stored session can be read and deleted."""

from __future__ import annotations

import socket
import struct

from mcuprof.protocol.qs import encode_frame

from .conftest import ORIGIN, wait_for

POST = {"Origin": ORIGIN}
# A target info claiming 9-byte timestamps (F1), then QS_QF_RUN, a 0x7D flood (F2)
# ended by a flag, and one RTC step decoded with the sizes in force (QSPY's defaults).
INFO = bytes([0xFF, 0xE4, 0x02, 0x22, 0x41, 0x22, 0x44, 9, 8, 0x13, 0, 0, 0, 1, 1, 26])
HOSTILE = encode_frame(1, 64, INFO) + encode_frame(2, 70) + b"\x7d" * 4000 + b"\x7e"
HOSTILE += encode_frame(3, 8, struct.pack("<IHII", 100, 4, 0x100, 0x1000))  # dispatch
HOSTILE += encode_frame(4, 5, struct.pack("<IHII", 170, 4, 0x100, 0x1000))  # its end


def test_hostile_target_on_listen_port_stops_and_its_session_reads(make_client) -> None:
    """F1 live: Stop returned 500, the session stayed 'recording' and could not be
    deleted (409)."""
    client = make_client(autoconnect=False)
    r = client.post("/api/connect", json={"port": "listen://127.0.0.1:0"}, headers=POST)
    assert r.status_code == 200, r.text
    host, port = r.json()["device"]["listening_on"].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as target:
        wait_for(lambda: client.get("/api/state").json()["health"]["state"] == "ready", "target")
        assert client.post("/api/start", headers=POST).status_code == 200
        target.sendall(HOSTILE)
        health = lambda: client.get("/api/state").json()["health"]  # noqa: E731
        wait_for(lambda: health()["qs"]["rtc_steps"] == 1, "the step", 20)
        r = client.post("/api/stop", headers=POST)
        assert r.status_code == 200, r.text
    qs = health()["qs"]
    assert qs["bad_frames"] == 1 and qs["frames"] == 4  # the flood: one "too long"
    assert health()["malformed"] >= 1  # the target info
    sessions = client.get("/api/sessions").json()["sessions"]
    (session,) = sessions
    assert session["status"] != "recording", session
    sid = session["id"]
    assert client.get(f"/api/sessions/{sid}").status_code == 200
    assert client.get(f"/api/sessions/{sid}/raw").content.endswith(HOSTILE)
    assert client.delete(f"/api/sessions/{sid}", headers=POST).status_code == 200
