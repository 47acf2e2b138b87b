"""The CI gate's report on two compared profiles: which functions grew or shrank past
the threshold, beyond the noise of their calls' spread (``build_report``), and its text
form (``format_report``). `mcuprof compare` prints it; the Compare tab shows its verdict."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING, Any

from ..errors import UserError
from .table import FunctionDelta, function_intervals

if TYPE_CHECKING:
    from ..protocol import Metadata
    from .profiles import ProfileDiff


def parse_threshold(text: str, option: str = "--threshold") -> float:
    raw = text.strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"{option} {text!r}: expected a percentage such as 10%") from None
    if not value >= 0 or value == float("inf"):
        raise UserError(f"{option} {text!r}: must be a finite percentage >= 0")
    return value


def parse_confidence(text: str) -> float:
    value = parse_threshold(text, "--confidence")
    if value >= 100:
        raise UserError(f"--confidence {text!r}: must be below 100%")
    return value / 100.0


def timebase_check(base: Metadata | None, new: Metadata | None) -> dict[str, Any]:
    """Do both captures claim the same timer frequency? A different one means another
    clock setup or build: the times are converted, but the pair is not like for like."""
    hz = [m.timer_freq if m is not None and m.timer_freq else None for m in (base, new)]
    mismatch = None not in hz and hz[0] != hz[1]
    message = f"timer frequencies differ: BASE {hz[0]:,} Hz, NEW {hz[1]:,} Hz" if mismatch else None
    return {"base_hz": hz[0], "new_hz": hz[1], "mismatch": mismatch, "message": message}


def _matches(d: FunctionDelta, globs: list[str] | None) -> bool:
    if not globs:
        return True
    return any(fnmatch.fnmatchcase(d.name, g) or fnmatch.fnmatchcase(d.key, g) for g in globs)


def build_report(
    diff: ProfileDiff,
    *,
    threshold: float,
    metric: str,
    basis: str,
    globs: list[str] | None,
    min_delta_us: float,
    confidence: float = 0.95,
    min_calls: int = 2,
) -> dict[str, Any]:
    selected = [d for d in diff.functions if _matches(d, globs)]
    if globs and not selected:
        raise UserError(f"--function {' '.join(globs)}: matches no function in either capture")
    both = [d for d in selected if d.status == "both"]
    # Below 1e-9 % a change is float rounding, not a measurement.
    changes = {
        d.key: _denoise(d.change(metric, basis))  # type: ignore[arg-type]
        for d in both
    }

    # The gate's question: did it change by more than the threshold, by more than the
    # noise floor, and by more than the spread of its calls explains?
    # Every compared function is one more chance of a false alarm, so each interval is
    # taken at the Bonferroni level: all of them hold together with ``confidence``.
    testable = [d for d in both if min(d.raw("calls")) >= max(min_calls, 2)]
    per_function = 1.0 - (1.0 - confidence) / max(len(testable), 1)
    # (every function's quantile found in one vectorised pass)
    cis = function_intervals(both, metric, basis, per_function, min_calls)  # type: ignore[arg-type]
    intervals = {d.key: ci for d, ci in zip(both, cis, strict=True)}

    # One call that alone sets a function's spread (a stall, a wrapped timer) would widen
    # its interval until any change reads as noise: such a function is judged again with
    # that call set aside on the side(s) where it is, at the same per-function level.
    trimmed = {t.key: t for t in (_set_aside(d, metric) for d in both) if t is not None}
    t_list = list(trimmed.values())
    t_changes = {t.key: _denoise(t.change(metric, basis)) for t in t_list}  # type: ignore[arg-type]
    t_cis = function_intervals(t_list, metric, basis, per_function, min_calls)  # type: ignore[arg-type]
    t_intervals = {t.key: ci for t, ci in zip(t_list, t_cis, strict=True)}

    def row(d: FunctionDelta) -> dict[str, Any]:
        out = d.as_dict()
        out["change_pct"] = changes.get(d.key)
        out["growth_us"] = d.growth_us(metric, basis) if d.status == "both" else None  # type: ignore[arg-type]
        ci = intervals.get(d.key)
        out["ci_pct"] = list(ci) if ci is not None else None
        t = trimmed.get(d.key)
        out["outlier"] = None if t is None else _outlier_row(d, t, metric, t_changes, t_intervals)
        return out

    def verdict(d: FunctionDelta, sign: int, change: float | None, ci: Any) -> str | None:
        """'change', 'noise' or 'few' for a function past the threshold; None otherwise."""
        growth = d.growth_us(metric, basis)  # type: ignore[arg-type]
        if sign * (change or 0.0) <= threshold or growth is None or abs(growth) < min_delta_us:
            return None
        if confidence <= 0:
            return "change"
        if ci is None:
            return "few"
        return "change" if sign * (ci[0] if sign > 0 else ci[1]) > 0 else "noise"

    def judged(d: FunctionDelta, sign: int) -> str | None:
        seen = verdict(d, sign, changes[d.key], intervals[d.key])
        t = trimmed.get(d.key)
        if seen == "change" or t is None:
            return seen
        again = verdict(t, sign, t_changes[t.key], t_intervals[t.key])
        return "change" if again == "change" else seen

    grew = {d.key: judged(d, +1) for d in both}
    shrank = {d.key: judged(d, -1) for d in both}
    regressions = [d for d in both if grew[d.key] == "change"]
    improvements = [d for d in both if shrank[d.key] == "change"]
    # (a change found with an outlier set aside is not also noise the other way)
    decided = {d.key for d in regressions + improvements}
    noise = [d for d in both if "noise" in (grew[d.key], shrank[d.key]) and d.key not in decided]
    few = [d for d in both if "few" in (grew[d.key], shrank[d.key]) and d.key not in decided]
    for group in (regressions, noise, few):
        group.sort(key=lambda d: (-abs(changes[d.key] or 0.0), d.key))
    improvements.sort(key=lambda d: ((changes[d.key] or 0.0), d.key))
    return {
        "metric": metric,
        "basis": basis,
        "threshold_pct": threshold,
        "min_delta_us": min_delta_us,
        "functions": globs or [],
        "selected": len(selected),
        "compared": len(both),
        "gate": {
            "test": _TEST[basis] if confidence > 0 else "none",
            "confidence": confidence,
            "per_function_confidence": per_function if confidence > 0 else 0.0,
            "tested": len(testable),
            "min_calls": min_calls,
        },
        "regressions": [row(d) for d in regressions],
        "improvements": [row(d) for d in improvements],
        "within_noise": [row(d) for d in noise],
        "too_few_calls": [row(d) for d in few],
        "added": [d.key for d in selected if d.status == "added"],
        "removed": [d.key for d in selected if d.status == "removed"],
        "base_summary": diff.base_summary,
        "new_summary": diff.new_summary,
        "failed": bool(regressions),
    }


def _set_aside(d: FunctionDelta, metric: str) -> FunctionDelta | None:
    """``d`` without the one call that sets its spread on each side that has one (see
    ``Side.outlier``); None when neither side has such a call."""
    b, n = d.base, d.new
    assert b is not None and n is not None
    b_out, n_out = b.outlier(metric), n.outlier(metric)  # type: ignore[arg-type]
    if not (b_out or n_out):
        return None
    return d._replace(base=b.trimmed() if b_out else b, new=n.trimmed() if n_out else n)


def _outlier_row(
    d: FunctionDelta,
    t: FunctionDelta,
    metric: str,
    changes: dict[str, float | None],
    intervals: dict[str, Any],
) -> dict[str, Any]:
    """What the gate saw with the outlying call set aside: that call per side (µs, None
    where nothing was set aside), and the change and its interval without it."""
    field = "self_max" if metric == "self" else "incl_max"
    aside = {
        side: (
            getattr(getattr(d, side), field) if getattr(t, side) is not getattr(d, side) else None
        )
        for side in ("base", "new")
    }
    ci = intervals.get(t.key)
    return {
        "set_aside_us": aside,
        "change_pct": changes.get(t.key),
        "ci_pct": list(ci) if ci is not None else None,
    }


_TEST = {
    "mean": "Welch t interval on the mean time per call",
    "share": "normal interval on the share, calls as a Poisson process",
}


def _denoise(pct: float | None) -> float | None:
    return 0.0 if pct is not None and abs(pct) < 1e-9 else pct


def _metric_text(metric: str, basis: str) -> str:
    what = "self time" if metric == "self" else "total time"
    if basis.startswith("p"):
        return f"{basis} of the {what} per call"
    return f"{what} per call" if basis == "mean" else f"{what} share of the capture"


def _value(row: dict[str, Any], metric: str, basis: str, side: str) -> str:
    if basis.startswith("p"):
        v = row["percentile"][side]
        return "-" if v is None else f"{v:,.{3 if abs(v) < 10 else 2}f} µs"
    if basis == "mean":
        v = row[f"{metric}_mean"][side]
        return "-" if v is None else f"{v:,.{3 if abs(v) < 10 else 2}f} µs"
    v = row[f"{metric}_share"][side]
    return "-" if v is None else f"{v:.2f}%"


def _change(pct: float) -> str:
    # Small changes keep enough digits to be told from zero.
    return f"{pct:+.{3 if abs(pct) < 0.1 else 1}f}%"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _interval(r: dict[str, Any]) -> str:
    ci = r.get("ci_pct")
    if ci is None:
        return "-"
    return f"{_change(ci[0])}…{_change(ci[1])}"


def _table(rows: list[dict[str, Any]], metric: str, basis: str, top: int) -> list[str]:
    # The function's name as every view shows it, its file in a column of its own
    # (what tells two statics of one name apart).
    lines = [
        f"  {'function':<40} {'file':<16} {'base':>12} {'new':>12} {'change':>8} "
        f"{'interval':>17} {'calls base→new':>16}"
    ]
    for r in rows[:top]:
        calls = f"{r['calls']['base']:,}→{r['calls']['new']:,}"
        lines.append(
            f"  {_clip(r['name'], 40):<40} {_clip(r['file'] or '', 16):<16} "
            f"{_value(r, metric, basis, 'base'):>12} "
            f"{_value(r, metric, basis, 'new'):>12} {_change(r['change_pct']):>8} "
            f"{_interval(r):>17} {calls:>16}"
        )
        out = r.get("outlier")
        if out is not None:
            aside = ", ".join(
                f"{side} {us:,.2f} µs" for side, us in out["set_aside_us"].items() if us is not None
            )
            change = "-" if out["change_pct"] is None else _change(out["change_pct"])
            lines.append(f"    one call set aside ({aside}): {change}, interval {_interval(out)}")
    if len(rows) > top:
        lines.append(f"  … {len(rows) - top} more (--top to show more, --json for all)")
    return lines


def format_report(report: dict[str, Any], top: int) -> str:
    metric, basis = report["metric"], report["basis"]
    what = _metric_text(metric, basis)
    thr = report["threshold_pct"]
    lines = []
    for side in ("base", "new"):
        s = report[side]
        fw = s["metadata"]["fw_version"] if s["metadata"] else "?"
        lines.append(
            f"{side:<5} {s['source']}: {s['records']:,} records, "
            f"{s['duration_us'] / 1e6:.3f} s, firmware {fw!r}"
        )
    if report.get("aa"):
        lines.append("A/A comparison: both captures are of one build (the same build ID)")
    lines.append(
        f"compared {report['compared']} functions on {what}; threshold +{thr:g}%"
        + (f", noise floor {report['min_delta_us']:g} µs" if report["min_delta_us"] else "")
    )
    gate = report["gate"]
    if gate["confidence"] > 0:
        lines.append(
            f"a change counts when its {gate['confidence'] * 100:g}% interval excludes zero: "
            f"{gate['test']}, {gate['per_function_confidence'] * 100:.2f}% per function "
            f"(Bonferroni over {gate['tested']}); under {max(gate['min_calls'], 2)} calls "
            "a function is not gated"
        )
    lines.append("")
    sections = (
        ("regressions", f"Regressions (grew more than {thr:g}%)"),
        ("improvements", f"Improvements (shrank more than {thr:g}%)"),
        ("within_noise", f"Within noise (changed more than {thr:g}%, interval includes 0)"),
        ("too_few_calls", f"Too few calls to tell (changed more than {thr:g}%)"),
    )
    for key, title in sections:
        rows = report[key]
        if rows or key in ("regressions", "improvements"):
            lines.append(f"{title}: {len(rows)}")
        if rows:
            lines.extend(_table(rows, metric, basis, top))
    lines.extend(_loss_lines(report, top))
    for kind in ("added", "removed"):
        names = report[kind]
        if names:
            shown = ", ".join(names[:top]) + (
                f", … {len(names) - top} more" if len(names) > top else ""
            )
            lines.append(f"{kind.capitalize()} functions ({len(names)}): {shown}")
    lines.append("")
    undecided = len(report.get("inconclusive") or [])
    also = f"; {undecided} inconclusive" if undecided else ""
    if report["failed"]:
        regs = report["regressions"]
        lines.append(f"FAIL: {len(regs)} function(s) grew more than {thr:g}% ({what}){also}")
    else:
        lines.append(f"OK: no function grew more than {thr:g}% ({what}){also}")
    return "\n".join(lines)


def _loss_lines(report: dict[str, Any], top: int) -> list[str]:
    """What the device's counters say each side lost, and the functions loss (or too few
    calls) leaves inconclusive, with the reason."""
    from ..loss import lost_text

    lines = []
    loss = report.get("loss") or {}
    for side in ("base", "new"):
        figures = loss.get(side)
        if figures is not None and (figures["lost"] or figures["stretches"]):
            lines.append(
                f"{side.upper()} lost {lost_text(figures)} of {figures['captured']:,} records "
                f"in {len(figures['stretches']):,} stretch(es): functions judged without them"
            )
    rows = report.get("inconclusive") or []
    if rows:
        lines.append(f"Inconclusive: {len(rows)}")
        for v in rows[:top]:
            lines.append(f"  {_clip(v['name'], 40):<40} {v['reason']}")
        if len(rows) > top:
            lines.append(f"  … {len(rows) - top} more (--top to show more, --json for all)")
    return lines
