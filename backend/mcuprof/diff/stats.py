"""Confidence intervals for the compare gate: is a change in time per call (or in share)
larger than what the calls' own spread explains?

Welch's t interval on the difference of two means, with the Student t quantile computed
here (scipy would be a large dependency for one function, and slow to import).

The quantiles of every function a comparison gates are found together, each distinct
df once. From ``_VECTOR`` of them on, numpy runs the continued fraction and the
bisection for all at once, each element through the very steps (and stopping rule) of
the scalar code, so the numbers do not depend on how many functions are compared. Only
``exp``, ``log``, ``log1p`` and ``lgamma`` stay scalar (the C library's, through
``math``): numpy's own may differ from them by an ulp on some CPUs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_TINY = 1e-300
_DF_CAP = 1e7  # past this many degrees of freedom, t is the normal distribution
_VECTOR = 32  # from this many elements on, numpy's per-call cost pays off


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = _TINY
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


def _betacf_many(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``_betacf`` per element, each through the same steps: an element stops at the first
    step where it has converged."""
    out = np.empty(len(x))
    if len(x) == 0:
        return out
    live = np.arange(len(x))
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = np.ones(len(x))
    d = 1.0 - qab * x / qap
    d = 1.0 / np.where(np.abs(d) > _TINY, d, _TINY)
    h = d.copy()
    for m in range(1, 300):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + num * d
            d = 1.0 / np.where(np.abs(d) > _TINY, d, _TINY)
            c = 1.0 + num / c
            c = np.where(np.abs(c) > _TINY, c, _TINY)
            h *= d * c
        done = np.abs(d * c - 1.0) < 1e-14
        if done.any():
            out[live[done]] = h[done]
            keep = ~done
            if not keep.any():
                return out
            live, a, b, x, qab, qap, qam, c, d, h = (
                v[keep] for v in (live, a, b, x, qab, qap, qam, c, d, h)
            )
    out[live] = h
    return out


def _betai(a: float, b: float, x: float, lnorm: float) -> float:
    """Regularised incomplete beta I_x(a, b); ``lnorm`` is
    ``lgamma(a + b) - lgamma(a) - lgamma(b)`` (it depends on a and b only)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(lnorm + a * math.log(x) + b * math.log1p(-x))
    # The continued fraction converges fast on one side of the mean; use symmetry.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def _betai_many(a: np.ndarray, b: np.ndarray, x: np.ndarray, lnorm: np.ndarray) -> np.ndarray:
    """``_betai`` per element (the same steps; the continued fraction is numpy's)."""
    out = np.where(x <= 0.0, 0.0, 1.0)  # x <= 0 gives 0, x >= 1 gives 1
    inside = np.flatnonzero(~((x <= 0.0) | (x >= 1.0)))  # (NaN included, as in a scalar if)
    if len(inside) == 0:
        return out
    a, b, x = a[inside], b[inside], x[inside]
    front = np.array(
        [
            math.exp(k + ai * math.log(xi) + bi * math.log1p(-xi))
            for k, ai, bi, xi in zip(
                lnorm[inside].tolist(), a.tolist(), b.tolist(), x.tolist(), strict=True
            )
        ]
    )
    direct = x < (a + 1.0) / (a + b + 2.0)
    res = np.empty(len(x))
    i, j = np.flatnonzero(direct), np.flatnonzero(~direct)
    res[i] = front[i] * _betacf_many(a[i], b[i], x[i]) / a[i]
    res[j] = 1.0 - front[j] * _betacf_many(b[j], a[j], 1.0 - x[j]) / b[j]
    out[inside] = res
    return out


def _lnorm(a: float, b: float) -> float:
    return math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)


def _t_cdf_1(t: float, df: float, lnorm: float) -> float:
    """P(T <= t), with ``lnorm = _lnorm(df / 2, 0.5)``."""
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t), lnorm)
    return 1.0 - tail if t >= 0 else tail


