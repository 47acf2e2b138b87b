"""The flame graph's columns: what a flame graph draws, one row per visible frame, made
straight from the stack table (top-down) or from a merged tree (callers, sandwich,
diff), pruned by the one prune (pruning.py).

Rows are parents first, siblings left to right. Per row: ``parent`` (row, -1 at the
root), ``fid`` (frame id; ROOT_ID, OTHER_ID or UNKNOWN_ID for synthetic frames),
``name`` (index into the name table), ``depth``, ``x`` (left edge, in units from the
root's left edge), ``total`` (width, in units), ``self`` (units), ``calls`` and ``key``
(the row's call path as a number below 2**53: a frame keeps its key across updates, so
a zoom stays on it). The name table: ``names`` (full), ``labels`` (short, the cells'
text) and ``where`` (file:line). ``units_per_us`` turns units into µs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..names import short_label
from .aggregate import UNKNOWN_ID, frame_info, stacks, sums
from .pruning import Pruned, select
from .trees import OTHER_ID, ROOT_ID, TreeNode

if TYPE_CHECKING:
    from .model import Profile, Window

OTHER = "other"
_KEY_MASK = (1 << 53) - 1  # a key stays exact as a JavaScript number


def top_down(profile: Profile, window: Window, max_nodes: int) -> dict[str, Any]:
    """The top-down flame graph from the stack table: a stack is a frame of the graph
    (children keyed by frame, as trees.top_down), in ticks."""
    st = stacks(profile)
    s = sums(profile, window)
    parent = np.asarray(st.parent)
    live = _live(parent, s.calls)
    # A frame is as wide as the self time under it (the profiled time's one sum), as
    # the SVG's frames: a stack's own total can differ where the target reset.
    levels = np.where(parent < 0, 1, np.asarray(st.depth, np.int64) + 2)
    total = subtree_totals(np.asarray(s.self_, np.float64), parent, levels)
    frame = np.asarray(st.frame)
    kids = _StackChildren(profile, (parent, frame), live & (total > 0), total, max_nodes)
    root_total = float(total[kids(-1)].sum())
    calls = np.asarray(s.calls)
    picked = select(
        -1, root_total, kids, lambda c: total[c], max_nodes, 0.0, lambda c: int(calls[c].sum())
    )
    sids = np.array(picked.keys[1:], np.int64)
    fid = [ROOT_ID, *frame[sids].tolist()]
    names = _Names()
    by_fid = {ROOT_ID: names.of(ROOT_ID, "all", None, None)}
    for f in sorted(set(fid[1:])):
        fr = frame_info(profile, f)
        by_fid[f] = names.of(f, fr.name, fr.file, fr.line)
    rows = _Rows(
        picked.parent,
        fid,
        [by_fid[f] for f in fid],
        [root_total, *total[sids].tolist()],
        [0.0, *np.asarray(s.self_)[sids].tolist()],
        [0, *calls[sids].tolist()],
        # A stack id is its call path: the key (-1 the root; "other" below).
        [-1, *sids.tolist()],
    )
    out = _columns(rows, picked, names)
    per_us = profile.timer_freq / 1e6
    return out | {
        "units_per_us": per_us,
        "total_us": root_total / per_us,
        "frames": int(live.sum()) + 1,
    }


def subtree_totals(
    self_t: np.ndarray, parents: np.ndarray, levels: np.ndarray, thin: int = 64
) -> np.ndarray:
    """Each path's self time plus its descendants', summed as the loop ``for p in
    reversed(range(n)): total[parent[p]] += total[p]`` sums them (same float rounding):
    one level at a time from the deepest (roots are level 1), each level's paths in
    falling id order, so that a path's total is whole before it is added to its parent.
    Levels thinner than ``thin`` paths on average (a deep chain): the loop itself, which
    then costs less than a numpy step per level."""
    top = int(levels.max(initial=0))
    if top * thin > len(self_t):
        total, par = self_t.tolist(), parents.tolist()
        for pid in range(len(total) - 1, -1, -1):
            if par[pid] >= 0:
                total[par[pid]] += total[pid]
        return np.array(total, np.float64)
    total = np.array(self_t, np.float64)
    by_level = np.argsort(levels, kind="stable").astype(np.int32)  # path ids
    ends = np.cumsum(np.bincount(levels, minlength=top + 1))[1:]  # of levels 1, 2, ...
    for lv in range(top, 1, -1):
        ps = by_level[ends[lv - 2] : ends[lv - 1]][::-1]
        np.add.at(total, parents[ps], total[ps])
    return total


def _live(parent: np.ndarray, calls: np.ndarray) -> np.ndarray:
    """Stacks with calls and every ancestor of one ("[unknown]" only as an ancestor)."""
    live = calls > 0
    live[0] = False
    ids = np.flatnonzero(live)
    while len(ids):  # one level up at a time
        up = parent[ids]
        up = up[up >= 0]
        ids = np.unique(up[~live[up]])
        live[ids] = True
    return live


class _StackChildren:
    """A stack's shown children (-1: the roots) in falling total, then label, as the
    call tree orders them (trees._sort; ties in stack order): sorted once, so asking
    is a slice. Only the children of stacks the prune may keep are sorted: it keeps at
    most ``budget`` stacks, in falling total (a parent is never narrower than its
    child), so none narrower than the ``budget``-th widest."""

    def __init__(
        self,
        profile: Profile,
        st: tuple[np.ndarray, np.ndarray],
        shown: np.ndarray,
        total: np.ndarray,
        budget: int,
    ) -> None:
        parent, frame = st
        ids = np.flatnonzero(shown)
        if len(ids) > budget:
            t = total[ids]
            least = np.partition(t, len(t) - budget)[len(t) - budget]
            may_keep = np.zeros(len(parent) + 1, bool)  # by stack id + 1: -1 is the root
            may_keep[0] = True
            may_keep[ids[t >= least] + 1] = True
            ids = ids[may_keep[parent[ids] + 1]]
        # Label order per frame id; UNKNOWN_ID (-1) reads the last slot, its own.
        labels = [f.label for f in profile.frames] + [frame_info(profile, UNKNOWN_ID).label]
        rank = np.unique(np.array(labels, dtype=str), return_inverse=True)[1].ravel()
        self.order = ids[np.lexsort((rank[frame[ids]], -total[ids], parent[ids]))]
        heads, starts = np.unique(parent[self.order], return_index=True)
        ends = [*starts[1:].tolist(), len(self.order)]
        self.span = dict(zip(heads.tolist(), zip(starts.tolist(), ends, strict=True), strict=True))

    def __call__(self, sid: int) -> np.ndarray:
        lo, hi = self.span.get(sid, (0, 0))
        return self.order[lo:hi]


def tree(
    root: TreeNode,
    max_nodes: int,
    width: Callable[[TreeNode], float],
    own: Callable[[TreeNode], float],
    root_label: str = "all",
) -> dict[str, Any]:
    """Any merged tree (the callers tree, a sandwich half, the diff tree) in µs: a
    frame is ``width(node)`` wide and its self time is ``own(node)``."""

    def kids(node: TreeNode) -> list[TreeNode]:
        return sorted((c for c in node.children if width(c) > 0), key=lambda c: -width(c))

    def totals(nodes: list[TreeNode]) -> np.ndarray:
        return np.array([width(n) for n in nodes], np.float64)

    picked = select(
        root, width(root), kids, totals, max_nodes, 0.0, lambda c: sum(n.calls for n in c)
    )

    names = _Names()
    nodes: list[TreeNode] = picked.keys
    rows = _Rows(
        picked.parent,
        [n.frame for n in nodes],
        [names.of(n.frame, root_label if n is root else n.name, n.file, n.line) for n in nodes],
        [width(n) for n in nodes],
        [own(n) for n in nodes],
        [n.calls for n in nodes],
        None,
    )
    out = _columns(rows, picked, names)
    return out | {"units_per_us": 1.0, "total_us": width(root), "frames": root.count()}


class _Names:
    """The name table: one entry per frame (per name for synthetic frames)."""

    def __init__(self) -> None:
        self.index: dict[tuple[int, str, str], int] = {}
        self.names: list[str] = []
        self.labels: list[str] = []
        self.where: list[str] = []

    def of(self, fid: int, name: str, file: str | None, line: int | None) -> int:
        where = f"{file}:{line}" if file and line else file or ""
        ident = (fid, name, where)
        at = self.index.get(ident)
        if at is None:
            at = self.index[ident] = len(self.names)
            self.names.append(name)
            self.labels.append(short_label(name))
            self.where.append(where)
        return at


@dataclass(slots=True)
class _Rows:
    """The kept rows' columns as lists; ``key`` None: made from the call path."""

    parent: list[int]
    fid: list[int]
    name: list[int]
    total: list[float]
    own: list[float]
    calls: list[int]
    key: list[int] | None


