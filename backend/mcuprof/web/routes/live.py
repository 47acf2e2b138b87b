"""JSON routes under /api: device control, views of the profile, ELF choice, log, metrics."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from ... import kinds
from ...errors import UserError
from ...link import list_ports
from .. import timing, views
from ..deps import CatalogDep, LiveDep, SettingsDep, WindowDep
from ..live.session import LiveSession
from ..uploads import receive_bytes, receive_file

router = APIRouter(prefix="/api")


class ConnectBody(BaseModel):
    port: str | None = Field(default=None, max_length=512)
    baud: int | None = None
    proto: str | None = Field(default=None, max_length=16)  # "miniprofiler" ("mp") or "qs"


class SelectElfBody(BaseModel):
    id: str = Field(max_length=200)


@router.get("/state")
async def state(live: LiveDep) -> dict[str, Any]:
    return await asyncio.to_thread(live.state_dict)


@router.get("/kinds")
async def kind_list() -> dict[str, Any]:
    """Each kind of capture as the page asks it (views, controls, labels)."""
    return {"kinds": [k.describe() for k in kinds.KINDS]}


@router.get("/ports")
async def ports(settings: SettingsDep) -> dict[str, Any]:
    found = await asyncio.to_thread(list_ports)
    return {
        "ports": [
            {"device": p.device, "description": p.description, "vid_pid": p.vid_pid} for p in found
        ],
        "simulated": {"port": "sim://", "label": "Simulated device"},
        "default": settings.device_port(),
    }


@router.get("/elfs")
async def elfs(catalog: CatalogDep, live: LiveDep) -> dict[str, Any]:
    return {
        "elfs": [c.as_dict() for c in catalog.choices()],
        "selected": live.elf.id if live.elf else None,
        "max_bytes": catalog.settings.max_elf_bytes,
    }


@router.post("/elfs")
async def upload_elf(
    request: Request,
    catalog: CatalogDep,
    live: LiveDep,
    settings: SettingsDep,
    name: Annotated[str, Query(max_length=255)] = "upload.elf",
) -> dict[str, Any]:
    """The raw ELF bytes are the request body (no multipart): streamed, capped, then parsed."""
    path = await receive_file(request, catalog.upload_dir, settings.max_elf_bytes)
    choice = await asyncio.to_thread(catalog.add_upload, path, name)  # hashes the file
    try:
        await asyncio.to_thread(live.select_elf, choice)
    except UserError:
        catalog.forget(choice)
        raise
    return {"elf": choice.as_dict(), "state": await asyncio.to_thread(live.state_dict)}


@router.post("/elfs/select")
async def select_elf(body: SelectElfBody, catalog: CatalogDep, live: LiveDep) -> dict[str, Any]:
    choice = catalog.get(body.id)
    await asyncio.to_thread(live.select_elf, choice)
    return {"elf": choice.as_dict(), "state": await asyncio.to_thread(live.state_dict)}


async def _then_state(
    live: LiveSession, action: Callable[..., object], *args: object
) -> dict[str, Any]:
    # Device commands block on the link; the event loop must not.
    await asyncio.to_thread(action, *args)
    return await asyncio.to_thread(live.state_dict)


@router.post("/connect")
async def connect(body: ConnectBody, live: LiveDep) -> dict[str, Any]:
    return await _then_state(live, live.connect, body.port, body.baud, body.proto)


@router.post("/disconnect")
async def disconnect(live: LiveDep) -> dict[str, Any]:
    return await _then_state(live, live.disconnect)


@router.post("/start")
async def start(live: LiveDep) -> dict[str, Any]:
    return await _then_state(live, live.start)


@router.post("/stop")
async def stop(live: LiveDep) -> dict[str, Any]:
    return await _then_state(live, live.stop)


@router.post("/reset")
async def reset(live: LiveDep) -> dict[str, Any]:
    return await _then_state(live, live.reset_buffers)


@router.post("/qs/{command}")
async def qs_command(command: Literal["reset", "info", "tick"], live: LiveDep) -> dict[str, Any]:
    """QS-RX commands to a QS target: reset, target info, one clock tick."""
    return await _then_state(live, live.command, command)


@router.post("/status")
async def refresh_status(live: LiveDep) -> dict[str, Any]:
    status = await asyncio.to_thread(live.refresh_status)
    return {
        "status": {
            "is_profiling": status.is_profiling,
            "buffer_overflows": status.buffer_overflows,
            "records_captured": status.records_captured,
            "buffer_usage_percent": status.buffer_usage_percent,
        },
        "state": await asyncio.to_thread(live.state_dict),
    }


@router.get("/log")
async def log(live: LiveDep, since: int = 0) -> dict[str, Any]:
    return {"entries": live.log_since(since)}


def _query(live: Any, fn: Any, *args: Any) -> Any:
    with live.feed.lock:
        live.ingest()
        return fn(live.feed.profile, *args)


@router.get("/flame")
async def flame(
    live: LiveDep,
    settings: SettingsDep,
    window: WindowDep,
    max_nodes: Annotated[int | None, Query(ge=10, le=20000)] = None,
    mode: Annotated[str, Query(pattern="^(top-down|bottom-up)$")] = "top-down",
) -> dict[str, Any]:
    budget = max_nodes or settings.icicle_max_nodes
    return await asyncio.to_thread(_query, live, views.icicle, window, budget, mode)


@router.get("/sandwich")
async def sandwich(
    live: LiveDep,
    settings: SettingsDep,
    window: WindowDep,
    fid: Annotated[int, Query(ge=-1, le=10_000_000)],
) -> dict[str, Any]:
    """One function's callers and callees, each merged into one flame graph."""
    return await asyncio.to_thread(
        _query, live, views.sandwich, window, fid, settings.icicle_max_nodes
    )


