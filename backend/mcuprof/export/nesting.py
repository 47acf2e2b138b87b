"""Calls as one properly nested sequence, for the event-based formats.

Speedscope and Chrome need intervals that nest; a corrupt stream may hold calls that
overlap at one depth, so each call is clamped into its parent and after its previous
sibling. A sane capture is left untouched. Orphans get an "[unknown]" parent each.
"""

from __future__ import annotations

import itertools
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


@dataclass
class Preorder:
    """``Nested`` as arrays, with each call's subtree size in the sequence (itself
    included), so open/close events can be placed without a per-call loop."""

    frame: np.ndarray  # int32 (int64 from the walk)
    start: np.ndarray  # float64 ticks relative to the capture start
    end: np.ndarray
    depth: np.ndarray  # int32 (int64 from the walk)
    size: np.ndarray  # int32 (int64 from the walk)


def preorder(profile: Profile, window: Window = None) -> Preorder:
    """The calls of ``nested_calls`` in the same order and with the same times: computed
    with array operations when the capture needs no repair (every call inside its parent,
    after its previous sibling; the usual case), else by ``nested_calls``."""
    fast = None if window is not None else _sane_preorder(profile)
    if fast is not None:
        return fast
    calls = nested_calls(profile, window)
    depth = np.asarray(calls.depth, np.int64)
    size = np.ones(len(depth), np.int64)
    open_: list[int] = []
    for i, d in enumerate(calls.depth):
        while open_ and calls.depth[open_[-1]] >= d:
            j = open_.pop()
            size[j] = i - j
        open_.append(i)
    for j in open_:
        size[j] = len(depth) - j
    return Preorder(
        np.asarray(calls.frame, np.int64),
        np.asarray(calls.start, np.float64),
        np.asarray(calls.end, np.float64),
        depth,
        size,
    )


_LOW = np.iinfo(np.int64).min


def _columns(profile: Profile) -> tuple[np.ndarray, ...]:
    """The columns of ``profile.table()`` that the walk needs, in the same row order
    (depth-major, entry order), filled level by level into arrays of their final size
    and narrow types: no per-level pieces concatenated, so no second copy at the peak.
    Returns start (int64 ticks from the capture start), end, parent (int32 row, -1 for
    none), depth (int32) and frame (int32); orphans are the rows below depth 0 with no
    parent."""
    depths = sorted(profile.levels)
    n = sum(profile.levels[d].n for d in depths)
    start = np.empty(n, np.int64)
    end = np.empty(n, np.int64)
    parent = np.empty(n, np.int32)
    depth = np.empty(n, np.int32)
    frame = np.empty(n, np.int32)
    base: dict[int, int] = {}
    row = 0
    for d in depths:
        lv = profile.levels[d]
        base[d] = row
        part = slice(row, row + lv.n)
        np.subtract(lv.entry, profile.t0_ticks, out=start[part])
        np.add(start[part], lv.dur, out=end[part])
        p = lv.parent
        np.add(p, base.get(d - 1, 0), out=parent[part], casting="unsafe")
        parent[part][p < 0] = -1
        depth[part] = d
        frame[part] = profile.frame_ids(lv)
        row += lv.n
    return start, end, parent, depth, frame


def _clamp(
    k: np.ndarray,
    parent: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    lo_s: np.ndarray,
    hi_e: np.ndarray,
    keep: np.ndarray,
) -> None:
    """Clamp the children ``k`` of one depth (grouped by parent, in entry order)."""
    p = parent[k]
    ps, pe = lo_s[p], hi_e[p]
    first = np.concatenate([[True], p[1:] != p[:-1]])
    rank = np.cumsum(first) - 1
    # A child lies within its parent's unclamped interval (the parent rule), and a
    # duration fits in 32 bits, so (rank, end - parent start) packs into an int64.
    base = start[p]
    run = np.maximum.accumulate((rank << 32) | (end[k] - base)) - (rank << 32) + base
    before = np.concatenate([[_LOW], run[:-1]])
    before[first] = _LOW
    cur = np.minimum(np.maximum(ps, before), pe)
    ks = np.maximum(start[k], cur)
    lo_s[k] = ks
    hi_e[k] = np.minimum(np.maximum(end[k], ks), pe)
    keep[k] = keep[p] & (ks <= pe)


