"""The title lines of the flame-graph exports, the same from the page and from
``mcuprof export``: firmware version, capture time, scope and the profiled time."""

from __future__ import annotations

import time
from typing import Any


def fmt_us(us: float) -> str:
    """Three significant digits and a unit, as the page's fmtTime."""
    for scale, unit in ((1e6, "s"), (1e3, "ms"), (1.0, "µs")):
        if abs(us) >= scale or unit == "µs":
            v = us / scale
            text = f"{v:.0f}" if abs(v) >= 99.95 else f"{v:.1f}" if abs(v) >= 9.995 else f"{v:.2f}"
            return f"{text} {unit}"
    return f"{us:.2f} µs"


def flame_titles(
    version: str | None,
    captured: float | None,
    window: Any,
    t0_us: float,
    span: dict[str, float],
) -> tuple[str, str]:
    """(title, subtitle). ``captured``: seconds since the epoch (None: unknown);
    ``window``: (t0, t1) µs or None for the whole capture; ``span``: profile/shares.span."""
    stamp = (
        time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(captured))
        if captured is not None
        else "—"
    )
    if window:
        scope = f"window {fmt_us(window[0] - t0_us)} – {fmt_us(window[1] - t0_us)}"
    else:
        scope = "whole capture"
    total = f"{fmt_us(span['profiled_us'])} profiled"
    if span.get("wall_us"):
        total += f" of {fmt_us(span['wall_us'])} wall ({span['coverage_pct']:.1f}% coverage)"
    return (
        f"mcuprof flame graph — firmware {version or 'unknown'}",
        f"captured {stamp} · {scope} · {total}",
    )
