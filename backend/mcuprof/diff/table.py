"""Per-function deltas between two profiles, normalised so captures of different length
compare: per-call means, shares of the profiled time, and call rates.

Functions are matched by label (demangled name, plus the file for statics), not by
address: addresses move between builds, names do not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, Protocol

from ..names import short_label
from ..profile.shares import profiled_us
from .stats import normal_intervals, welch_intervals

Metric = Literal["self", "total"]
Basis = Literal["mean", "share"]

# The compare gate's outlier rule (docs/limits.md): a call whose square is more than
# this share of its function's sum of squared call times is set aside, and the function
# compared again without it, when the function has more than OUTLIER_MIN_CALLS calls.
OUTLIER_SHARE = 0.5
OUTLIER_MIN_CALLS = 10


class StatLike(Protocol):
    """The fields of ``mcuprof.profile.FunctionStat`` this module reads."""

    name: str
    label: str
    calls: int
    self_us: float
    total_us: float


class Side(NamedTuple):
    """One function in one capture; ``profiled_us`` is the capture's summed self time
    (every µs spent in some recorded function), ``duration_us`` its wall-clock span.
    The spread per call: ``self_sq`` is the sum of squared self times, ``incl_sum`` and
    ``incl_sq`` the sum and the sum of squares of every call's inclusive time (``total_us``
    counts a recursive function's nested calls once, so it is not ``incl_sum``).
    ``self_max`` and ``incl_max`` are the largest self and inclusive time of one call
    (0: not known), for the gate's outlier rule (see ``outlier`` and ``trimmed``).
    (A NamedTuple: immutable, and made ten times faster than a frozen dataclass, which
    counts with thousands of functions.)"""

    calls: int
    self_us: float
    total_us: float
    profiled_us: float
    duration_us: float
    self_sq: float = 0.0
    incl_sum: float = 0.0
    incl_sq: float = 0.0
    self_max: float = 0.0
    incl_max: float = 0.0

    def mean(self, metric: Metric) -> float | None:
        if self.calls == 0:
            return None
        return (self.self_us if metric == "self" else self.total_us) / self.calls

    def share(self, metric: Metric) -> float | None:
        """Fraction of the capture's profiled time (0..1; total time of a recursive or
        nested function may exceed what its own self time suggests, never the capture)."""
        if self.profiled_us <= 0:
            return None
        return (self.self_us if metric == "self" else self.total_us) / self.profiled_us

    def calls_per_s(self) -> float | None:
        if self.duration_us <= 0:
            return None
        return self.calls * 1e6 / self.duration_us

    def value(self, metric: Metric, basis: Basis) -> float | None:
        return self.mean(metric) if basis == "mean" else self.share(metric)

    def variance(self, metric: Metric) -> float | None:
        """Sample variance of the time per call (µs²); None under two calls."""
        n = self.calls
        if n < 2:
            return None
        s, q = (self.self_us, self.self_sq) if metric == "self" else (self.incl_sum, self.incl_sq)
        return max(q - s * s / n, 0.0) / (n - 1)

    def outlier(self, metric: Metric) -> bool:
        """Does one call hold more than ``OUTLIER_SHARE`` of the sum of squared times per
        call, with enough calls left without it? Then that call alone sets the spread
        (a stall, a wrapped timer) and would hide a change in all the others."""
        top, sq = (
            (self.self_max, self.self_sq) if metric == "self" else (self.incl_max, self.incl_sq)
        )
        return self.calls > OUTLIER_MIN_CALLS and top * top > OUTLIER_SHARE * sq

    def trimmed(self) -> Side:
        """This side without its largest call (self and inclusive: each metric reads its
        own fields). The capture's length and profiled time stay as they are."""
        s, i = self.self_max, self.incl_max
        return self._replace(
            calls=self.calls - 1,
            self_us=max(self.self_us - s, 0.0),
            total_us=max(self.total_us - i, 0.0),
            self_sq=max(self.self_sq - s * s, 0.0),
            incl_sum=max(self.incl_sum - i, 0.0),
            incl_sq=max(self.incl_sq - i * i, 0.0),
            self_max=0.0,
            incl_max=0.0,
        )

    def share_se(self, metric: Metric) -> float | None:
        """Standard error of the share. Calls are taken as a Poisson process, so the
        count is noise too: a sum of a Poisson number of calls has the sum of their
        squares as its variance. The capture's profiled time is taken as exact."""
        if self.profiled_us <= 0:
            return None
        return math.sqrt(self.self_sq if metric == "self" else self.incl_sq) / self.profiled_us