@router.get("/functions")
async def functions(live: LiveDep, window: WindowDep) -> dict[str, Any]:
    return await asyncio.to_thread(_query, live, views.functions, window)


@router.get("/distribution")
async def distribution(
    live: LiveDep, window: WindowDep, fid: Annotated[int, Query(ge=0, le=10_000_000)]
) -> dict[str, Any]:
    """One function's per-call durations: histogram, percentiles, period and jitter."""
    return await asyncio.to_thread(_query, live, timing.distribution, window, fid)


@router.get("/distribution/bucket")
async def distribution_bucket(
    live: LiveDep,
    window: WindowDep,
    fid: Annotated[int, Query(ge=0, le=10_000_000)],
    k: Annotated[int, Query(ge=-1_000_000, le=100_000)],
) -> dict[str, Any]:
    """The calls of one histogram bucket, first ones in time order."""
    return await asyncio.to_thread(_query, live, timing.bucket_calls, window, fid, k)


@router.get("/budgets")
async def budgets(live: LiveDep, settings: SettingsDep, window: WindowDep) -> dict[str, Any]:
    """serve --budgets: each budget's verdicts on the live profile (none: no file)."""
    return await asyncio.to_thread(
        _query, live, timing.budget_verdicts, settings.budgets, settings.budgets_file, window
    )


@router.post("/budgets")
async def load_budgets(
    request: Request,
    live: LiveDep,
    settings: SettingsDep,
    window: WindowDep,
    name: Annotated[str, Query(max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$")] = "budgets.toml",
) -> dict[str, Any]:
    """The page's budgets file (its TOML is the body): parsed as serve --budgets parses
    it, it replaces the server's budgets; answers their verdicts, as GET does."""
    from ...profile.budget import MAX_BUDGET_BYTES, parse

    text = await receive_bytes(request, MAX_BUDGET_BYTES, name)
    loaded = tuple(parse(text, name))  # a one-line UserError (400): nothing replaced
    settings.budgets, settings.budgets_file = loaded, name
    live.on_log("info", f"budgets: {len(loaded)} loaded from {name} in the page")
    return await budgets(live, settings, window)


@router.get("/tree")
async def tree(
    live: LiveDep,
    settings: SettingsDep,
    window: WindowDep,
    mode: Annotated[str, Query(pattern="^(top-down|bottom-up)$")] = "top-down",
) -> dict[str, Any]:
    return await asyncio.to_thread(
        _query, live, views.call_tree, mode, window, settings.tree_max_nodes
    )


@router.get("/timeline")
async def timeline(
    live: LiveDep,
    t0: float | None = None,
    t1: float | None = None,
    width: Annotated[int, Query(ge=10, le=10000)] = 1200,
) -> dict[str, Any]:
    return await asyncio.to_thread(_query, live, views.timeline, t0, t1, width)


@router.get("/call")
async def call(
    live: LiveDep,
    depth: Annotated[int, Query(ge=0, le=100_000)],
    t: Annotated[float, Query(allow_inf_nan=False)],
) -> dict[str, Any]:
    """The timeline's details panel: the call at ``depth`` running at time ``t`` (µs)."""
    return await asyncio.to_thread(_query, live, views.call_details, depth, t)


@router.get("/metrics")
async def metrics(live: LiveDep) -> dict[str, Any]:
    return live.metrics()
