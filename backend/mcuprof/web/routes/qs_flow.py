"""/api/qs/flow: the QS tab's event-flow views. The sequence diagram's rows (QSPY -g's
items on the lanes ``SeqLanes`` gives them, plus dispatches and time events, which -g
leaves out) and the state timeline's lanes, for the live monitor or a stored session
(``?session=ID``, through qs_api's monitors), within the timeline's window (``t0``,
``t1`` in µs, the profile's clock: one target tick is 1e6 / ``qs_tick_hz`` µs).
Exports: QSPY's -g text and the SVG of the same rows."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response, StreamingResponse

from ...capture import QS_CHUNK
from ...errors import UserError
from ...protocol.qs import QSDecoder
from ...qs.clock import SeriesClock
from ...qs.flowlog import FlowSnapshot
from ...qs.seq_svg import SeqSvg
from ...qs.sequence import (
    SEQ_LIST_MAX,
    FlowItem,
    SeqError,
    SeqLanes,
    SeqText,
    flow_items,
    parse_seq_list,
    state_label,
)
from ..deps import WindowDep, get_store
from ..filenames import disposition, stored_stem
from ..live.decode_pool import in_decode_pool, iterate_in_decode_pool
from .exports import attachment
from .qs import MonitorDep, SessionParam

router = APIRouter(prefix="/api/qs/flow")

# Rows of the sequence diagram in one answer (the last ones of the window).
FLOW_ROWS_MAX = 2_000
# State spans in one answer (the last ones of the window).
STATE_SPANS_PAGE = 5_000
# Objects the lane picker offers (the most active first).
FLOW_OBJECTS_MAX = 256
DEFAULT_LANES = 6  # lanes drawn before the user picks: the first active objects by name

Window = tuple[float, float] | None
ListParam = Annotated[
    str | None, Query(max_length=SEQ_LIST_MAX, description="QSPY -g list: names, comma-separated")
]


def _hz(request: Request) -> int:
    return int(request.app.state.settings.qs_tick_hz)


def _us(ticks: int | None, request: Request) -> float | None:
    """The QS tab's zero (its first record's time; the margins and plots count from it)."""
    return None if ticks is None else ticks * 1e6 / _hz(request)


def _ticks(window: Window, hz: int) -> tuple[float, float] | None:
    return None if window is None else (window[0] * hz / 1e6, window[1] * hz / 1e6)


def in_window(items: Iterable[FlowItem], window: tuple[float, float] | None) -> Iterator[FlowItem]:
    """Items whose time is in the window (ticks). A tick has no time of its own: it
    goes with the timed item before it."""
    if window is None:
        yield from items
        return
    lo, hi = window
    last: int | None = None
    for item in items:
        t = item.time if item.time is not None else last
        last = t
        if t is not None and lo <= t <= hi:
            yield item


def lane_names(g: str | None, items: list[FlowItem]) -> list[str]:
    """The -g list given, or the first DEFAULT_LANES objects that get events, by name."""
    if g is not None:
        try:
            return parse_seq_list(g)
        except SeqError as exc:
            raise UserError(f"g: {exc}") from None
    found = {i.receiver for i in items if i.kind == "dispatch" and i.receiver is not None}
    return sorted(found)[:DEFAULT_LANES] or ["?"]


def _objects(items: list[FlowItem]) -> tuple[list[dict[str, Any]], int]:
    """The picker's choices: every object the flow names, with its count of events."""
    counts: dict[str, int] = {}
    for i in items:
        for name in (i.sender, i.receiver, i.obj):
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ranked[:FLOW_OBJECTS_MAX]
    return [{"name": n, "events": c} for n, c in shown], len(ranked) - len(shown)


