"""The compare gate's three verdicts: regressed, unchanged or inconclusive, with the reason.

A function is judged over its calls outside the stretches with loss (``loss.py``: where
the device's counters say records were dropped). Loss can change a verdict in two ways,
and then the verdict is *inconclusive*:

- **coverage**: a function's coverage on a side is the share of its calls that lie
  outside every stretch with loss, counting among its calls its estimated dropped calls
  (in each stretch, as many as its own call rate outside the stretches puts there, less
  those that arrived, at most what the stretch dropped). Under ``COVERAGE_FLOOR`` on
  either side, what is left is not the function's behaviour, whatever it says: dropped
  records cluster where calls are densest, so they are not a random sample.
- **the worst case**: the function is judged again over the whole capture (every call
  received) plus its estimated dropped calls, each taken at the worst value for the
  verdict (its largest time on the side that would make it look better, its smallest on
  the other); where that verdict differs from the loss-free one, the loss could decide.

``--basis p50|p90|p99`` compares that percentile of the time per call. Its interval is
made of order statistics: each side's percentile has a distribution-free interval (the
ranks ``n q ± z sqrt(n q (1 - q))``) at the side level ``1 - (1 - c) / 2``, and the
change's interval runs from the new low less the base high to the new high less the base
low, so it holds with at least ``c``. No random numbers: the same captures give the same
verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .stats import t_quantile, welch_interval

if TYPE_CHECKING:
    from ..profile import Profile

# Under this share of its calls outside the stretches with loss (either side), a
# function's verdict is inconclusive (docs/limits.md).
COVERAGE_FLOOR = 0.8
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0}

REGRESSED, UNCHANGED, INCONCLUSIVE = "regressed", "unchanged", "inconclusive"


def percentile(values: np.ndarray, q: float) -> float:
    """The ``q``th percentile of the time per call (numpy's linear interpolation between
    order statistics). One place, so it can take the profile's shared definition."""
    return float(np.percentile(values, q))


class Calls(NamedTuple):
    """One function's calls on one side, in µs on the profile's time line."""

    entry: np.ndarray
    exit: np.ndarray
    self_us: np.ndarray
    incl_us: np.ndarray

    def times(self, metric: str) -> np.ndarray:
        return self.self_us if metric == "self" else self.incl_us

    def take(self, mask: np.ndarray) -> Calls:
        return Calls(*(a[mask] for a in self))


def per_call(profile: Profile) -> dict[str, Calls]:
    """Every call's times, grouped by function label (as the comparison matches them)."""
    from ..profile.aggregate import call_times

    labels = {int(s.frame): s.label for s in profile.function_stats()}
    parts: list[tuple[np.ndarray, ...]] = []
    for d, lv in profile.levels.items():
        incl, excl = call_times(profile, d, 0, lv.n)
        entry = profile.us(lv.entry.astype(np.float64))
        fid = np.asarray(profile.frame_ids(lv))
        parts.append((fid, entry, entry + profile.us(incl), profile.us(excl), profile.us(incl)))
    if not parts:
        return {}
    fid, *cols = (np.concatenate(c) for c in zip(*parts, strict=True))
    order = np.argsort(fid, kind="stable")
    cuts = np.flatnonzero(np.diff(fid[order])) + 1
    out: dict[str, Calls] = {}
    for group in np.split(order, cuts):
        label = labels.get(int(fid[group[0]]))
        if label is not None and len(group):
            out[label] = Calls(*(c[group] for c in cols))
    return out


