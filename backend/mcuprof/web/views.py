"""The profile as the page needs it: JSON-ready dicts for each view. Callers hold the
live session's profile lock."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserError
from ..names import short_label
from ..profile import Profile, TreeNode, flame
from ..profile import prune as prune_tree
from ..profile.aggregate import UNKNOWN_ID
from ..profile.distribution import summaries
from ..profile.frames import where
from ..profile.shares import share_pct, span
from ..profile.trees import ROOT_ID

Window = tuple[float, float] | None


MODES = ("top-down", "bottom-up")
# Segment breaks (target resets) the timeline is given at most: the latest ones.
MAX_SEGMENTS_SHOWN = 1000


def top_down(profile: Profile, window: Window) -> TreeNode:
    return profile.cached(("web-top-down", window), lambda: profile.top_down(window))


def _shares(profile: Profile, window: Window) -> dict[str, list[float]]:
    """Per function (by frame id): [total %, self %, calls, total µs, self µs], the
    numbers the Functions table shows, so the flame tooltip can quote them."""
    out: dict[str, list[float]] = {}
    for f in profile.function_stats(window):
        out[str(f.frame)] = [
            f.pct,
            f.self_pct,
            f.calls,
            f.total_us,
            f.self_us,
        ]
    return out


def flame_graph(
    profile: Profile, window: Window, max_nodes: int, mode: str = "top-down"
) -> dict[str, Any]:
    """The flame graph's columns (profile/flame.py) for ``window``."""
    extra: dict[str, Any] = {"window": window, "mode": mode} | span(profile, window)
    if profile.n_records == 0:
        return flame.tree(TreeNode("all", "all", ROOT_ID), max_nodes, _total, _self) | extra
    if mode == "bottom-up":
        # A callers-tree node's self time is its callee's along that path, so its
        # children's are part of it: a cell is that self time wide and keeps as its own
        # what its callers do not account for.
        tree = profile.cached(("web-bottom-up", window), lambda: profile.bottom_up(window))
        cols = flame.tree(tree, max_nodes, _self, _inverted_self)
    else:
        cols = flame.top_down(profile, window, max_nodes)
    shares = profile.cached(("web-shares", window), lambda: _shares(profile, window))
    return cols | extra | {"functions": shares}


def _total(node: TreeNode) -> float:
    return node.total_us


def _self(node: TreeNode) -> float:
    return node.self_us


def _inverted_self(node: TreeNode) -> float:
    return max(0.0, node.self_us - sum(c.self_us for c in node.children))


class _Acc:
    """A merge tree for the sandwich view, keyed by frame id."""

    __slots__ = ("calls", "children", "node", "self_us", "weight")

    def __init__(self, node: TreeNode) -> None:
        self.node = node
        self.weight = 0.0
        self.self_us = 0.0
        self.calls = 0
        self.children: dict[int, _Acc] = {}

    def child(self, node: TreeNode) -> _Acc:
        found = self.children.get(node.frame)
        if found is None:
            found = self.children[node.frame] = _Acc(node)
        return found

    def to_tree(self, by_weight: bool) -> TreeNode:
        """As TreeNodes, each as wide as its weight; self: what its children's weights
        leave (callers), else the time in it (callees)."""

        def make(acc: _Acc) -> TreeNode:
            kids = sum(c.weight for c in acc.children.values())
            own = max(0.0, acc.weight - kids) if by_weight else acc.self_us
            n = acc.node
            return TreeNode(n.name, n.label, n.frame, acc.weight, own, acc.calls, n.file, n.line)

        root = make(self)
        stack = [(self, root)]
        while stack:
            src, dst = stack.pop()
            for acc in src.children.values():
                node = make(acc)
                dst.children.append(node)
                stack.append((acc, node))
        return root


