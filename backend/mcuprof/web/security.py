"""The guards every request passes before any route runs.

A dashboard on localhost that drives hardware is a classic target: a web page in
another tab can aim requests at 127.0.0.1 (CSRF), rebind its own DNS name to
127.0.0.1 (DNS rebinding) or open a WebSocket, which no CORS rule covers. So:

- the Host header must name this server on loopback with its port;
- a WebSocket handshake, and any request that changes state, must come from
  this page's own Origin;
- no ``/api/`` route does any work for another site, GET included: a page elsewhere
  could otherwise start costly decodes with ``<img>`` tags or read a whole capture.
  The browser says where a request comes from in ``Sec-Fetch-Site`` and, on most
  requests, ``Origin``; only ``same-origin`` and ``none`` (typed, bookmarked) pass.
  Clients that send neither (curl, scripts) are not browsers and pass. The page
  itself (``/``, ``/static``) still opens from a link on another site;
- in ``--allow-remote`` mode every request must carry the token (query, cookie
  or header), compared in constant time.

No CORS headers are ever sent.
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from .settings import Settings

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

TOKEN_COOKIE = "mcuprof_token"
TOKEN_HEADER = "x-mcuprof-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Sec-Fetch-Site values an /api/ request may carry: the page's own, or typed by the user.
# "same-site" is refused too: another port on localhost is the same site, not our page.
OWN_FETCH_SITES = frozenset({"same-origin", "none"})
API_PREFIX = "/api/"


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in scope.get("headers", []):
        out.setdefault(key.decode("latin-1").lower(), value.decode("latin-1"))
    return out


def host_ok(settings: Settings, host: str | None) -> bool:
    if not host:
        return False
    if settings.any_host:
        return True
    return host.lower() in settings.allowed_hosts()


def origin_ok(host: str | None, origin: str | None) -> bool:
    """The page's own origin is the scheme plus exactly the Host it was served under."""
    if not host or not origin:
        return False
    origin = origin.lower().rstrip("/")
    return origin in (f"http://{host.lower()}", f"https://{host.lower()}")


def foreign_api_request(scope: Scope, headers: dict[str, str]) -> bool:
    """Whether another site sent this /api/ request or WebSocket handshake (Sec-Fetch-Site
    or Origin say so); such a request must do no work at all."""
    if scope["type"] == "http" and not scope.get("path", "").startswith(API_PREFIX):
        return False
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in OWN_FETCH_SITES:
        return True
    origin = headers.get("origin")
    return origin is not None and not origin_ok(headers.get("host"), origin)


def presented_token(scope: Scope, headers: dict[str, str]) -> tuple[str | None, bool]:
    """The token the client sent, and whether it came in the query string."""
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if "token" in query:
        return query["token"][0], True
    if TOKEN_HEADER in headers:
        return headers[TOKEN_HEADER], False
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), False
    if "cookie" in headers:
        cookie = SimpleCookie()
        try:
            cookie.load(headers["cookie"])
        except Exception:  # a malformed cookie header is just "no token"
            return None, False
        if TOKEN_COOKIE in cookie:
            return cookie[TOKEN_COOKIE].value, False
    return None, False


def token_ok(expected: str, given: str | None) -> bool:
    if given is None:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


class GuardMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        if not host_ok(self.settings, host):
            await self._deny(kind, send, 400, "request refused: unexpected Host header")
            return
        origin = headers.get("origin")
        if kind == "websocket" and not origin_ok(host, origin):
            await self._deny(kind, send, 403, "WebSocket refused: foreign or missing Origin")
            return
        if (
            kind == "http"
            and scope.get("method", "GET") not in SAFE_METHODS
            and origin is not None
            and not origin_ok(host, origin)
        ):
            await self._deny(kind, send, 403, "request refused: foreign Origin")
            return
        if foreign_api_request(scope, headers):
            await self._deny(kind, send, 403, "request refused: sent by another site")
            return
        set_cookie = False
        if self.settings.token:
            given, from_query = presented_token(scope, headers)
            if not token_ok(self.settings.token, given):
                await self._deny(kind, send, 401, "token required: open the URL printed by serve")
                return
            set_cookie = from_query and kind == "http"
        if set_cookie:
            send = self._with_cookie(send)
        await self.app(scope, receive, send)

    def _with_cookie(self, send: Send) -> Send:
        cookie = f"{TOKEN_COOKIE}={self.settings.token}; Path=/; HttpOnly; SameSite=Strict"

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = [
                    *message.get("headers", []),
                    (b"set-cookie", cookie.encode("latin-1")),
                ]
            await send(message)

        return wrapped

    @staticmethod
    async def _deny(kind: str, send: Send, status: int, message: str) -> None:
        if kind == "websocket":
            # Closing before accept makes the server answer the handshake with 403.
            await send({"type": "websocket.close", "code": 1008, "reason": message})
            return
        body = json.dumps({"error": message}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


# What the page sends on the WebSocket is a small flat JSON object. Anything else is
# refused before json.loads sees it: a message 100,000 brackets deep would otherwise
# raise RecursionError inside the parser.
WS_MAX_MESSAGE_CHARS = 64 * 1024
WS_MAX_DEPTH = 16
# Messages in per client: the page sends one "drawn" report per live update
# (settings.update_hz, 60 a second), batched: at most 10 messages a second.
# Past WS_MAX_MESSAGES_PER_S (bursts of WS_MESSAGE_BURST) the excess is dropped unread;
# a client that has had WS_FLOOD_CLOSE_AFTER dropped is disconnected (docs/limits.md).
WS_MAX_MESSAGES_PER_S = 50.0
WS_MESSAGE_BURST = 100
WS_FLOOD_CLOSE_AFTER = 1000


class MessageBudget:
    """A token bucket per WebSocket client: each message takes a token, tokens come back
    at WS_MAX_MESSAGES_PER_S up to WS_MESSAGE_BURST. ``dropped`` counts the refused."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._tokens = float(WS_MESSAGE_BURST)
        self._at = clock()
        self.dropped = 0

    def take(self) -> bool:
        now = self._clock()
        elapsed, self._at = max(now - self._at, 0.0), now
        self._tokens = min(float(WS_MESSAGE_BURST), self._tokens + elapsed * WS_MAX_MESSAGES_PER_S)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        self.dropped += 1
        return False

    @property
    def flooding(self) -> bool:
        return self.dropped >= WS_FLOOD_CLOSE_AFTER


def _depth(text: str) -> int:
    """How deeply arrays and objects nest in JSON ``text`` (strings skipped), linear."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def client_message_error(text: str) -> str | None:
    """Why a message from the page is refused (one line), or None when it may be parsed."""
    if len(text) > WS_MAX_MESSAGE_CHARS:
        return (
            f"message too large ({len(text):,} characters; the limit is {WS_MAX_MESSAGE_CHARS:,})"
        )
    if text.count("[") + text.count("{") > WS_MAX_DEPTH and _depth(text) > WS_MAX_DEPTH:
        return f"message nested too deeply (more than {WS_MAX_DEPTH} levels)"
    try:
        json.loads(text)
    except ValueError:
        return "message is not JSON"
    return None
