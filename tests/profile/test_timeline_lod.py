"""The timeline's precomputed levels against a record-by-record reference."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile, lod
from mcuprof.protocol import RECORD_DTYPE


def reference(p: Profile, t0_us: float, t1_us: float, width_px: int) -> list[tuple]:
    """The merging rules, literally: per depth, every call that overlaps the view; calls
    at least one pixel wide alone, narrower ones merged per pixel column (start of the
    first, latest exit, count, name of the longest, the earliest of equals)."""
    if t1_us < t0_us:
        t0_us, t1_us = t1_us, t0_us
    width = max(1, int(width_px))
    a, b = p.ticks(t0_us), p.ticks(t1_us)
    px = max((b - a) / width, 1e-12)
    to_us = 1e6 / p.timer_freq
    out = []
    for d in sorted(p.levels):
        lv = p.levels[d]
        fids = p.frame_ids(lv).tolist()
        wide, columns = [], {}
        for i, (e, du) in enumerate(zip(lv.entry.tolist(), lv.dur.tolist(), strict=True)):
            if e > math.ceil(b) or e + du < a:
                continue
            if du >= px:
                wide.append((d, e * to_us, du * to_us, p.frames[fids[i]].name, 1))
                continue
            c = math.floor((e - a) / px)
            first, end, n, best, name = columns.get(c, (e, e + du, 0, -1, ""))
            if du > best:
                best, name = du, p.frames[fids[i]].name
            columns[c] = (first, max(end, e + du), n + 1, best, name)
        out += wide
        for c in sorted(columns):
            first, end, n, _, name = columns[c]
            out.append((d, first * to_us, (end - first) * to_us, name, n))
    return out


def drawn(tl: dict) -> list[tuple]:
    return [
        (d, s, du, tl["names"][f], n)
        for d, s, du, f, n in zip(
            tl["depth"], tl["start_us"], tl["dur_us"], tl["frame"], tl["count"], strict=True
        )
    ]


def _capture(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    recs = np.empty(len(rows), RECORD_DTYPE)
    for i, (addr, t, dur, depth) in enumerate(rows):
        recs[i] = (0x100 + 4 * addr, t, dur, depth)
    return recs


def _nested(draw: st.DrawFn) -> list[tuple[int, int, int, int]]:
    """A random sane trace: nested calls in stream (exit) order, many per pixel."""
    rows: list[tuple[int, int, int, int]] = []
    t = 0
    for _ in range(draw(st.integers(1, 4))):
        kids = []
        start = t
        for _ in range(draw(st.integers(0, 120))):
            t += draw(st.integers(0, 3))
            dur = draw(st.sampled_from([0, 1, 1, 2, 3, 5, 40]))
            kids.append((draw(st.integers(0, 7)), t, dur, 1))
            t += dur
        t += draw(st.integers(0, 5))
        rows += [*kids, (9, start, t - start, 0)]
        t += draw(st.integers(0, 50))
    return rows


def _from_top(p: Profile, start: float, span: float, width: int) -> dict:
    """The query made to walk every tier from the top, as it does on long captures
    (short ranges are read record by record)."""
    saved = lod._START_GROUPS
    lod._START_GROUPS = 0
    try:
        return p.timeline(start, start + span, width)
    finally:
        lod._START_GROUPS = saved


def assert_bounds_kept(p: Profile) -> None:
    """The entries the walk takes from RAM are the records' own."""
    run = lod.FAN * lod.FAN
    for lv in p.levels.values():
        k = lv.n // run
        assert lv.lod.n_bounds == k
        assert np.array_equal(lv.lod.first, lv.entry[: k * run : run])
        assert np.array_equal(lv.lod.last, lv.entry[run - 1 : k * run : run])


_row = st.tuples(st.integers(0, 7), st.integers(0, 3000), st.integers(0, 300), st.integers(0, 3))
_window = st.tuples(
    st.floats(-100, 3500), st.one_of(st.just(0.0), st.floats(0.5, 3500)), st.integers(1, 300)
)


@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_levels_equal_the_direct_merge(data) -> None:
    if data.draw(st.booleans()):
        rows = data.draw(st.composite(_nested)())
    else:  # anything a corrupt stream may send: overlaps, resets, equal entries
        rows = data.draw(st.lists(_row, min_size=1, max_size=200))
    p = Profile(timer_freq=1_000_000)
    recs = _capture(rows)
    cut = data.draw(st.integers(0, len(recs)))  # a second add may merge into the first
    p.add(recs[:cut])
    p.add(recs[cut:])
    assert_bounds_kept(p)
    for _ in range(4):
        start, span, width = data.draw(_window)
        want = reference(p, start, start + span, width)
        for tl in (p.timeline(start, start + span, width), _from_top(p, start, span, width)):
            assert drawn(tl) == want
            assert tl["records"] == sum(r[4] for r in want)
    whole = _from_top(p, p.t0_us, p.t1_us - p.t0_us, data.draw(st.integers(1, 50)))
    assert drawn(whole) == reference(p, p.t0_us, p.t1_us, whole["width_px"])


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.composite(_nested)(), data=st.data())
def test_incremental_levels_equal_batch(rows, data) -> None:
    recs = _capture(rows)
    batch = Profile(timer_freq=1_000_000)
    batch.add(recs)
    live = Profile(timer_freq=1_000_000)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(recs)), max_size=12)))
    for lo, hi in zip([0, *cuts], [*cuts, len(recs)], strict=True):
        live.add(recs[lo:hi])
    assert_bounds_kept(live)
    for d, lv in batch.levels.items():
        got, want = live.levels[d].lod.tiers, lv.lod.tiers
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g.exit, w.exit)
            assert np.array_equal(g.dur, w.dur)
            assert np.array_equal(g.pos, w.pos)
    start, span, width = data.draw(_window)
    # Frame ids follow arrival order, so compare what is drawn.
    got = _from_top(live, start, span, width)
    want = _from_top(batch, start, span, width)
    assert drawn(got) == drawn(want) and got["records"] == want["records"]


def test_levels_take_a_few_bytes_per_record() -> None:
    n = 1 << 17
    recs = np.zeros(n, RECORD_DTYPE)
    recs["entry_time"] = np.arange(n) * 3
    recs["duration"] = 2
    p = Profile()
    for chunk in np.array_split(recs, 97):
        p.add(chunk)
    pyramid = p.levels[0].lod
    # 16 bytes per FAN records plus the tiers above, times 1.5 for growth slack.
    assert pyramid.nbytes <= 1.5 * 16 / (lod.FAN - 1) * n
    assert pyramid.tiers[-1].n == 1