def sandwich(profile: Profile, window: Window, fid: int, max_nodes: int) -> dict[str, Any]:
    """speedscope's sandwich: every outermost call of one function, its callers merged
    (weighted by the time spent in it) and its callees merged (top-down from it)."""
    root = top_down(profile, window)
    target: TreeNode | None = None
    callers: _Acc | None = None
    callees: _Acc | None = None
    stack: list[tuple[TreeNode, tuple[TreeNode, ...]]] = [(c, ()) for c in root.children]
    while stack:
        node, path = stack.pop()
        if node.frame == fid:
            if target is None:
                target = node
                callers, callees = _Acc(node), _Acc(node)
            assert callers is not None and callees is not None
            callers.weight += node.total_us
            callers.calls += node.calls
            at = callers
            for anc in reversed(path):
                at = at.child(anc)
                at.weight += node.total_us
                at.calls += node.calls
            _merge(callees, node)
            continue  # nested calls of the function are inside this one's time
        stack.extend((c, (*path, node)) for c in node.children)
    if target is None or callers is None or callees is None:
        raise UserError("that function has no calls in this window")
    sp = span(profile, window)
    return {
        "fid": fid,
        "name": target.name,
        "callers": _half(callers.to_tree(True), max_nodes, target.name),
        "callees": _half(callees.to_tree(False), max_nodes, target.name),
        "window": window,
    } | sp


def _half(tree: TreeNode, max_nodes: int, name: str) -> dict[str, Any]:
    return flame.tree(tree, max_nodes, _total, _self, root_label=name)


def _merge(acc: _Acc, node: TreeNode) -> None:
    stack = [(acc, node)]
    while stack:
        dst, src = stack.pop()
        dst.self_us += src.self_us
        dst.weight += src.total_us
        dst.calls += src.calls
        for c in src.children:
            stack.append((dst.child(c), c))


def functions(profile: Profile, window: Window) -> dict[str, Any]:
    rows = []
    sp = span(profile, window)
    if profile.n_records:
        dist = summaries(profile, window)
        for f in profile.function_stats(window):
            d = dist[f.frame]
            rows.append(
                {
                    "name": f.name,
                    "label": f.name,  # one name everywhere; the file is in "file"
                    # The name cell and its sort key: the page's short name (no
                    # return type nor parameters), as in the flame graph's cells.
                    "display": short_label(f.name),
                    "file": f.where,  # tells same-name statics apart
                    "line": f.line,
                    "calls": f.calls,
                    "total_us": f.total_us,
                    "self_us": f.self_us,
                    "mean_us": f.mean_us,
                    "min_us": f.min_us,
                    "max_us": f.max_us,
                    # per call, inclusive, as mean_us (profile/distribution.py)
                    "p50_us": d.p50_us,
                    "p90_us": d.p90_us,
                    "p99_us": d.p99_us,
                    "p999_us": d.p999_us,
                    "fid": f.frame,
                    # Of the window's profiled time, as in the call tree and flame graph.
                    "pct": f.pct,
                    "self_pct": f.self_pct,
                }
            )
    unknown = _unknown_us(profile, window) if profile.n_records else 0.0
    return (
        {"functions": rows, "window": window, "records": profile.n_records}
        | sp
        | {"unknown_us": unknown}
    )


def _unknown_us(profile: Profile, window: Window) -> float:
    """The time under "[unknown]": calls whose callers the capture did not see (it began
    inside them), as the flame graph's "[unknown]" frame is wide. The sandwich's table
    lists it, as speedscope does."""
    root = top_down(profile, window)
    return sum(c.total_us for c in root.children if c.frame == UNKNOWN_ID)


