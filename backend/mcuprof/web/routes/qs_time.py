"""QS times you can trust (issue 34, point 4): the tick rate QS timestamps are read with.

``TargetWatch`` (qs/watch.py) estimates a live target's rate and notices its resets and
assertions; its figures are part of the QS health section. These routes set the rate:

- ``POST /api/qs/time/tick-hz`` {"hz": N} (the page's setting) or {"estimate": true} (apply
  the estimate): the live capture is read with it from now on, its stored session keeps
  it (its metadata's timer rate), and new connections and captures use it;
- ``POST /api/qs/time/sessions/{sid}/tick-hz`` {"hz": N}: re-read a stored QS session with
  another rate (its stored rate changes; its ticks do not).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, Path, Request
from pydantic import BaseModel, ConfigDict

from ... import kinds
from ...errors import UserError
from ...qs.watch import TargetWatch
from ..settings import MAX_TICK_HZ

router = APIRouter(prefix="/api/qs/time")
SessionId = Annotated[int, Path(ge=1, le=2**62)]


class TickBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    hz: float | None = None
    estimate: bool = False


def install(app: FastAPI) -> None:
    settings = app.state.settings
    live = app.state.live
    app.state.qs_watch = TargetWatch(
        settings.qs_tick_hz,
        settings.qs_tick_source,
        replaying=lambda: live.conn.port_label is not None,
        log=live.on_log,
    )
    app.state.live.links.qs.listeners.append(app.state.qs_watch)
    app.include_router(router)


def _rate(value: float | None) -> int:
    if value is None or not 1 <= value <= MAX_TICK_HZ:
        raise UserError(f"tick rate must be between 1 and {MAX_TICK_HZ:.0e} Hz")
    return round(value)


@router.post("/tick-hz")
async def set_tick_hz(request: Request, body: TickBody) -> dict[str, Any]:
    watch: TargetWatch = request.app.state.qs_watch
    if body.estimate:
        estimate = watch.health_figures()["tick_estimate_hz"]
        if estimate is None:
            raise UserError("no estimate yet: it needs 10 s of a live QS target's frames")
        hz, source = _rate(estimate), "estimate"
    else:
        hz, source = _rate(body.hz), "page"
    live = request.app.state.live
    await asyncio.to_thread(apply_rate, live, watch, hz, source)
    return {"tick_hz": hz, "tick_source": source, "state": live.state_dict()}


def apply_rate(live: Any, watch: TargetWatch, hz: int, source: str) -> None:
    """Read QS times with ``hz`` from now on: the server's setting, the live link, the
    profile on view and the session being recorded (its metadata keeps the rate)."""
    live.settings.qs_tick_hz = hz
    live.settings.qs_tick_source = source
    live.links.tick_hz = hz
    watch.tick_hz, watch.tick_source = hz, source
    conn = live.conn
    link = conn.link
    # A live capture whose ticks are read at a rate the stream does not say (QS).
    ticked = kinds.resolve(conn.kind).ticks_assumed and conn.port_label is None
    if link is not None and ticked:
        link.tick_hz = hz
        link.source.tick_hz = hz
        meta = link.source.metadata
        if meta is not None:
            meta = replace(meta, timer_freq=hz)
            link.source.metadata = link.metadata = meta  # (the link tells no one twice)
            live.on_metadata(meta)
    if ticked:  # a QS capture on view, live
        with live.feed.lock:
            live.ingest()
            live.feed.profile.set_timer_freq(hz)
            live.feed.version += 1
    how = "the estimate from the target's frames" if source == "estimate" else "set in the page"
    live.log.add("info", f"QS tick rate {hz:,} Hz ({how}): QS times are read with it")


@router.post("/sessions/{sid}/tick-hz")
async def set_session_tick_hz(request: Request, sid: SessionId, body: TickBody) -> dict[str, Any]:
    store = request.app.state.store
    info = await asyncio.to_thread(store.get, sid)
    if not kinds.get(info.kind).ticks_assumed:
        raise UserError(f"session {sid} is not a QS capture: its timer rate is the device's")
    hz = _rate(body.hz)
    info = await asyncio.to_thread(store.set_tick_hz, sid, hz)
    request.app.state.live.log.add("info", f"session {sid}: QS times re-read at {hz:,} Hz")
    return info.as_dict()
