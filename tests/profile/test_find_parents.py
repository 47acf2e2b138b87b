"""The parent search (find_parents, its search per run of equal children, its
searchsorted per tick or per window of ascending queries, and the
builder's confirmation of guessed parents) against the rule it implements, record by
record: the record of the depth above that contains the child, entered last."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile import kernels
from mcuprof.profile.levels import Level, find_parents


def _reference(up_entry: np.ndarray, up_exit: np.ndarray, ce: np.ndarray, cx: np.ndarray) -> list:
    out = []
    for e, x in zip(ce.tolist(), cx.tolist(), strict=True):
        hits = np.flatnonzero((up_entry <= e) & (up_exit >= x))
        out.append(int(hits[-1]) if len(hits) else -1)
    return out


def _case(seed: int, n: int, m: int, span: int, runs: int) -> tuple[Level, np.ndarray, np.ndarray]:
    """A level of n records over ``span`` ticks (ties when span is small) and m children
    sorted by entry, repeated in runs of up to ``runs`` equal ones."""
    rng = np.random.default_rng(seed)
    entry = np.sort(rng.integers(0, span, n)).astype(np.int64)
    dur = rng.integers(0, max(2, span // 4), n).astype(np.uint32)
    up = Level.of(entry, dur, np.zeros(n, np.int32))
    k = max(1, m // runs)
    ce = rng.integers(-2, span + 2, k).astype(np.int64)
    cx = ce + rng.integers(0, max(2, span // 8), k)
    reps = rng.integers(1, runs + 1, k)
    ce, cx = np.repeat(ce, reps)[:m], np.repeat(cx, reps)[:m]
    order = np.argsort(ce, kind="stable")
    return up, ce[order], cx[order]


cases = st.tuples(
    st.integers(0, 2**32 - 1),
    st.integers(0, 600),
    st.integers(1, 3000),
    st.sampled_from([3, 40, 5000, 1 << 40]),
    st.sampled_from([1, 3, 50, 2000]),
)


@settings(max_examples=60)
@given(cases)
def test_find_parents_is_the_rule(case) -> None:
    up, ce, cx = _case(*case)
    want = _reference(up.entry, up.entry + up.dur, ce, cx)
    assert find_parents(up, ce, cx).tolist() == want
    # Not sorted by entry (the live path's re-parenting gives them in any order).
    rev = slice(None, None, -1)
    assert find_parents(up, ce[rev], cx[rev]).tolist() == want[rev]


@settings(max_examples=60)
@given(cases)
def test_last_at_or_before_is_searchsorted(case) -> None:
    up, ce, _ = _case(*case)
    want = np.searchsorted(up.entry, ce, side="right") - 1
    assert kernels.last_at_or_before(up.entry, ce).tolist() == want.tolist()
