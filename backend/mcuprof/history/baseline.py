"""Baselines by build: the stored session a new capture is judged against, found by tags
(``mcuprof compare --baseline branch=main NEW``) instead of a file kept by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import UserError
from ..store import COMPLETE

if TYPE_CHECKING:
    from ..store import SessionInfo, Store


def latest_with_tags(
    store: Store,
    where: Mapping[str, str],
    *,
    exclude: int | None = None,
    board: str | None = None,
) -> SessionInfo:
    """The newest complete session carrying every ``where`` tag, other than ``exclude``
    (the new capture itself, when it is stored); of ``board`` too when the new capture
    names its board and ``where`` does not."""
    wanted = dict(where)
    if board is not None and "board" not in wanted:
        wanted["board"] = board
    for info in store.list(wanted):  # newest first
        if info.status == COMPLETE and info.id != exclude and info.raw_bytes > 0:
            return info
    shown = " ".join(f"{k}={v}" for k, v in wanted.items())
    raise UserError(f"--baseline {shown}: no complete stored session has those tags")