def _t_cdf(t: np.ndarray, df: np.ndarray, lnorm: np.ndarray) -> np.ndarray:
    """``_t_cdf_1`` per element."""
    if len(t) < _VECTOR:
        return np.array(
            [_t_cdf_1(*v) for v in zip(t.tolist(), df.tolist(), lnorm.tolist(), strict=True)]
        )
    tail = 0.5 * _betai_many(df / 2.0, np.full(len(t), 0.5), df / (df + t * t), lnorm)
    return np.where(t >= 0, 1.0 - tail, tail)


_SURE = 1e-12  # relative error allowed per exp/log term of numpy's against the C library's


def _t_below(t: np.ndarray, df: np.ndarray, lnorm: np.ndarray, p: float) -> np.ndarray:
    """``_t_cdf(t, df, lnorm) < p`` per element, all the bisection asks. The continued
    fractions are numpy's, as in ``_betai_many``; the factor in front of them is first
    taken with numpy's exp and logs (all elements at once), which settles every element
    whose CDF is farther from p than the two can differ (an ulp or so per function:
    _SURE is a thousand times that); the C library's, as the scalar code uses them,
    settle the rest (the last steps of a bisection), so the answers are the scalar code's."""
    if len(t) < _VECTOR:
        return _t_cdf(t, df, lnorm) < p
    x = df / (df + t * t)
    live = np.flatnonzero((x > 0.0) & (x < 1.0))  # the others (and NaN): as _t_cdf does
    below = np.zeros(len(t), bool)
    settled = np.zeros(len(t), bool)
    if len(live):
        a, x, k, tl = df[live] / 2.0, x[live], lnorm[live], t[live]
        b = np.full(len(live), 0.5)
        direct = x < (a + 1.0) / (a + b + 2.0)
        i, j = np.flatnonzero(direct), np.flatnonzero(~direct)
        cf = np.empty(len(live))  # the continued fraction, and what it is divided by
        cf[i] = _betacf_many(a[i], b[i], x[i])
        cf[j] = _betacf_many(b[j], a[j], 1.0 - x[j])
        over = np.where(direct, a, b)

        def cdf_of(front: np.ndarray, at: np.ndarray) -> np.ndarray:
            term = front * cf[at] / over[at]
            tail = 0.5 * np.where(direct[at], term, 1.0 - term)
            return np.where(tl[at] >= 0, 1.0 - tail, tail)

        la, lb = a * np.log(x), b * np.log1p(-x)
        ln = k + la + lb
        every = np.arange(len(live))
        guess = np.exp(ln)
        cdf = cdf_of(guess, every)
        # the term's error: its own times that of ln and exp; then two roundings
        err = np.abs(guess * cf / over) * _SURE * (1.0 + np.abs(la) + np.abs(lb)) + 1e-15
        sure = (np.abs(cdf - p) > err) & (ln > -700.0) & np.isfinite(cdf)
        below[live[sure]] = cdf[sure] < p
        settled[live] = True
        rest = np.flatnonzero(~sure)
        if len(rest):
            front = np.array(
                [
                    math.exp(kk + ai * math.log(xi) + 0.5 * math.log1p(-xi))
                    for kk, ai, xi in zip(
                        k[rest].tolist(), a[rest].tolist(), x[rest].tolist(), strict=True
                    )
                ]
            )
            below[live[rest]] = cdf_of(front, rest) < p
    other = np.flatnonzero(~settled)
    if len(other):
        below[other] = _t_cdf(t[other], df[other], lnorm[other]) < p
    return below


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    return _t_cdf_1(t, df, _lnorm(df / 2.0, 0.5))


def t_quantiles(p: float, dfs: Sequence[float]) -> list[float]:
    """The ``p`` quantile (0.5 < p < 1) of Student's t for each of ``dfs``, by bisection on
    the CDF (each distinct df solved once)."""
    if len(dfs) == 0:
        return []
    capped = [_DF_CAP if df == math.inf or df > _DF_CAP else df for df in dfs]
    distinct, back = np.unique(np.array(capped, np.float64), return_inverse=True)
    return _bisect(p, distinct)[back.reshape(-1)].tolist()


