"""Callgrind format for KCacheGrind/QCacheGrind: one cost, time in nanoseconds.

Functions are keyed by identity (frame) and shown by their display name (the folded
name: a static's file is in its ``fl=``); calls are aggregated per caller/callee pair
with their inclusive cost; positions are source lines where DWARF gave them (0 otherwise).
Calls at the root of a stack, and the "[unknown]" parent of orphans, are called by a
synthetic "[root]" of no self cost, so KCacheGrind and ``callgrind_annotate --inclusive``
count them (a function that runs at the root and nested, such as an ISR, included).
"""

from __future__ import annotations

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID, sums
from .frames import frame_file_line, frame_name

_UNKNOWN_FILE = "???"
ROOT_ID = -2  # the synthetic caller of root-level calls
_ROOT = "[root]"


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
        # callgrind_annotate reads event: (long names) only before events:
        "event: ns : Time (nanoseconds)",
        "events: ns",
        f"summary: {round(float(s.f_self.sum()) * ns)}",
        "",
    ]
    files: dict[str, int] = {}
    fns: dict[int, int] = {}

    def fl(fid: int) -> str:
        file = (None if fid == ROOT_ID else frame_file_line(profile, fid)[0]) or _UNKNOWN_FILE
        if file in files:
            return f"({files[file]})"
        files[file] = len(files) + 1
        return f"({files[file]}) {file}"

    def fn(fid: int) -> str:
        if fid in fns:
            return f"({fns[fid]})"
        fns[fid] = len(fns) + 1
        return f"({fns[fid]}) {label(fid)}"

    def label(fid: int) -> str:
        return _ROOT if fid == ROOT_ID else frame_name(profile, fid)

    def line(fid: int) -> int:
        return 0 if fid == ROOT_ID else frame_file_line(profile, fid)[1] or 0

    by_caller: dict[int, list[int]] = {}
    for i, c in enumerate(callers.tolist()):
        by_caller.setdefault(c, []).append(i)
    for fid in sorted(used, key=lambda f: (label(f), f)):
        out.append(f"fl={fl(fid)}")
        out.append(f"fn={fn(fid)}")
        self_ns = 0 if fid < 0 else round(float(s.f_self[fid]) * ns)
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
    called by "[unknown]", and root-level calls and "[unknown]" by "[root]". Computed one
    depth at a time, so only one level's temporaries are alive at once."""
    lo = hi = 0.0
    if window is not None:
        a, b = sorted(window)
        lo, hi = profile.ticks(a), profile.ticks(b)
    keys: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    costs: list[np.ndarray] = []
    frame_of = profile._addrs.frame_of
    for d in sorted(profile.levels):
        lv = profile.levels[d]
        start = lv.entry.astype(np.float64)
        end = start + lv.dur
        if window is None:
            cost = end - start
            use = slice(None)
        else:
            cost = np.clip(np.minimum(end, hi) - np.maximum(start, lo), 0, None)
            use = np.flatnonzero((start <= hi) & (end >= lo))
        del start, end
        callee = frame_of[lv.addr[use]].astype(np.int64)
        p = lv.parent[use]
        cost = cost[use]
        if d == 0:
            caller = np.full(len(callee), ROOT_ID, np.int64)
        else:
            up = profile.levels.get(d - 1)
            caller = np.full(len(callee), UNKNOWN_ID, np.int64)  # orphans
            has = p >= 0
            if up is not None and has.any():
                caller[has] = frame_of[up.addr[p[has]]]
            orphans = int(np.count_nonzero(~has))
            if orphans:  # each orphan has an "[unknown]" parent of its own, called by [root]
                caller = np.concatenate([caller, np.full(orphans, ROOT_ID, np.int64)])
                callee = np.concatenate([callee, np.full(orphans, UNKNOWN_ID, np.int64)])
                cost = np.concatenate([cost, cost[~has]])
        key = (caller - ROOT_ID) << 32 | (callee - ROOT_ID)
        uniq, inv = np.unique(key, return_inverse=True)
        keys.append(uniq)
        counts.append(np.bincount(inv, minlength=len(uniq)))
        costs.append(np.bincount(inv, weights=cost, minlength=len(uniq)))
    if not keys:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, np.empty(0)
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    n = np.bincount(inv, weights=np.concatenate(counts), minlength=len(uniq)).astype(np.int64)
    c = np.bincount(inv, weights=np.concatenate(costs), minlength=len(uniq))
    return (uniq >> 32) + ROOT_ID, (uniq & 0xFFFFFFFF) + ROOT_ID, n, c
