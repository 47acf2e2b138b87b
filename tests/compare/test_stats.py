"""The gate's t quantiles, found for many functions at once (numpy, each distinct df once,
the bisection stopped where it can no longer move), are the very floats the simple scalar
code gives one function at a time: the reference below is that code as it was."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.diff import stats
from mcuprof.diff.table import FunctionDelta, Side, function_intervals

# ------------------------------------------------------------------ the reference


def ref_betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-14:
            break
    return h


def ref_betai(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
    ln += b * math.log1p(-x)
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * ref_betacf(a, b, x) / a
    return 1.0 - front * ref_betacf(b, a, 1.0 - x) / b


def ref_t_cdf(t: float, df: float) -> float:
    tail = 0.5 * ref_betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def ref_t_quantile(p: float, df: float) -> float:
    if df == math.inf or df > 1e7:
        df = 1e7
    lo, hi = 0.0, 1.0
    while ref_t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if ref_t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def ref_welch(ma: float, va_: float, na: int, mb: float, vb_: float, nb: int, conf: float):
    va, vb = va_ / na, vb_ / nb
    diff = mb - ma
    se2 = va + vb
    if se2 <= 0.0:
        return diff, diff
    den = va * va / (na - 1) + vb * vb / (nb - 1)
    df = se2 * se2 / den if den > 0.0 else math.inf
    if not math.isfinite(df):  # squares past float64's range: the exact ratio
        a, b, s = Fraction(va), Fraction(vb), Fraction(se2)
        df = float(s * s / (a * a / (na - 1) + b * b / (nb - 1)))
    half = ref_t_quantile(0.5 + conf / 2.0, df) * math.sqrt(se2)
    return diff - half, diff + half


def ref_interval(d: FunctionDelta, metric, basis, confidence, min_calls):
    """``FunctionDelta.interval`` as it was (one function, scalar code)."""
    b, n = d.base, d.new
    if b is None or n is None or min(b.calls, n.calls) < max(min_calls, 2):
        return None
    vb, vn = b.value(metric, basis), n.value(metric, basis)
    if not vb or vn is None:
        return None
    if basis == "mean":
        lo, hi = ref_welch(
            vb,
            b.variance(metric) or 0.0,
            b.calls,
            vn,
            n.variance(metric) or 0.0,
            n.calls,
            confidence,
        )
    else:
        se = math.hypot(b.share_se(metric) or 0.0, n.share_se(metric) or 0.0)
        half = ref_t_quantile(0.5 + confidence / 2.0, math.inf) * se
        lo, hi = vn - vb - half, vn - vb + half
    return lo / vb * 100.0, hi / vb * 100.0


def same(a: float, b: float) -> bool:
    """Bit for bit (NaN equal to NaN)."""
    return np.float64(a).tobytes() == np.float64(b).tobytes()


# ------------------------------------------------------------------ strategies

positive = st.one_of(
    st.floats(1e-3, 1e4),
    st.floats(0.5, 20.0),
    st.sampled_from([0.5, 1.0, 2.0, 1e7]),
    st.floats(1e4, 5e6),
)
unit = st.one_of(
    st.floats(0.0, 1.0),
    st.sampled_from([0.0, 1.0, 5e-324, 1e-300, 1e-17, 0.5, 1.0 - 2**-53, -0.5, 1.5]),
)
dfs = st.one_of(
    st.floats(1.0, 1e8),
    st.floats(1.0, 50.0),
    st.sampled_from([1.0, 1.5, 2.0, 3.0, 1e7, 1.0000001e7, 5e9, math.inf]),
)
probs = st.one_of(
    st.floats(0.5, 1.0, exclude_max=True),
    st.sampled_from([0.5, 0.975, 0.995, 1.0 - 1e-9, 1.0 - 1e-12, 1.0 - 2**-53]),
)


@given(st.lists(st.tuples(positive, positive, unit), min_size=1, max_size=80))
@settings(max_examples=60)
def test_incomplete_beta_vectorised_equals_the_scalar_reference(rows):
    a, b, x = (np.array(c, np.float64) for c in zip(*rows, strict=True))
    lnorm = np.array([stats._lnorm(ai, bi) for ai, bi in zip(a, b, strict=True)])
    many = stats._betai_many(a, b, x, lnorm)
    for (ai, bi, xi), got, k in zip(rows, many.tolist(), lnorm.tolist(), strict=True):
        want = ref_betai(ai, bi, xi)
        assert same(got, want), (ai, bi, xi, got, want)
        assert same(stats._betai(ai, bi, xi, k), want)


@given(probs, st.lists(dfs, min_size=1, max_size=70))
@settings(max_examples=40)
def test_t_quantiles_equal_the_scalar_reference(p, df_list):
    # both sides of the numpy threshold, repeated dfs included
    got = stats.t_quantiles(p, df_list)
    assert len(got) == len(df_list)
    cache: dict[float, float] = {}
    for df, q in zip(df_list, got, strict=True):
        want = cache.setdefault(df, ref_t_quantile(p, df))
        assert same(q, want), (p, df, q, want)
    assert same(stats.t_quantile(p, df_list[0]), got[0])


@given(
    probs,
    st.lists(st.tuples(dfs, st.integers(-60, 60), st.floats(-50.0, 50.0)), min_size=1, max_size=90),
)
@settings(max_examples=60)
def test_t_below_is_the_scalar_comparison(p, rows):
    # points at and a few ulps around each df's quantile (where numpy's exp and logs can
    # not tell the side of p), and anywhere: as many as the numpy path takes, and fewer
    df = np.array([min(d, 1e7) for d, _, _ in rows])
    q = np.array([ref_t_quantile(p, d) for d in df.tolist()])
    near = np.array([k for _, k, _ in rows], np.float64)
    far = np.array([v for _, _, v in rows])
    t = np.where(np.abs(near) < 40, q + near * np.spacing(q), far)
    lnorm = np.array([stats._lnorm(d / 2.0, 0.5) for d in df.tolist()])
    got = stats._t_below(t, df, lnorm, p)
    want = [ref_t_cdf(ti, di) < p for ti, di in zip(t.tolist(), df.tolist(), strict=True)]
    assert got.tolist() == want


@given(st.floats(-50.0, 50.0), dfs)
@settings(max_examples=200)
def test_t_cdf_equals_the_scalar_reference(t, df):
    df = min(df, 1e7)
    assert same(stats.t_cdf(t, df), ref_t_cdf(t, df))


def test_huge_t_and_one_degree_of_freedom():
    # A p-value far in the tail (a Bonferroni level over thousands of functions) and
    # the Cauchy case, on both the scalar and the numpy side of the threshold.
    for p in (1.0 - 1e-12, 0.9999995, 0.975):
        dfs_ = [1.0 + i / 7 for i in range(40)]
        got = stats.t_quantiles(p, dfs_)
        assert all(same(g, ref_t_quantile(p, d)) for g, d in zip(got, dfs_, strict=True))
    # Cauchy: the 97.5% quantile is tan(0.475 pi)
    assert math.isclose(stats.t_quantile(0.975, 1.0), math.tan(0.475 * math.pi), rel_tol=1e-9)


sides = st.builds(
    lambda calls, mean, spread, profiled, sq_scale: Side(
        calls,
        mean * calls,
        mean * calls * 1.5,
        profiled,
        profiled * 2,
        (mean * mean + spread) * calls,  # self_sq: zero spread gives zero variance
        mean * calls * 1.5,
        (mean * mean * 2.25 + spread * sq_scale) * calls,
    ),
    st.one_of(st.integers(1, 3), st.integers(1, 10**7)),
    st.one_of(st.just(0.0), st.floats(1e-3, 1e4)),
    st.one_of(st.just(0.0), st.floats(1e-6, 1e6)),
    st.one_of(st.just(0.0), st.floats(1.0, 1e9)),
    st.floats(0.0, 3.0),
)


@given(
    st.lists(st.tuples(st.one_of(st.none(), sides), st.one_of(st.none(), sides)), max_size=60),
    st.sampled_from(["self", "total"]),
    st.sampled_from(["mean", "share"]),
    st.one_of(st.floats(0.0, 0.999999), st.sampled_from([0.95, 1.0 - 1e-9])),
    st.integers(1, 5),
)
@settings(max_examples=40)
def test_function_intervals_equal_one_at_a_time_reference(pairs, metric, basis, conf, min_calls):
    deltas = [FunctionDelta(f"f{i}", f"f{i}", b, n) for i, (b, n) in enumerate(pairs)]
    got = function_intervals(deltas, metric, basis, conf, min_calls)
    for d, ci in zip(deltas, got, strict=True):
        want = ref_interval(d, metric, basis, conf, min_calls)
        assert (ci is None) == (want is None)
        if ci is not None:
            assert same(ci[0], want[0]) and same(ci[1], want[1]), (d, ci, want)
        one = d.interval(metric, basis, conf, min_calls)  # the same, one function alone
        assert (one is None) == (ci is None)
        assert one is None or (same(one[0], ci[0]) and same(one[1], ci[1]))


@pytest.mark.parametrize("scale", [1e-178, 1e-300, 1e200, 1e300])
def test_welch_interval_past_the_range_of_squares(scale):
    """Variances whose squares underflow (or overflow) float64 still have their degrees
    of freedom: the interval scales with the spread, as at ordinary sizes."""
    want = stats.welch_interval(0.0, 0.0, 2, 0.0, 3.0, 5, 0.95)
    got = stats.welch_interval(0.0, 0.0, 2, 0.0, 3.0 * scale, 5, 0.95)
    half = math.sqrt(scale)
    assert math.isclose(got[0], want[0] * half, rel_tol=1e-9)
    assert math.isclose(got[1], want[1] * half, rel_tol=1e-9)
