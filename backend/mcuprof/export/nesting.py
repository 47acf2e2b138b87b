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


@dataclass
class Preorder:
    """``Nested`` as arrays, with each call's subtree size in the sequence (itself
    included), so open/close events can be placed without a per-call loop."""

    frame: np.ndarray  # int64
    start: np.ndarray  # float64 ticks relative to the capture start
    end: np.ndarray
    depth: np.ndarray  # int64
    size: np.ndarray  # int64


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


def _sane_preorder(profile: Profile) -> Preorder | None:
    """``nested_calls`` over the whole capture, as array operations. The repair walk
    clamps each call to start no earlier than its previous sibling's end (the cursor)
    and to end within its parent; within a parent the cursor is a running maximum of
    the siblings' ends bounded by the parent, computed for every parent at once with
    one accumulate over (parent rank, end) keys, one depth at a time."""
    t = profile.table()
    n = len(t["depth"])
    if n == 0:
        return None
    start = t["entry"] - profile.t0_ticks  # int64 ticks: exact arithmetic
    end = start + t["duration"]
    parent = t["parent"]
    depth = t["depth"]
    orphan = t["orphan"]
    frame = t["frame"]
    del t  # the other columns are not needed: keep the peak low
    has = parent >= 0
    order = np.argsort(parent, kind="stable")  # children grouped by parent, entry order
    n_roots = int(np.count_nonzero(~has))
    roots = order[:n_roots]
    roots = roots[np.lexsort((roots, depth[roots], start[roots]))]
    kids = order[n_roots:]
    del order
    lo_s = np.empty(n, np.int64)  # clamped start and end
    hi_e = np.empty(n, np.int64)
    keep = np.ones(n, bool)
    cursor = np.maximum.accumulate(end[roots])
    prev = np.concatenate([[_LOW], cursor[:-1]])
    lo_s[roots] = np.maximum(start[roots], prev)
    hi_e[roots] = np.maximum(end[roots], lo_s[roots])
    del cursor, prev
    # Kids are sorted by parent row, and rows are depth-major: one run per depth.
    kid_depth = depth[kids]
    bounds = np.flatnonzero(np.diff(kid_depth)) + 1
    for k in np.split(kids, bounds):
        if len(k) == 0:
            continue
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
    del kid_depth, bounds
    # Subtree sizes over the calls kept, deepest level first.
    size = keep.astype(np.int64)
    cuts = np.flatnonzero(np.diff(depth)) + 1
    blocks = np.split(np.arange(n), cuts)
    for block in reversed(blocks):
        b = block[has[block]]
        if len(b):
            np.add.at(size, parent[b], size[b])
    wrap = orphan[roots].astype(np.int64)  # an "[unknown]" parent of each orphan
    root_span = size[roots] + wrap
    pos = np.zeros(n, np.int64)
    off = np.zeros(n, np.int64)  # output depth - table depth
    pos[roots] = np.cumsum(root_span) - root_span + wrap
    off[roots] = wrap - depth[roots]
    # Within each parent, the sizes of the earlier siblings.
    kp = parent[kids]
    ksz = size[kids]
    csum = np.cumsum(ksz) - ksz
    first = np.flatnonzero(np.concatenate([[True], kp[1:] != kp[:-1]])) if len(kids) else kids
    group_start = np.repeat(csum[first], np.diff(np.append(first, len(kids))))
    before_sz = np.empty(n, np.int64)
    before_sz[kids] = csum - group_start
    del kp, ksz, csum, group_start
    for block in blocks:
        b = block[has[block]]
        if len(b):
            pos[b] = pos[parent[b]] + 1 + before_sz[b]
            off[b] = off[parent[b]]
    del before_sz
    total = int(root_span.sum())
    kept = np.flatnonzero(keep)
    at = pos[kept]
    out_frame = np.empty(total, np.int64)
    out_start = np.empty(total)
    out_end = np.empty(total)
    out_depth = np.empty(total, np.int64)
    out_size = np.empty(total, np.int64)
    out_frame[at] = frame[kept]
    out_start[at], out_end[at] = lo_s[kept], hi_e[kept]
    out_depth[at] = depth[kept] + off[kept]
    out_size[at] = size[kept]
    o = roots[orphan[roots]]
    w = pos[o] - 1
    out_frame[w] = UNKNOWN_ID
    out_start[w], out_end[w] = lo_s[o], hi_e[o]
    out_depth[w] = 0
    out_size[w] = size[o] + 1
    return Preorder(out_frame, out_start, out_end, out_depth, out_size)
