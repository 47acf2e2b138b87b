"""Icicle pruning: a node budget, exact sums, "other" merging, stable ids."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.web.icicle import OTHER, Frame, icicle_payload, short_label

NAMES = [f"f{i}" for i in range(12)]


@st.composite
def trees(draw: st.DrawFn, max_nodes: int = 400) -> Frame:
    root = Frame("all", 0.0, 0)
    frames = [root]
    count = draw(st.integers(1, max_nodes))
    for _ in range(count):
        parent = frames[draw(st.integers(0, len(frames) - 1))]
        name = draw(st.sampled_from(NAMES))
        if any(c.key == name for c in parent.children):
            continue
        self_us = draw(st.floats(0, 1e6, allow_nan=False, allow_infinity=False))
        child = Frame(name, self_us, draw(st.integers(0, 1000)), key=name)
        parent.children.append(child)
        frames.append(child)
    return root


def check(payload: dict, budget: int) -> None:
    ids, parents, values = payload["ids"], payload["parents"], payload["values"]
    assert len(ids) == len(set(ids)) == len(parents) == len(values) <= max(budget, 2)
    index = {i: n for n, i in enumerate(ids)}
    children: dict[str, int] = {}
    for n, p in enumerate(parents):
        if p:
            assert index[p] < n  # parents come first
            children[p] = children.get(p, 0) + values[n]
    for p, total in children.items():
        assert total <= values[index[p]]  # Plotly's branchvalues="total" rule, exactly


@settings(max_examples=60)
@given(tree=trees(), budget=st.integers(2, 60))
def test_pruned_icicle_respects_budget_and_sums(tree: Frame, budget: int) -> None:
    payload = icicle_payload(tree, budget)
    check(payload, budget)
    # Nothing disappears: the root's value is every frame's self time.
    total = payload["values"][0]
    assert abs(total / 1000 - payload["total_us"]) < 1e-6


@settings(max_examples=50)
@given(tree=trees(max_nodes=100))
def test_unpruned_icicle_keeps_every_nonempty_frame(tree: Frame) -> None:
    payload = icicle_payload(tree, 100_000)
    assert OTHER not in payload["names"]
    check(payload, 100_000)


def test_small_frames_merge_into_other() -> None:
    root = Frame("all", 0.0, 0)
    main = Frame("main", 0.0, 1, key="main")
    root.children.append(main)
    main.children.extend(Frame(f"leaf{i}", 1.0 + i, 1, key=f"leaf{i}") for i in range(50))
    payload = icicle_payload(root, 10)
    assert payload["nodes"] <= 10
    assert OTHER in payload["names"]
    other = payload["names"].index(OTHER)
    kept = [
        v for n, v in zip(payload["names"], payload["values"], strict=True) if n.startswith("leaf")
    ]
    # The biggest leaves are kept; the rest add up to the "other" cell.
    assert sorted(kept, reverse=True) == sorted(kept, reverse=True)[: len(kept)]
    assert min(kept) >= 1000 * (1.0 + 50 - len(kept)) - 1
    assert payload["values"][other] + sum(kept) == payload["values"][payload["names"].index("main")]
    assert payload["customdata"][other][3] is None


def test_ids_are_stable_across_updates() -> None:
    def build(extra: float) -> Frame:
        root = Frame("all", 0.0, 0)
        a = Frame("a", 5.0, 1, key="a")
        b = Frame("b", 3.0 + extra, 2, key="b")
        a.children.append(b)
        root.children.append(a)
        return root

    first = icicle_payload(build(0.0), 100)
    later = icicle_payload(build(100.0), 100)
    assert first["ids"] == later["ids"]
    assert first["values"] != later["values"]


def test_same_named_siblings_get_distinct_ids() -> None:
    root = Frame("all", 0.0, 0)
    root.children.extend([Frame("handler", 2.0, 1), Frame("handler", 1.0, 1)])
    payload = icicle_payload(root, 100)
    assert len(set(payload["ids"])) == 3


def test_short_labels_drop_parameter_lists_and_return_types() -> None:
    assert short_label("int app::clamp<int>(int, int, int)") == "app::clamp<int>"
    assert short_label("std::pair<int, int> ns::f(int) const") == "ns::f"
    assert short_label("operator new(unsigned int)") == "operator new"
    assert short_label("app::Pid::Pid(long, long)") == "app::Pid::Pid"
    assert short_label("main") == "main"
    assert short_label("0x08000123") == "0x08000123"
    assert short_label("(anonymous namespace)::f()") == "(anonymous namespace)::f"
    # An operator's own brackets and spaces are its name's, not a return type's.
    sig = "bool operator< <app::Key>(app::Key const&, app::Key const&)"
    assert short_label(sig) == "operator< <app::Key>"
    assert short_label("Foo& Foo::operator=(Foo const&)") == "Foo::operator="
    assert short_label("app::Foo::operator int() const") == "app::Foo::operator int"
    assert short_label("void cooperator(int)") == "cooperator"
