"""Confidence intervals for the compare gate: is a change in time per call (or in share)
larger than what the calls' own spread explains?

Welch's t interval on the difference of two means, with the Student t quantile computed
here (scipy would be a large dependency for one function).
"""

from __future__ import annotations

import math


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
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


def _betai(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
    ln += b * math.log1p(-x)
    front = math.exp(ln)
    # The continued fraction converges fast on one side of the mean; use symmetry.
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile (0.5 < p < 1) of Student's t, by bisection on the CDF."""
    if df == math.inf or df > 1e7:
        df = 1e7
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def welch_interval(
    mean_a: float, var_a: float, n_a: int, mean_b: float, var_b: float, n_b: int, conf: float
) -> tuple[float, float]:
    """Two-sided ``conf`` interval of ``mean_b - mean_a`` (per-call variances, n >= 2)."""
    va, vb = var_a / n_a, var_b / n_b
    diff = mean_b - mean_a
    se2 = va + vb
    if se2 <= 0.0:  # no spread on either side: the difference is exact
        return diff, diff
    # Welch–Satterthwaite degrees of freedom.
    df = se2 * se2 / (va * va / (n_a - 1) + vb * vb / (n_b - 1))
    half = t_quantile(0.5 + conf / 2.0, df) * math.sqrt(se2)
    return diff - half, diff + half


def normal_interval(diff: float, se: float, conf: float) -> tuple[float, float]:
    """Two-sided ``conf`` interval of ``diff`` with standard error ``se`` (large samples)."""
    half = t_quantile(0.5 + conf / 2.0, math.inf) * se
    return diff - half, diff + half
