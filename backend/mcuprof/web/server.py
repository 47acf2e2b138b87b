"""How uvicorn runs the dashboard: one place for the server's limits.

uvicorn closes an idle keep-alive connection, but not one that is silent before its
first request or in the middle of one: a client that sends half a request line, or a
body a byte a minute, holds a connection (and its buffers) for ever. The protocol
below closes a connection when the server is waiting for the client's bytes and none
have come for ``request_timeout_s``. Time spent by the app, or while the server itself
has paused reading, never counts.
"""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from .settings import Settings

WS_MAX_FRAME_BYTES = 1 << 20  # what the page sends is a few hundred bytes


class TimedH11Protocol(H11Protocol):
    request_timeout_s: float = 10.0
    _read_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(self.request_timeout_s, self._on_read_timeout)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _waiting_for_client(self) -> bool:
        cycle = self.cycle
        if self.flow.read_paused:
            return False  # the app has not taken what came; the client is not to blame
        if cycle is None:
            return True  # before the first request: nothing, or a partial request line
        if cycle.response_complete:
            # Between keep-alive requests uvicorn's own idle timer runs; bytes of a
            # next request that stop half way are ours to time out.
            return bool(self.conn.trailing_data[0])
        return cycle.more_body  # a body that stopped arriving

    def _on_read_timeout(self) -> None:
        self._read_timer = None
        transport = self.transport
        if transport.is_closing() or transport.get_protocol() is not self:
            return  # closed, or upgraded to a WebSocket: not ours any more
        if self._waiting_for_client():
            transport.close()
        else:
            self._arm()


def server_config(app: Any, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration `mcuprof serve` runs with (tests use it too)."""
    protocol = type(
        "TimedH11Protocol",
        (TimedH11Protocol,),
        {"request_timeout_s": settings.request_timeout_s},
    )
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.http_port,
        "log_level": "warning",
        "access_log": False,
        "http": protocol,
        "ws_max_size": WS_MAX_FRAME_BYTES,
        "timeout_keep_alive": 5,
        "proxy_headers": False,  # nothing sits in front of us; never trust X-Forwarded-*
        "lifespan": "on",
    }
    options.update(overrides)
    return uvicorn.Config(app, **options)
