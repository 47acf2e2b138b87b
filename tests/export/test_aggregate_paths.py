"""callgrind's caller/callee pairs, taken from the stacks' sums, equal a record-by-record
reference, for the whole capture and for windows (issue 13, issue 23)."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export.callgrind import ROOT_ID, _edges
from mcuprof.profile import Profile
from mcuprof.profile.aggregate import UNKNOWN_ID, sums
from mcuprof.protocol import RECORD_DTYPE

rows_st = st.lists(
    st.tuples(
        st.integers(0, 5),  # depth: gaps make orphans
        st.integers(0, 300),  # entry: going back makes a time jump
        st.integers(0, 40),
        st.sampled_from([0x100, 0x200, 0x300, 0x400, 0x9999]),  # one address repeats
    ),
    min_size=0,
    max_size=60,
)
window_st = st.none() | st.tuples(st.floats(-10, 400), st.floats(-10, 400))


def _profile(rows: list[tuple[int, int, int, int]], cuts: list[int]) -> Profile:
    recs = np.zeros(len(rows), RECORD_DTYPE)
    for name, k in (("depth", 0), ("entry_time", 1), ("duration", 2), ("func_addr", 3)):
        recs[name] = [r[k] for r in rows]
    p = Profile()
    at = 0
    for cut in [*sorted(set(cuts)), len(rows)]:
        if at < cut <= len(rows):
            p.add(recs[at:cut])
            _edges(p, sums(p))  # a live reader between the adds
            at = cut
    return p


def _record_edges(p: Profile, window: tuple[float, float] | None) -> dict:
    """(caller, callee) -> [calls, inclusive ticks in the window], call by call; an
    orphan's caller is "[unknown]", called by [root] once per orphan, for as long."""
    lo, hi = (-math.inf, math.inf) if window is None else sorted(map(p.ticks, window))
    out: dict[tuple[int, int], list] = defaultdict(lambda: [0, 0.0])
    for d, lv in sorted(p.levels.items()):
        for i in range(lv.n):
            start = float(lv.entry[i])
            end = start + float(lv.dur[i])
            if window is not None and not (start <= hi and end >= lo):
                continue
            cost = max(0.0, min(end, hi) - max(start, lo))
            callee = int(p.frame_of[lv.addr[i]])
            if d == 0:
                caller = ROOT_ID
            elif lv.parent[i] < 0:
                caller = UNKNOWN_ID
                out[ROOT_ID, UNKNOWN_ID][0] += 1
                out[ROOT_ID, UNKNOWN_ID][1] += cost
            else:
                caller = int(p.frame_of[p.levels[d - 1].addr[lv.parent[i]]])
            out[caller, callee][0] += 1
            out[caller, callee][1] += cost
    return out


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, cuts=st.lists(st.integers(0, 60), max_size=3), window=window_st)
def test_edges_equal_record_edges(rows, cuts, window) -> None:
    p = _profile(rows, cuts)
    callers, callees, counts, costs = _edges(p, sums(p, window))
    want = _record_edges(p, window)
    pairs = list(zip(callers.tolist(), callees.tolist(), strict=True))
    assert pairs == sorted(want)  # sorted by (caller, callee), each pair once
    assert counts.tolist() == [want[k][0] for k in pairs]
    if window is None:  # whole ticks: exact in any order
        assert costs.tolist() == [want[k][1] for k in pairs]
    else:  # cut calls: sums of floats, in another order
        np.testing.assert_allclose(costs, [want[k][1] for k in pairs], rtol=1e-12, atol=1e-9)
