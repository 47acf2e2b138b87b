"""Timing budgets: a TOML file of ``[[budget]]`` entries, each checked against a profile's
per-call distributions (distribution.py). ``mcuprof check`` and the live page give the
same verdicts because both call ``check``.

A verdict is ``holds``, ``broken`` or ``cannot tell``:

- A percentile limit (``p50_us``... ``p999_us``) is judged on the percentile's
  confidence interval [X_(l), X_(u)]: order statistics whose ranks l, u come from the
  binomial law of how many calls fall below the true percentile (distribution-free).
  Broken when the interval lies above the limit, holds when it lies at or below it;
  otherwise "cannot tell yet", with the calls needed to decide if the calls seen so far
  are typical.
- ``max_us`` is broken by any call over it; the first such call's time is named.
- ``period_us`` (with ``period_jitter_us``, else ``PERIOD_TOLERANCE`` of the period) is
  broken by any call whose interval from the call before is off the period by more.
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UserError
from . import buckets
from . import distribution as dist
from .samples import Counted, Sorted, samples

if TYPE_CHECKING:
    from .model import Profile, Window

LIMITS = ("p50_us", "p90_us", "p99_us", "p999_us", "max_us", "period_us")
KEYS = {"function", *LIMITS, "period_jitter_us"}
MAX_BUDGET_BYTES = 1 << 20  # a budgets file
MAX_BUDGETS = 1000  # [[budget]] entries in one file
MAX_PATTERN = 300  # characters of one function glob
MAX_MORE_CALLS = 10**12  # past this, "cannot tell" says "more than"


@dataclass(frozen=True)
class Budget:
    function: str  # a name or glob; with ';' a path (a QS step: object;state;signal)
    limits: dict[str, float]
    jitter_us: float | None = None
    index: int = 0  # its place in the file, from 1


def parse(text: bytes, where: str = "budgets") -> list[Budget]:
    """The budgets of a TOML file; a UserError naming the entry for anything wrong."""
    if len(text) > MAX_BUDGET_BYTES:
        raise UserError(f"{where}: {len(text):,} bytes, at most {MAX_BUDGET_BYTES:,}")
    try:
        doc = tomllib.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{where}: not a TOML file ({exc})") from None
    extra = set(doc) - {"budget"}
    entries = doc.get("budget")
    if extra or not isinstance(entries, list) or not entries:
        raise UserError(f"{where}: expected [[budget]] entries and nothing else")
    if len(entries) > MAX_BUDGETS:
        raise UserError(f"{where}: {len(entries):,} budgets, at most {MAX_BUDGETS:,}")
    return [_entry(e, i, where) for i, e in enumerate(entries, 1)]


def _entry(e: Any, i: int, where: str) -> Budget:
    at = f"{where}: budget {i}"
    if not isinstance(e, dict):
        raise UserError(f"{at}: not a table")
    unknown = sorted(set(e) - KEYS)
    if unknown:
        raise UserError(f"{at}: unknown key {unknown[0]!r} (keys: {', '.join(sorted(KEYS))})")
    fn = e.get("function")
    if not isinstance(fn, str) or not fn.strip() or len(fn) > MAX_PATTERN:
        raise UserError(f"{at}: 'function' must be a name or glob of 1 to {MAX_PATTERN} chars")
    limits = {k: _positive(e[k], f"{at}: {k}") for k in LIMITS if k in e}
    if not limits:
        raise UserError(f"{at}: no limit (give any of {', '.join(LIMITS)})")
    jitter = e.get("period_jitter_us")
    if jitter is not None:
        if "period_us" not in limits:
            raise UserError(f"{at}: period_jitter_us without period_us")
        jitter = _positive(jitter, f"{at}: period_jitter_us", zero=True)
    return Budget(fn, limits, jitter, i)


def _positive(v: Any, what: str, zero: bool = False) -> float:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    if not ok or v < 0 or (v == 0 and not zero):
        raise UserError(f"{what}: {v!r} is not a positive number of µs")
    return float(v)


# ------------------------------------------------------------------ order statistics


def ci_ranks(n: int, milli: int, confidence: float) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) with P(X_(l) <= the true percentile <= X_(u)) >= confidence
    for n calls, the percentile being milli/1000: B, the calls below the true percentile,
    is Binomial(n, q); l is the largest rank with P(B < l) <= a/2, u the smallest with
    P(B < u) >= 1 - a/2. None where no rank qualifies (the interval is open there)."""
    if n < 1:
        return None, None
    cdf, k0 = _binomial_cdf(n, milli / 1000)
    half = (1.0 - confidence) / 2
    # cdf[j] = P(B <= k0 + j); below k0, P(B <= k) < 1e-30 (the window spans 12 sd).
    low_ok = np.flatnonzero(cdf <= half)
    # l - 1: the largest k with P(B <= k) <= a/2 (k0 - 1 when the window starts above)
    lo = int(k0 + low_ok[-1]) + 1 if len(low_ok) else (k0 if k0 > 0 else None)
    # u - 1: the smallest k with P(B <= k) >= 1 - a/2
    high_ok = np.flatnonzero(cdf >= 1 - half)
    hi = int(k0 + high_ok[0]) + 1 if len(high_ok) else None
    return lo, (hi if hi is not None and hi <= n else None)


