"""/api/qs: the QS tab's data. The live monitor by default; with ``?session=ID`` a stored
QS session, decoded from its raw bytes into a monitor of its own (cached while the
stored bytes stay the same)."""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Iterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from ... import kinds
from ...capture import QS_CHUNK
from ...errors import UserError
from ...protocol.qs import QSDecoder
from ...protocol.qs.records import RECORDS
from ...qs.monitor import COMMS, MAX_PAGE, QsMonitor, search_pattern
from ...store import Store
from ..deps import get_store
from ..filenames import disposition
from ..live.decode_pool import SingleFlight, in_decode_pool

router = APIRouter(prefix="/api/qs")

# A stored session may be long: its monitor keeps more lines than the live one.
STORED_LINES = 100_000
_CACHED = 2
GROUPS = frozenset(
    {g for _, g in RECORDS} | {f"U{k}" for k in range(5)} | {"UA", COMMS}
)  # fmt: skip
MAX_VALUES = 64  # values per filter
MAX_VALUE = 300  # characters per value


def get_monitor(request: Request) -> QsMonitor:
    return request.app.state.qs_monitor


class _StoredMonitors:
    """The last few stored sessions' monitors, keyed by id and stored size."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[tuple[int, int], QsMonitor] = collections.OrderedDict()
        self._flights = SingleFlight()

    def get(self, store: Store, sid: int) -> QsMonitor:
        info = store.get(sid)
        if not kinds.get(info.kind).offers(kinds.QS_MONITOR):
            raise UserError(f"session {sid} is a {info.kind} session, not a QS session")
        size = store.raw_size(sid)
        key = (sid, size)
        # Concurrent first views of one session wait for one decode.
        return self._flights.run((id(store), key), lambda: self._cached(store, key))

    def _cached(self, store: Store, key: tuple[int, int]) -> QsMonitor:
        sid = key[0]
        with self._lock:
            monitor = self._cache.get(key)
            if monitor is not None:
                self._cache.move_to_end(key)
                return monitor
        monitor = decode_session(store.raw_chunks(sid, QS_CHUNK))
        with self._lock:
            self._cache[key] = monitor
            while len(self._cache) > _CACHED:
                self._cache.popitem(last=False)
        return monitor


def decode_session(chunks: Iterable[bytes]) -> QsMonitor:
    """A stored QS stream, read a piece at a time, through the same decoder and monitor
    as the live one, with QSPY's default sizes until the stream's own target info."""
    monitor = QsMonitor(max_lines=STORED_LINES)
    decoder = QSDecoder()
    for chunk in chunks:
        monitor.qs_events(decoder.feed(chunk))
    monitor.qs_events(decoder.close())
    return monitor


_stored = _StoredMonitors()
SessionParam = Annotated[int | None, Query(ge=1, le=2**62, description="stored QS session")]


async def _monitor(request: Request, session: SessionParam = None) -> QsMonitor:
    if session is None:
        return get_monitor(request)
    return await in_decode_pool(_stored.get, get_store(request), session)


MonitorDep = Annotated[QsMonitor, Depends(_monitor)]


def _values(name: str, values: list[str]) -> list[str]:
    if len(values) > MAX_VALUES:
        raise UserError(f"{name}: at most {MAX_VALUES} values")
    for v in values:
        if len(v) > MAX_VALUE:
            raise UserError(f"{name}: a value longer than {MAX_VALUE} characters")
    return values


def _groups(group: list[str]) -> list[str]:
    unknown = sorted(set(_values("group", group)) - GROUPS)
    if unknown:
        raise UserError(f"unknown record group {unknown[0]!r}; known: {', '.join(sorted(GROUPS))}")
    return group


@router.get("/log")
async def log(
    monitor: MonitorDep,
    group: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies defaults)
    obj: Annotated[list[str], Query()] = [],  # noqa: B006
    sig: Annotated[list[str], Query()] = [],  # noqa: B006
    q: Annotated[str, Query(max_length=200)] = "",
    since: Annotated[int | None, Query(ge=-1, le=2**62)] = None,
    before: Annotated[int | None, Query(ge=0, le=2**62)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 500,
) -> dict[str, Any]:
    """QSPY's lines, filtered: any of the ``group`` values, and any of ``obj`` (an
    object the line names), and any of ``sig``, and the text ``q`` (case-insensitive)."""
    _groups(group)
    search_pattern(q)  # a bad regex: one line, before any work
    if since is not None and before is not None:
        raise UserError("give since or before, not both")
    return await asyncio.to_thread(
        monitor.log,
        group,
        _values("obj", obj),
        _values("sig", sig),
        q,
        since,
        before,
        limit,
    )


@router.get("/log.txt")
async def log_text(
    monitor: MonitorDep,
    session: SessionParam = None,
    group: Annotated[list[str], Query()] = [],  # noqa: B006
    obj: Annotated[list[str], Query()] = [],  # noqa: B006
    sig: Annotated[list[str], Query()] = [],  # noqa: B006
    q: Annotated[str, Query(max_length=200)] = "",
) -> StreamingResponse:
    """The matching lines kept, as QSPY prints them: a file to diff with QSPY's. Sent
    in pieces as it is rendered, and at most MAX_TEXT_BYTES (a last line says a cut)."""
    search_pattern(q)  # checked here: the body is rendered after the response starts
    body = monitor.text_body(_groups(group), _values("obj", obj), _values("sig", sig), q)
    name = f"mcuprof-qs-{session}.txt" if session is not None else "mcuprof-qs-live.txt"
    return StreamingResponse(
        body,
        media_type="text/plain; charset=utf-8",
        headers=disposition(name),
    )


@router.get("/margins")
async def margins(monitor: MonitorDep) -> dict[str, Any]:
    return await asyncio.to_thread(monitor.margin_list)


@router.get("/app")
async def app_series(monitor: MonitorDep) -> dict[str, Any]:
    return await asyncio.to_thread(monitor.app_series)


@router.get("/summary")
async def summary(monitor: MonitorDep) -> dict[str, Any]:
    return await asyncio.to_thread(monitor.summary)


@router.get("/sessions")
async def sessions(request: Request) -> dict[str, Any]:
    """Stored QS sessions, newest first, for the tab's source picker."""
    store = get_store(request)
    rows = await asyncio.to_thread(store.list)
    shown = [s for s in rows if kinds.get(s.kind).offers(kinds.QS_MONITOR)]
    return {"sessions": [s.as_dict() for s in shown]}
