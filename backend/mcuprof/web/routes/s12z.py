"""/api/s12z: import an S12Z DBG profiling trace (with an ELF) as a session of its own
kind, read its analysis for the S12Z view, and export it as CSV or JSON."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import Response

from ...s12z.store import import_trace, session_analysis
from ...store.model import MAX_NAME
from ..deps import get_store
from ..live.decode_pool import in_decode_pool
from ..uploads import received_capture
from .exports import attachment

router = APIRouter(prefix="/api/s12z")

SessionId = Annotated[int, Path(ge=1, le=2**62)]
BusHz = Annotated[float | None, Query(gt=0, lt=1e12)]


@router.post("/import")
async def import_capture(
    request: Request,
    name: Annotated[str, Query(max_length=MAX_NAME)] = "S12Z trace",
    elf: Annotated[str | None, Query(max_length=300)] = None,
    bus_hz: BusHz = None,
    vector_base: Annotated[int | None, Query(ge=0, le=0xFFFFFF)] = None,
) -> dict[str, Any]:
    """The PDO capture is the request body, streamed to disk under the capture size cap.
    ``elf`` is an ELF id from /api/elfs."""
    store = get_store(request)
    async with received_capture(request, elf, store.data_dir) as (path, elf_path, elf_name):
        info = await asyncio.to_thread(
            import_trace,
            store,
            name,
            path,
            elf_path,
            elf_name=elf_name,
            bus_hz=bus_hz,
            vector_base=vector_base,
        )
    return {"session": info.as_dict()}


@router.get("/sessions/{sid}")
async def analysis(request: Request, sid: SessionId, bus_hz: BusHz = None) -> dict[str, Any]:
    store = get_store(request)
    info, result = await in_decode_pool(session_analysis, store, sid, bus_hz)
    return {"session": info.as_dict(), "analysis": result}


TABLES = {
    "functions": ["function", "start", "entries", "share", "calls", "returns", "destinations"],
    "destinations": ["address", "function", "offset", "kind", "count", "share"],
    "interrupts": [
        "vector",
        "offset",
        "address",
        "isr",
        "name",
        "count",
        "share",
        "period_cycles",
        "period_us",
    ],
}


def render_csv(result: dict[str, Any], table: str) -> str:
    rows = result["interrupts"]["vectors"] if table == "interrupts" else result[table]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(TABLES[table])
    for row in rows:
        w.writerow(["" if row.get(k) is None else row[k] for k in TABLES[table]])
    return buf.getvalue()


@router.get("/sessions/{sid}/export")
async def export(
    request: Request,
    sid: SessionId,
    format: Annotated[str, Query(pattern="^(csv|json)$")] = "json",
    table: Annotated[str, Query(pattern="^(functions|destinations|interrupts)$")] = "functions",
    bus_hz: BusHz = None,
) -> Response:
    """JSON: the whole analysis (what `mcuprof s12z --json` prints, plus the timeline);
    CSV: one table, the numbers the view shows."""
    store = get_store(request)
    _, result = await in_decode_pool(session_analysis, store, sid, bus_hz)
    if format == "json":
        body, media, name = json.dumps(result, indent=1), "application/json", "s12z.json"
    else:
        body, media, name = (
            render_csv(result, table),
            "text/csv; charset=utf-8",
            f"s12z-{table}.csv",
        )
    return attachment(body, f"mcuprof-{sid}-{name}", media)
