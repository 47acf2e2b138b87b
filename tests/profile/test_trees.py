"""Pruning: ``trees.prune_by`` (each parent's next child in the heap) equals the plain
prune over a heap of every child, on TreeNode trees and on the SVG's path ids."""

from __future__ import annotations

import heapq

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export import svg
from mcuprof.profile import Profile, TreeNode, prune
from mcuprof.profile.aggregate import path_ticks
from mcuprof.profile.trees import OTHER_ID, ROOT_ID
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable


def _plain_prune(root: TreeNode, max_nodes: int, min_fraction: float) -> TreeNode:
    """Every child of a kept node pushed on one heap, keyed (falling total, push order)."""
    limit = max(2, max_nodes)
    keep_limit = limit - max(1, limit // 10)
    floor = root.total_us * min_fraction
    out = TreeNode(root.name, root.label, root.frame, root.total_us, root.self_us, root.calls)
    kept, order = 1, 0
    heap: list = []
    for c in root.children:
        heapq.heappush(heap, (-c.total_us, order, c, out))
        order += 1
    cut: dict[int, tuple[TreeNode, list[TreeNode]]] = {}
    while heap:
        neg, _, src, dst = heapq.heappop(heap)
        if kept >= keep_limit or -neg < floor:
            cut.setdefault(id(dst), (dst, []))[1].append(src)
            continue
        node = TreeNode(src.name, src.label, src.frame, src.total_us, src.self_us, src.calls)
        dst.children.append(node)
        kept += 1
        for c in src.children:
            heapq.heappush(heap, (-c.total_us, order, c, node))
            order += 1
    groups = sorted(cut.values(), key=lambda g: -sum(n.total_us for n in g[1]))
    for dst, lost in groups[: limit - kept]:
        total = sum(n.total_us for n in lost)
        calls = sum(n.calls for n in lost)
        dst.children.append(TreeNode("other", "other", OTHER_ID, total, total, calls))
    for n in out.walk():
        n.children.sort(key=lambda c: (-c.total_us, c.label))
    return out


@st.composite
def trees(draw: st.DrawFn) -> TreeNode:
    """Trees whose totals tie often (small integers, and sums of fractions)."""
    n = draw(st.integers(1, 40))
    total = st.sampled_from([0.0, 1.0, 2.0, 3.0, 0.1, 0.7]) | st.floats(0, 10)
    root = TreeNode("all", "all", ROOT_ID)
    nodes = [root]
    for i in range(n):
        parent = nodes[draw(st.integers(0, len(nodes) - 1))]
        name = f"f{draw(st.integers(0, 6))}"
        node = TreeNode(name, name, i, draw(total), draw(total), draw(st.integers(0, 5)))
        parent.children.append(node)
        nodes.append(node)
    root.total_us = sum(c.total_us for c in root.children)
    return root


@settings(max_examples=120)
@given(tree=trees(), max_nodes=st.integers(0, 30), min_fraction=st.sampled_from([0, 0.05, 0.3]))
def test_prune_equals_the_plain_heap(tree, max_nodes, min_fraction) -> None:
    want = _plain_prune(tree, max_nodes, min_fraction)
    assert prune(tree, max_nodes, min_fraction).to_dict() == want.to_dict()


rows_st = st.lists(
    st.tuples(
        st.integers(0, 4),  # depth: gaps make orphans
        st.integers(0, 200),  # entry: going back makes a time jump
        st.integers(0, 30),
        st.sampled_from([0x101, 0x201, 0x301, 0x401]),  # 0x101 and 0x201: one name
    ),
    max_size=50,
)


def _path_tree(p: Profile, window) -> TreeNode:
    """The full tree of name paths with time, a TreeNode per path (totals in µs)."""
    to_us = 1e6 / p.timer_freq
    names, ticks = path_ticks(p, window)
    total = svg.subtree_totals(ticks, names.parents, names.levels)
    nodes: dict[int, TreeNode] = {}
    root = TreeNode("all", "all", ROOT_ID)
    for pid in range(len(ticks)):
        if total[pid] > 0:
            name = names.names[names.name_ids[pid]]
            nodes[pid] = TreeNode(name, name, pid, total[pid] * to_us, ticks[pid] * to_us)
            up = int(names.parents[pid])
            (root if up < 0 else nodes[up]).children.append(nodes[pid])
    root.total_us = sum(c.total_us for c in root.children)
    return root


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=rows_st,
    window=st.none() | st.tuples(st.floats(0, 250), st.floats(0, 250)),
    max_nodes=st.integers(0, 12),
    min_fraction=st.sampled_from([0, 0.1 / svg.WIDTH, 0.2]),
)
def test_svg_tree_is_prune_of_the_path_tree(rows, window, max_nodes, min_fraction) -> None:
    funcs = [
        Function("helper", "helper", 0x100, 0x140, "a.c", 3, True),
        Function("helper", "helper", 0x200, 0x240, "b.c", 7, True),
        Function("main", "main", 0x300, 0x340, "main.c", 1, False),
        Function("isr", "isr", 0x400, 0x440, "isr.c", 1, False),
    ]
    p = Profile(SymbolTable.from_functions(funcs))
    recs = np.zeros(len(rows), RECORD_DTYPE)
    for name, k in (("depth", 0), ("entry_time", 1), ("duration", 2), ("func_addr", 3)):
        recs[name] = [r[k] for r in rows]
    p.add(recs)
    want = _plain_prune(_path_tree(p, window), max_nodes, min_fraction)
    assert svg._tree(p, window, max_nodes, min_fraction).to_dict() == want.to_dict()
