"""A whole capture merged at once (``Profile.reserve``: one merge, levels made whole,
parents guessed from the stream) against the live reference: each add merged as it
comes (a read after each)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import kernels, levels, model
from mcuprof.profile.model import Profile
from mcuprof.protocol import RECORD_DTYPE

record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400, 0x0800_0000, 0xFFFF_FFF0, 0x7]),
    # near zero, and just below the 32-bit wrap: time that wraps and jumps back
    st.one_of(st.integers(0, 80), st.integers((1 << 32) - 60, (1 << 32) - 1)),
    st.integers(0, 30),
    st.integers(0, 4),
)


def _level_state(lv: levels.Level) -> tuple:
    tiers = tuple((t.exit.tobytes(), t.dur.tobytes(), t.pos.tobytes()) for t in lv.lod.tiers)
    cols = (lv.entry, lv.dur, lv.addr, lv.parent, lv.block_max)
    return (lv.n, lv.max_dur, *(c.dtype.str + c.tobytes().hex() for c in cols), tiers)


def _state(p: Profile) -> tuple:
    """Everything a reader can see, frame ids and address ids included."""
    return (
        p.n_records,
        p.t0_ticks,
        p.t1_ticks,
        p._last_exit,
        sorted(p.levels),
        [_level_state(p.levels[d]) for d in sorted(p.levels)],
        p._addrs.addrs.tobytes(),
        p._addrs.frame_of.tobytes(),
        p.frames,
        p.folded(),
        p.n_orphans,
    )


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=1, max_size=60),
    data=st.data(),
    piece=st.integers(1, 9),
    level_piece=st.sampled_from([256, 512, 1 << 18]),
)
def test_whole_merge_equals_adds_merged_one_by_one(rows, data, piece, level_piece) -> None:
    """Adds (where load_chunks flushes a batch) cut anywhere; the pieces the merge works
    in as small as one record: the same profile as merging each add, in every column,
    the levels of detail and the interning order."""
    recs = np.array(rows, RECORD_DTYPE)
    n = len(recs)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n), max_size=6))))
    want = Profile()
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        want.add(recs[a:b])
        want.settle()
    saved = model.RECORD_PIECE, levels._BUILD_PIECE, kernels.ID_PIECE
    model.RECORD_PIECE, levels._BUILD_PIECE, kernels.ID_PIECE = piece, level_piece, piece
    try:
        got = Profile()
        got.reserve(data.draw(st.sampled_from([0, n // 2, n, 2 * n])))
        for a, b in zip([0, *cuts], [*cuts, n], strict=True):
            got.add(recs[a:b])
        got.settle()
    finally:
        model.RECORD_PIECE, levels._BUILD_PIECE, kernels.ID_PIECE = saved
    assert _state(got) == _state(want)
    # A profile merged whole takes later adds as any other (its levels of detail unbuilt).
    more = np.array(data.draw(st.lists(record_st, max_size=20)), RECORD_DTYPE)
    got.add(more)
    want.add(more)
    assert _state(got) == _state(want)


def test_whole_merge_of_levels_larger_than_a_piece() -> None:
    """Levels of several pieces (block maxima and levels of detail built piecewise),
    in order and with time going back, then one more add, against the adds."""
    rng = np.random.default_rng(3)
    n = 5000
    recs = np.empty(n, RECORD_DTYPE)
    recs["func_addr"] = rng.integers(0x0800_0000, 0x0800_0400, n)
    recs["depth"] = rng.integers(0, 3, n)
    recs["duration"] = rng.integers(0, 50, n)
    recs["entry_time"] = np.cumsum(rng.integers(0, 40, n)) % 7000  # goes back now and then
    want = Profile()
    for a in range(0, n, 1000):
        want.add(recs[a : a + 1000])
        want.settle()
    saved = model.RECORD_PIECE, levels._BUILD_PIECE
    model.RECORD_PIECE, levels._BUILD_PIECE = 700, 512
    try:
        got = Profile()
        got.reserve(n)
        for a in range(0, 4000, 1000):
            got.add(recs[a : a + 1000])
        got.settle()
        got.add(recs[4000:])  # before its levels of detail were ever asked for
    finally:
        model.RECORD_PIECE, levels._BUILD_PIECE = saved
    assert _state(got) == _state(want)


def _call_trees(seed: int, roots: int, resets: int, drop: float) -> np.ndarray:
    """Nested calls in exit order (callees before their caller), with ties and empty
    calls; the clock restarted ``resets`` times (time going back), and a share ``drop``
    of the records lost (orphans, callers without some callees)."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[int, int, int, int]] = []
    restart = set(rng.integers(1, max(2, roots), resets).tolist())

    def call(depth: int, t: int) -> int:
        start = t + int(rng.integers(0, 2))
        t = start
        for _ in range(int(rng.integers(0, 4)) if depth < 5 else 0):
            t = call(depth + 1, t + int(rng.integers(0, 2)))
        end = t + int(rng.integers(0, 2))
        rows.append(
            (0x0800_0000 + 4 * int(rng.integers(0, 9)), start & 0xFFFF_FFFF, end - start, depth)
        )
        return end

    t = int(rng.integers(0, 1 << 32))
    for r in range(roots):
        if r in restart:
            t = int(rng.integers(0, 50))
        t = call(0, t)
    recs = np.array(rows, RECORD_DTYPE)
    return recs[rng.random(len(recs)) >= drop]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    roots=st.integers(1, 40),
    resets=st.integers(0, 3),
    drop=st.sampled_from([0.0, 0.0, 0.05, 0.3]),
    pieces=st.sampled_from([(3, 2), (1 << 16, 1 << 20)]),
)
def test_whole_merge_on_call_trees(seed, roots, resets, drop, pieces) -> None:
    """Sane call trees, with the clock restarting and records lost: the same profile as
    the adds merged one by one, in pieces as small as a few records."""
    recs = _call_trees(seed, roots, resets, drop)
    if len(recs) == 0:
        return
    cut = len(recs) // 2
    want = Profile()
    want.add(recs[:cut])
    want.settle()
    want.add(recs[cut:])
    want.settle()
    saved = model.RECORD_PIECE, kernels.ID_PIECE
    model.RECORD_PIECE, kernels.ID_PIECE = pieces
    try:
        got = Profile()
        got.reserve(len(recs))
        got.add(recs[:cut])
        got.add(recs[cut:])
        got.settle()
    finally:
        model.RECORD_PIECE, kernels.ID_PIECE = saved
    assert _state(got) == _state(want)