def _compact(node: TreeNode, total: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    stack = [(node, out)]
    while stack:
        src, dst = stack.pop()
        dst.update(
            n=src.name,
            t=src.total_us,
            s=src.self_us,
            c=src.calls,
            p=share_pct(src.total_us, total),
            q=share_pct(src.self_us, total),
            i=src.frame,
            f=f"{src.file}:{src.line}" if src.file and src.line else src.file or "",
            k=[],
        )
        for child in src.children:
            slot: dict[str, Any] = {}
            dst["k"].append(slot)
            stack.append((child, slot))
    return out


def call_tree(profile: Profile, mode: str, window: Window, max_nodes: int) -> dict[str, Any]:
    if profile.n_records == 0:
        return {"mode": mode, "root": None, "window": window, "nodes": 0}
    full = top_down(profile, window) if mode == "top-down" else profile.bottom_up(window)
    size = full.count()
    tree = prune_tree(full, max_nodes) if size > max_nodes else full
    sp = span(profile, window)
    return {
        "mode": mode,
        # Shares of the window's profiled time in both directions: a bottom-up root sums
        # every function's total, which counts nested time once per function.
        "root": _compact(tree, sp["profiled_us"]),
        "window": window,
        "nodes": size,
        "pruned": size > max_nodes,
    } | sp


def timeline(profile: Profile, t0: float | None, t1: float | None, width: int) -> dict[str, Any]:
    if profile.n_records == 0:
        return {"empty": True, "range": None}
    lo, hi = profile.t0_us, profile.t1_us
    a = lo if t0 is None else max(lo, t0)
    b = hi if t1 is None else min(hi, t1)
    if b <= a:
        a, b = lo, max(hi, lo + 1.0)
    data = profile.timeline(a, b, width)
    data["range"] = [lo, hi]
    # Where the target's clock restarted (a new segment), within the capture.
    lo_t, hi_t = profile.t0_ticks, profile.ticks(hi)
    data["segments"] = [
        float(profile.us(t)) for t in profile.breaks[-MAX_SEGMENTS_SHOWN:] if lo_t <= t <= hi_t
    ]
    data["max_depth"] = profile.max_depth
    data["empty"] = False
    return data


def _call_at(profile: Profile, depth: int, tick: float) -> tuple[int, int, int] | None:
    """(entry, duration, frame id) of the call at ``depth`` running at ``tick``."""
    lv = profile.levels.get(depth)
    if lv is None or lv.n == 0:
        return None
    entry = lv.entry
    k = int(np.searchsorted(entry, tick, side="right")) - 1
    # Calls of one depth are disjoint, but a long one may start before a shorter neighbour.
    lo = int(np.searchsorted(entry, tick - lv.max_dur, side="left"))
    for i in range(k, lo - 1, -1):
        if i < 0:
            break
        if entry[i] <= tick <= entry[i] + int(lv.dur[i]):
            fid = int(profile.frame_of[lv.addr[i]])  # one record, not the level
            return int(entry[i]), int(lv.dur[i]), fid
    return None


def call_details(profile: Profile, depth: int, t_us: float) -> dict[str, Any]:
    """One call of the timeline: where it is, how long, its self time and call path."""
    tick = profile.ticks(t_us)
    found = _call_at(profile, depth, tick)
    if found is None:
        raise UserError(f"no call at depth {depth} at that time")
    entry, dur, fid = found
    # Self: its duration less the calls one level deeper that ran inside it.
    inner = 0
    lv = profile.levels.get(depth + 1)
    if lv is not None and lv.n:
        lo = int(np.searchsorted(lv.entry, entry, side="left"))
        hi = int(np.searchsorted(lv.entry, entry + dur, side="right"))
        inner = int(np.minimum(lv.entry[lo:hi] + lv.dur[lo:hi], entry + dur).sum()) - int(
            lv.entry[lo:hi].sum()
        )
    path = []
    for d in range(depth):
        outer = _call_at(profile, d, tick)
        if outer is not None:
            path.append(profile.frames[outer[2]].name)
    fr = profile.frames[fid]
    us = 1e6 / profile.timer_freq
    return {
        "name": fr.name,
        "label": fr.name,
        "fid": fid,
        "file": where(fr.name, fr.label, fr.file),
        "line": fr.line,
        "depth": depth,
        "start_us": entry * us,
        "since_start_us": entry * us - profile.t0_us,
        "dur_us": dur * us,
        "self_us": max(0, dur - inner) * us,
        "path": path,
    }
