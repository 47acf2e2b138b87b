"""/api/history: a function's figure per stored session, with change points (the History
tab); the same series as ``mcuprof history --json``."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from ...errors import UserError
from ...history.series import METRICS, history
from ...store.tags import MAX_TAG_KEY, MAX_TAG_VALUE, MAX_TAGS, parse_tags
from ..deps import get_store

router = APIRouter(prefix="/api/history")

MAX_GLOB = 200  # characters of one function glob
MAX_GLOBS = 16


@router.get("")
async def get_history(
    request: Request,
    function: Annotated[list[str], Query(max_length=MAX_GLOBS)],
    metric: Annotated[str, Query(max_length=16)] = "mean",
    where: Annotated[list[str] | None, Query(max_length=MAX_TAGS)] = None,
) -> dict[str, Any]:
    """``function`` globs (repeatable), ``where`` tags as KEY=VALUE (repeatable)."""
    globs = [g for g in (f.strip() for f in function) if g]
    if not globs:
        raise UserError("give a function name or glob")
    if any(len(g) > MAX_GLOB for g in globs):
        raise UserError(f"a function glob is longer than {MAX_GLOB} characters")
    if metric not in METRICS:
        raise UserError(f"metric {metric!r}: choose one of {', '.join(METRICS)}")
    if any(len(w) > MAX_TAG_KEY + MAX_TAG_VALUE + 1 for w in where or ()):
        raise UserError("a where tag is too long")
    tags = parse_tags(where)
    store = get_store(request)
    series = await asyncio.to_thread(history, store, globs, metric, tags)
    return {"metric": metric, "where": tags, "series": [s.as_dict() for s in series]}
