"""A QS target that stops reading (issue 35, finding 3): a TCP target on listen:// with
a 1 KiB receive window that never reads, as a full lwIP board is. Commands from a
QSPY front end and from the page fill what the host may queue for it; after that each
is refused in one line, and the page's state, Stop and Disconnect go on answering.
The bounds asserted are generous behaviour bounds (the server hung for good before)."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mcuprof.link.qs_tx import MAX_TX_BACKLOG
from tests.helpers import Served, running_serve
from tests.qs.qsfe import REAL, FrontEnd, wait_for

# QS_RX_POKE of 64 zero bytes at offset 0 (72 bytes a frame): never read, so harmless.
POKE = b"\x05" + struct.pack("<HBB", 0, 1, 64) + bytes(64)
PAGE_POKE = ("/api/qs/control/poke", {"offset": 0, "size": 1, "data": "00" * 64})
# 2.5 MB of commands: twice what a 1 KiB window and the kernel's buffers took on
# loopback (1.15 MB, then nothing more for seconds).
FLOOD = 35_000
PAGE_COMMANDS = 12  # more than asyncio's default executor has threads on 2 cores


def _hello() -> bytes:
    data = (REAL.parent / "dpp-posix64.bin").read_bytes()
    return b"\x7e".join(data.split(b"\x7e")[:100]) + b"\x7e"


def _call(served: Served, path: str, body: dict | None = None, timeout: float = 30.0) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Origin": served.url.rstrip("/")}
    req = urllib.request.Request(served.url + path.lstrip("/"), data, headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _timed(served: Served, path: str, body: dict | None = None) -> tuple[float, Any]:
    t = time.monotonic()
    result = _call(served, path, body)
    return time.monotonic() - t, result


def _deaf_target(port: int) -> socket.socket:
    """Connects with a tiny receive window, sends a reset sequence, never reads."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(("127.0.0.1", port))
    s.sendall(_hello())
    return s


@pytest.fixture
def deaf(tmp_path: Path):
    if not (REAL.parent / "dpp-posix64.bin").exists():
        pytest.skip("the reference DPP capture is missing")
    listening = lambda s: s["device"].get("listening_on")  # noqa: E731
    with running_serve(
        tmp_path / "data", "--port", "listen://127.0.0.1:0", "--qspy-udp", "0", ready=listening
    ) as served:
        state = _call(served, "/api/state")[1]
        target = _deaf_target(int(state["device"]["listening_on"].rsplit(":", 1)[1]))
        udp = re.search(r"QSPY front ends on UDP [\d.]+:(\d+)", served.output())
        assert udp is not None, served.output()
        fe = FrontEnd(int(udp.group(1)))
        try:
            names = lambda: _call(served, "/api/qs/control")[1].get("objects")  # noqa: E731
            wait_for(names, "the target's dictionaries")
            yield served, fe
        finally:
            fe.close()
            target.close()


def test_a_target_that_does_not_read_stops_nothing(deaf) -> None:
    served, fe = deaf
    assert _call(served, "/api/start", {})[0] == 200
    fe.send(b"\x80\x03")
    wait_for(lambda: any(p[1:2] == b"\x80" for p in fe.packets), "the attach confirmation")
    for i in range(FLOOD):
        fe.send(POKE)
        if i % 100 == 99:
            time.sleep(0.005)  # the port reads 64 a turn; UDP drops what does not fit
    fe.wait_text(r"ERROR    the target is not reading: [\d,]+ command bytes waiting")
    wait_for(lambda: _call(served, *PAGE_POKE)[0] == 400, "the page's command refused")
    answers: list[Any] = []
    page = [threading.Thread(target=lambda: answers.append(_call(served, *PAGE_POKE)))
            for _ in range(PAGE_COMMANDS)]  # fmt: skip
    for t in page:
        t.start()
    took, (status, _) = _timed(served, "/api/state")
    assert status == 200 and took < 5.0, f"/api/state took {took:.1f} s"
    took, (status, body) = _timed(served, "/api/stop", {})
    assert status == 200 and took < 10.0, f"Stop took {took:.1f} s: {body}"
    for t in page:
        t.join(timeout=30)
    refused = [body["error"] for status, body in answers if status == 400]
    sent = [body for status, body in answers if status == 200]
    assert len(answers) == PAGE_COMMANDS and len(refused) + len(sent) == PAGE_COMMANDS
    assert refused and all(r.startswith("the target is not reading: ") for r in refused)
    waiting = int(re.search(r"([\d,]+) command bytes", refused[0]).group(1).replace(",", ""))
    assert waiting <= MAX_TX_BACKLOG
    took, (status, _) = _timed(served, "/api/disconnect", {})
    assert status == 200 and took < 10.0, f"Disconnect took {took:.1f} s"