def _sane_preorder(profile: Profile) -> Preorder | None:
    """``nested_calls`` over the whole capture, as array operations. The repair walk
    clamps each call to start no earlier than its previous sibling's end (the cursor)
    and to end within its parent; within a parent the cursor is a running maximum of
    the siblings' ends bounded by the parent, computed for every parent at once with
    one accumulate over (parent rank, end) keys, one depth at a time. Row indices fit
    in 32 bits (a capture file holds at most 76M records); arrays are freed as soon as
    they are done with, since this is the peak of the trace exports."""
    start, end, parent, depth, frame = _columns(profile)  # int64 ticks: exact arithmetic
    n = len(depth)
    if n == 0:
        return None
    has = parent >= 0
    orphan = ~has & (depth > 0)
    order = np.argsort(parent, kind="stable").astype(np.int32)  # children by parent
    n_roots = int(np.count_nonzero(~has))
    roots = order[:n_roots]
    roots = roots[np.lexsort((roots, depth[roots], start[roots]))]
    kids = order[n_roots:]
    lo_s = np.empty(n, np.int64)  # clamped start and end
    hi_e = np.empty(n, np.int64)
    keep = np.ones(n, bool)
    cursor = np.maximum.accumulate(end[roots])
    prev = np.concatenate([[_LOW], cursor[:-1]])
    lo_s[roots] = np.maximum(start[roots], prev)
    hi_e[roots] = np.maximum(end[roots], lo_s[roots])
    del cursor, prev
    # Kids are sorted by parent row, and rows are depth-major: one run per depth.
    bounds = np.flatnonzero(np.diff(depth[kids])) + 1
    for k in np.split(kids, bounds):
        if len(k):
            _clamp(k, parent, start, end, lo_s, hi_e, keep)
    del bounds, start, end
    # Subtree sizes over the calls kept, deepest level first; rows of one depth are a
    # contiguous block.
    cuts = [0, *(np.flatnonzero(np.diff(depth)) + 1).tolist(), n]
    blocks = list(itertools.pairwise(cuts))
    size = keep.astype(np.int32)
    for a, b in reversed(blocks):
        rows = np.flatnonzero(has[a:b]) + a
        if len(rows):
            np.add.at(size, parent[rows], size[rows])
    wrap = orphan[roots].astype(np.int32)  # an "[unknown]" parent of each orphan
    root_span = size[roots] + wrap
    pos = np.zeros(n, np.int64)
    off = np.zeros(n, np.int32)  # output depth - table depth
    pos[roots] = np.cumsum(root_span, dtype=np.int64) - root_span + wrap
    off[roots] = wrap - depth[roots]
    # Within each parent, the sizes of the earlier siblings.
    kp = parent[kids]
    ksz = size[kids]
    csum = np.cumsum(ksz, dtype=np.int64) - ksz
    del ksz
    first = np.flatnonzero(np.concatenate([[True], kp[1:] != kp[:-1]])) if len(kids) else kids
    group_start = np.repeat(csum[first], np.diff(np.append(first, len(kids))))
    before_sz = np.empty(n, np.int64)
    before_sz[kids] = csum - group_start
    del kp, csum, group_start, first, order, kids
    for a, b in blocks:
        rows = np.flatnonzero(has[a:b]) + a
        if len(rows):
            pos[rows] = pos[parent[rows]] + 1 + before_sz[rows]
            off[rows] = off[parent[rows]]
    del before_sz, has
    total = int(root_span.sum())
    kept = np.flatnonzero(keep)
    del keep
    at = pos[kept]
    out_frame = np.empty(total, np.int32)
    out_frame[at] = frame[kept]
    del frame
    out_depth = np.empty(total, np.int32)
    out_depth[at] = depth[kept] + off[kept]
    del depth, off
    out_size = np.empty(total, np.int32)
    out_size[at] = size[kept]
    out_start = np.empty(total)
    out_start[at] = lo_s[kept]
    out_end = np.empty(total)
    out_end[at] = hi_e[kept]
    del at, kept
    o = roots[orphan[roots]]
    w = pos[o] - 1
    out_frame[w] = UNKNOWN_ID
    out_start[w], out_end[w] = lo_s[o], hi_e[o]
    out_depth[w] = 0
    out_size[w] = size[o] + 1
    return Preorder(out_frame, out_start, out_end, out_depth, out_size)
