"""Host, Origin and token guards; no CORS; loopback by default."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from mcuprof.errors import UserError
from mcuprof.web.security import TOKEN_COOKIE
from mcuprof.web.settings import Settings

from .conftest import ORIGIN, WS


@pytest.mark.parametrize(
    "host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST:8000"]
)
def test_loopback_hosts_with_our_port_are_served(idle_client: TestClient, host: str) -> None:
    r = idle_client.get("/api/state", headers={"Host": host})
    assert r.status_code == 200
    assert r.json()["connected"] is False


@pytest.mark.parametrize(
    "host",
    ["evil.example:8000", "127.0.0.1:9999", "127.0.0.1", "localhost", "127.0.0.1.nip.io:8000", ""],
)
def test_foreign_host_header_is_refused(idle_client: TestClient, host: str) -> None:
    # DNS rebinding: the attacker's name resolves to 127.0.0.1 but the Host header keeps it.
    r = idle_client.get("/api/state", headers={"Host": host})
    assert r.status_code == 400
    assert "Host" in r.json()["error"]
    r = idle_client.get("/", headers={"Host": host})
    assert r.status_code == 400


def test_websocket_with_own_origin_gets_the_hello(idle_client: TestClient) -> None:
    with idle_client.websocket_connect(WS, headers={"Origin": ORIGIN}) as ws:
        hello = json.loads(ws.receive_text())
    assert hello["type"] == "hello"
    assert hello["state"]["connected"] is False
    assert "flame" in hello


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "http://127.0.0.1:9999", "null", "http://localhost:8000.evil.example"],
)
def test_websocket_with_foreign_origin_is_refused_before_accept(
    idle_client: TestClient, origin: str
) -> None:
    with (
        pytest.raises(WebSocketDisconnect) as info,
        idle_client.websocket_connect(WS, headers={"Origin": origin}),
    ):
        pass
    assert info.value.code == 1008


def test_websocket_without_origin_is_refused(idle_client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect), idle_client.websocket_connect(WS):
        pass


def test_websocket_with_foreign_host_is_refused(idle_client: TestClient) -> None:
    headers = {"Host": "evil.example:8000", "Origin": "http://evil.example:8000"}
    with pytest.raises(WebSocketDisconnect), idle_client.websocket_connect(WS, headers=headers):
        pass


def test_state_changing_request_from_foreign_origin_is_refused(idle_client: TestClient) -> None:
    # CSRF: a page elsewhere may POST to 127.0.0.1; the browser still says where it came from.
    r = idle_client.post(
        "/api/connect", json={"port": "sim://"}, headers={"Origin": "http://evil.example"}
    )
    assert r.status_code == 403
    assert idle_client.get("/api/state").json()["connected"] is False


def test_no_cors_headers_even_when_asked(idle_client: TestClient) -> None:
    r = idle_client.get("/api/state", headers={"Origin": "http://evil.example"})
    assert not any(k.lower().startswith("access-control-") for k in r.headers)
    r = idle_client.options(
        "/api/start",
        headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert not any(k.lower().startswith("access-control-") for k in r.headers)


def test_page_carries_protective_headers(idle_client: TestClient) -> None:
    r = idle_client.get("/")
    assert r.status_code == 200
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_non_loopback_host_needs_allow_remote(tmp_path) -> None:
    with pytest.raises(UserError, match="--allow-remote"):
        Settings(host="0.0.0.0", data_dir=tmp_path)
    with pytest.raises(UserError):
        Settings(host="192.168.1.5", data_dir=tmp_path)
    assert Settings(host="::1", data_dir=tmp_path).token is None


@pytest.fixture
def remote(make_client) -> tuple[TestClient, str]:
    client = make_client(
        host="0.0.0.0", allow_remote=True, autoconnect=False, base_url="http://192.168.1.5:8000"
    )
    token = client.app.state.settings.token
    assert token and len(token) >= 24
    return client, token


def test_token_mode_refuses_every_route_without_the_token(remote) -> None:
    client, _ = remote
    for path in ["/", "/api/state", "/api/ports", "/vendor/plotly.min.js", "/static/js/main.js"]:
        r = client.get(path)
        assert r.status_code == 401, path
    assert client.post("/api/start").status_code == 401
    assert client.get("/api/state", params={"token": "wrong"}).status_code == 401


def test_token_in_url_sets_a_cookie_that_then_suffices(remote) -> None:
    client, token = remote
    r = client.get("/", params={"token": token})
    assert r.status_code == 200
    cookie = r.headers["set-cookie"]
    assert (
        cookie.startswith(f"{TOKEN_COOKIE}=")
        and "HttpOnly" in cookie
        and "SameSite=Strict" in cookie
    )
    assert client.get("/api/state").status_code == 200  # the client kept the cookie


def test_token_header_is_accepted(remote) -> None:
    client, token = remote
    assert client.get("/api/state", headers={"X-Mcuprof-Token": token}).status_code == 200
    assert client.get("/api/state", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert client.get("/api/state", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_token_mode_websocket_needs_the_token(remote) -> None:
    client, token = remote
    origin = {"Origin": "http://192.168.1.5:8000"}
    with (
        pytest.raises(WebSocketDisconnect),
        client.websocket_connect("ws://192.168.1.5:8000/ws", headers=origin),
    ):
        pass
    with client.websocket_connect(f"ws://192.168.1.5:8000/ws?token={token}", headers=origin) as ws:
        assert json.loads(ws.receive_text())["type"] == "hello"
