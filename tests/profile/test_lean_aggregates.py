"""The aggregator's steps equal their simple references: the nested-frame marks, sums
added in any split, and the live sums (running plus tail) equal a count from scratch;
sums handed out keep their numbers."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile
from mcuprof.profile.aggregate import Sums, mark_nested, sums
from mcuprof.protocol import RECORD_DTYPE


@st.composite
def trees(draw):
    """Stack trees in id order (parents first) over a few frames: chains deeper than
    mark_nested's vectorised walk included."""
    n = draw(st.integers(1, 120))
    frames = draw(st.integers(1, 6))
    parent, frame = [-1], [draw(st.integers(0, frames - 1))]
    for s in range(1, n):
        kind = draw(st.integers(0, 4))
        parent.append(-1 if kind == 0 else s - 1 if kind == 1 else draw(st.integers(0, s - 1)))
        frame.append(draw(st.integers(0, frames - 1)))
    return np.array(parent, np.int32), np.array(frame, np.int32)


@settings(max_examples=200)
@given(tree=trees(), data=st.data())
def test_mark_nested_equals_the_ancestor_walk(tree, data) -> None:
    parent, frame = tree
    start = data.draw(st.integers(0, len(parent)))
    nested = np.ones(len(parent), bool)  # before start: left as they are
    mark_nested(parent, frame, nested, start)
    for s in range(len(parent)):
        want = True
        if s >= start:
            want, a = False, int(parent[s])
            while a >= 0 and not want:
                want, a = bool(frame[a] == frame[s]), int(parent[a])
        assert nested[s] == want, s


@settings(max_examples=150)
@given(
    n_st=st.integers(1, 12),
    n_fr=st.integers(1, 6),
    rows=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 5), st.integers(0, 50))),
    cuts=st.lists(st.integers(0, 60), max_size=4),
    seed=st.integers(0, 2**16),
)
def test_sums_added_in_any_split_equal_one_count_in_order(n_st, n_fr, rows, cuts, seed) -> None:
    """Times cut to fractions of a tick (a window's) sum the same bits however the calls
    are split among adds: each sum is added to call by call, in order."""
    rng = np.random.default_rng(seed)
    rows = [(s % n_st, f % n_fr, t) for s, f, t in rows]
    sid = np.array([r[0] for r in rows], np.int32)
    fid = np.array([r[1] for r in rows], np.int32)
    incl = np.array([r[2] / 3 for r in rows])
    excl = incl * rng.random(len(rows))
    outer = rng.random(len(rows)) < 0.7
    got = Sums(n_st, n_fr)
    for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(rows)], strict=True):
        got.add(sid[a:b], fid[a:b], incl[a:b], excl[a:b], outer[a:b])
    want = {k: [0.0] * n_st for k in ("calls", "total", "self_")}
    want |= {k: [0.0] * n_fr for k in ("f_calls", "f_total", "f_self", "f_sum", "f_max")}
    want["f_min"] = [np.inf] * n_fr
    for s, f, i, e, o in zip(sid, fid, incl, excl, outer, strict=True):
        for k, at, v in (("calls", s, 1), ("total", s, i), ("self_", s, e)):
            want[k][at] += v
        for k, v in (("f_calls", 1), ("f_self", e), ("f_sum", i), ("f_total", i if o else 0)):
            want[k][f] += v
        want["f_min"][f] = min(want["f_min"][f], i)
        want["f_max"][f] = max(want["f_max"][f], i)
    for k, v in want.items():
        assert getattr(got, k).tolist() == v, k


def _recs(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    return np.array(rows, RECORD_DTYPE)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from([0x100, 0x200, 0x300]),
            st.integers(0, 200),
            st.integers(0, 30),
            st.integers(0, 3),
        ),
        min_size=2,
        max_size=40,
    ),
    cut=st.integers(1, 39),
)
def test_held_sums_keep_their_numbers_and_equal_a_fresh_count(rows, cut) -> None:
    """Sums handed out before an add still tell the records they were made for, and the
    live sums (running plus tail) equal a count from scratch: a window over everything."""
    _check_held(_recs(rows), min(cut, len(rows) - 1))


def test_held_sums_of_a_long_capture_with_a_short_tail() -> None:
    """Many stacks, most committed, and a short tail adding to stacks already known."""
    k = 3000
    i = np.arange(k)
    t = np.arange(k, dtype=np.int64) * 10
    recs = np.empty(2 * k, RECORD_DTYPE)
    recs["depth"][0::2], recs["depth"][1::2] = 1, 0
    recs["entry_time"][0::2], recs["entry_time"][1::2] = t + 1, t
    recs["duration"][0::2], recs["duration"][1::2] = 5, 8
    # 1,600 (root, child) pairs: the records after the cut add to stacks already known
    recs["func_addr"][0::2] = 0x100 + 4 * (i % 40)
    recs["func_addr"][1::2] = 0x100 + 4 * (i // 40 % 40)
    _check_held(recs, 4000)


_NAMES = ("calls", "total", "self_", "f_calls", "f_total", "f_self", "f_sum", "f_min", "f_max")


def _check_held(recs: np.ndarray, cut: int) -> None:
    live = Profile()
    live.add(recs[:cut])
    held = sums(live)
    want = {k: getattr(held, k).tolist() for k in _NAMES}
    live.add(recs[cut:])
    after = sums(live)
    for k, v in want.items():
        assert getattr(held, k).tolist() == v, k
    # 1 MHz: the window's bounds are whole ticks, and it holds every call whole
    fresh = sums(live, (live.t0_us, live.t1_us))
    assert after is not fresh
    for k in _NAMES:
        assert getattr(after, k).tolist() == getattr(fresh, k).tolist(), k


def test_sums_nobody_holds_are_not_copied() -> None:
    """The tail is taken back out of the running sums in place when the sums handed out
    with it are gone (the profile's cache dropped them at the add): no copy per update."""
    recs = _recs([(0x100, 10 * i, 5, 0) for i in range(50)])
    live = Profile()
    live.add(recs[:30])
    sums(live)
    running = live.aggregator.running.calls
    live.add(recs[30:])
    after = sums(live)
    assert live.aggregator.running.calls is running
    assert after.calls.tolist() == sums(live, (live.t0_us, live.t1_us)).calls.tolist()
