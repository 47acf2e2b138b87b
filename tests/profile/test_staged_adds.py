"""Profile.add stages records and merges them at the next read (or every _STAGE records):
wherever the merges fall, the profile is the one of adding and reading batch by batch,
and its parents follow the literal rule, on streams whose time goes back by any amount."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import model
from mcuprof.profile.columns import Spill
from mcuprof.profile.model import Profile
from mcuprof.profile.timebase import unwrap_exits
from mcuprof.protocol import RECORD_DTYPE
from tests.profile.helpers import reference_parents, stream_parents
from tests.profile.test_whole_merge import _state

# (address, step of the entry from the previous record: back by any amount, forward, or
# none; duration, depth). Few addresses at several depths: recursion; depths skipped or
# deeper than their callers: orphans.
row_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x0800_0000]),
    st.one_of(st.integers(-400, 40), st.integers(-3, 3), st.just(0)),
    st.integers(0, 40),
    st.integers(0, 4),
)


def _records(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    recs = np.empty(len(rows), RECORD_DTYPE)
    addr, step, dur, depth = (np.array(c, np.int64) for c in zip(*rows, strict=True))
    recs["func_addr"] = addr
    recs["entry_time"] = (1000 + np.cumsum(step)) & 0xFFFF_FFFF
    recs["duration"] = dur
    recs["depth"] = depth
    return recs


# A call: (address, time before it, time after its children, its children). Leaf calls
# of zero time right at their caller's end or start are the edge of containment.
call_st = st.recursive(
    st.tuples(st.sampled_from([0x100, 0x200]), st.integers(0, 3), st.integers(0, 3), st.just(())),
    lambda kids: st.tuples(
        st.sampled_from([0x100, 0x200, 0x300]),
        st.integers(0, 3),
        st.integers(0, 3),
        st.lists(kids, max_size=3).map(tuple),
    ),
    max_leaves=12,
)


def _tree_rows(roots: list, backs: list[int]) -> list[tuple[int, int, int, int]]:
    """Records (address, entry, duration, depth) in exit order of these root calls, the
    clock going back by ``backs[i]`` before root i (a target resetting, or late data)."""
    rows: list[tuple[int, int, int, int]] = []

    def emit(call: tuple, t: int, depth: int) -> int:
        addr, before, after, kids = call
        start = t + before
        t = start
        for kid in kids:
            t = emit(kid, t, depth + 1)
        end = t + after
        rows.append((addr, start, end - start, depth))
        return end

    t = 1000
    for root, back in zip(roots, [*backs, *[0] * len(roots)], strict=False):
        t = emit(root, max(0, t - back), 0)
    return rows


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(
    roots=st.lists(call_st, min_size=1, max_size=8),
    backs=st.lists(st.one_of(st.just(0), st.integers(0, 60)), max_size=8),
    data=st.data(),
    stage=st.sampled_from([1, 5, 1 << 18]),
)
def test_trees_with_time_going_back_follow_the_rule(roots, backs, data, stage) -> None:
    """Well-formed call trees (children stream before their callers), the clock going
    back between roots: merged at any points, the parents are the rule's."""
    rows = _tree_rows(roots, backs)
    recs = np.array(rows, RECORD_DTYPE)
    n = len(recs)
    cuts = _cuts(data, n, 10)
    reads = set(data.draw(st.lists(st.sampled_from([*cuts, n]), max_size=4)))
    saved, model._STAGE = model._STAGE, stage
    try:
        got = Profile()
        for a, b in zip([0, *cuts], [*cuts, n], strict=True):
            got.add(recs[a:b])
            if b in reads:
                got.function_stats()
    finally:
        model._STAGE = saved
    dur = recs["duration"].astype(np.int64)
    entry = unwrap_exits(recs["entry_time"], recs["duration"]) - dur
    depth = recs["depth"].astype(np.int64)
    assert stream_parents(got, n, depth, entry) == reference_parents(depth, entry, dur)


