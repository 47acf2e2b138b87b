"""The HTTP server drops clients that stall mid-request; the WebSocket refuses messages
too large or too deep with an error reply and stays open."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from mcuprof.web.app import create_app
from mcuprof.web.server import server_config
from mcuprof.web.settings import Settings
from tests.helpers import free_port

from .conftest import sample_elf_bytes, wait_for

pytestmark = pytest.mark.timeout(120)
TIMEOUT_S = 1.0


@pytest.fixture
def server(tmp_path) -> Iterator[tuple[int, Any]]:
    port = free_port()
    settings = Settings(
        data_dir=tmp_path / "data", http_port=port, autoconnect=False, request_timeout_s=TIMEOUT_S
    )
    app = create_app(settings)
    srv = uvicorn.Server(server_config(app, settings))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    wait_for(lambda: srv.started, "uvicorn to start")
    yield port, app
    srv.should_exit = True
    thread.join(timeout=10)


def _closed_after(sock: socket.socket, limit: float) -> float:
    """Seconds until the server closes ``sock`` (reads what it sends meanwhile)."""
    began = time.monotonic()
    sock.settimeout(limit)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return float("inf")
    except ConnectionResetError:
        pass
    return time.monotonic() - began


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connects and says nothing
        b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1",  # stops inside the headers
        b"POST /api/elfs HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\n"
        b"Content-Length: 100000\r\n\r\n\x7fELF",  # stops inside the body
    ],
    ids=["silent", "partial-headers", "partial-body"],
)
def test_a_stalled_request_is_closed(server, sent: bytes) -> None:
    port, _ = server
    host = f"127.0.0.1:{port}".encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(sent.replace(b"{host}", host))
        took = _closed_after(sock, 20 * TIMEOUT_S)
    assert took < 10 * TIMEOUT_S, "the server kept a stalled request open"


def test_a_slow_but_moving_upload_is_not_cut(server) -> None:
    port, _ = server
    body = sample_elf_bytes()
    head = (
        f"POST /api/elfs?name=slow.elf HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Origin: http://127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    pieces = [body[i : i + len(body) // 3 + 1] for i in range(0, len(body), len(body) // 3 + 1)]
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        for piece in pieces:  # longer in all than the timeout, never silent that long
            time.sleep(0.6 * TIMEOUT_S)
            sock.sendall(piece)
        sock.settimeout(30)
        reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:200]


def _ws(port: int):
    from websockets.sync.client import connect

    return connect(
        f"ws://127.0.0.1:{port}/ws",
        origin=f"http://127.0.0.1:{port}",  # type: ignore[arg-type]
        open_timeout=10,
    )


def _next_error(ws) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        message = json.loads(ws.recv(timeout=20))
        if message.get("type") == "error":
            return message
    raise AssertionError("no error reply")


def test_websocket_messages_are_parsed_within_limits(server) -> None:
    port, app = server
    with _ws(port) as ws:
        ws.send("[" * 5_000 + "]" * 5_000)  # deep: RecursionError in json.loads
        assert "nested" in _next_error(ws)["error"]
        ws.send(json.dumps({"type": "drawn", "pad": "x" * 200_000}))
        assert "too large" in _next_error(ws)["error"]
        ws.send("{not json")
        assert "JSON" in _next_error(ws)["error"]
        # Still open and still heard: a good message is taken.
        ws.send(json.dumps({"type": "drawn", "recv_ts": 1.0, "frame_ms": 4.5}))
        wait_for(lambda: 4.5 in app.state.live.publisher.frame_ms, "the good message")


def test_mcuprof_serve_closes_a_partial_request(tmp_path) -> None:
    # What a user runs: the real command with its default (10 s) limit.
    from tests.helpers import running_serve

    with (
        running_serve(tmp_path / "data", "--no-connect") as served,
        socket.create_connection(("127.0.0.1", served.port)) as sock,
    ):
        sock.sendall(b"GET /api/state HTTP/1.1\r\nHost: 127.0.0.1")
        took = _closed_after(sock, 60)
    assert 5 < took < 30, took
