"""Another site's requests do no work: every /api/ route, GET included, and the WebSocket
answer 403 before any route runs, over real HTTP to a started server. The routes are
listed from the app itself, so a new route is covered the day it is added."""

from __future__ import annotations

import json
import re
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.routing import APIRoute

from mcuprof.web.app import create_app
from mcuprof.web.settings import Settings
from tests.helpers import free_port

from .conftest import wait_for

FOREIGN = [
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # another port on localhost: not our page
    {"Origin": "http://evil.example"},
    {"Origin": "null"},  # a sandboxed frame or a file:// page
]
OWN = [{}, {"Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}]
SAMPLE_PARAMS = {"sid": "1", "fmt": "folded", "name": "reset", "command": "info"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, object]]:
    import uvicorn

    port = free_port()
    data = Path(tmp_path_factory.mktemp("cross_site")) / "data"
    app = create_app(Settings(data_dir=data, http_port=port, autoconnect=False))
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "uvicorn to start")
    yield port, app
    server.should_exit = True
    thread.join(timeout=10)


def _flat(routes: list[object]) -> Iterator[object]:
    """The routes, those of included routers too (FastAPI keeps each router whole; the
    routers here are included without a prefix of their own, their paths are whole)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        yield from _flat(inner.routes) if inner is not None else [route]


def api_routes(app: object) -> list[tuple[str, str]]:
    """(method, path) of every /api/ route, path parameters filled with sample values."""
    out = []
    for route in _flat(app.routes):  # type: ignore[attr-defined]
        if not isinstance(route, APIRoute) or not route.path.startswith("/api/"):
            continue
        path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: SAMPLE_PARAMS.get(m[1], "x"), route.path)
        out.extend((method, path) for method in sorted(route.methods - {"HEAD"}))
    return out


def status(port: int, method: str, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        headers={"Content-Type": "application/json", **headers},
        data=b"{}" if method in ("POST", "PATCH", "PUT") else None,
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_every_api_route_refuses_another_site(served) -> None:
    port, app = served
    routes = api_routes(app)
    gets = [path for method, path in routes if method == "GET"]
    assert len(gets) >= 30 and "/api/sessions/1/raw" in gets and "/api/qs/flow" in gets
    for method, path in routes:
        for headers in FOREIGN:
            code, body = status(port, method, path, headers)
            assert code == 403, (method, path, headers, body)
            assert json.loads(body)["error"].startswith("request refused: ")


def test_own_page_and_plain_clients_pass(served) -> None:
    port, _ = served
    for headers in OWN:
        code, body = status(port, "GET", "/api/state", headers)
        assert code == 200, (headers, body)
    own = {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"}
    assert status(port, "GET", "/api/sessions", own)[0] == 200


@pytest.mark.parametrize("headers", FOREIGN[:2])
def test_the_page_still_opens_from_a_link(served, headers: dict[str, str]) -> None:
    port, _ = served
    code, body = status(port, "GET", "/", {**headers, "Sec-Fetch-Mode": "navigate"})
    assert code == 200 and b"<html" in body.lower()
    assert status(port, "GET", "/static/js/main.js", headers)[0] == 200


def handshake(port: int, headers: dict[str, str]) -> str:
    """The status line a WebSocket handshake to /ws gets."""
    lines = [
        "GET /ws HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
        "Sec-WebSocket-Version: 13",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        return s.recv(4096).split(b"\r\n", 1)[0].decode()


def test_websocket_from_another_site_is_refused(served) -> None:
    port, _ = served
    own = f"http://127.0.0.1:{port}"
    assert " 101 " in handshake(port, {"Origin": own, "Sec-Fetch-Site": "same-origin"})
    assert " 403 " in handshake(port, {"Origin": own, "Sec-Fetch-Site": "cross-site"})
