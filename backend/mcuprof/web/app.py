"""The FastAPI application: guards, routes, the static page and the live WebSocket."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware

from ..errors import UserError
from ..paths import frontend_dir
from ..qs.monitor import QsMonitor
from ..store import Store, open_store
from . import views
from .deps import WsHubDep, WsLiveDep
from .elfs import ElfCatalog
from .live.hub import Hub, run_client
from .live.session import LiveSession
from .routes import exports, history, qs, qs_control, qs_flow, qs_time, s12z, static
from .routes import live as live_routes
from .security import (
    WS_MAX_MESSAGES_PER_S,
    GuardMiddleware,
    MessageBudget,
    client_message_error,
)
from .settings import Settings
from .uploads import UploadTooLarge

log = logging.getLogger("mcuprof.web")

SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data: blob:; connect-src 'self'; frame-ancestors 'none'",
    ),
]


def _sessions_router() -> Any:
    """The session store's routes, when that module is installed."""
    try:
        module = importlib.import_module("mcuprof.web.routes.sessions")
    except ModuleNotFoundError as exc:
        if exc.name != "mcuprof.web.routes.sessions":
            raise
        return None
    return getattr(module, "router", None)


def _qspy_udp(settings: Settings, live: LiveSession) -> Any:
    """``serve --qspy-udp``: QSPY's front-end port, a listener of the live QS events."""
    access = settings.qspy_udp_access()
    if access is None:
        return None
    from ..link.qs_udp import DashboardFrontEnds

    port = DashboardFrontEnds(access, live.control, live.on_log)
    live.links.qs.listeners.append(port)
    return port


