"""Dependencies the routes ask for by type; everything lives on ``app.state``."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request, WebSocket

from ..errors import UserError
from ..store import Store
from .elfs import ElfCatalog
from .live.hub import Hub
from .live.session import LiveSession
from .settings import Settings


def _state(conn: Request | WebSocket) -> object:
    return conn.app.state


def get_settings(request: Request) -> Settings:
    return request.app.state.settings


def get_live(request: Request) -> LiveSession:
    return request.app.state.live


def get_ws_live(websocket: WebSocket) -> LiveSession:
    return websocket.app.state.live


def get_ws_hub(websocket: WebSocket) -> Hub:
    return websocket.app.state.hub


def get_catalog(request: Request) -> ElfCatalog:
    return request.app.state.catalog


def get_store(request: Request) -> Store:
    """The session store; a one-line error when the server was started without one."""
    store = getattr(request.app.state, "store", None)
    if store is None:
        raise UserError("the session store is not available")
    return store


# Ends of a time window (µs, about 31,700 years): a window's ends are printed in download
# names, and ±1e308 made a 650-character one (docs/limits.md).
MAX_WINDOW_US = 1e18


def get_window(
    t0: Annotated[float | None, Query(description="window start, µs")] = None,
    t1: Annotated[float | None, Query(description="window end, µs")] = None,
) -> tuple[float, float] | None:
    """A time window chosen on the timeline; both ends or neither."""
    if t0 is None and t1 is None:
        return None
    if t0 is None or t1 is None:
        raise UserError("give both t0 and t1, or neither")
    if not t1 > t0:
        raise UserError("the time window must end after it starts")
    if not -MAX_WINDOW_US <= t0 < t1 <= MAX_WINDOW_US:
        raise UserError(f"the time window must lie within ±{MAX_WINDOW_US:.0e} µs")
    return (t0, t1)


SettingsDep = Annotated[Settings, Depends(get_settings)]
LiveDep = Annotated[LiveSession, Depends(get_live)]
WsLiveDep = Annotated[LiveSession, Depends(get_ws_live)]
WsHubDep = Annotated[Hub, Depends(get_ws_hub)]
CatalogDep = Annotated[ElfCatalog, Depends(get_catalog)]
WindowDep = Annotated[tuple[float, float] | None, Depends(get_window)]