@dataclass
class GateSide:
    """One capture as the gate sees it: its calls and its stretches with loss."""

    calls: dict[str, Calls]
    loss: dict[str, Any] | None = None  # loss.py's figures; None: not known
    starts: np.ndarray = field(default_factory=lambda: np.empty(0))
    ends: np.ndarray = field(default_factory=lambda: np.empty(0))
    dropped: np.ndarray = field(default_factory=lambda: np.empty(0))

    def __post_init__(self) -> None:
        rows = sorted((self.loss or {}).get("stretches") or [])
        if rows:
            arr = np.array(rows, np.float64)
            self.starts, self.ends, self.dropped = arr[:, 0], arr[:, 1], arr[:, 2]

    @property
    def lossy(self) -> bool:
        return bool(len(self.starts)) or bool((self.loss or {}).get("lost"))

    def where(self, c: Calls) -> np.ndarray:
        """Per call, the stretch with loss it overlaps (-1: none). Stretches are sorted and
        apart, so the last one starting before a call's exit is the only candidate."""
        if not len(self.starts):
            return np.full(len(c.entry), -1)
        idx = np.searchsorted(self.starts, c.exit, side="right") - 1
        hit = (idx >= 0) & (self.ends[np.maximum(idx, 0)] >= c.entry)
        return np.where(hit, idx, -1)

    def split(self, c: Calls) -> tuple[np.ndarray, float, float]:
        """(loss-free mask, estimated dropped calls, coverage) of one function's calls.
        Its dropped calls in a stretch: as many as its own call rate outside the stretches
        puts there, less those that arrived, at most the stretch's dropped records."""
        idx = self.where(c)
        free = idx < 0
        k = len(self.starts)
        got = np.bincount(idx[~free], minlength=k) if k else np.zeros(0)
        lo, hi = float(c.entry.min()), float(c.exit.max())
        inside = np.clip(np.minimum(self.ends, hi) - np.maximum(self.starts, lo), 0.0, None)
        clear = (hi - lo) - float(inside.sum())
        rate = float(free.sum()) / clear if clear > 0 else 0.0
        est = float(np.minimum(np.clip(rate * inside - got, 0.0, None), self.dropped).sum())
        total = len(c.entry) + est
        return free, est, (float(free.sum()) / total if total else 1.0)


# ------------------------------------------------------------------ judging one function


class Judged(NamedTuple):
    """One function's change: its kind ('regressed', 'improved', 'noise', 'few', 'same'),
    the % change, the change in µs, and the interval of the % change."""

    kind: str
    change_pct: float | None
    growth_us: float | None
    ci_pct: tuple[float, float] | None
    base_value: float | None = None
    new_value: float | None = None


@dataclass(frozen=True)
class Rule:
    """The gate's settings, as ``compare`` takes them."""

    basis: str
    threshold: float
    min_delta_us: float
    confidence: float  # per function (Bonferroni already applied)
    min_calls: int

    @property
    def q(self) -> float | None:
        return PERCENTILES.get(self.basis)


def _order_interval(sorted_values: np.ndarray, q: float, conf: float) -> tuple[float, float] | None:
    """A distribution-free ``conf`` interval of the ``q``th percentile: the order
    statistics at ranks n p ± z sqrt(n p (1 - p)); None when those ranks fall outside
    the calls (too few calls for that percentile at that confidence)."""
    n, p = len(sorted_values), q / 100.0
    z = t_quantile(0.5 + conf / 2.0, math.inf)
    half = z * math.sqrt(n * p * (1.0 - p))
    lo, hi = math.floor(n * p - half) - 1, math.ceil(n * p + half)
    if lo < 0 or hi > n - 1:
        return None
    return float(sorted_values[lo]), float(sorted_values[hi])


def _value(values: np.ndarray, rule: Rule) -> float | None:
    if not len(values):
        return None
    return percentile(values, rule.q) if rule.q is not None else float(values.mean())


def _interval(b: np.ndarray, n: np.ndarray, rule: Rule) -> tuple[float, float] | None:
    """The interval of new - base in µs, or None (too few calls)."""
    if min(len(b), len(n)) < max(rule.min_calls, 2):
        return None
    if rule.q is None:
        return welch_interval(
            float(b.mean()), float(b.var(ddof=1)), len(b),
            float(n.mean()), float(n.var(ddof=1)), len(n), rule.confidence,
        )  # fmt: skip
    side = 1.0 - (1.0 - rule.confidence) / 2.0
    ib, i_n = _order_interval(np.sort(b), rule.q, side), _order_interval(np.sort(n), rule.q, side)
    if ib is None or i_n is None:
        return None
    return i_n[0] - ib[1], i_n[1] - ib[0]


