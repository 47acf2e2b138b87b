"""The whole-capture Builder against the reference it replaces: Profile.add per batch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import kernels, levels, model
from mcuprof.profile.model import Builder, Profile
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


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(record_st, min_size=1, max_size=60),
    data=st.data(),
    piece=st.integers(1, 9),
    level_piece=st.sampled_from([256, 512, 1 << 18]),
)
def test_builder_equals_one_add_per_batch(rows, data, piece, level_piece) -> None:
    """Batches (where load_chunks ends one) and the calls inside them cut anywhere; the
    pieces the builder works in as small as one record: the same profile as adding
    each batch, in every column, the levels of detail and the interning order."""
    recs = np.array(rows, RECORD_DTYPE)
    n = len(recs)
    batch_cuts = sorted(set(data.draw(st.lists(st.integers(1, n), max_size=6))))
    call_cuts = sorted(set(data.draw(st.lists(st.integers(1, n), max_size=10))))
    want = Profile()
    for a, b in zip([0, *batch_cuts], [*batch_cuts, n], strict=True):
        want.add(recs[a:b])
    saved = model.RECORD_PIECE, levels._BUILD_PIECE, kernels.ID_PIECE
    model.RECORD_PIECE, levels._BUILD_PIECE, kernels.ID_PIECE = piece, level_piece, piece
    try:
        built = Builder(Profile())
        ends = set(batch_cuts)
        cuts = sorted(ends | set(call_cuts))
        for a, b in zip([0, *cuts], [*cuts, n], strict=True):
            built.add(recs[a:b])
            if b in ends:
                built.end_batch()
        got = built.finish()
    finally:
        model.RECORD_PIECE, levels._BUILD_PIECE, kernels.ID_PIECE = saved
    assert _state(got) == _state(want)
    # A built profile takes later adds as any other (its levels of detail still unbuilt).
    more = np.array(data.draw(st.lists(record_st, max_size=20)), RECORD_DTYPE)
    got.add(more)
    want.add(more)
    assert _state(got) == _state(want)


def test_builder_levels_larger_than_a_piece() -> None:
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
    want.add(recs[:4000])
    want.add(recs[4000:])
    saved = model.RECORD_PIECE, levels._BUILD_PIECE
    model.RECORD_PIECE, levels._BUILD_PIECE = 700, 512
    try:
        built = Builder(Profile())
        built.add(recs[:4000])
        got = built.finish()
        got.add(recs[4000:])  # before its levels of detail were ever asked for
    finally:
        model.RECORD_PIECE, levels._BUILD_PIECE = saved
    assert _state(got) == _state(want)


def test_builder_refuses_a_profile_with_records() -> None:
    p = Profile()
    p.add(np.zeros(1, RECORD_DTYPE))
    with pytest.raises(ValueError, match="empty"):
        Builder(p)


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


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    roots=st.integers(1, 40),
    resets=st.integers(0, 3),
    drop=st.sampled_from([0.0, 0.0, 0.05, 0.3]),
    worth=st.sampled_from([1, 16, 1 << 30]),
    pieces=st.sampled_from([(3, 5, 2), (1 << 16, 1 << 20, 1 << 20)]),
)
def test_builder_on_call_trees(seed, roots, resets, drop, worth, pieces) -> None:
    """Sane call trees (where the builder's guesses from the stream hold), with the
    clock restarting and records lost (where they fail): the same profile as the adds,
    guessing or not, in pieces as small as a few records."""
    recs = _call_trees(seed, roots, resets, drop)
    if len(recs) == 0:
        return
    cut = len(recs) // 2
    want = Profile()
    want.add(recs[:cut])
    want.add(recs[cut:])
    saved = model._WORTH, model.RECORD_PIECE, model._COUNT, kernels.ID_PIECE
    model._WORTH = worth
    model.RECORD_PIECE, model._COUNT, kernels.ID_PIECE = pieces
    try:
        built = Builder(Profile())
        built.add(recs[:cut])
        built.end_batch()
        built.add(recs[cut:])
        got = built.finish()
    finally:
        model._WORTH, model.RECORD_PIECE, model._COUNT, kernels.ID_PIECE = saved
    assert _state(got) == _state(want)