def pct_change(base: float | None, new: float | None) -> float | None:
    """Percent change; None when it has no finite value (no base, or a zero base)."""
    if base is None or new is None:
        return None
    if base == 0:
        return 0.0 if new == 0 else None
    return (new - base) / base * 100.0


class FunctionDelta(NamedTuple):
    key: str  # the label both captures are matched on
    name: str
    base: Side | None  # None: the function does not appear in the base capture
    new: Side | None
    file: str | None = None  # shown next to the name: tells same-name statics apart

    @property
    def status(self) -> str:
        if self.base is None:
            return "added"
        if self.new is None:
            return "removed"
        return "both"

    def _pair(self, fn: str, *args: Any) -> tuple[float | None, float | None]:
        b = getattr(self.base, fn)(*args) if self.base is not None else None
        n = getattr(self.new, fn)(*args) if self.new is not None else None
        return b, n

    def raw(self, field: str) -> tuple[float, float]:
        b = getattr(self.base, field) if self.base is not None else 0
        n = getattr(self.new, field) if self.new is not None else 0
        return b, n

    def change(self, metric: Metric, basis: Basis) -> float | None:
        """% change of the normalised metric: what the CI gate compares to its threshold."""
        b = self.base.value(metric, basis) if self.base is not None else None
        n = self.new.value(metric, basis) if self.new is not None else None
        return pct_change(b, n)

    def interval(
        self, metric: Metric, basis: Basis, confidence: float, min_calls: int
    ) -> tuple[float, float] | None:
        """``confidence`` interval of the % change: Welch's t on the mean per call, or a
        normal interval on the share. None when either side has under ``min_calls``
        calls (nothing to tell noise from) or the base is zero."""
        return function_intervals([self], metric, basis, confidence, min_calls)[0]

    def growth_us(self, metric: Metric, basis: Basis) -> float | None:
        """The change in µs: per call (mean), or the share change expressed in µs of the
        new capture's profiled time (share). Used as a noise floor next to the %."""
        b, n = self._pair("value", metric, basis)
        if b is None or n is None:
            return None
        if basis == "mean":
            return n - b
        assert self.new is not None
        return (n - b) * self.new.profiled_us

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,  # what the captures are matched on (a static's file in it)
            "name": short_label(self.name),  # the display name, as every view's
            "signature": self.name,  # the full demangled name
            "file": self.file,
            "status": self.status,
        }
        for field, label in (("calls", "calls"), ("self_us", "self"), ("total_us", "total")):
            b, n = self.raw(field)
            out[label] = {"base": b, "new": n, "delta": n - b, "pct": _pct_present(self, b, n)}
        for metric in ("self", "total"):
            b, n = self._pair("mean", metric)
            out[f"{metric}_mean"] = _entry(b, n)
            b, n = self._pair("share", metric)
            entry = _entry(b, n)
            # Shares read best as percentages of the capture, deltas as points.
            for k in ("base", "new", "delta"):
                if entry[k] is not None:
                    entry[k] *= 100.0
            out[f"{metric}_share"] = entry
        b, n = self._pair("calls_per_s")
        out["calls_per_s"] = _entry(b, n)
        return out


