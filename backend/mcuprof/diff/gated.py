"""``compare``'s report with each function's verdict (regressed, unchanged, inconclusive),
its reason and its coverage (diff/gate.py); shared with the page's Compare tab. Without
loss and with ``--basis mean`` or ``share`` it is ``build_report``'s, keys added."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import UserError
from ..names import short_label
from . import FunctionDelta, ProfileDiff
from .gate import (
    COVERAGE_FLOOR,
    INCONCLUSIVE,
    PERCENTILES,
    REGRESSED,
    Calls,
    GateSide,
    Judged,
    Rule,
    judge,
    loss_verdict,
    plain_verdict,
)
from .profiles import diff_reduced
from .reduce import FunctionTotals, Reduced
from .report import _matches, build_report

_LISTS = (
    ("regressions", "regressed"),
    ("improvements", "improved"),
    ("within_noise", "noise"),
    ("too_few_calls", "few"),
)


def gated_report(
    diff: ProfileDiff,
    base: GateSide | None,
    new: GateSide | None,
    *,
    reduced: tuple[Reduced, Reduced] | None = None,
    threshold: float,
    metric: str,
    basis: str,
    globs: list[str] | None,
    min_delta_us: float,
    confidence: float = 0.95,
    min_calls: int = 2,
) -> dict[str, Any]:
    """The report of ``build_report`` (or its percentile twin), judged over the calls
    outside the stretches with loss, each compared function with its verdict."""
    lossy = base is not None and new is not None and (base.lossy or new.lossy)
    used = diff
    if lossy and reduced is not None and basis in ("mean", "share"):
        assert base is not None and new is not None
        used = diff_reduced(_free(reduced[0], base), _free(reduced[1], new))
    opts = {"threshold": threshold, "metric": metric, "globs": globs}
    opts |= {"min_delta_us": min_delta_us, "confidence": confidence, "min_calls": min_calls}
    if basis in PERCENTILES:
        if base is None or new is None:
            raise UserError(f"--basis {basis} needs every call's time")
        report = percentile_report(used, base, new, basis=basis, **opts)
    else:
        report = build_report(used, basis=basis, **opts)
    _add_verdicts(report, used, diff, base, new, lossy, metric, basis, opts)
    return report


def _free(capture: Reduced, side: GateSide) -> Reduced:
    """``capture`` as its calls outside the stretches with loss sum up."""
    stats, spread = [], {}
    for s in capture.stats:
        c = side.calls.get(s.label)
        if c is None:
            continue
        f = c.take(side.split(c)[0])
        if not len(f.entry):
            continue
        calls, own, incl = len(f.entry), float(f.self_us.sum()), float(f.incl_us.sum())
        stats.append(FunctionTotals(s.name, s.label, calls, own, incl, incl / calls, s.file))
        spread[s.label] = (
            float(np.square(f.self_us).sum()),
            incl,
            float(np.square(f.incl_us).sum()),
            float(f.self_us.max()),
            float(f.incl_us.max()),
        )
    return Reduced(capture.n_records, capture.duration_us, stats, spread, capture.folded)


def _free_times(side: GateSide, key: str, metric: str) -> np.ndarray:
    c = side.calls.get(key)
    if c is None:
        return np.empty(0)
    return c.times(metric)[side.split(c)[0]] if side.lossy else c.times(metric)


def _row(d: FunctionDelta, j: Any, q: float) -> dict[str, Any]:
    """A judged function's row: its delta, and the change in its ``q``th percentile."""
    out = d.as_dict()
    out["change_pct"] = j.change_pct
    out["growth_us"] = j.growth_us
    out["ci_pct"] = list(j.ci_pct) if j.ci_pct is not None else None
    out["outlier"] = None
    out["percentile"] = {"q": q, "base": j.base_value, "new": j.new_value}
    return out