def create_app(
    settings: Settings,
    *,
    store: Store | None = None,
    session_factory: Callable[..., Any] | None = None,
) -> FastAPI:
    owns_store = store is None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        live: LiveSession = app.state.live
        if app.state.qspy_udp is not None:
            app.state.qspy_udp.start()
        ticker = asyncio.create_task(_tick_forever(app))
        connecting = asyncio.create_task(_autoconnect(live)) if settings.autoconnect else None
        try:
            yield
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            if connecting is not None:
                with contextlib.suppress(Exception):
                    await connecting
            await asyncio.to_thread(live.close)
            if app.state.qspy_udp is not None:
                await asyncio.to_thread(app.state.qspy_udp.close)
            app.state.catalog.close()
            if owns_store:
                app.state.store.close()

    app = FastAPI(
        title="mcuprof",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    if store is None:
        store = open_store(settings.data_dir, settings.store_url)
    catalog = ElfCatalog(settings)
    kwargs: dict[str, Any] = {}
    if session_factory is not None:
        kwargs["session_factory"] = session_factory
    app.state.settings = settings
    app.state.store = store
    app.state.catalog = catalog
    app.state.hub = Hub()
    app.state.live = LiveSession(settings, catalog, store, **kwargs)
    app.state.qs_monitor = QsMonitor()
    app.state.live.links.qs.listeners.append(app.state.qs_monitor)
    app.state.qspy_udp = _qspy_udp(settings, app.state.live)

    _install_error_handlers(app)
    app.include_router(live_routes.router)
    app.include_router(exports.router)
    sessions = _sessions_router()
    if sessions is not None:
        app.include_router(sessions)
    app.include_router(s12z.router)
    app.include_router(history.router)
    app.include_router(qs.router)
    qs_control.install(app)
    qs_time.install(app)
    app.include_router(qs_flow.router)
    app.include_router(static.router)
    app.mount("/static", StaticFiles(directory=frontend_dir()), name="static")

    @app.websocket("/ws")
    async def live_socket(websocket: WebSocket, live: WsLiveDep, hub: WsHubDep) -> None:
        # Host, Origin and token were checked by GuardMiddleware before this accept().
        await websocket.accept()
        client = hub.add(websocket.send_text)

        budget = MessageBudget()

        async def receive() -> str:
            # Binary frames are not ours to parse; they are ignored. A text message too
            # large or too deep to parse safely gets an error reply and is dropped.
            while True:
                message = await websocket.receive()
                if message["type"] == "websocket.disconnect":
                    raise WebSocketDisconnect(message.get("code", 1000))
                if not budget.take():  # a flood: dropped unread, so it costs no parsing
                    await _flooded(websocket, budget, live)
                    continue
                text = message.get("text")
                if text is None:
                    continue
                problem = client_message_error(text)
                if problem is None:
                    return text
                await websocket.send_text(json.dumps({"type": "error", "error": problem}))

        def on_message(text: str) -> None:
            try:
                live.on_client_message(text)
            except Exception as exc:  # one bad message must not end the connection
                log.warning("client message refused: %s: %s", type(exc).__name__, exc)

        try:
            hello = await asyncio.to_thread(_hello, live)
            client.greet(hello)
            await run_client(client, receive, on_message)
        except WebSocketDisconnect:
            pass
        finally:
            hub.remove(client)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        for key, value in SECURITY_HEADERS:
            response.headers[key.decode()] = value.decode()
        return response

    app.add_middleware(GZipMiddleware, minimum_size=2048)
    app.add_middleware(GuardMiddleware, settings=settings)
    return app


async def _flooded(websocket: WebSocket, budget: MessageBudget, live: LiveSession) -> None:
    """Tell a flooding client once that its excess is dropped; past the limit, end it."""
    if budget.dropped == 1:
        text = f"too many messages (over {WS_MAX_MESSAGES_PER_S:g} a second): the excess is dropped"
        live.on_log("warning", f"WebSocket client: {text}")
        await websocket.send_text(json.dumps({"type": "error", "error": text}))
    if budget.flooding:
        text = f"WebSocket client disconnected: {budget.dropped:,} messages over the rate dropped"
        live.on_log("warning", text)
        await websocket.close(1008, "too many messages")
        raise WebSocketDisconnect(1008)


def _hello(live: LiveSession) -> str:
    with live.feed.lock:
        live.ingest()
        icicle = views.icicle(live.feed.profile, None, live.settings.icicle_max_nodes)
    state = live.state_dict()
    return json.dumps(
        {"type": "hello", "state": state, "icicle": icicle, "log": live.log_since(0)[-200:]}
    )


async def _autoconnect(live: LiveSession) -> None:
    with contextlib.suppress(UserError):  # already logged for the page
        await asyncio.to_thread(live.connect, None, None)


async def _tick_forever(app: FastAPI) -> None:
    live: LiveSession = app.state.live
    hub: Hub = app.state.hub
    loop = asyncio.get_running_loop()
    period = 1.0 / max(0.5, live.settings.update_hz)
    while True:
        began = loop.time()
        try:
            message = await asyncio.to_thread(live.tick, bool(hub.clients))
        except Exception as exc:  # a bug in one update must not end live updates
            log.exception("live update failed")
            live.on_log("error", f"live update failed: {type(exc).__name__}: {exc}")
            message = None
        if message is not None:
            hub.publish(message)
        await asyncio.sleep(max(0.01, period - (loop.time() - began)))


def _install_error_handlers(app: FastAPI) -> None:
    def status_for(exc: UserError) -> int:
        if isinstance(exc, UploadTooLarge):
            return 413
        name = type(exc).__name__
        if name == "SessionNotFound":
            return 404
        if name == "SessionBusy":
            return 409
        return 400

    @app.exception_handler(UserError)
    async def user_error(request: Request, exc: UserError) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=status_for(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
            problems.append(f"{where}: {err.get('msg', 'invalid')}" if where else err.get("msg"))
        return JSONResponse({"error": "bad request: " + "; ".join(problems)}, status_code=422)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s", request.url.path)
        return JSONResponse(
            {"error": f"internal error: {type(exc).__name__}: {exc}"}, status_code=500
        )