def function_intervals(
    deltas: Sequence[FunctionDelta],
    metric: Metric,
    basis: Basis,
    confidence: float,
    min_calls: int,
) -> list[tuple[float, float] | None]:
    """``FunctionDelta.interval`` of each of ``deltas``, their t quantiles found together."""
    welch: list[tuple[float, float, int, float, float, int]] = []
    share: list[tuple[float, float]] = []
    plan: list[tuple[str, float] | None] = []  # per delta: which list, and its base value
    for d in deltas:
        b, n = d.base, d.new
        if b is None or n is None or min(b.calls, n.calls) < max(min_calls, 2):
            plan.append(None)
            continue
        vb, vn = b.value(metric, basis), n.value(metric, basis)
        if not vb or vn is None:
            plan.append(None)
            continue
        if basis == "mean":
            bv, nv = b.variance(metric) or 0.0, n.variance(metric) or 0.0
            welch.append((vb, bv, b.calls, vn, nv, n.calls))
            plan.append(("mean", vb))
        else:
            share.append(
                (vn - vb, math.hypot(b.share_se(metric) or 0.0, n.share_se(metric) or 0.0))
            )
            plan.append(("share", vb))
    found = {
        "mean": iter(welch_intervals(welch, confidence)),
        "share": iter(normal_intervals(share, confidence)),
    }
    out: list[tuple[float, float] | None] = []
    for step in plan:
        if step is None:
            out.append(None)
            continue
        lo, hi = next(found[step[0]])
        out.append((lo / step[1] * 100.0, hi / step[1] * 100.0))
    return out


def _pct_present(d: FunctionDelta, b: float, n: float) -> float | None:
    # An added or removed function has no meaningful % for raw values.
    return pct_change(b, n) if d.status == "both" else None


def _entry(b: float | None, n: float | None) -> dict[str, float | None]:
    delta = None if b is None or n is None else n - b
    return {"base": b, "new": n, "delta": delta, "pct": pct_change(b, n)}


# label -> (self_sq, incl_sum, incl_sq) or with (self_max, incl_max) too; see ``Side``
Spread = Mapping[str, tuple[float, ...]]


def function_deltas(
    base_stats: Iterable[StatLike],
    new_stats: Iterable[StatLike],
    base_span: tuple[float, float],
    new_span: tuple[float, float],
    base_spread: Spread | None = None,
    new_spread: Spread | None = None,
) -> list[FunctionDelta]:
    """Deltas for the union of functions. ``*_span`` is (profiled_us, duration_us); pass
    ``profiled_us=None``-free values (see ``capture_span``). ``*_spread`` maps a label to
    (self_sq, incl_sum, incl_sq[, self_max, incl_max]), see ``Side``; without it every
    call counts as equal."""
    base = {s.label: s for s in base_stats}
    new = {s.label: s for s in new_stats}
    bsp, nsp = base_spread or {}, new_spread or {}
    out: list[FunctionDelta] = []
    for key in sorted(base.keys() | new.keys()):
        b, n = base.get(key), new.get(key)
        out.append(
            FunctionDelta(
                key,
                (n or b).name,  # type: ignore[union-attr]
                None if b is None else _side(b, base_span, bsp.get(key)),
                None if n is None else _side(n, new_span, nsp.get(key)),
                getattr(n or b, "file", None),
            )
        )
    return out


def capture_span(stats: Iterable[StatLike], duration_us: float) -> tuple[float, float]:
    """(profiled_us, duration_us): the share denominator is the profiled time, as every
    view has it (profile/shares.py)."""
    return profiled_us(s.self_us for s in stats), float(duration_us)


def _side(s: StatLike, span: tuple[float, float], spread: tuple[float, ...] | None) -> Side:
    calls, self_us, total_us = int(s.calls), float(s.self_us), float(s.total_us)
    if spread is None:  # no spread known: every call took the mean
        incl = total_us
        spread = (self_us * self_us / max(calls, 1), incl, incl * incl / max(calls, 1))
    return Side(calls, self_us, total_us, span[0], span[1], *spread)
