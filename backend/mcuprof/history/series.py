"""Series of one figure per stored session, oldest first, for the functions a glob
selects: what ``mcuprof history`` prints and the History tab draws."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from ..store import COMPLETE
from .changepoints import ChangePoint, change_points
from .summary import session_summary

if TYPE_CHECKING:
    from ..store import SessionInfo, Store

# What --metric names, and the summary field each reads (history/summary.py).
METRICS = {
    "mean": "mean_us",  # inclusive µs per call, as the Functions table's Mean
    "p99": "p99_us",  # inclusive µs per call, 99th percentile (profile/distribution.py)
    "share": "self_pct",  # self time, % of the capture's profiled time
}
MAX_FUNCTIONS = 50  # series per query: a glob such as '*' must not draw thousands


@dataclass(frozen=True)
class Point:
    session_id: int
    name: str  # the session's
    build: str  # what names the build: its commit tag, else the device's build ID
    created_at: float
    tags: Mapping[str, str]
    value: float


@dataclass
class Series:
    function: str  # the label
    metric: str
    points: list[Point] = field(default_factory=list)
    changes: list[ChangePoint] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "function": self.function,
            "metric": self.metric,
            "points": [_point_dict(p) for p in self.points],
            "change_points": [_change_dict(c, self.points) for c in self.changes],
        }


def build_label(info: SessionInfo) -> str:
    if "commit" in info.tags:
        return info.tags["commit"]
    if info.metadata is not None:
        return f"0x{info.metadata.elf_build_id:08X}"
    return f"session {info.id}"


def history(
    store: Store,
    globs: list[str],
    metric: str = "mean",
    where: Mapping[str, str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[Series]:
    """Every complete session with the ``where`` tags, oldest first; one series per
    function matching a glob (label or name), with its change points."""
    if metric not in METRICS:
        raise UserError(f"--metric {metric!r}: choose one of {', '.join(METRICS)}")
    sessions = [s for s in store.list(dict(where or {})) if s.status == COMPLETE]
    sessions.sort(key=lambda s: (s.started_at or s.created_at, s.id))
    found: dict[str, Series] = {}
    for i, info in enumerate(sessions):
        summary = session_summary(store, info.id)
        for label, row in summary["functions"].items():
            if not _selected(label, row["name"], globs):
                continue
            value = row.get(METRICS[metric])
            if value is None:
                continue
            series = found.setdefault(label, Series(label, metric))
            series.points.append(_point(info, float(value)))
        if progress is not None:
            progress(i + 1, len(sessions))
    if len(found) > MAX_FUNCTIONS:
        raise UserError(
            f"{len(found)} functions match; at most {MAX_FUNCTIONS} series at once: "
            "narrow --function"
        )
    for series in found.values():
        series.changes = change_points([p.value for p in series.points])
    return sorted(found.values(), key=lambda s: s.function)


def _selected(label: str, name: str, globs: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(label, g) or fnmatch.fnmatchcase(name, g) for g in globs)


def _point(info: SessionInfo, value: float) -> Point:
    return Point(
        info.id, info.name, build_label(info), info.started_at or info.created_at, info.tags, value
    )


def _point_dict(p: Point) -> dict[str, Any]:
    return {
        "session_id": p.session_id,
        "session": p.name,
        "build": p.build,
        "created_at": p.created_at,
        "tags": dict(p.tags),
        "value": p.value,
    }


def _change_dict(c: ChangePoint, points: list[Point]) -> dict[str, Any]:
    first = points[c.index]
    last_before = points[c.index - 1]
    return {
        "index": c.index,
        "first_build": first.build,
        "session_id": first.session_id,
        "previous_session_id": last_before.session_id,
        "before": c.before,
        "after": c.after,
        "step": c.step,
        "step_pct": c.step_pct,
        "interval": [c.low, c.high],
    }
