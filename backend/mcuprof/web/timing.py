"""The page's timing distributions: one function's histogram, percentiles, period and
jitter (profile/distribution.py's definitions), and the calls of one histogram bucket.
Callers hold the live session's profile lock."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserError
from ..profile import Profile, buckets
from ..profile import distribution as dist

Window = tuple[float, float] | None
BROKE_SHOWN = 100  # times of calls that broke the period, in one answer
BUCKET_CALLS = 100  # calls of one bucket, in one answer


def _calls(profile: Profile, window: Window, fid: int) -> tuple[np.ndarray, np.ndarray]:
    """The function's calls in the window: durations (ticks) and entry ticks."""
    if not profile.n_records or not 0 <= fid < len(profile.frames):
        raise UserError("that function has no calls in this window")
    d, e = dist.calls_of(profile, fid, window)
    if len(d) == 0:
        raise UserError("that function has no calls in this window")
    return d, e


def distribution(profile: Profile, window: Window, fid: int) -> dict[str, Any]:
    """The function's distribution: every non-empty bucket (its bounds and middle in µs,
    its index for ``bucket_calls``), the percentiles, max, std, and its period."""
    d, e = _calls(profile, window, fid)
    d = np.sort(d)
    us = 1e6 / profile.timer_freq
    s = dist.summaries(profile, window)[fid]  # the Functions row's figures
    k, counts = dist.histogram(d)
    lo, hi = buckets.bounds(k)
    per = dist.period(e)
    period = None
    if per is not None:
        period = {
            "period_us": per.period * us,
            "jitter_us": per.jitter * us,
            "intervals": per.intervals,
            "broke": len(per.broke),
            "broke_at_us": (per.broke[:BROKE_SHOWN] * us).tolist(),
        }
    return {
        "fid": fid,
        "name": profile.frames[fid].name,
        "window": window,
        "calls": s.calls,
        "p50_us": s.p50_us,
        "p90_us": s.p90_us,
        "p99_us": s.p99_us,
        "p999_us": s.p999_us,
        "max_us": s.max_us,
        "min_us": float(d[0]) * us,
        "std_us": dist.spread(d) * us,
        "bucket_error_pct": buckets.ERROR * 100,
        "buckets": {
            "k": k.tolist(),
            "lo_us": (lo * us).tolist(),
            "hi_us": (hi * us).tolist(),
            "mid_us": (buckets.middle(k) * us).tolist(),
            "count": counts.tolist(),
        },
        "period": period,
    }


def bucket_calls(profile: Profile, window: Window, fid: int, k: int) -> dict[str, Any]:
    """The calls of the function whose duration falls in bucket k: how many, and the
    first ``BUCKET_CALLS`` as [start, end] µs on the timeline's clock, in time order."""
    d, e = _calls(profile, window, fid)
    hit = buckets.bucket(d) == k
    order = np.argsort(e[hit], kind="stable")[:BUCKET_CALLS]
    start = profile.us(e[hit][order].astype(np.float64))
    end = start + d[hit][order] * (1e6 / profile.timer_freq)
    return {
        "fid": fid,
        "k": k,
        "count": int(hit.sum()),
        "calls": np.column_stack([start, end]).tolist(),
    }


def budget_verdicts(
    profile: Profile, budgets: tuple[Any, ...], file: str | None, window: Window
) -> dict[str, Any]:
    """The live budgets' verdicts (profile/budget.py's, as ``mcuprof check`` gives them,
    at 95%): a budget that matches no function yet reads "no calls yet". A broken one
    whose first call over is known has ``first_over_span_us``: that call's [start, end]
    on the timeline's clock, for the page's link to it."""
    if not budgets:
        return {"file": None, "verdicts": [], "broken": 0}
    from ..profile.budget import check

    verdicts = check(profile, list(budgets), 0.95, window, live=True) if profile.n_records else []
    rows = [v.to_dict() for v in verdicts]
    for row in rows:
        at, took = row["first_over_us"], row["first_over_took_us"]
        start = None if at is None else at + profile.t0_us
        row["first_over_span_us"] = None if start is None else [start, start + (took or 0.0)]
    return {"file": file, "verdicts": rows, "broken": sum(v.state == "broken" for v in verdicts)}