def _bisect(p: float, df: np.ndarray) -> np.ndarray:
    lnorm = np.array([_lnorm(h, 0.5) for h in (df / 2.0).tolist()])
    hi = np.ones(len(df))
    grow = np.arange(len(df))
    while len(grow):  # double each upper bound until its CDF reaches p
        below = _t_below(hi[grow], df[grow], lnorm[grow], p)
        grow = grow[below]
        hi[grow] *= 2.0
    lo = np.zeros(len(df))
    lo_seen = np.zeros(len(df), bool)  # lo was a midpoint (so its CDF is known below p)
    live = np.arange(len(df))
    for _ in range(100):
        if len(live) == 0:
            break
        mid = 0.5 * (lo[live] + hi[live])
        below = _t_below(mid, df[live], lnorm[live], p)
        lo[live[below]] = mid[below]
        lo_seen[live[below]] = True
        hi[live[~below]] = mid[~below]
        # An element whose next midpoint is one of its bounds would only set that bound
        # to itself again (its CDF's side of p is known), in every step left: it is done.
        lo_l, hi_l = lo[live], hi[live]
        nxt = 0.5 * (lo_l + hi_l)
        live = live[~((nxt == hi_l) | ((nxt == lo_l) & lo_seen[live]))]
    return 0.5 * (lo + hi)


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t, by bisection on the CDF."""
    return t_quantiles(p, [df])[0]


Welch = tuple[float, float, int, float, float, int]  # mean_a, var_a, n_a, mean_b, var_b, n_b


def welch_intervals(rows: Sequence[Welch], conf: float) -> list[tuple[float, float]]:
    """``welch_interval`` of many rows, their quantiles found together."""
    parts = []
    for mean_a, var_a, n_a, mean_b, var_b, n_b in rows:
        va, vb = var_a / n_a, var_b / n_b
        diff = mean_b - mean_a
        se2 = va + vb
        if se2 <= 0.0:  # no spread on either side: the difference is exact
            parts.append((diff, se2, None))
            continue
        parts.append((diff, se2, _welch_df(va, n_a, vb, n_b, se2)))
    q = iter(t_quantiles(0.5 + conf / 2.0, [df for _, _, df in parts if df is not None]))
    out = []
    for diff, se2, df in parts:
        if df is None:
            out.append((diff, diff))
        else:
            half = next(q) * math.sqrt(se2)
            out.append((diff - half, diff + half))
    return out


def _welch_df(va: float, n_a: int, vb: float, n_b: int, se2: float) -> float:
    """Welch–Satterthwaite degrees of freedom; where the squares leave float64's range
    (variances past ~1e±154 underflow to 0 or overflow), the same ratio computed exactly."""
    den = va * va / (n_a - 1) + vb * vb / (n_b - 1)
    if den > 0.0:
        df = se2 * se2 / den
        if math.isfinite(df):
            return df
    from fractions import Fraction  # (rare: only here)

    a, b, s = Fraction(va), Fraction(vb), Fraction(se2)
    return float(s * s / (a * a / (n_a - 1) + b * b / (n_b - 1)))


def welch_interval(
    mean_a: float, var_a: float, n_a: int, mean_b: float, var_b: float, n_b: int, conf: float
) -> tuple[float, float]:
    """Two-sided ``conf`` interval of ``mean_b - mean_a`` (per-call variances, n >= 2)."""
    return welch_intervals([(mean_a, var_a, n_a, mean_b, var_b, n_b)], conf)[0]


def normal_intervals(rows: Sequence[tuple[float, float]], conf: float) -> list[tuple[float, float]]:
    """``normal_interval`` of each (diff, se): one quantile for all."""
    if not rows:
        return []
    z = t_quantile(0.5 + conf / 2.0, math.inf)
    return [(diff - z * se, diff + z * se) for diff, se in rows]


def normal_interval(diff: float, se: float, conf: float) -> tuple[float, float]:
    """Two-sided ``conf`` interval of ``diff`` with standard error ``se`` (large samples)."""
    return normal_intervals([(diff, se)], conf)[0]
