"""The array form of the calls' nesting (used by speedscope and Chrome) equals the
repair walk on any stream: overlaps, orphans, time jumping back, zero durations."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export import nesting
from mcuprof.export.nesting import calls, nested_calls
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE

record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400]),
    st.integers(0, 80),
    st.integers(0, 30),
    st.integers(0, 3),
)


def _sizes(depth: list[int]) -> list[int]:
    """Each call's subtree size from the depths: it ends where the depth returns."""
    return [
        next((j for j in range(i + 1, len(depth)) if depth[j] <= d), len(depth)) - i
        for i, d in enumerate(depth)
    ]


def _same(p: Profile, window=None) -> None:
    walk = nested_calls(p, window)
    fast = calls(p, window)
    assert fast.frame.tolist() == walk.frame
    assert fast.start.astype(np.float64).tolist() == walk.start
    assert fast.ends(slice(None)).astype(np.float64).tolist() == walk.end
    assert fast.size.tolist() == _sizes(walk.depth)
    assert fast.depth().tolist() == walk.depth
    assert fast.end_max == (max(walk.end) if walk.end else 0.0)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=60))
def test_array_nesting_equals_the_repair_walk(rows) -> None:
    p = Profile()
    p.add(np.array(rows, RECORD_DTYPE))
    _same(p)


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=20), repeats=st.integers(2, 30))
def test_a_target_that_resets_every_packet(rows, repeats) -> None:
    p = Profile()
    p.add(np.concatenate([np.array(rows, RECORD_DTYPE)] * repeats))
    _same(p)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=1, max_size=40),
    repeats=st.integers(1, 3),
    cut=st.tuples(st.floats(-0.2, 1.2), st.floats(-0.2, 1.2)),
    freq=st.sampled_from([1_000_000, 3_000_000]),
)
def test_windows_equal_the_repair_walk(rows, repeats, cut, freq) -> None:
    """A window drops the calls outside it and cuts the rest to it, at fractional ticks
    too (a 3 MHz timer)."""
    p = Profile()
    p.set_timer_freq(freq)
    p.add(np.concatenate([np.array(rows, RECORD_DTYPE)] * repeats))
    span = p.t1_us - p.t0_us
    _same(p, (p.t0_us + cut[0] * span, p.t0_us + cut[1] * span))


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=1, max_size=40),
    repeats=st.integers(1, 4),
    step=st.integers(1, 4),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_pieces_of_a_few_rows(rows, repeats, step, cut) -> None:
    """Each depth goes a piece at a time: pieces of a few rows, so runs of siblings
    and the roots' running maximum cross pieces (what they need carried over)."""
    p = Profile()
    p.add(np.concatenate([np.array(rows, RECORD_DTYPE)] * repeats))
    span = p.t1_us - p.t0_us
    old, nesting.CALLS_PER_STEP = nesting.CALLS_PER_STEP, step
    try:
        _same(p)
        _same(p, (p.t0_us + cut[0] * span, p.t0_us + cut[1] * span))
    finally:
        nesting.CALLS_PER_STEP = old


def test_an_empty_profile() -> None:
    assert len(calls(Profile())) == 0


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(1, 300),
    gap=st.integers(0, 5),
    drop=st.integers(0, 3),
    cut=st.integers(0, 299),
)
def test_well_formed_traces_and_their_orphans(seed, n, gap, drop, cut) -> None:
    """Traces that need no repair (the fast path), zero-length calls and gaps of 0
    included, then the same with a few records lost (orphans) or cut in two packets
    at random (a later parent)."""
    import random

    from mcuprof.profile.synth import generate

    trace = generate(random.Random(seed), 5, n, max_gap=gap, recursive_rate=0.2)
    recs = trace.records(np.array([0x100 * (1 + f) for f in trace.func.tolist()], np.uint32))
    recs["duration"] //= 1 + (seed % 3 == 0) * 1000  # many zero durations in a third
    p = Profile()
    p.add(recs)
    _same(p)
    lost = [i for i in range(len(recs)) if i % 7 != drop]
    p = Profile()
    p.add(recs[lost])
    _same(p)
    p = Profile()
    p.add(recs[cut:])
    p.add(recs[:cut])
    _same(p)


def test_starts_take_32_bits_unless_the_capture_spans_more() -> None:
    """Starts are uint32 while every time fits and int64 beyond (a timer wrapping more
    than once): the same calls either way."""
    short = [(0x100, 0, 10, 0), (0x200, 2, 5, 1), (0x300, 4_000_000_000, 10, 0)]
    wrapping = [(0x100, 0, 10, 0), (0x200, 2_000_000_000, 10, 0), (0x100, 4_000_000_000, 10, 0)]
    wrapping += [(0x200, 1_000_000_000, 10, 0), (0x300, 3_000_000_000, 5, 0)]  # 7.3e9 ticks
    for rows, dtype in ((short, np.uint32), (wrapping, np.int64)):
        p = Profile()
        p.add(np.array(rows, RECORD_DTYPE))
        assert calls(p).start.dtype == dtype
        _same(p)