def _binomial_cdf(n: int, q: float) -> tuple[np.ndarray, int]:
    """P(B <= k) for k in a window [k0, k1] of Binomial(n, q) 12 sd either side of its
    mean (the mass outside is below 1e-30), and k0: log pmf at k0 by lgamma, then the
    ratio pmf(k + 1) / pmf(k) = (n - k) q / ((k + 1)(1 - q)), summed in logs."""
    sd = math.sqrt(n * q * (1 - q))
    width = int(12 * sd) + 30
    k0, k1 = max(0, int(n * q) - width), min(n, int(n * q) + width)
    lp0 = (
        math.lgamma(n + 1)
        - math.lgamma(k0 + 1)
        - math.lgamma(n - k0 + 1)
        + k0 * math.log(q)
        + (n - k0) * math.log1p(-q)
    )
    k = np.arange(k0, k1, dtype=np.float64)
    steps = np.log(n - k) - np.log(k + 1) + math.log(q / (1 - q))
    lp = lp0 + np.concatenate(([0.0], np.cumsum(steps)))
    return np.minimum(np.cumsum(np.exp(lp)), 1.0), k0


def decides(n: int, below: int, milli: int, confidence: float) -> str:
    """What n calls, ``below`` of them at or under the limit, say of the percentile:
    'broken' (X_(l) over the limit), 'holds' (X_(u) at or under it) or 'cannot tell'."""
    lo, hi = ci_ranks(n, milli, confidence)
    if lo is not None and lo > below:
        return "broken"
    if hi is not None and hi <= below:
        return "holds"
    return "cannot tell"


def more_calls(n: int, below: int, milli: int, confidence: float) -> int | None:
    """Calls to add, at the share seen so far at or under the limit, until the interval
    decides; None when more than MAX_MORE_CALLS would be needed."""
    share = below / n

    def ok(m: int) -> bool:
        return decides(m, math.floor(share * m + 1e-9), milli, confidence) != "cannot tell"

    hi = max(n, 1)
    while not ok(hi):
        hi *= 2
        if hi > MAX_MORE_CALLS:
            return None
    lo = hi // 2 if hi > n else n
    while lo + 1 < hi:  # ok(hi) holds, ok(lo) does not (or lo is n)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return max(hi - n, 1)


# ------------------------------------------------------------------ verdicts


@dataclass
class Verdict:
    budget: int  # its place in the file, from 1
    pattern: str
    function: str  # what it matched (a function, or a path)
    limit: str  # p99_us, max_us, period_us...
    limit_us: float
    state: str  # holds, broken, cannot tell
    calls: int
    figure_us: float | None  # the measured percentile, max or period
    low_us: float | None = None  # the percentile's interval
    high_us: float | None = None
    more_calls: int | None = None
    over: int = 0  # calls over a max or off a period
    first_over_us: float | None = None  # time of the first such call, from the start
    first_over_took_us: float | None = None  # that call's time (inclusive): its span
    jitter_us: float | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Groups:
    """What budgets are matched against: the functions, or the paths (QS steps)."""

    by: str
    names: dict[int, str]
    samples: dict[int, Sorted | Counted]