def _row(lanes: SeqLanes, item: FlowItem, us: float, steps: dict[int, int]) -> dict | None:
    """One row of the page's diagram: what -g draws, and dispatches and time events on
    their receiver's lane."""
    t = None if item.time is None else item.time * us
    row: dict[str, Any] = {"i": item.index, "k": item.kind, "t": t, "ts": item.ts}
    p = lanes.place(item)
    if p is not None:
        return row | {"s": p.shape, "a": p.lane, "b": p.dst, "l": p.label, "x": p.attempt}
    if item.kind not in ("dispatch", "time_event") or item.receiver is None:
        return None
    lane = lanes.lane.get(item.receiver, -1)
    if lane < 0:
        return None
    row |= {"s": item.kind, "a": lane, "b": lane, "l": item.signal, "obj": item.receiver}
    if item.kind == "time_event":
        return row | {"from": item.sender}
    dur = steps.get(item.index)
    return row | {"state": item.state, "dur": None if dur is None else dur * us}


def sequence_rows(snap: FlowSnapshot, names: list[str], window: Window, hz: int) -> dict:
    lanes = SeqLanes(names)
    us = 1e6 / hz
    rows = []
    cut = 0
    for item in in_window(snap.items, _ticks(window, hz)):
        row = _row(lanes, item, us, snap.steps)
        if row is None:
            continue
        rows.append(row)
        if len(rows) > 2 * FLOW_ROWS_MAX:  # keep the last ones, in O(rows) overall
            cut += len(rows) - FLOW_ROWS_MAX
            del rows[:-FLOW_ROWS_MAX]
    if len(rows) > FLOW_ROWS_MAX:
        cut += len(rows) - FLOW_ROWS_MAX
        del rows[:-FLOW_ROWS_MAX]
    return {"names": lanes.names, "rows": rows, "cut": cut, "rows_max": FLOW_ROWS_MAX}


@router.get("")
async def sequence(
    request: Request, monitor: MonitorDep, window: WindowDep, g: ListParam = None
) -> dict[str, Any]:
    """The sequence diagram's rows in the window, on the lanes of ``g`` (default: the
    first DEFAULT_LANES objects that get events); the last FLOW_ROWS_MAX, ``cut``
    counts those left out."""
    snap, first, _last, version = monitor.flow_snapshot()

    def build() -> dict[str, Any]:
        names = lane_names(g, snap.items)
        objects, more = _objects(snap.items)
        out = sequence_rows(snap, names, window, _hz(request))
        return out | {
            "objects": objects,
            "objects_more": more,
            "items": len(snap.items),
            "items_dropped": snap.items_dropped,
            "window": window,
            "first": _us(first, request),
            "version": version,
        }

    return await asyncio.to_thread(build)


def state_lanes(snap: FlowSnapshot, last: int | None, window: Window, hz: int) -> dict[str, Any]:
    """Per state machine, the spans of its states that overlap the window: [start,
    end, state, stream index, short name (QSPY's: Philo_hungry -> hungry)], times in
    µs; an open span's end is None: it lasts to ``end``, the last time seen."""
    us = 1e6 / hz
    ticks = _ticks(window, hz)
    spans = snap.spans + snap.open_spans
    end = last if last is not None else max((s.t0 for s in spans), default=None)
    if ticks is not None:
        lo, hi = ticks
        spans = [s for s in spans if s.t0 <= hi and (s.t1 if s.t1 is not None else end) >= lo]  # type: ignore[operator]
    cut = max(0, len(spans) - STATE_SPANS_PAGE)
    if cut:  # the last ones: closed spans by their end, the open ones last
        spans = sorted(spans, key=lambda s: (s.t1 is None, s.t1 or 0))[cut:]
    lanes: dict[str, list[list[Any]]] = {}
    for s in sorted(spans, key=lambda s: s.t0):
        t1 = None if s.t1 is None else s.t1 * us
        lanes.setdefault(s.obj, []).append([s.t0 * us, t1, s.state, s.index, state_label(s.state)])
    return {
        "lanes": [{"obj": obj, "spans": lanes[obj]} for obj in sorted(lanes)],
        "end": None if end is None else end * us,
        "cut": cut,
        "spans_max": STATE_SPANS_PAGE,
        "dropped": snap.spans_dropped,
        "machines_dropped": snap.machines_dropped,
        "window": window,
    }


