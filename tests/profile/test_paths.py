"""The vectorised folded paths (profile/paths.py) equal the simple per-stack reference:
same path ids, strings, byte order and lines, updated in one go or a few stacks at a time."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export.svg import subtree_totals
from mcuprof.profile import paths
from mcuprof.profile.aggregate import UNKNOWN_ID, Stacks
from mcuprof.profile.frames import UNKNOWN
from mcuprof.profile.paths import StackNames

# Names that share prefixes and sort around ";" (0x3B): digits and ":" below it, "<" above.
plain = st.text(alphabet="ab0:<é", min_size=0, max_size=4)
odd = st.text(alphabet="ab;\n\x00", min_size=1, max_size=3)


def _reference(names: list[str], parent: list[int], frame: list[int]):
    """The original per-stack loop: path ids by (parent path, name), in stack order."""
    node: dict[tuple[int, str], int] = {}
    ids, p_parent, p_string = [], [], []
    for p, f in zip(parent, frame, strict=True):
        name = UNKNOWN if f == UNKNOWN_ID else names[f]
        up = -1 if p < 0 else ids[p]
        pid = node.get((up, name))
        if pid is None:
            pid = node[(up, name)] = len(p_parent)
            p_parent.append(up)
            p_string.append(name if up < 0 else f"{p_string[up]};{name}")
        ids.append(pid)
    return ids, p_parent, p_string


@st.composite
def stack_trees(draw, name_st=plain):
    """Interned stacks, as the aggregator makes them: no two with the same (parent,
    frame, depth). Paths still merge: names repeat, and orphans of one frame at several
    depths hang under the same "[unknown]"."""
    names = draw(st.lists(name_st, min_size=1, max_size=6))
    parent, frame, depth = [-1], [UNKNOWN_ID], [-1]
    seen = {(-1, UNKNOWN_ID, -1)}
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.integers(0, 5))
        f = draw(st.integers(0, len(names) - 1))
        if kind == 0 or len(parent) == 1:  # a root
            up, d = -1, 0
        elif kind == 1:  # an orphan, under "[unknown]"
            up, d = 0, draw(st.integers(1, 4))
        else:
            up = draw(st.integers(1, len(parent) - 1))
            d = depth[up] + 1
        if (up, f, d) in seen:
            continue
        seen.add((up, f, d))
        parent.append(up)
        depth.append(d)
        frame.append(f)
    return names, parent, frame, depth


def _stacks(parent, frame, depth, n: int) -> Stacks:
    return Stacks(
        np.array(parent[:n], np.int32),
        np.array(frame[:n], np.int32),
        np.array(depth[:n], np.int32),
        np.zeros(n, bool),
        {},
    )


def _check(tree, cuts: list[int]) -> None:
    names, parent, frame, depth = tree
    profile = SimpleNamespace(frames=[SimpleNamespace(name=n) for n in names])
    sn = StackNames()
    n = len(parent)
    for cut in [*sorted(set(cuts)), n]:
        sn.update(profile, _stacks(parent, frame, depth, min(cut, n)))
        sn.order()  # cached between updates, then updated incrementally
    ids, p_parent, p_string = _reference(names, parent, frame)
    assert sn.ids.tolist() == ids
    assert sn.parents.tolist() == p_parent
    assert [sn.string(p) for p in range(len(sn))] == p_string
    want = sorted(range(len(p_string)), key=lambda p: p_string[p].encode("utf-8"))
    assert sn.order().tolist() == want
    keep = np.array([i % 3 != 1 for i in range(len(sn))])
    kept = [p for p in want if keep[p]]
    assert sn.sorted(keep).tolist() == kept
    values = np.arange(len(kept), dtype=np.int64) * 977
    text = "".join(sn.lines(np.array(kept, np.int64), values))
    assert text == "".join(
        f"{p_string[p]} {v}\n" for p, v in zip(kept, values.tolist(), strict=True)
    )
    assert sn.texts(np.array(kept, np.int64)) == [p_string[p] for p in kept]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(tree=stack_trees(), cuts=st.lists(st.integers(1, 60), max_size=4))
def test_paths_equal_the_per_stack_reference(tree, cuts) -> None:
    _check(tree, cuts)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(tree=stack_trees(st.one_of(plain, odd)), cuts=st.lists(st.integers(1, 60), max_size=3))
def test_names_with_separators_newlines_or_nul(tree, cuts) -> None:
    _check(tree, cuts)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    tree=stack_trees(),
    cuts=st.lists(st.integers(1, 60), max_size=3),
    chunk=st.sampled_from([1, 64, 1 << 21]),
    rows=st.sampled_from([1, 3, 1 << 16]),
)
def test_lines_in_pieces_deep_and_shallow(tree, cuts, chunk, rows) -> None:
    """Lines made as arrays in chunks of any size and depth: the same text."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(paths, "_CHUNK_BYTES", chunk)
        mp.setattr(paths, "_CHUNK_ROWS", rows)
        _check(tree, cuts)