def matches(pattern: str, name: str, by: str) -> bool:
    """A function glob matches a name; a path glob (with ';') a path of as many parts."""
    if by == "path" and pattern.count(";") != name.count(";"):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def check(
    profile: Profile,
    budgets: list[Budget],
    confidence: float,
    window: Window = None,
    live: bool = False,
) -> list[Verdict]:
    """Every budget's verdicts, one per function (or path) it matches. A budget that
    matches nothing is a UserError, so a typo cannot pass; ``live`` (the page, while
    calls arrive) gives it a verdict "no calls yet" instead, and past EXACT_CALLS reads
    percentiles from the bucket counts and leaves the calls' times (and periods) to
    ``mcuprof check``, which sorts every call."""
    cache: dict[str, Groups] = {}
    out = []
    for b in budgets:
        by = "path" if ";" in b.function else "frame"
        if by not in cache:
            cache[by] = Groups(by, *samples(profile, window, by, live))
        gs = cache[by]
        hits = [g for g, name in gs.names.items() if matches(b.function, name, by)]
        if not hits and not live:
            raise UserError(f"budget {b.index}: {b.function!r} matches no function with calls")
        if not hits:
            for limit, value in b.limits.items():
                v = Verdict(b.index, b.function, "", limit, value, "no calls yet", 0, None)
                out.append(v)
        for g in sorted(hits, key=lambda g: gs.names[g]):
            for limit, value in b.limits.items():
                out.append(_verdict(profile, window, b, gs, g, limit, value, confidence))
    return out


def _verdict(
    profile: Profile,
    window: Window,
    b: Budget,
    gs: Groups,
    g: int,
    limit: str,
    value: float,
    confidence: float,
) -> Verdict:
    us = 1e6 / profile.timer_freq
    sample = gs.samples[g]
    n = sample.n
    v = Verdict(b.index, b.function, gs.names[g], limit, value, "holds", n, None)
    if not sample.exact:
        v.notes.append(f"from the histogram (within {100 * buckets.ERROR:.2f}%)")
    if limit == "period_us":
        if not sample.exact:
            v.state = "cannot tell"
            v.notes.append("a period needs every call: mcuprof check")
            return v
        return _period(profile, window, b, gs, g, v)
    if limit == "max_us":
        v.figure_us = sample.max * us
        if sample.max > value / us:
            v.state = "broken"
            v.over = n - sample.below(value / us)
            if sample.exact:
                d, e = _calls_of(profile, window, gs.by, g)
                over = np.flatnonzero(d > value / us)
                first = over[np.argmin(e[over])]
                v.first_over_us = float(e[first]) * us - profile.t0_us
                v.first_over_took_us = float(d[first]) * us
        return v
    milli = dist.PERCENTILES[limit.removesuffix("_us")]
    v.figure_us = sample.at(int(dist.rank(n, milli))) * us
    lo, hi = ci_ranks(n, milli, confidence)
    v.low_us = None if lo is None else sample.at(lo) * us
    v.high_us = None if hi is None else sample.at(hi) * us
    below = sample.below(value / us)
    v.state = decides(n, below, milli, confidence)
    if v.state == "cannot tell":
        v.more_calls = more_calls(n, below, milli, confidence)
    return v


def _calls_of(profile: Profile, window: Window, by: str, g: int) -> tuple[Any, Any]:
    return dist.calls_of(profile, g, window, by)


def _period(profile: Profile, window: Window, b: Budget, gs: Groups, g: int, v: Verdict) -> Verdict:
    us = 1e6 / profile.timer_freq
    d, e = _calls_of(profile, window, gs.by, g)
    order = np.argsort(e, kind="stable")
    d, e = d[order], e[order]
    if len(e) < 2:
        v.state = "cannot tell"
        v.notes.append("fewer than 2 calls: no interval")
        return v
    gaps = np.diff(e) * us
    v.figure_us = float(np.sort(gaps)[int(dist.rank(len(gaps), 500)) - 1])
    allowed = b.jitter_us if b.jitter_us is not None else dist.PERIOD_TOLERANCE * v.limit_us
    off = np.abs(gaps - v.limit_us) > allowed
    v.jitter_us = float(np.abs(gaps - v.figure_us).max())
    v.over = int(off.sum())
    if v.over:
        v.state = "broken"
        first = int(np.flatnonzero(off)[0]) + 1  # the call that came off the period
        v.first_over_us = float(e[first]) * us - profile.t0_us
        v.first_over_took_us = float(d[first]) * us
    return v
