"""Top-down and bottom-up (callers) trees, and the call tree's prune (pruning.py) as TreeNodes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .aggregate import frame_info, stacks, sums
from .pruning import select

if TYPE_CHECKING:
    from .model import Profile, Window

ROOT_ID = -2
OTHER_ID = -3


@dataclass(slots=True)
class TreeNode:
    name: str
    label: str
    frame: int  # frame id; UNKNOWN_ID, ROOT_ID or OTHER_ID for synthetic nodes
    total_us: float = 0.0
    self_us: float = 0.0
    calls: int = 0
    file: str | None = None
    line: int | None = None
    children: list[TreeNode] = field(default_factory=list)

    def walk(self) -> Any:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children)

    def count(self) -> int:
        return sum(1 for _ in self.walk())

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "frame": self.frame,
            "total_us": self.total_us,
            "self_us": self.self_us,
            "calls": self.calls,
            "file": self.file,
            "line": self.line,
            "children": [c.to_dict() for c in self.children],
        }


def _node(profile: Profile, fid: int) -> TreeNode:
    fr = frame_info(profile, fid)
    return TreeNode(fr.name, fr.label, fid, file=fr.file, line=fr.line)


def _sort(root: TreeNode) -> TreeNode:
    for node in root.walk():
        node.children.sort(key=lambda c: (-c.total_us, c.label))
    return root


def top_down(profile: Profile, window: Window = None) -> TreeNode:
    """Call tree from the roots; children keyed by function identity. "[unknown]" holds
    the orphans; its total is theirs."""
    st = stacks(profile)
    s = sums(profile, window)
    us = 1e6 / profile.timer_freq
    root = TreeNode("all", "all", ROOT_ID)
    nodes: dict[int, TreeNode] = {}
    live = (s.calls > 0).copy()
    live[0] = False
    # Keep every ancestor of a live stack (parents precede children in id order).
    for sid in np.flatnonzero(live)[::-1].tolist():
        p = int(st.parent[sid])
        if p >= 0:
            live[p] = True
    for sid in np.flatnonzero(live).tolist():
        node = _node(profile, int(st.frame[sid]))
        node.total_us = float(s.total[sid]) * us
        node.self_us = float(s.self_[sid]) * us
        node.calls = int(s.calls[sid])
        nodes[sid] = node
        p = int(st.parent[sid])
        (root if p < 0 else nodes[p]).children.append(node)
    unknown = nodes.get(0)
    if unknown is not None:
        unknown.total_us = sum(c.total_us for c in unknown.children)
    root.total_us = sum(c.total_us for c in root.children)
    return _sort(root)


def bottom_up(profile: Profile, window: Window = None) -> TreeNode:
    """Callers tree: the first level is every function (self time, and inclusive time
    of its outermost calls); below a node are the callers along which that time was spent."""
    st = stacks(profile)
    s = sums(profile, window)
    us = 1e6 / profile.timer_freq
    root = TreeNode("all", "all", ROOT_ID)
    parent = st.parent.tolist()
    frame = st.frame.tolist()
    index: dict[tuple[int, int], TreeNode] = {}
    for sid in np.flatnonzero(s.calls > 0).tolist():
        self_us = float(s.self_[sid]) * us
        total_us = 0.0 if st.nested[sid] else float(s.total[sid]) * us
        calls = int(s.calls[sid])
        node = root
        cur = sid
        while cur >= 0:
            fid = frame[cur]
            key = (id(node), fid)
            nxt = index.get(key)
            if nxt is None:
                nxt = index[key] = _node(profile, fid)
                node.children.append(nxt)
            node = nxt
            node.self_us += self_us
            node.total_us += total_us
            node.calls += calls
            cur = parent[cur]
    root.total_us = sum(c.total_us for c in root.children)
    root.self_us = sum(c.self_us for c in root.children)
    return _sort(root)


def prune(root: TreeNode, max_nodes: int = 3000, min_fraction: float = 0.0) -> TreeNode:
    """A copy with at most ``max_nodes`` nodes for the flame graph and call tree: the largest nodes
    (by total) are kept, ancestors first; what is cut under a kept node is merged into one
    "other" child while the budget lasts (a tenth of it is reserved for them). Nodes below
    ``min_fraction`` of the root's total are cut too."""

    def kids(node: TreeNode) -> list[TreeNode]:
        return sorted(node.children, key=lambda c: -c.total_us)

    def totals(nodes: list[TreeNode]) -> np.ndarray:
        return np.array([n.total_us for n in nodes], np.float64)

    def calls(lost: list[TreeNode]) -> int:
        return sum(n.calls for n in lost)

    return prune_by(_copy(root), root, kids, totals, _copy, max_nodes, min_fraction, calls)


def prune_by(
    out: TreeNode,
    top: Any,
    kids: Callable[[Any], Sequence[Any]],
    totals: Callable[[Any], np.ndarray],
    node: Callable[[Any], TreeNode],
    max_nodes: int,
    min_fraction: float,
    calls: Callable[[Any], int] | None = None,
) -> TreeNode:
    """The prune (pruning.select) of any tree, as TreeNodes: ``out`` is the root's copy
    and ``top`` its key; ``node(key)`` a kept node's copy."""
    picked = select(top, out.total_us, kids, totals, max_nodes, min_fraction, calls)
    made = [out]
    for key, parent in zip(picked.keys[1:], picked.parent[1:], strict=True):
        made.append(child := node(key))
        made[parent].children.append(child)
    for parent, total, n_calls in picked.others:
        made[parent].children.append(TreeNode("other", "other", OTHER_ID, total, total, n_calls))
    return _sort(out)


def _copy(src: TreeNode) -> TreeNode:
    return TreeNode(
        src.name, src.label, src.frame, src.total_us, src.self_us, src.calls, src.file, src.line
    )
