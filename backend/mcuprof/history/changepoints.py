"""Change points in a series of one figure per build (``mcuprof history``).

Method: ruptures' exact penalised segmentation (PELT) on the L2 cost, i.e. changes in the
mean, through its C implementation (``KernelCPD`` with the linear kernel, whose cost is
the L2 cost: the same segmentation as ``Pelt(model="l2")``, 3,000 times faster;
tests/history pins the two together). The penalty is ``PENALTY * sigma^2 * ln(n)``, a BIC-like
term, where sigma is the series' noise estimated robustly from successive differences
(the median absolute deviation of the differences over sqrt(2)), so a step does not
inflate its own noise estimate. docs/history.md says why this method and these
constants: on 200 synthetic series each, a 2% step in 1% noise is found within 5 builds in
199 of 200, and 100 builds of flat 1% noise give more than one change point in 0 of 200.

Each change point is reported with the step from the segment before it to the segment
after it, and Welch's 95% interval on that difference of means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

PENALTY = 3.0  # times sigma^2 ln(n): 2 gave 6/200 flat series with >1 change point, 3 gave 0
MIN_SEGMENT = 3  # builds: a step must hold this long to count as one
CONFIDENCE = 0.95


@dataclass(frozen=True)
class ChangePoint:
    index: int  # the first point after the change
    before: float  # mean of the segment before
    after: float  # mean of the segment after
    low: float  # the interval of after - before (Welch, CONFIDENCE)
    high: float

    @property
    def step(self) -> float:
        return self.after - self.before

    @property
    def step_pct(self) -> float | None:
        return 100.0 * self.step / self.before if self.before else None


def noise(values: np.ndarray) -> float:
    """The series' noise (a standard deviation), robust to steps."""
    if len(values) < 3:
        return 0.0
    d = np.diff(values)
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))


def penalty(sigma: float, n: int) -> float:
    return PENALTY * sigma**2 * math.log(n)


def change_points(series: Sequence[float]) -> list[ChangePoint]:
    """The change points of ``series`` (oldest first), each as the index of its first
    point after the change."""
    y = np.asarray(series, dtype=float)
    n = len(y)
    if n < 2 * MIN_SEGMENT or not np.all(np.isfinite(y)):
        return []
    sigma = noise(y)
    if sigma == 0.0:
        # Exact repeats: any difference at all is a change; a tiny sigma keeps PELT sane.
        sigma = max(float(np.ptp(y)) * 1e-6, 1e-12)
    import ruptures

    algo = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT, jump=1)
    ends = [int(e) for e in algo.fit(y.reshape(-1, 1)).predict(pen=penalty(sigma, n))]
    cuts = [0, *ends]
    out = []
    for a, b, c in zip(cuts, cuts[1:], cuts[2:], strict=False):
        out.append(_describe(y[a:b], y[b:c], b))
    return out


def _describe(before: np.ndarray, after: np.ndarray, index: int) -> ChangePoint:
    from scipy import stats

    m0, m1 = float(before.mean()), float(after.mean())
    v0, v1 = before.var(ddof=1) / len(before), after.var(ddof=1) / len(after)
    se = math.sqrt(v0 + v1)
    if se == 0.0:
        return ChangePoint(index, m0, m1, m1 - m0, m1 - m0)
    # Welch-Satterthwaite degrees of freedom
    df = (v0 + v1) ** 2 / (v0**2 / (len(before) - 1) + v1**2 / (len(after) - 1))
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df)) * se
    return ChangePoint(index, m0, m1, m1 - m0 - half, m1 - m0 + half)
