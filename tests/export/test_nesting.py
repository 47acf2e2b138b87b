"""The array form of the calls' nesting (used by speedscope and Chrome) equals the
repair walk on any stream: overlaps, orphans, time jumping back, zero durations."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export.nesting import _sane_preorder, nested_calls, preorder
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE

record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400]),
    st.integers(0, 80),
    st.integers(0, 30),
    st.integers(0, 3),
)


def _same(p: Profile) -> None:
    walk = nested_calls(p)
    fast = _sane_preorder(p)
    if not walk.frame:
        return
    assert fast is not None
    assert fast.frame.tolist() == walk.frame
    assert fast.start.tolist() == walk.start
    assert fast.end.tolist() == walk.end
    assert fast.depth.tolist() == walk.depth
    # Subtree sizes agree with the depths: each call's subtree ends where depth returns.
    slow = preorder(p, window=(p.t0_us - 1, p.t1_us + 1))  # windows take the walk
    assert slow.size.tolist() == fast.size.tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=60))
def test_array_nesting_equals_the_repair_walk(rows) -> None:
    p = Profile()
    p.add(np.array(rows, RECORD_DTYPE))
    _same(p)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=20), repeats=st.integers(2, 30))
def test_a_target_that_resets_every_packet(rows, repeats) -> None:
    p = Profile()
    p.add(np.concatenate([np.array(rows, RECORD_DTYPE)] * repeats))
    _same(p)