def _cuts(data: st.DataObject, n: int, most: int) -> list[int]:
    return sorted(set(data.draw(st.lists(st.integers(1, n), max_size=most))))


@settings(max_examples=250, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row_st, min_size=1, max_size=60),
    data=st.data(),
    stage=st.sampled_from([1, 3, 17, 1 << 18]),
    spill=st.booleans(),
)
def test_merges_anywhere_equal_adds_read_one_by_one(rows, data, stage, spill) -> None:
    recs = _records(rows)
    n = len(recs)
    cuts = _cuts(data, n, 12)
    reads = set(data.draw(st.lists(st.sampled_from([*cuts, n]), max_size=4)))
    # The reference: every add merged at once (a read after each), as adds were before.
    eager = Profile()
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        eager.add(recs[a:b])
        eager.settle()
    saved, model._STAGE = model._STAGE, stage
    try:
        got = Profile(spill=Spill() if spill else None)
        for a, b in zip([0, *cuts], [*cuts, n], strict=True):
            got.add(recs[a:b])
            if b in reads:
                got.folded()  # a query in between: merges what is staged
    finally:
        model._STAGE = saved
    assert _state(got) == _state(eager)
    # The parents follow the rule itself (not only agree with another split).
    dur = recs["duration"].astype(np.int64)
    entry = unwrap_exits(recs["entry_time"], recs["duration"]) - dur
    depth = recs["depth"].astype(np.int64)
    assert stream_parents(got, n, depth, entry) == reference_parents(depth, entry, dur)
    # Merged whole (as load_capture does), the same profile.
    whole = Profile()
    whole.reserve(n)
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        whole.add(recs[a:b])
    assert _state(whole) == _state(eager)


@pytest.mark.parametrize("spill", [False, True])
def test_a_target_that_keeps_resetting(spill: bool) -> None:
    """The same 20 records again and again (time back at every packet), in adds of 40:
    every child's parent is the last-entered root containing it, as the rule says,
    whether the adds merge one by one, at reads, or on their own."""
    period = [(2, 2, 3, 2), (2, 6, 3, 3), (1, 1, 9, 1), (2, 12, 2, 5), (1, 11, 5, 4), (0, 0, 18, 0)]
    one = np.empty(20, RECORD_DTYPE)
    for i in range(20):
        d, e, du, f = period[i % 6]
        one[i] = (0x0800_0101 + 0x40 * f, 20 * (i // 6) + e, du, d)
    recs = np.tile(one, 150)
    eager = Profile()
    staged = Profile(spill=Spill() if spill else None)
    for i in range(0, len(recs), 40):
        eager.add(recs[i : i + 40])
        eager.settle()
        staged.add(recs[i : i + 40])
        if i % 400 == 0:
            staged.function_stats()
    assert _state(staged) == _state(eager)
    dur = recs["duration"].astype(np.int64)
    entry = unwrap_exits(recs["entry_time"], recs["duration"]) - dur
    depth = recs["depth"].astype(np.int64)
    assert stream_parents(staged, len(recs), depth, entry) == reference_parents(depth, entry, dur)


def test_staged_records_count_and_merge_on_read() -> None:
    recs = _records([(0x100, 5, 10, 0), (0x200, 1, 3, 1), (0x100, -50, 10, 0)])
    p = Profile()
    p.add(recs)
    assert p.n_records == 3 and p._n_staged == 3
    assert p.nbytes > 0  # the staged records are held, and counted
    assert sum(lv.n for lv in p.levels.values()) == 3  # the read merged them
    assert p._n_staged == 0
    snap_before = p.snapshot()
    p.add(recs)
    snap = p.snapshot()  # a snapshot holds what was added, staged or not
    assert snap.n_records == 6 and sum(lv.n for lv in snap.levels.values()) == 6
    assert snap_before.n_records == 3
