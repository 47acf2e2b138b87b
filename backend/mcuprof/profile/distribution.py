"""Per-call timing distributions: the one definition of every percentile, spread,
histogram and call period that a view, an export or ``mcuprof check`` shows.

The durations are the calls' inclusive ticks, the ones ``mean_us`` averages
(``aggregate.depth_calls``): every call of a function, at any depth, recursion included;
in a window, the calls that overlap it, each with its time inside the window.

- **Percentiles** are order statistics, the nearest rank (numpy's ``inverted_cdf``):
  the q-th percentile of n calls is the k-th smallest duration, k = ceil(q n), at least 1.
  Ranks are integers, so a budget's confidence interval (``budget.py``) uses the same
  order statistics.
- **Standard deviation**: of the per-call durations, n in the denominator (numpy's std).
- **Histogram**: buckets.py's HDR-style log buckets (a duration's float32 exponent and
  top 6 mantissa bits): a bucket's middle is within 0.78% of every duration in it.
- **Live**: past ``EXACT_CALLS`` calls the web reads a function's percentiles from the
  buckets the profile counts as records arrive (the middle of the rank's bucket, within
  0.78%) instead of sorting every call; the CLI (``check``, ``export``) always sorts.
- **Period**: the entry-to-entry interval of a function's calls, in entry order. The period
  is the intervals' median (nearest rank); a call *breaks the period* when its interval
  from the call before differs from the period by more than ``PERIOD_TOLERANCE`` of it (a
  missed or doubled call); the **jitter** is the largest difference from the period among
  the calls that keep it. A function is periodic when at least ``PERIODIC_SHARE`` of its
  intervals keep the period; otherwise it has no period.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import buckets
from .aggregate import _clip, _slice, stack_names, stacks, sums, window_ticks

if TYPE_CHECKING:
    from .model import Profile, Window

# Percentiles in parts per thousand: integer ranks, no float rounding at ceil(q n).
PERCENTILES = {"p50": 500, "p90": 900, "p99": 990, "p999": 999}
EXACT_CALLS = 2_000_000  # calls the web sorts for one answer; past it, the live buckets
PERIOD_TOLERANCE = 0.5  # an interval off the period by more than half of it breaks it
PERIODIC_SHARE = 0.9  # share of intervals that keep the period for a function to have one


def rank(n: int | np.ndarray, milli: int) -> int | np.ndarray:
    """The 1-based rank of the ``milli``/1000 percentile among n values: ceil(q n), at
    least 1 (numpy's ``inverted_cdf``)."""
    return np.maximum((np.asarray(n, np.int64) * milli + 999) // 1000, 1)


@dataclass
class Grouped:
    """Per-call durations (ticks: uint32 for a whole capture, float64 cut to a window)
    sorted by group, then by duration.
    ``group[i]``'s calls are ``dur[start[i]:start[i + 1]]``."""

    group: np.ndarray  # group ids present, ascending (int64)
    start: np.ndarray  # offsets into dur, len(group) + 1
    dur: np.ndarray

    def of(self, g: int) -> np.ndarray:
        """Group g's durations, ascending (empty when it has no calls)."""
        i = int(np.searchsorted(self.group, g))
        if i == len(self.group) or self.group[i] != g:
            return np.empty(0)
        return self.dur[self.start[i] : self.start[i + 1]].astype(np.float64)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.start)


@dataclass(frozen=True)
class Summary:
    """One group's distribution, in µs."""

    calls: int
    p50_us: float
    p90_us: float
    p99_us: float
    p999_us: float
    max_us: float


def calls(
    profile: Profile, window: Window = None, by: str = "frame", entries: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every call's group (its frame, or with ``by="path"`` its folded path: a QS step's
    object;state;signal), inclusive ticks and entry tick: the calls ``mean_us`` counts.
    A whole capture's ticks stay as the levels hold them (uint32); a window's are cut to
    it (float64). Without ``entries`` the third array is empty."""
    win = window_ticks(profile, window)
    path_of = stack_names(profile).ids if by == "path" else None
    st = stacks(profile) if by == "path" else None
    groups, durs, starts = [], [], []
    for d in sorted(profile.levels):
        lv = profile.levels[d]
        lo, hi = (0, lv.n) if win is None else _slice(lv, win)
        if st is not None and path_of is not None:
            g = path_of[st.per_level[d][lo:hi]]
        else:
            g = profile.frame_ids(lv, lo, hi)
        dur = lv.dur[lo:hi] if win is None else _clip(lv, lo, hi, win)
        entry = lv.entry[lo:hi] if entries or win is not None else None
        if win is not None:  # the calls aggregate.depth_calls keeps
            e = lv.entry[lo:hi].astype(np.float64)
            m = (e <= win[1]) & (e + lv.dur[lo:hi] >= win[0])
            g, dur, entry = g[m], dur[m], entry[m] if entries else None
        groups.append(g)
        durs.append(dur)
        if entries:
            starts.append(entry)
    if not groups:
        return np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64)
    e_all = np.concatenate(starts) if entries else np.empty(0, np.int64)
    return np.concatenate(groups).astype(np.int64), np.concatenate(durs), e_all


def grouped(profile: Profile, window: Window = None, by: str = "frame") -> Grouped:
    """The calls' durations sorted by group then duration, cached until the profile
    changes."""

    def build() -> Grouped:
        g, dur, _ = calls(profile, window, by, entries=False)
        return group_sorted(g, dur)

    key = ("distribution", by, None if window is None else tuple(map(float, window)))
    return profile.cached(key, build)


def group_sorted(g: np.ndarray, dur: np.ndarray) -> Grouped:
    """Sort (group, duration) pairs, the durations in their own dtype. Whole ticks (a
    whole capture's uint32) sort as one int64 key, group above duration, whose low words
    are then the sorted durations (a view, no copy); a window's cut ticks by lexsort."""
    if len(dur) == 0:
        return Grouped(np.empty(0, np.int64), np.zeros(1, np.int64), np.empty(0))
    if dur.dtype == np.uint32 and int(g.min()) >= 0 and int(g.max()) < 2**31:
        key = g.astype(np.int64) << 32
        key |= dur
        key.sort()
        low = key.view(np.uint32)[0::2] if sys.byteorder == "little" else key & 0xFFFFFFFF
        counts = np.bincount(g)
        present = np.flatnonzero(counts)
        start = np.concatenate(([0], np.cumsum(counts[present]))).astype(np.int64)
        return Grouped(present.astype(np.int64), start, low)
    order = np.lexsort((dur, g))
    sg, sd = g[order], dur[order]
    cut = np.flatnonzero(sg[1:] != sg[:-1]) + 1
    start = np.concatenate(([0], cut, [len(sg)])).astype(np.int64)
    return Grouped(sg[start[:-1]], start, sd)


def percentiles(gr: Grouped, milli: int) -> np.ndarray:
    """Each group's ``milli``/1000 percentile (ticks): its rank's duration."""
    return gr.dur[gr.start[:-1] + rank(gr.counts, milli) - 1].astype(np.float64)


def spread(durations: np.ndarray) -> float:
    """The standard deviation of one group's durations (ticks, n in the denominator, as
    numpy's std), asked for where it is shown (the distribution panel)."""
    return float(np.std(np.asarray(durations, np.float64)))


def summaries(
    profile: Profile, window: Window = None, by: str = "frame", exact: bool = False
) -> dict[int, Summary]:
    """Group id -> its percentiles and max in µs (what the CSV and Functions show; the
    standard deviation is ``spread``'s, asked for where it is shown). Sorted exactly
    unless the window holds over EXACT_CALLS calls and ``exact`` is not asked for: then
    from the buckets (``from_buckets``)."""

    def build() -> dict[int, Summary]:
        if by == "frame" and not exact and _n_calls(profile, window) > EXACT_CALLS:
            return from_buckets(profile, window)
        gr = grouped(profile, window, by)
        us = 1e6 / profile.timer_freq
        cols = [percentiles(gr, m) * us for m in PERCENTILES.values()]
        top = gr.dur[gr.start[1:] - 1] * us if len(gr.group) else np.empty(0)  # the max
        rows = zip(gr.group.tolist(), gr.counts.tolist(), *(c.tolist() for c in cols),
                   top.tolist(), strict=True)  # fmt: skip
        return {g: Summary(*rest) for g, *rest in rows}

    return profile.cached(summaries_key(profile, window, by, exact), build)


def summaries_key(
    profile: Profile, window: Window = None, by: str = "frame", exact: bool = False
) -> tuple[object, ...]:
    """What ``summaries`` is cached under: one answer per key (a kept aggregate,
    stored.py, is found under it too)."""
    return ("summaries", by, exact or _n_calls(profile, window) <= EXACT_CALLS, _key(window))


def _key(window: Window) -> tuple[float, float] | None:
    return None if window is None else (float(window[0]), float(window[1]))


def _n_calls(profile: Profile, window: Window) -> int:
    return profile.n_records if window is None else int(sums(profile, window).f_calls.sum())


def from_buckets(profile: Profile, window: Window = None) -> dict[int, Summary]:
    """Each function's percentiles read from bucket counts (a rank's bucket middle,
    within buckets.ERROR), its max exact (the sums'): the whole capture's counts as the
    profile keeps them, a window's counted from its calls."""
    if window is None:
        counts = profile.buckets
    else:
        counts = buckets.Counts()
        win = window_ticks(profile, window)
        for lv in profile.levels.values():
            lo, hi = _slice(lv, win)
            e = lv.entry[lo:hi].astype(np.float64)
            m = (e <= win[1]) & (e + lv.dur[lo:hi] >= win[0])
            counts.add(lv.addr[lo:hi][m], _clip(lv, lo, hi, win)[m])
    g, k, c = counts.grouped(profile.frame_of)
    us = 1e6 / profile.timer_freq
    cum = np.cumsum(c)
    ends = np.flatnonzero(np.r_[g[1:] != g[:-1], True])
    base = np.r_[0, cum[ends[:-1]]]
    n = cum[ends] - base
    cols = []
    for milli in PERCENTILES.values():
        at = np.searchsorted(cum, base + rank(n, milli), side="left")
        cols.append(buckets.middle(k[at]) * us)
    top = sums(profile, window).f_max * us
    rows = zip(g[ends].tolist(), n.tolist(), *(x.tolist() for x in cols), strict=True)
    return {f: Summary(calls, *ps, float(top[f])) for f, calls, *ps in rows}


def histogram(sorted_ticks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-empty buckets (buckets.py) of ascending durations, and their counts."""
    k = buckets.bucket(sorted_ticks)
    if len(k) == 0:
        return k, np.empty(0, np.int64)
    cut = np.flatnonzero(k[1:] != k[:-1]) + 1
    start = np.concatenate(([0], cut))
    return k[start], np.diff(np.concatenate((start, [len(k)])))


@dataclass(frozen=True)
class Period:
    """A periodic function's call period (ticks) and which calls broke it."""

    period: float  # the intervals' median
    jitter: float  # largest difference from the period among the calls that keep it
    broke: np.ndarray  # entry ticks of the calls whose interval broke the period
    intervals: int


def period(entries: np.ndarray) -> Period | None:
    """The period of calls entered at ``entries`` (any order); None when they are not
    periodic (fewer than 3 calls, or under PERIODIC_SHARE of intervals keep it)."""
    e = np.sort(np.asarray(entries, np.int64))
    if len(e) < 3:
        return None
    gaps = np.diff(e).astype(np.float64)
    p = float(np.sort(gaps)[int(rank(len(gaps), 500)) - 1])
    if p <= 0:
        return None
    off = np.abs(gaps - p)
    keep = off <= PERIOD_TOLERANCE * p
    if keep.mean() < PERIODIC_SHARE:
        return None
    return Period(p, float(off[keep].max()), e[1:][~keep], len(gaps))


def calls_of(
    profile: Profile, g: int, window: Window = None, by: str = "frame"
) -> tuple[np.ndarray, np.ndarray]:
    """Group g's calls (those ``calls`` counts): durations (ticks, float64) and entry
    ticks, in level order; gathered a level at a time, never the whole table."""
    win = window_ticks(profile, window)
    path_of = stack_names(profile).ids if by == "path" else None
    st = stacks(profile) if by == "path" else None
    durs, entries = [], []
    for d in sorted(profile.levels):
        lv = profile.levels[d]
        lo, hi = (0, lv.n) if win is None else _slice(lv, win)
        if st is not None and path_of is not None:
            m = path_of[st.per_level[d][lo:hi]] == g
        else:
            m = profile.frame_ids(lv, lo, hi) == g
        if win is not None:
            e = lv.entry[lo:hi].astype(np.float64)
            m &= (e <= win[1]) & (e + lv.dur[lo:hi] >= win[0])
        if m.any():
            durs.append(_clip(lv, lo, hi, win)[m])
            entries.append(lv.entry[lo:hi][m])
    if not durs:
        return np.empty(0), np.empty(0, np.int64)
    return np.concatenate(durs), np.concatenate(entries)


def entries_of(profile: Profile, g: int, window: Window = None, by: str = "frame") -> np.ndarray:
    """Entry ticks of group g's calls (those ``calls`` counts), ascending."""
    return np.sort(calls_of(profile, g, window, by)[1])
