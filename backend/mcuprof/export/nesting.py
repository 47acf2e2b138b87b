"""Calls as one properly nested sequence, for the event-based formats.

Speedscope and Chrome need intervals that nest; a corrupt stream may hold calls that
overlap at one depth, so each call is clamped into its parent and after its previous
sibling. A sane capture is left untouched. Orphans get an "[unknown]" parent each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID


@dataclass
class Nested:
    """Pre-order calls: frame id (UNKNOWN_ID for "[unknown]"), start and end ticks
    relative to the capture start, and nesting depth in this sequence."""

    frame: list[int]
    start: list[float]
    end: list[float]
    depth: list[int]


def nested_calls(profile: Profile, window: Window = None) -> Nested:
    t = profile.table()
    n = len(t["depth"])
    out = Nested([], [], [], [])
    if n == 0:
        return out
    base = profile.t0_ticks
    lo, hi = -np.inf, np.inf
    if window is not None:
        a, b = sorted(window)
        lo, hi = profile.ticks(a) - base, profile.ticks(b) - base
    start = (t["entry"] - base).astype(np.float64)
    end = start + t["duration"]
    parent = t["parent"]
    # Rows are depth-major and entry-sorted, so a stable sort by parent lists each
    # call's children in entry order.
    order = np.argsort(parent, kind="stable")
    sorted_parent = parent[order]
    first = np.searchsorted(sorted_parent, np.arange(n), side="left")
    last = np.searchsorted(sorted_parent, np.arange(n), side="right")
    n_roots = int(np.searchsorted(sorted_parent, -1, side="right"))
    roots = order[:n_roots].tolist()
    roots.sort(key=lambda r: (start[r], t["depth"][r], r))
    order_l = order.tolist()
    first_l, last_l = first.tolist(), last.tolist()
    start_l, end_l = start.tolist(), end.tolist()
    frame_l = t["frame"].tolist()
    orphan_l = t["orphan"].tolist()
    f_frame, f_start, f_end, f_depth = out.frame, out.start, out.end, out.depth
    cursor = lo
    for r in roots:
        s = max(start_l[r], cursor)
        e = min(max(end_l[r], s), hi)
        if s > hi or end_l[r] < lo:
            continue
        level = 0
        if orphan_l[r]:
            f_frame.append(UNKNOWN_ID)
            f_start.append(s)
            f_end.append(e)
            f_depth.append(0)
            level = 1
        cursor = e
        # Iterative DFS: (row, clamped start, clamped end, depth)
        stack = [(r, s, e, level)]
        while stack:
            row, s, e, d = stack.pop()
            f_frame.append(frame_l[row])
            f_start.append(s)
            f_end.append(e)
            f_depth.append(d)
            kids = []
            cur = s
            for k in order_l[first_l[row] : last_l[row]]:
                ks = max(start_l[k], cur)
                if ks > e or end_l[k] < lo or ks > hi:
                    continue
                ke = min(max(end_l[k], ks), e)
                kids.append((k, ks, ke, d + 1))
                cur = ke
            stack.extend(reversed(kids))
    return out
