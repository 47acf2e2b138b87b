"""The profile as the page needs it: JSON-ready dicts for each view. Callers hold the
live session's profile lock."""

from __future__ import annotations

from typing import Any

from ..profile import Profile, TreeNode
from ..profile import prune as prune_tree
from .icicle import Frame, icicle_payload

Window = tuple[float, float] | None


def _frames(node: TreeNode) -> Frame:
    """Convert iteratively: call trees of recursive firmware can be thousands deep."""
    root = Frame(node.name, node.self_us, node.calls, [], node.file, node.line, key=node.label)
    stack = [(node, root)]
    while stack:
        src, dst = stack.pop()
        for child in src.children:
            frame = Frame(
                child.name, child.self_us, child.calls, [], child.file, child.line, key=child.label
            )
            dst.children.append(frame)
            stack.append((child, frame))
    return root


def icicle(profile: Profile, window: Window, max_nodes: int) -> dict[str, Any]:
    if profile.n_records == 0:
        return icicle_payload(Frame("all", 0.0, 0), max_nodes) | {"window": window}
    tree = profile.cached(("web-icicle", window), lambda: _frames(profile.top_down(window)))
    return icicle_payload(tree, max_nodes) | {"window": window}


def functions(profile: Profile, window: Window) -> dict[str, Any]:
    rows = []
    if profile.n_records:
        for f in profile.function_stats(window):
            rows.append(
                {
                    "name": f.name,
                    "label": f.name,  # one display name everywhere; the file is in "file"
                    "file": f.file,
                    "line": f.line,
                    "calls": f.calls,
                    "total_us": f.total_us,
                    "self_us": f.self_us,
                    "mean_us": f.mean_us,
                    "min_us": f.min_us,
                    "max_us": f.max_us,
                    "pct": f.pct,
                    "self_pct": f.self_pct,
                }
            )
    return {"functions": rows, "window": window, "records": profile.n_records}


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
            p=100.0 * src.total_us / total if total else 0.0,
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
    full = profile.top_down(window) if mode == "top-down" else profile.bottom_up(window)
    size = full.count()
    tree = prune_tree(full, max_nodes) if size > max_nodes else full
    return {
        "mode": mode,
        "root": _compact(tree, full.total_us),
        "window": window,
        "nodes": size,
        "pruned": size > max_nodes,
    }


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
    data["max_depth"] = profile.max_depth
    data["empty"] = False
    return data
