"""``mcuprof serve --qspy-udp``: QSPY's front-end port beside the dashboard (issue 25,
point 3). Front ends drive the QS target connected in the dashboard, through
``LiveSession.control()``, and get its records while the dashboard profiles them."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mcuprof.cli import main
from tests.helpers import running_serve
from tests.qs.qsfe import FrontEnd
from tests.sources.conftest import sim_stream

from .conftest import ORIGIN, capture, wait_for

FLOOD = 5_000
HOSTILE = [
    b"\x11",  # no such QS-RX record
    b"\x04\x00\x00\x04\xff",  # a peek of 1020 bytes
    b"\x87\x00\x00\x00\x00\x00NO_SUCH_SIG\x00",
    b"\x8c",  # QSPY's clear screen
]


def _attached(client: TestClient) -> FrontEnd:
    host, port = client.app.state.qspy_udp.address
    assert host == "127.0.0.1"  # no --allow-remote: loopback only
    fe = FrontEnd(port)
    fe.send(b"\x80\x03")
    wait_for(lambda: any(p[1:2] == b"\x80" for p in fe.packets), "the attach confirmation")
    return fe


def _profiling(make_client: Callable[..., TestClient]) -> tuple[TestClient, int]:
    """A dashboard profiling the simulated QS target, and its record count so far."""
    c = make_client(port="sim://?proto=qs", qspy_udp=0)
    wait_for(lambda: c.get("/api/state").json()["connected"], "the simulated QS target")
    return c, capture(c, records=20)["health"]["profile_records"]


def _still_profiling(c: TestClient, before: int) -> dict:
    state = wait_for(
        lambda: (s := c.get("/api/state").json())["health"]["profile_records"] > before and s,
        "more records in the dashboard",
    )
    assert state["health"]["profiling"]
    return state


def test_a_front_end_gets_target_info_while_the_dashboard_profiles(
    make_client: Callable[..., TestClient],
) -> None:
    c, before = _profiling(make_client)
    fe = _attached(c)
    try:
        mark = fe.mark()
        fe.send(b"\x00")  # INFO
        infos = wait_for(lambda: [p for p in fe.binaries() if p[1] == 64], "target info")
        assert infos[0][2] == 0 and struct.unpack_from("<H", infos[0], 3)[0] == 740
        fe.wait_text(r"Trg-Ack  QS_RX_INFO", mark)
        _still_profiling(c, before)  # the same stream, meanwhile
        log = "\n".join(e["message"] for e in c.get("/api/log").json()["entries"])
        assert "QSPY front end: <F-END> Attached Chan=00000011" in log
    finally:
        fe.close()


def test_without_a_qs_target_commands_are_refused_in_one_line(
    make_client: Callable[..., TestClient],
) -> None:
    c = make_client(autoconnect=False, qspy_udp=0)
    fe = _attached(c)
    try:
        fe.send(b"\x00")
        line = fe.wait_text(r"ERROR")
        assert line == "   <F-END> ERROR    QS commands need a QS target: connect one first"
    finally:
        fe.close()


def test_a_replayed_session_is_no_target_for_front_ends(
    make_client: Callable[..., TestClient],
) -> None:
    c = make_client(autoconnect=False, qspy_udp=0)
    r = c.post("/api/sessions/import?name=dpp&kind=qs", content=sim_stream(2.0),
               headers={"Origin": ORIGIN, "Content-Type": "application/octet-stream"})  # fmt: skip
    sid = r.json()["session"]["id"]
    r = c.post(f"/api/sessions/{sid}/replay", json={"speed": "0.1x"}, headers={"Origin": ORIGIN})
    assert r.status_code == 200, r.text
    fe = _attached(c)
    try:
        assert c.app.state.live.conn.port_label is not None  # still replaying (2 s at 0.1x)
        fe.send(b"\x00")
        line = fe.wait_text(r"ERROR")
        assert line == "   <F-END> ERROR    a replay is playing: QS commands need a live QS target"
    finally:
        fe.close()


def test_a_command_before_the_listened_for_target_connects_is_refused(
    make_client: Callable[..., TestClient],
) -> None:
    c = make_client(port="listen://127.0.0.1:0", qspy_udp=0)
    where = wait_for(lambda: c.get("/api/state").json()["device"]["listening_on"], "listening")
    fe = _attached(c)
    try:
        fe.send(b"\x00")
        line = fe.wait_text(r"ERROR")
        assert line == f"   <F-END> ERROR    no QS target is connected to {where} yet"
    finally:
        fe.close()


def test_a_flood_is_refused_and_the_dashboard_goes_on(
    make_client: Callable[..., TestClient],
) -> None:
    c, before = _profiling(make_client)
    fe = _attached(c)
    try:
        for i in range(FLOOD):  # garbage, unknown names, oversized peeks
            fe.sock.sendto(bytes([i & 0xFF]) + HOSTILE[i % len(HOSTILE)], fe.addr)
        _still_profiling(c, before)
        fe.ask_again(b"\x00", r"Trg-Ack  QS_RX_INFO")
        assert c.app.state.qspy_udp._thread.is_alive()
    finally:
        fe.close()
    refused = c.app.state.qspy_udp.port.refused
    log = [e["message"] for e in c.get("/api/log").json()["entries"]]
    shown = [m for m in log if "<F-END> ERROR" in m]
    assert 0 < refused <= FLOOD and 0 < len(shown) < refused  # at most 20 lines a second


def test_packets_front_ends_could_not_take_are_counted_in_the_log(
    make_client: Callable[..., TestClient],
) -> None:
    c = make_client(autoconnect=False, qspy_udp=0)
    port = c.app.state.qspy_udp.port
    with c.app.state.qspy_udp._lock:
        port.send_failures += 3  # as sendto does when a front end's buffer is full
        port.lost += 1200  # as the fan-out does when front ends fall behind
        port.foreign += 2  # as the port does with datagrams from addresses not allowed

    def said() -> list[str]:
        log = [e["message"] for e in c.get("/api/log").json()["entries"]]
        return [m for m in log if "front ends" in m or "not allowed" in m]

    lines = wait_for(lambda: len(said()) >= 3 and said(), "the losses in the log")
    assert lines[0].startswith("QSPY front end: 3 packets to front ends dropped")
    assert lines[1].startswith("QSPY front end: 1,200 records not forwarded to front ends")
    assert lines[2] == (
        "QSPY front end: 2 datagrams from addresses not allowed dropped (--qspy-udp-allow)"
    )


def test_with_allow_remote_the_port_still_binds_the_pages_address(
    make_client: Callable[..., TestClient],
) -> None:
    """Issue 35, finding 2: --host 127.0.0.1 --allow-remote bound the UDP port on 0.0.0.0."""
    c = make_client(autoconnect=False, qspy_udp=0, allow_remote=True)
    assert c.app.state.qspy_udp.address[0] == "127.0.0.1"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--qspy-udp", "0.0.0.0:0"], "refusing UDP on 0.0.0.0 (reachable from other machines)"),
        (["--host", "0.0.0.0", "--allow-remote", "--qspy-udp", "0"], "--qspy-udp-allow ADDR"),
        (["--qspy-udp-allow", "127.0.0.1"], "--qspy-udp-allow needs --qspy-udp"),
        (["--qspy-udp", "0", "--qspy-udp-allow", "nowhere"], "nowhere is not an IP address"),
    ],
)
def test_a_port_other_machines_reach_needs_allow_remote_and_a_list(argv, message, capsys) -> None:
    assert main(["serve", "--no-connect", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_only_allowed_addresses_attach_and_the_risk_is_said(tmp_path: Path) -> None:
    args = ["--host", "0.0.0.0", "--allow-remote", "--no-connect",
            "--qspy-udp", "0", "--qspy-udp-allow", "127.0.0.2"]  # fmt: skip
    with running_serve(tmp_path / "data", *args) as served:
        found = wait_for(lambda: re.search(r"front ends on UDP 0\.0\.0\.0:(\d+)", served.output()),
                         "the UDP port")  # fmt: skip
        warning = [line for line in served.output().splitlines() if "unauthenticated" in line]
        assert len(warning) == 1 and warning[0].startswith("mcuprof: warning: QSPY front ends")
        stranger = FrontEnd(int(found.group(1)))
        friend = FrontEnd(int(found.group(1)), source="127.0.0.2")
        try:
            stranger.send(b"\x80\x03")
            friend.send(b"\x80\x03")
            wait_for(lambda: any(p[1:2] == b"\x80" for p in friend.packets), "the friend attached")
            friend.send(b"\x00")  # INFO: refused, there is no target, and answered
            friend.wait_text(r"ERROR    QS commands need a QS target")
            assert stranger.packets == []
        finally:
            stranger.close()
            friend.close()


def test_the_port_number_is_checked(capsys) -> None:
    assert main(["serve", "--qspy-udp", "70000", "--no-connect"]) == 2
    err = capsys.readouterr().err
    assert "--qspy-udp 70000: a UDP port from 0 to 65535" in err and err.count("\n") == 1


def test_a_command_that_would_crash_the_target_is_refused_in_one_line(
    make_client: Callable[..., TestClient],
) -> None:
    """Issue 35, finding 1, through the dashboard's port: the guard (qs/guard.py) refuses
    a post to a priority no record names (the simulated board sends no scheduler
    records), to the front end and in the page's log; the target goes on answering."""
    c, before = _profiling(make_client)
    fe = _attached(c)
    try:
        mark = fe.mark()
        fe.send(b"\x10\x01" + struct.pack("<HH", 4, 0))  # EAT_SIG to priority 1
        line = fe.wait_text(r"ERROR", mark)
        assert line.startswith("   <F-END> ERROR    post to priority 1 refused: ")
        log = [e for e in c.get("/api/log").json()["entries"] if "priority 1" in e["message"]]
        assert [e["level"] for e in log] == ["warning"]
        fe.send(b"\x00")
        fe.wait_text(r"Trg-Ack  QS_RX_INFO", mark)
        _still_profiling(c, before)
    finally:
        fe.close()