def percentile_report(
    diff: ProfileDiff,
    base: GateSide,
    new: GateSide,
    *,
    basis: str,
    threshold: float,
    metric: str,
    globs: list[str] | None,
    min_delta_us: float,
    confidence: float,
    min_calls: int,
) -> dict[str, Any]:
    """``build_report``'s shape for ``--basis p50|p90|p99``: the change in that
    percentile of the time per call, with an order-statistics interval (diff/gate.py)."""
    selected = [d for d in diff.functions if _matches(d, globs)]
    if globs and not selected:
        raise UserError(f"--function {' '.join(globs)}: matches no function in either capture")
    both = [d for d in selected if d.status == "both"]
    times = {
        d.key: (_free_times(base, d.key, metric), _free_times(new, d.key, metric)) for d in both
    }
    floor = max(min_calls, 2)
    tested = [k for k, (b, n) in times.items() if min(len(b), len(n)) >= floor]
    per_function = 1.0 - (1.0 - confidence) / max(len(tested), 1) if confidence > 0 else 0.0
    rule = Rule(basis, threshold, min_delta_us, per_function, min_calls)
    judged = {k: judge(b, n, rule) for k, (b, n) in times.items()}

    lists = {name: [d for d in both if judged[d.key].kind == kind] for name, kind in _LISTS}
    for name, group in lists.items():
        sign = 1 if name == "improvements" else -1
        group.sort(key=lambda d: (sign * -abs(judged[d.key].change_pct or 0.0), d.key))
    q = PERCENTILES[basis]
    return {
        "metric": metric,
        "basis": basis,
        "threshold_pct": threshold,
        "min_delta_us": min_delta_us,
        "functions": globs or [],
        "selected": len(selected),
        "compared": len(both),
        "gate": {
            "test": f"order-statistics interval on the {q:g}th percentile per call"
            if confidence > 0
            else "none",
            "confidence": confidence,
            "per_function_confidence": per_function,
            "tested": len(tested),
            "min_calls": min_calls,
        },
        **{name: [_row(d, judged[d.key], q) for d in group] for name, group in lists.items()},
        "added": [d.key for d in selected if d.status == "added"],
        "removed": [d.key for d in selected if d.status == "removed"],
        "base_summary": diff.base_summary,
        "new_summary": diff.new_summary,
        "failed": bool(lists["regressions"]),
        "_judged": judged,
    }


def _kinds(report: dict[str, Any]) -> dict[str, str]:
    judged: dict[str, Judged] | None = report.pop("_judged", None)
    if judged is not None:
        return {k: j.kind for k, j in judged.items()}
    return {r["key"]: kind for name, kind in _LISTS for r in report[name]}


def _add_verdicts(
    report: dict[str, Any],
    used: ProfileDiff,
    diff: ProfileDiff,
    base: GateSide | None,
    new: GateSide | None,
    lossy: bool,
    metric: str,
    basis: str,
    opts: dict[str, Any],
) -> None:
    """Each compared function's verdict, reason and coverage: on the rows of the lists,
    in ``verdicts`` (all of them) and ``inconclusive``; a regression that loss could
    undo leaves ``regressions`` (exit 1 is for regressions only)."""
    judged = report.get("_judged")
    kinds = _kinds(report)
    if judged is not None:
        changes = {k: j.change_pct for k, j in judged.items()}
    else:
        changes = {d.key: d.change(metric, basis) for d in used.functions if d.status == "both"}  # type: ignore[arg-type]
    gate = report["gate"]
    rule = Rule(basis, opts["threshold"], opts["min_delta_us"], gate["per_function_confidence"],
                opts["min_calls"])  # fmt: skip
    verdicts: dict[str, dict[str, Any]] = {}
    for d in diff.functions:
        if d.status != "both" or not _matches(d, opts["globs"]):
            continue
        kind = kinds.get(d.key, "same")  # a function no list holds is within the threshold
        if lossy and _free_missing(d.key, base, new):
            v = (INCONCLUSIVE, "no calls outside the stretches with loss", 0.0, {})
        elif lossy:
            assert base is not None and new is not None
            v = loss_verdict(kind, d.key, base, new, metric, rule)
        else:
            v = (*plain_verdict(kind), 1.0, {"base": 1.0, "new": 1.0})
        verdicts[d.key] = {"key": d.key, "name": short_label(d.name), "signature": d.name,
                           "verdict": v[0], "reason": v[1], "coverage": v[2],
                           "coverage_by_side": v[3],
                           "change_pct": changes.get(d.key)}  # fmt: skip
    for r in _rows(report):
        v = verdicts.get(r["key"])
        if v is not None:
            r.update(verdict=v["verdict"], reason=v["reason"], coverage=v["coverage"])
    report["regressions"] = [r for r in report["regressions"] if r["verdict"] == REGRESSED]
    report["failed"] = bool(report["regressions"])
    report["inconclusive"] = [v for v in verdicts.values() if v["verdict"] == INCONCLUSIVE]
    report["verdicts"] = list(verdicts.values())
    report["loss"] = {
        "base": None if base is None else base.loss,
        "new": None if new is None else new.loss,
        "coverage_floor": COVERAGE_FLOOR,
    }


def _rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for name, _ in _LISTS for r in report[name]]


def _free_missing(key: str, base: GateSide | None, new: GateSide | None) -> bool:
    return any(side is not None and not len(_free_times(side, key, "self")) for side in (base, new))


__all__ = ["Calls", "gated_report", "percentile_report"]