def judge(b: np.ndarray, n: np.ndarray, rule: Rule) -> Judged:
    """One function's times per call on each side judged as ``compare`` judges a
    function: past the threshold, past the noise floor, and its interval clear of 0."""
    vb, vn = _value(b, rule), _value(n, rule)
    if vb is None or vn is None:
        return Judged("few", None, None, None, vb, vn)
    change = (vn - vb) / vb * 100.0 if vb else (0.0 if vn == vb else None)
    growth = vn - vb
    ci = _interval(b, n, rule)
    ci_pct = None if ci is None or not vb else (ci[0] / vb * 100.0, ci[1] / vb * 100.0)
    kind = "same"
    for sign, name in ((1, "regressed"), (-1, "improved")):
        if change is None or sign * change <= rule.threshold or abs(growth) < rule.min_delta_us:
            continue
        if rule.confidence <= 0:
            kind = name
        elif ci_pct is None:
            kind = "few"
        else:
            kind = name if sign * (ci_pct[0] if sign > 0 else ci_pct[1]) > 0 else "noise"
    return Judged(kind, change, growth, ci_pct, vb, vn)


def _worst(values: np.ndarray, extra: float, high: bool) -> np.ndarray:
    """``values`` with ``extra`` (rounded up) more calls at their largest (or smallest)."""
    k = math.ceil(extra - 1e-9)
    if k <= 0 or not len(values):
        return values
    return np.concatenate([values, np.full(k, values.max() if high else values.min())])


def loss_verdict(
    first: str,
    key: str,
    base: GateSide,
    new: GateSide,
    metric: str,
    rule: Rule,
) -> tuple[str, str, float, dict[str, float]]:
    """(verdict, reason, coverage, coverage per side) of a function whose loss-free
    judgement was ``first`` (a ``Judged.kind``)."""
    b_calls, n_calls = base.calls.get(key), new.calls.get(key)
    sides = {"base": 1.0, "new": 1.0}
    est = {"base": 0.0, "new": 0.0}
    for name, side, calls in (("base", base, b_calls), ("new", new, n_calls)):
        if calls is not None and side.lossy:
            _, est[name], sides[name] = side.split(calls)
    coverage = min(sides.values())
    plain = plain_verdict(first)
    if not (base.lossy or new.lossy) or b_calls is None or n_calls is None:
        return plain[0], plain[1], coverage, sides
    if coverage < COVERAGE_FLOOR:
        low = min(sides, key=lambda s: sides[s])
        return (
            INCONCLUSIVE,
            f"coverage {coverage:.0%} in {low.upper()}, under the {COVERAGE_FLOOR:.0%} floor: "
            "most of its calls fall where records were dropped",
            coverage,
            sides,
        )
    if rule.basis == "share":  # a share has no per-call worst case: coverage alone
        return plain[0], plain[1] + f"; coverage {coverage:.0%}", coverage, sides
    # The whole capture with the worst case for what was dropped, against the verdict.
    regressed = plain[0] == REGRESSED
    b_all = _worst(b_calls.times(metric), est["base"], high=regressed)
    n_all = _worst(n_calls.times(metric), est["new"], high=not regressed)
    worst = judge(b_all, n_all, rule)
    if (worst.kind == "regressed") != regressed:
        change = "-" if worst.change_pct is None else f"{worst.change_pct:+.1f}%"
        return (
            INCONCLUSIVE,
            f"{plain[1]} without the stretches with loss, but {worst.kind} ({change}) over the "
            f"whole capture with the dropped calls at their worst "
            f"(~{est['base']:.0f} BASE, ~{est['new']:.0f} NEW)",
            coverage,
            sides,
        )
    return plain[0], plain[1] + f"; coverage {coverage:.0%}", coverage, sides


_PLAIN = {
    "regressed": (REGRESSED, "grew past the threshold, its interval clear of 0"),
    "improved": (UNCHANGED, "shrank past the threshold"),
    "noise": (UNCHANGED, "changed past the threshold, but its interval includes 0"),
    "few": (INCONCLUSIVE, "too few calls to tell"),
    "same": (UNCHANGED, "within the threshold"),
}


def plain_verdict(kind: str) -> tuple[str, str]:
    """The verdict and reason of a judgement that loss did not touch."""
    return _PLAIN[kind]
