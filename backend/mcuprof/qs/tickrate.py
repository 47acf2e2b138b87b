"""The target's tick rate, estimated from when its frames arrive (issue 34, point 4).

QS timestamps count a clock the host cannot know (QS_onGetTime). The host does know
when each frame arrived: a frame stamped T (ticks) was made at T / rate seconds on
the target's clock plus some offset, and arrives at least that late, never earlier
(it is queued, buffered and sent in bursts). So the points (T, host seconds) all lie
on or above one line, host = T / rate + offset, and touch it whenever a frame went
out at once. The estimate is the slope of the lower convex hull of the points, between two
of its vertices half the run apart: a line under all of them, so any delay (a burst
held back for a second) only lifts points away from it.

``estimate_tick_hz`` is the pure function (tests/qs/test_tickrate.py); ``TickRate``
collects (host time, newest timestamp) pairs from the live stream and keeps only the
hull, so its memory stays bounded however long the target runs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# The estimate needs frames over at least this much host time: below it the arrival
# jitter of one frame is too large a part of the span (docs/limits.md).
MIN_SPAN_S = 10.0
# The estimate and the rate in use differ enough to say so (and offer to apply it).
DIFFER_RATIO = 1.2
# (host, ticks) pairs kept before the older ones are reduced to their lower hull.
MAX_SAMPLES = 4096


def unwrap(stamps: Sequence[int] | np.ndarray, bits: int = 32) -> np.ndarray:
    """Timestamps of a ``bits``-wide counter in arrival order, made monotonic across
    its wraps: each step is read as signed (a drop by more than half the range is a
    wrap, a smaller one a timestamp a little out of order)."""
    a = np.asarray(stamps, dtype=np.int64)
    if len(a) == 0 or bits >= 63:
        return a.copy()
    span = 1 << bits
    step = np.diff(a) % span
    step[step >= span // 2] -= span
    out = np.empty(len(a), dtype=np.int64)
    out[0] = a[0]
    np.cumsum(step, out=out[1:])
    out[1:] += a[0]
    return out


def lower_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the lower convex hull of the points, by increasing x (Andrew's
    monotone chain; for equal x only the lowest point can be on it)."""
    order = np.lexsort((y, x))
    xs, ys = np.asarray(x).tolist(), np.asarray(y).tolist()  # Python numbers: faster here
    hull: list[int] = []
    for i in order.tolist():
        if hull and xs[hull[-1]] == xs[i]:
            continue  # same x, higher y: above the one kept
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b is not below the segment a -> i: drop it (cross product >= 0).
            cross = (xs[b] - xs[a]) * (ys[i] - ys[a]) - (ys[b] - ys[a]) * (xs[i] - xs[a])
            if cross > 0:
                break
            hull.pop()
        hull.append(i)
    return np.asarray(hull, dtype=np.int64)


def hull_slope(x: np.ndarray, y: np.ndarray) -> float | None:
    """The slope of the lower hull between its vertex at or before the first quarter
    of x's range and its vertex at or after the third: two points that waited least,
    at least half the run apart, so their own small delays barely tilt the line (an
    edge of the hull alone may be short, and tilted by one point's delay)."""
    if len(x) < 2:
        return None
    xf = x.astype(np.float64) - float(x.min())  # small numbers: exact enough in floats
    yf = y.astype(np.float64) - float(y.min())
    h = lower_hull(xf, yf)
    if len(h) < 2:
        return None
    hx = xf[h]
    q1, q3 = 0.25 * hx[-1], 0.75 * hx[-1]
    a = h[max(int(np.searchsorted(hx, q1, side="right")) - 1, 0)]
    b = h[min(int(np.searchsorted(hx, q3, side="left")), len(h) - 1)]
    if xf[b] <= xf[a]:
        a, b = h[0], h[-1]
    return float((yf[b] - yf[a]) / (xf[b] - xf[a]))


def estimate_tick_hz(
    host_s: Sequence[float] | np.ndarray,
    stamps: Sequence[int] | np.ndarray,
    bits: int = 32,
    min_span_s: float = MIN_SPAN_S,
) -> float | None:
    """Ticks per second of the target's clock, from frames' host arrival times
    (seconds, in arrival order) and their timestamps (``bits`` wide); None before
    ``min_span_s`` of arrivals or when the timestamps do not advance."""
    host = np.asarray(host_s, dtype=np.float64)
    if len(host) < 2 or float(host.max() - host.min()) < min_span_s:
        return None
    ticks = unwrap(stamps, bits)
    if ticks[-1] <= ticks[0]:
        return None
    slope = hull_slope(ticks, host)  # host seconds per tick
    if slope is None or slope <= 0:
        return None
    return 1.0 / slope


class TickRate:
    """The estimate from a live stream, one segment (target run) at a time: a target
    reset restarts its clock, and a new segment its own estimate. Not thread-safe by
    itself: fed by the link's reader thread, read whole (``estimate``) by others."""

    def __init__(self, bits: int = 32) -> None:
        self.bits = bits
        self._host: list[float] = []
        self._ticks: list[int] = []
        self._last_raw: int | None = None
        self._unwrapped = 0
        self.estimate_hz: float | None = None
        self.span_s = 0.0  # host time the current segment's samples cover

    def reset(self, bits: int | None = None) -> None:
        """A new segment (a target reset, a new connection)."""
        self.__init__(bits or self.bits)  # type: ignore[misc]

    @property
    def last_host(self) -> float | None:
        """The host time of the last arrival added."""
        return self._host[-1] if self._host else None

    def add(self, host_s: float, stamp: int) -> None:
        """The newest timestamp of frames that arrived at ``host_s``: of frames read
        together, the newest one waited least."""
        if self._last_raw is None:
            self._unwrapped = int(stamp)
        else:
            span = 1 << self.bits
            step = (int(stamp) - self._last_raw) % span
            if step >= span // 2:
                step -= span
            self._unwrapped += step
        self._last_raw = int(stamp)
        self._host.append(host_s)
        self._ticks.append(self._unwrapped)
        if len(self._host) >= MAX_SAMPLES:
            self._thin()

    def _thin(self) -> None:
        """Keep the hull of what came so far (the points an estimate can rest on)."""
        x = np.asarray(self._ticks, dtype=np.int64)
        y = np.asarray(self._host, dtype=np.float64)
        h = lower_hull((x - x.min()).astype(np.float64), y - y.min())
        # The first and last arrivals stay: they hold the span.
        keep = sorted({0, len(x) - 1, *h.tolist()})
        self._host = [self._host[i] for i in keep]
        self._ticks = [self._ticks[i] for i in keep]

    def update(self) -> float | None:
        """Compute the estimate from what came so far (the ticker's, a few times a
        second at most: it costs the samples kept)."""
        if len(self._host) >= 2:
            self.span_s = self._host[-1] - self._host[0]
            est = estimate_tick_hz(self._host, self._ticks, bits=64)
            if est is not None:
                self.estimate_hz = est
        return self.estimate_hz


def differs(estimate_hz: float | None, assumed_hz: float) -> bool:
    """The estimate and the assumed rate disagree by more than ``DIFFER_RATIO``."""
    if not estimate_hz or not assumed_hz:
        return False
    ratio = estimate_hz / assumed_hz
    return ratio > DIFFER_RATIO or ratio < 1 / DIFFER_RATIO