def _columns(rows: _Rows, picked: Pruned, names: _Names) -> dict[str, Any]:
    """The kept rows, then the "other" rows, laid out: depth and left edge."""
    other = names.of(OTHER_ID, OTHER, None, None) if picked.others else -1
    for p, width, n_calls in picked.others:
        rows.parent.append(p)
        rows.fid.append(OTHER_ID)
        rows.name.append(other)
        rows.total.append(width)
        rows.own.append(width)
        rows.calls.append(n_calls)
        if rows.key is not None:  # below -1, apart from the root's key
            rows.key.append(-3 - rows.key[p])
    parent, total = rows.parent, rows.total
    n = len(parent)
    depth, x, cursor = [0] * n, [0.0] * n, [0.0] * n
    for i in range(1, n):
        p = parent[i]
        depth[i] = depth[p] + 1
        x[i] = cursor[i] = cursor[p]
        cursor[p] += total[i]
    return {
        "parent": parent,
        "fid": rows.fid,
        "name": rows.name,
        "depth": depth,
        "x": x,
        "total": total,
        "self": rows.own,
        "calls": rows.calls,
        "key": rows.key if rows.key is not None else _path_keys(rows),
        "names": names.names,
        "labels": names.labels,
        "where": names.where,
        "nodes": n,
    }


def _path_keys(rows: _Rows) -> list[int]:
    """A number per row from its parent's and its frame (its name for synthetic
    frames), distinct among the rows: the same path gets the same key next time."""
    key = [0] * len(rows.parent)
    seen: set[int] = set()
    for i in range(1, len(key)):
        f = rows.fid[i]
        k = hash((key[rows.parent[i]], f, rows.name[i] if f < 0 else 0)) & _KEY_MASK
        while k in seen:  # two frames of one name under one parent (diff tree)
            k = hash((k, 1)) & _KEY_MASK
        seen.add(k)
        key[i] = k
    return key