@router.get("/states")
async def states(request: Request, monitor: MonitorDep, window: WindowDep) -> dict[str, Any]:
    """One lane per state machine: the state it was in over the window."""
    snap, first, last, version = monitor.flow_snapshot()
    out = await asyncio.to_thread(state_lanes, snap, last, window, _hz(request))
    return out | {"first": _us(first, request), "version": version}


# ------------------------------------------------------------------ exports


def _stem(request: Request, session: int | None) -> str:
    """The file name's stem, as the other exports have it."""
    if session is None:
        return request.app.state.live.file_stem()
    return stored_stem(get_store(request).get(session))


def _file_name(request: Request, session: int | None, window: Window, suffix: str) -> str:
    stem = _stem(request, session) + "-seq"
    if window is not None:
        stem += f"-{window[0]:.0f}-{window[1]:.0f}us"
    return stem + suffix


def _stored_items(request: Request, session: int) -> Iterator[FlowItem]:
    """A stored session's whole flow, decoded from its bytes a piece at a time (as
    `mcuprof qs seq` reads a capture): an export is never cut to the kept items."""
    decoder = QSDecoder()
    clock = SeriesClock()
    for chunk in get_store(request).raw_chunks(session, QS_CHUNK):
        yield from flow_items(decoder.feed(chunk), clock)
    yield from flow_items(decoder.close(), clock)


def _export_rows(
    request: Request,
    monitor: Any,
    window: tuple[float, float] | None,
    session: int | None,
    g: list[str] | None,
) -> tuple[list[str], Iterator[FlowItem], int]:
    """What an export draws: the lanes, the window's items (lazy: a stored session is
    read as they are drawn) and how many older ones the live monitor let go."""
    snap, _first, _last, _version = monitor.flow_snapshot()
    names = lane_names(g, snap.items)
    items: Iterable[FlowItem] = snap.items
    dropped = snap.items_dropped
    if session is not None:
        items, dropped = _stored_items(request, session), 0
    return names, in_window(items, _ticks(window, _hz(request))), dropped


def _seq_body(names: list[str], g: str, items: Iterable[FlowItem], dropped: int) -> Iterator[bytes]:
    seq = SeqText(names, g)
    yield seq.header()
    piece = bytearray()
    for item in items:
        piece += seq.feed(item)
        if len(piece) >= QS_CHUNK:
            yield bytes(piece)
            piece.clear()
    if dropped:
        piece += (
            f"mcuprof: {dropped:,} earlier events were no longer kept by the live view "
            "(FLOW_ITEMS_MAX); a stored session exports them all\n"
        ).encode()
    yield bytes(piece)


@router.get("/export.seq")
async def export_seq(
    request: Request,
    monitor: MonitorDep,
    window: WindowDep,
    session: SessionParam = None,
    g: ListParam = None,
) -> StreamingResponse:
    """QSPY's -g text of the window, byte for byte what `mcuprof qs seq -g` writes for
    the same capture (QSPY 7.4's layout), sent as it is drawn."""
    names, chosen, dropped = _export_rows(request, monitor, window, session, g)
    body = _seq_body(names, g if g is not None else ",".join(names), chosen, dropped)
    name = _file_name(request, session, window, ".seq")
    if session is not None:  # decoded as it is sent: on the decode pool
        body = iterate_in_decode_pool(body)
    return StreamingResponse(
        body, media_type="text/plain; charset=utf-8", headers=disposition(name)
    )


@router.get("/export.svg")
async def export_svg(
    request: Request,
    monitor: MonitorDep,
    window: WindowDep,
    session: SessionParam = None,
    g: ListParam = None,
) -> Response:
    """The same rows as SVG (at most SVG_ROWS_MAX rows; more are counted at its foot)."""
    names, chosen, _dropped = _export_rows(request, monitor, window, session, g)

    def build() -> str:
        svg = SeqSvg(names)
        for item in chosen:
            svg.feed(item)
        return svg.finish()

    body = await (asyncio.to_thread(build) if session is None else in_decode_pool(build))
    name = _file_name(request, session, window, ".svg")
    return attachment(body, name, "image/svg+xml")
