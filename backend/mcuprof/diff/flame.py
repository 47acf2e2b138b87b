"""The differential flame graph: the newer capture's call tree (widths), coloured by how
each frame's self time changed as a share of its capture (red grew, blue shrank).

Colouring by *share* rather than raw µs keeps a longer capture from painting everything
red; it is the same normalisation the function table uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class DiffNode:
    name: str
    depth: int
    new: float = 0.0  # total µs of the subtree in the new capture: the frame's width
    base: float = 0.0  # the same in the base capture
    new_self: float = 0.0
    base_self: float = 0.0
    delta: float = 0.0  # new self share - base self share (fraction of each capture)
    children: dict[str, DiffNode] = field(default_factory=dict)

    def as_dict(self, keep: set[int] | None = None) -> dict[str, Any]:
        kids = [
            c.as_dict(keep)
            for c in sorted(self.children.values(), key=lambda c: c.name)
            if c.new > 0 and (keep is None or id(c) in keep)
        ]
        return {
            "name": self.name,
            "value": self.new,
            "base": self.base,
            "self": self.new_self,
            "base_self": self.base_self,
            "delta": self.delta,
            "children": kids,
        }


def build_tree(base: dict[str, int | float], new: dict[str, int | float]) -> DiffNode:
    """Merge two folded-stack maps (stack "a;b;c" -> self µs) into one tree."""
    root = DiffNode("all", 0)
    for stacks, attr in ((base, "base"), (new, "new")):
        for stack, value in stacks.items():
            if value <= 0:
                continue
            node = root
            setattr(node, attr, getattr(node, attr) + value)
            for depth, frame in enumerate(stack.split(";"), start=1):
                child = node.children.get(frame)
                if child is None:
                    child = node.children[frame] = DiffNode(frame, depth)
                setattr(child, attr, getattr(child, attr) + value)
                node = child
            self_attr = f"{attr}_self"
            setattr(node, self_attr, getattr(node, self_attr) + value)
    base_total, new_total = root.base, root.new
    for node in walk(root):
        b = node.base_self / base_total if base_total > 0 else 0.0
        n = node.new_self / new_total if new_total > 0 else 0.0
        node.delta = n - b
    return root


def walk(root: DiffNode) -> list[DiffNode]:
    out: list[DiffNode] = []
    stack = [root]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children.values())
    return out


def max_abs_delta(root: DiffNode) -> float:
    return max((abs(n.delta) for n in walk(root) if n.new > 0), default=0.0)


MAX_DEPTH = 400  # deeper frames are cut: JSON nesting (and any reader) has its limits


def flame_data(
    base: dict[str, int | float], new: dict[str, int | float], max_nodes: int = 5000
) -> dict[str, Any]:
    """JSON for the dashboard: the tree (widths from ``new``), pruned to the ``max_nodes``
    widest frames and to MAX_DEPTH levels, plus the totals and the colour scale."""
    root = build_tree(base, new)
    drawn = [n for n in walk(root) if n.new > 0 or n is root]
    visible = [n for n in drawn if n.depth <= MAX_DEPTH]
    keep: set[int] | None = None
    if len(visible) > max_nodes or len(visible) < len(drawn):
        # A parent is never narrower than its child, so the widest N (ties: shallower
        # first) always include every kept frame's ancestors.
        visible.sort(key=lambda n: (-n.new, n.depth))
        keep = {id(n) for n in visible[:max_nodes]}
    return {
        "tree": root.as_dict(keep),
        "base_total_us": root.base,
        "new_total_us": root.new,
        "max_abs_delta": max_abs_delta(root),
        "nodes": len(visible) if keep is None else len(keep),
        "truncated": keep is not None,
    }


def colour(delta: float, scale: float) -> str:
    """Red for growth, blue for shrinkage, near-white for no change; ``scale`` is the
    largest |delta| in the graph, so the strongest change is fully saturated."""
    if scale <= 0 or delta == 0:
        return "rgb(235,235,235)"
    strength = min(1.0, abs(delta) / scale)
    fade = round(225 * (1.0 - strength))
    return f"rgb(255,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},255)"
