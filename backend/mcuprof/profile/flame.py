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
from typing import TYPE_CHECKING, Any

import numpy as np

from ..names import short_label
from .aggregate import UNKNOWN_ID, frame_info, stacks, sums
from .pruning import Pruned, select
from .trees import OTHER_ID, ROOT_ID, TreeNode

if TYPE_CHECKING:
    from .model import Profile, Window

OTHER = "other"
# A row as made: frame id, width, self, calls, name, file, line.
Row = tuple[int, float, float, int, str, "str | None", "int | None"]
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
    kids = _StackChildren(profile, parent, np.asarray(st.frame), live & (total > 0), total)
    tops = kids(-1)
    root_total = float(total[tops].sum())
    calls = np.asarray(s.calls)
    picked = select(
        -1, root_total, kids, lambda c: total[c], max_nodes, 0.0, lambda c: int(calls[c].sum())
    )

    def row(sid: int) -> Row:
        if sid < 0:
            return ROOT_ID, root_total, 0.0, 0, "all", None, None
        fid = int(st.frame[sid])
        fr = frame_info(profile, fid)
        return (
            fid,
            float(total[sid]),
            float(s.self_[sid]),
            int(s.calls[sid]),
            fr.name,
            fr.file,
            fr.line,
        )

    out = _columns(picked, row)
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
    """A stack's live children (-1: the roots) in falling total, then label, as the
    call tree orders them (trees._sort; ties in stack order)."""

    def __init__(
        self,
        profile: Profile,
        parent: np.ndarray,
        frame: np.ndarray,
        shown: np.ndarray,
        total: np.ndarray,
    ) -> None:
        ids = np.flatnonzero(shown).astype(np.int32)
        self.order = ids[np.argsort(parent[ids], kind="stable")]
        self.parent = parent[self.order]
        self.frame, self.total = frame, total
        # Label order per frame id; UNKNOWN_ID (-1) reads the last slot, its own.
        labels = [f.label for f in profile.frames] + [frame_info(profile, UNKNOWN_ID).label]
        self.rank = np.unique(np.array(labels, dtype=str), return_inverse=True)[1].ravel()

    def __call__(self, sid: int) -> np.ndarray:
        lo, hi = np.searchsorted(self.parent, [sid, sid + 1])
        c = self.order[lo:hi]
        return c[np.lexsort((self.rank[self.frame[c]], -self.total[c]))]


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

    def row(node: TreeNode) -> Row:
        name = root_label if node is root else node.name
        return node.frame, width(node), own(node), node.calls, name, node.file, node.line

    out = _columns(picked, row)
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


def _columns(picked: Pruned, row: Callable[[Any], Row]) -> dict[str, Any]:
    n = len(picked.keys) + len(picked.others)
    parent = picked.parent + [p for p, _, _ in picked.others]
    fid, name, total, own, calls = [0] * n, [0] * n, [0.0] * n, [0.0] * n, [0] * n
    names = _Names()
    for i, key in enumerate(picked.keys):
        fid[i], total[i], own[i], calls[i], *where = row(key)
        name[i] = names.of(fid[i], *where)
    for k, (_, width, n_calls) in enumerate(picked.others, start=len(picked.keys)):
        fid[k], total[k], own[k], calls[k] = OTHER_ID, width, width, n_calls
        name[k] = names.of(OTHER_ID, OTHER, None, None)
    depth, x, key = [0] * n, [0.0] * n, [0] * n
    cursor = [0.0] * n
    seen: set[int] = set()
    for i in range(1, n):
        p = parent[i]
        depth[i] = depth[p] + 1
        x[i] = cursor[i] = cursor[p]
        cursor[p] += total[i]
        k = hash((key[p], fid[i], name[i] if fid[i] < 0 else 0)) & _KEY_MASK
        while k in seen:  # two frames of one name under one parent (diff tree)
            k = hash((k, 1)) & _KEY_MASK
        seen.add(k)
        key[i] = k
    return {
        "parent": parent,
        "fid": fid,
        "name": name,
        "depth": depth,
        "x": x,
        "total": total,
        "self": own,
        "calls": calls,
        "key": key,
        "names": names.names,
        "labels": names.labels,
        "where": names.where,
        "nodes": n,
    }
