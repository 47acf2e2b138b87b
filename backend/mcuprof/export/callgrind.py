"""Callgrind format for KCacheGrind/QCacheGrind: one cost, time in nanoseconds.

Functions are keyed by identity (label), calls aggregated per caller/callee pair with
their inclusive cost; positions are source lines where DWARF gave them (0 otherwise).
"""

from __future__ import annotations

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID, sums
from .frames import frame_file_line, frame_label

_UNKNOWN_FILE = "???"


def render(profile: Profile, window: Window = None, command: str = "mcuprof capture") -> str:
    with profile.lock:
        return _render(profile, window, command)


def _render(profile: Profile, window: Window, command: str) -> str:
    s = sums(profile, window)
    ns = 1e9 / profile.timer_freq
    callers, callees, counts, costs = _edges(profile, window)
    used = set(np.flatnonzero(s.f_calls).tolist()) | set(callers.tolist())
    out = [
        "# callgrind format",
        "version: 1",
        "creator: mcuprof",
        f"cmd: {command}",
        "positions: line",
        "events: ns",
        "event: ns : Time (nanoseconds)",
        f"summary: {round(float(s.f_self.sum()) * ns)}",
        "",
    ]
    files: dict[str, int] = {}
    fns: dict[int, int] = {}

    def fl(fid: int) -> str:
        file = frame_file_line(profile, fid)[0] or _UNKNOWN_FILE
        if file in files:
            return f"({files[file]})"
        files[file] = len(files) + 1
        return f"({files[file]}) {file}"

    def fn(fid: int) -> str:
        if fid in fns:
            return f"({fns[fid]})"
        fns[fid] = len(fns) + 1
        return f"({fns[fid]}) {frame_label(profile, fid)}"

    def line(fid: int) -> int:
        return frame_file_line(profile, fid)[1] or 0

    by_caller: dict[int, list[int]] = {}
    for i, c in enumerate(callers.tolist()):
        by_caller.setdefault(c, []).append(i)
    for fid in sorted(used, key=lambda f: frame_label(profile, f)):
        out.append(f"fl={fl(fid)}")
        out.append(f"fn={fn(fid)}")
        self_ns = 0 if fid == UNKNOWN_ID else round(float(s.f_self[fid]) * ns)
        out.append(f"{line(fid)} {self_ns}")
        for i in by_caller.get(fid, []):
            callee = int(callees[i])
            out.append(f"cfl={fl(callee)}")
            out.append(f"cfn={fn(callee)}")
            out.append(f"calls={int(counts[i])} {line(callee)}")
            out.append(f"{line(fid)} {round(float(costs[i]) * ns)}")
        out.append("")
    return "\n".join(out)


def _edges(
    profile: Profile, window: Window
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(caller frame, callee frame, calls, inclusive ticks) per distinct pair; orphans are
    called by "[unknown]"."""
    t = profile.table()
    start = t["entry"].astype(np.float64)
    end = start + t["duration"]
    if window is None:
        cost = end - start
        use = np.ones(len(start), bool)
    else:
        a, b = sorted(window)
        lo, hi = profile.ticks(a), profile.ticks(b)
        cost = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0, None)
        use = (start <= hi) & (end >= lo)
    child = np.flatnonzero(use & ((t["parent"] >= 0) | t["orphan"]))
    callee = t["frame"][child].astype(np.int64)
    p = t["parent"][child]
    caller = np.where(p >= 0, t["frame"][np.maximum(p, 0)], UNKNOWN_ID).astype(np.int64)
    if len(child) == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, np.empty(0)
    key = (caller + 1) << 32 | callee
    uniq, inv = np.unique(key, return_inverse=True)
    counts = np.bincount(inv)
    costs = np.bincount(inv, weights=cost[child])
    return (uniq >> 32) - 1, uniq & 0xFFFFFFFF, counts, costs