def test_a_big_update_and_a_deep_chain() -> None:
    """Waves of thousands of stacks (the numpy path) and a chain past the vectorised
    line builder's depth, in one tree."""
    rng = np.random.default_rng(7)
    names = [f"f{i}" for i in range(50)] + ["f1;", "f10"]
    parent, frame, depth = [-1], [UNKNOWN_ID], [-1]
    seen = set()  # interned, as the aggregator's: no two stacks alike
    for d in range(3):
        ups = [i for i, x in enumerate(depth) if x == d - 1][:200]
        for _ in range(3000):
            up = -1 if d == 0 else int(rng.choice(ups))
            f = int(rng.integers(0, 50))
            if (up, f, d) not in seen:
                seen.add((up, f, d))
                parent.append(up)
                depth.append(d)
                frame.append(f)
    for d in range(100):  # a chain
        parent.append(-1 if d == 0 else len(parent) - 1)
        depth.append(d)
        frame.append(50 if d == 0 else d % 50)  # its root's frame is its own
    _check(([*names[:50], "chain"], parent, frame, depth), [51, 3001])


@settings(max_examples=200)
@given(
    data=st.data(),
    self_t=st.lists(
        st.one_of(st.floats(0, 1e6, allow_nan=False), st.integers(0, 100).map(float)),
        min_size=1,
        max_size=50,
    ),
)
def test_subtree_totals_round_as_the_loop(data, self_t) -> None:
    n = len(self_t)
    parents = [-1] + [data.draw(st.integers(-1, i - 1)) for i in range(1, n)]
    levels = []
    for p in parents:
        levels.append(1 if p < 0 else levels[p] + 1)
    want = list(self_t)
    for pid in range(n - 1, -1, -1):
        if parents[pid] >= 0:
            want[parents[pid]] += want[pid]
    for thin in (0, 64):  # by levels in numpy, and the loop itself
        got = subtree_totals(np.array(self_t), np.array(parents), np.array(levels), thin)
        assert got.tolist() == want


def test_only_the_unknown_root_with_no_frames() -> None:
    sn = StackNames()
    sn.update(SimpleNamespace(frames=[]), _stacks([-1], [UNKNOWN_ID], [-1], 1))
    assert (sn.ids.tolist(), sn.texts(sn.order())) == ([0], [UNKNOWN])


@settings(max_examples=200)
@given(
    runs=st.lists(st.tuples(st.integers(0, 4), st.integers(-1, 3)), max_size=12),
    data=st.data(),
)
def test_depth_runs_equal_the_depth_array(runs, data) -> None:
    """The aggregator's depths as runs (DepthRuns) read as the int32 array they stand
    for, and cut the stacks into the same waves of one depth as that array."""
    from mcuprof.profile.paths import DepthRuns, depth_cuts

    dr, want = DepthRuns(), []
    for length, depth in runs:
        dr.add(len(want), len(want) + length, depth)
        want += [depth] * length
    n = data.draw(st.integers(0, len(want)))
    first = data.draw(st.integers(0, n))
    view = dr.upto(n)
    arr = np.array(want[:n], np.int32)
    assert len(view) == n
    assert np.asarray(view).tolist() == arr.tolist()
    assert view[first:n].tolist() == arr[first:n].tolist()
    assert depth_cuts(view, first, n) == depth_cuts(arr, first, n)


def test_stacks_are_their_own_paths_until_two_may_share_one() -> None:
    """While names are distinct and no stack is an orphan, path ids are stack ids and no
    ids are kept (``ids_or_none`` None); an orphan, or a root frame named "[unknown]",
    switches to interning by key, with the same paths as the reference."""
    for names, parent, frame, depth in (
        (["a", "b", "c"], [-1, -1, 1, 1, 0, 4], [UNKNOWN_ID, 0, 0, 2, 0, 2], [-1, 0, 1, 1, 3, 4]),
        (["a", UNKNOWN], [-1, -1, 1, -1], [UNKNOWN_ID, 0, 0, 1], [-1, 0, 1, 0]),
    ):
        profile = SimpleNamespace(frames=[SimpleNamespace(name=n) for n in names[:1]])
        sn = StackNames()
        sn.update(profile, _stacks(parent, frame, depth, 3))  # frames seen so far: 0 only
        profile.frames = [SimpleNamespace(name=n) for n in names]
        assert sn.ids_or_none is None and sn.ids.tolist() == [0, 1, 2]
        sn.update(profile, _stacks(parent, frame, depth, len(parent)))
        ids, p_parent, p_string = _reference(names, parent, frame)
        assert sn.ids_or_none is not None and sn.ids.tolist() == ids
        assert sn.parents.tolist() == p_parent
        assert sn.texts(sn.order()) == sorted(p_string, key=lambda s: s.encode("utf-8"))
