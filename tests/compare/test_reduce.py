"""compare's reduction of a capture from its records (diff/reduce.py) against the simple
references: np.unique for the interning, and a Profile's
own aggregates for the whole reduction, on random record streams with the odd cases
(orphans, recursion, time jumping back, 32-bit wrap, depth gaps, unknown addresses)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.diff import reduce as red
from mcuprof.diff.reduce import RecordReducer, intern, reduce_profile
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable

FUNCS = [
    Function(f"f{i}", f"f{i}", 0x1000 + 0x100 * i, 0x10FF + 0x100 * i, "a.c", None, False)
    for i in range(6)
]
# Two statics with one name: the same folded frame, two labels.
FUNCS.append(Function("dup", "dup (b.c)", 0x2000, 0x20FF, "b.c", None, True))
FUNCS.append(Function("dup", "dup (c.c)", 0x2100, 0x21FF, "c.c", None, True))
SYMS = SymbolTable.from_functions(FUNCS)
ADDRS = [f.start for f in FUNCS] + [0x9999, 0x1234]  # two that resolve to nothing


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.integers(-1, 3000), st.integers(0, 5000)), max_size=300),
    spread=st.booleans(),
)
def test_intern_matches_np_unique(pairs, spread):
    pst = np.array([p * (1000 if spread else 1) for p, _ in pairs], np.int64)
    frame = np.array([f for _, f in pairs], np.int64)
    p, f, inverse = intern(pst, frame)
    keys, ref_inverse = (
        np.unique(np.stack([pst, frame], axis=1).reshape(-1, 2), axis=0, return_inverse=True)
        if len(pairs)
        else (np.empty((0, 2), np.int64), np.empty(0, np.int64))
    )
    assert p.tolist() == keys[:, 0].tolist()
    assert f.tolist() == keys[:, 1].tolist()
    assert inverse.tolist() == ref_inverse.reshape(-1).tolist()


def _calls(draw, max_records: int) -> list[tuple[int, int, int, int]]:
    """Random well-nested calls (children before parents, as a device sends them),
    then damaged: some dropped (orphans), time sent back (resets), depths shifted."""
    rows: list[tuple[int, int, int, int]] = []
    t = draw(st.integers(0, (1 << 32) - 1))
    big = draw(st.sampled_from([1, 1, 1 << 20, 1 << 26]))  # long root calls

    def emit(depth: int, start: int, fn: int) -> int:
        end = start + draw(st.integers(0, 5))
        if depth < 6 and len(rows) < max_records:
            for _ in range(draw(st.integers(0, 3))):
                child = fn if draw(st.integers(0, 4)) == 0 else draw(st.sampled_from(ADDRS))
                end = emit(depth + 1, end, child)
        end += draw(st.integers(0, 3)) * (big if depth == 0 else 1)
        rows.append((fn, start & 0xFFFFFFFF, end - start, depth))
        return end

    while len(rows) < max_records and draw(st.integers(0, 9)) > 0:
        t = emit(0, t, draw(st.sampled_from(ADDRS))) + draw(st.integers(0, 4))
        if draw(st.integers(0, 5)) == 0:  # the target reset: time starts again
            t = draw(st.sampled_from([0, 1, 2, 1000]))
    drop = draw(st.sets(st.integers(0, max(len(rows) - 1, 0)), max_size=len(rows) // 4))
    shift = draw(st.integers(0, 3))
    return [
        (a, e, d, dep + shift if dep >= 2 else dep)
        for i, (a, e, d, dep) in enumerate(rows)
        if i not in drop
    ]


@st.composite
def streams(draw):
    rows = _calls(draw, 120)
    rec = np.zeros(len(rows), RECORD_DTYPE)
    if rows:
        arr = np.array(rows, np.int64)
        rec["func_addr"], rec["entry_time"] = arr[:, 0], arr[:, 1]
        rec["duration"], rec["depth"] = arr[:, 2], arr[:, 3]
    cuts = sorted(draw(st.lists(st.integers(0, len(rec)), max_size=4)))
    freq = draw(st.sampled_from([1_000_000, 25_000_000, 168_000_000, 32_768]))
    return rec, cuts, freq, draw(st.booleans())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams(), per_stack=st.sampled_from([0, red._PER_STACK, 10**9]))
def test_reduction_equals_the_profiles(stream, per_stack, monkeypatch_module):
    # per_stack: every depth summed per stack first (0), per frame directly (10**9), or
    # as a capture of this shape would be
    monkeypatch_module.setattr(red, "_PER_STACK", per_stack)
    rec, cuts, freq, named = stream
    symbols = SYMS if named else None
    profile = Profile(symbols, freq)
    profile.add(rec)
    want = reduce_profile(profile, folded=False)
    reducer = RecordReducer(symbols)
    for a, b in zip([0, *cuts], [*cuts, len(rec)], strict=True):
        reducer.add(rec[a:b])
    got = reducer.finish(freq)
    if got is None:  # only past float64's exact range, which this capture must reach
        assert float(rec["duration"].astype(np.float64).max()) ** 2 >= red._EXACT / 64
        return
    assert got.n_records == want.n_records
    assert got.duration_us == want.duration_us
    assert got.stats == want.stats  # same values, same order
    assert got.spread == want.spread
    assert got.span == want.span


def test_the_fallback_is_taken_only_past_the_exact_range():
    # A recursive function (two depths) with calls of 2**27 ticks: squared sums past
    # 2**52, whose value depends on the order the Profile adds its depths in.
    a = FUNCS[0].start
    rows = [(a, 10, 1 << 27, 1), (a, 0, (1 << 27) + 20, 0)]
    rec = np.zeros(2, RECORD_DTYPE)
    arr = np.array(rows, np.int64)
    rec["func_addr"], rec["entry_time"] = arr[:, 0], arr[:, 1]
    rec["duration"], rec["depth"] = arr[:, 2], arr[:, 3]
    reducer = RecordReducer(SYMS)
    reducer.add(rec)
    assert reducer.finish(1_000_000) is None
    reducer = RecordReducer(SYMS)
    rec["duration"] //= 8  # 2**24 ticks: exact again
    reducer.add(rec)
    got = reducer.finish(1_000_000)
    profile = Profile(SYMS)
    profile.add(rec)
    assert got is not None and got.stats == reduce_profile(profile, folded=False).stats


def _rec(rows):
    rec = np.zeros(len(rows), RECORD_DTYPE)
    arr = np.array(rows, np.int64)
    rec["func_addr"], rec["entry_time"] = arr[:, 0], arr[:, 1]
    rec["duration"], rec["depth"] = arr[:, 2], arr[:, 3]
    return rec


def test_equal_entries_keep_stream_order():
    # The target reset: two roots entered at the same tick, both containing the child
    # sent after them; its parent is the one entered last, i.e. streamed last.
    f0, f1, f2, f3 = (f.start for f in FUNCS[:4])
    rec = _rec([(f3, 200, 5, 0), (f0, 100, 50, 0), (f1, 100, 40, 0), (f2, 110, 10, 1)])
    profile = Profile(SYMS)
    profile.add(rec)
    reducer = RecordReducer(SYMS)
    reducer.add(rec[:2])
    reducer.add(rec[2:])
    got = reducer.finish(1_000_000)
    assert got is not None
    assert got.stats == reduce_profile(profile, folded=False).stats
    self_us = {s.name: s.self_us for s in got.stats}
    assert self_us["f1"] == 30 and self_us["f0"] == 50  # f2 counted under f1
