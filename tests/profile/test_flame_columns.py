"""The flame graph's columns (profile/flame.py): rows parents first within a node
budget, widths that nest exactly, "other" rows for what is cut, keys that survive
updates, and the one prune (pruning.select) the call tree and the SVG also use."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.names import short_label
from mcuprof.paths import default_elf
from mcuprof.profile import Profile, TreeNode, flame, prune
from mcuprof.profile.load import load_capture
from mcuprof.profile.shares import span
from mcuprof.profile.trees import OTHER_ID, ROOT_ID
from mcuprof.symbols import SymbolTable
from tests.export.golden import captures

NAMES = [f"f{i}" for i in range(12)]


def _total(n: TreeNode) -> float:
    return n.total_us


def _self(n: TreeNode) -> float:
    return n.self_us


@st.composite
def trees(draw: st.DrawFn, max_nodes: int = 400) -> TreeNode:
    """Trees in integer µs whose totals are self plus children's totals."""
    root = TreeNode("all", "all", ROOT_ID)
    nodes = [root]
    for _ in range(draw(st.integers(1, max_nodes))):
        parent = nodes[draw(st.integers(0, len(nodes) - 1))]
        fid = draw(st.integers(0, len(NAMES) - 1))
        if any(c.frame == fid for c in parent.children):
            continue
        own = float(draw(st.integers(0, 10**6)))
        child = TreeNode(NAMES[fid], NAMES[fid], fid, 0.0, own, draw(st.integers(0, 1000)))
        parent.children.append(child)
        nodes.append(child)
    for node in reversed(nodes):  # parents were added before their children
        node.total_us = node.self_us + sum(c.total_us for c in node.children)
    return root


def check(cols: dict, budget: int) -> None:
    n = cols["nodes"]
    assert n == len(cols["parent"]) == len(cols["total"]) == len(set(cols["key"])) <= budget
    assert cols["parent"][0] == -1 and cols["depth"][0] == 0 and cols["x"][0] == 0
    inside: dict[int, float] = {}
    for i in range(1, n):
        p = cols["parent"][i]
        assert 0 <= p < i  # parents come first
        assert cols["depth"][i] == cols["depth"][p] + 1
        # Siblings side by side from the parent's left edge, inside it.
        assert cols["x"][i] == cols["x"][p] + inside.get(p, 0.0)
        inside[p] = inside.get(p, 0.0) + cols["total"][i]
        assert inside[p] <= cols["total"][p]
    for k in cols["name"]:
        assert cols["labels"][k] == short_label(cols["names"][k])


@settings(max_examples=60)
@given(tree=trees(), budget=st.integers(2, 60))
def test_pruned_columns_respect_the_budget_and_nest(tree: TreeNode, budget: int) -> None:
    cols = flame.tree(tree, budget, _total, _self)
    check(cols, budget)
    # Nothing disappears: the root is as wide as every frame's self time.
    assert cols["total"][0] == sum(n.self_us for n in tree.walk()) == cols["total_us"]


@settings(max_examples=50)
@given(tree=trees(max_nodes=100))
def test_unpruned_columns_keep_every_frame_with_time(tree: TreeNode) -> None:
    cols = flame.tree(tree, 100_000, _total, _self)
    assert OTHER_ID not in cols["fid"]
    assert cols["nodes"] == sum(1 for n in tree.walk() if n.total_us > 0 or n is tree)
    check(cols, 100_000)


def test_small_frames_merge_into_other() -> None:
    root = TreeNode("all", "all", ROOT_ID)
    main = TreeNode("main", "main", 0, calls=1)
    root.children.append(main)
    main.children.extend(
        TreeNode(f"leaf{i}", f"leaf{i}", i + 1, 1.0 + i, 1.0 + i, 1) for i in range(50)
    )
    main.total_us = root.total_us = sum(c.total_us for c in main.children)
    cols = flame.tree(root, 10, _total, _self)
    assert cols["nodes"] <= 10
    other = cols["fid"].index(OTHER_ID)
    assert cols["names"][cols["name"][other]] == "other"
    leaves = [i for i in range(cols["nodes"]) if cols["names"][cols["name"][i]].startswith("leaf")]
    kept = [cols["total"][i] for i in leaves]
    # The biggest leaves are kept, left to right; the rest add up to the "other" row.
    assert kept == sorted(kept, reverse=True) and min(kept) == 1.0 + 50 - len(kept)
    assert cols["total"][other] + sum(kept) == cols["total"][cols["fid"].index(0)]
    assert cols["calls"][other] == 50 - len(kept)


def test_keys_are_stable_across_updates() -> None:
    def build(extra: float) -> TreeNode:
        b = TreeNode("b", "b", 1, 3.0 + extra, 3.0 + extra, 2)
        a = TreeNode("a", "a", 0, 8.0 + extra, 5.0, 1, children=[b])
        return TreeNode("all", "all", ROOT_ID, a.total_us, children=[a])

    first = flame.tree(build(0.0), 100, _total, _self)
    later = flame.tree(build(100.0), 100, _total, _self)
    assert first["key"] == later["key"] and first["total"] != later["total"]


def test_same_named_frames_are_distinct_rows_and_names() -> None:
    """Two static functions of one name (two frame ids): two rows, two name entries."""
    root = TreeNode("all", "all", ROOT_ID, 3.0)
    root.children += [
        TreeNode("handler", "handler [a.c]", 4, 2.0, 2.0, 1, "a.c", 3),
        TreeNode("handler", "handler [b.c]", 5, 1.0, 1.0, 1, "b.c", 9),
    ]
    cols = flame.tree(root, 100, _total, _self)
    assert len(set(cols["key"])) == 3 and cols["fid"] == [ROOT_ID, 4, 5]
    assert [cols["where"][k] for k in cols["name"][1:]] == ["a.c:3", "b.c:9"]


@pytest.fixture(scope="module")
def regular() -> Profile:
    elf = default_elf()
    return load_capture(captures(elf)["regular"], SymbolTable.from_elf(elf)).profile


def _paths(cols: dict) -> list[tuple[str, float]]:
    out = []
    for i in range(cols["nodes"]):
        names, j = [], i
        while j > 0:
            names.append(cols["names"][cols["name"][j]])
            j = cols["parent"][j]
        out.append((";".join(reversed(names)), round(cols["total"][i] / cols["units_per_us"], 6)))
    return out


def _tree_paths(node: TreeNode, at: str = "") -> list[tuple[str, float]]:
    out = [(at, round(node.total_us, 6))]
    for c in node.children:
        out += _tree_paths(c, f"{at};{c.name}" if at else c.name)
    return out


@pytest.mark.parametrize("budget", [12, 300, 100_000])
def test_top_down_columns_are_the_call_trees_prune(regular: Profile, budget: int) -> None:
    """Straight from the stack table, the flame graph keeps what the call tree's prune
    keeps (one prune) with the same widths, and its root is the profiled time."""
    cols = flame.top_down(regular, None, budget)
    check(cols, budget)
    tree = prune(regular.top_down(), budget)
    timed = [p for p in _tree_paths(tree) if p[1] > 0]  # a frame of no time is not drawn
    assert sorted(_paths(cols)) == sorted(timed)
    assert cols["total_us"] == pytest.approx(span(regular, None)["profiled_us"])
    assert cols["frames"] == regular.top_down().count()
