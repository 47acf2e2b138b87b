"""The one definition of 100%, read by every view, export and command: a share is of
the window's profiled time, the time inside instrumented functions with nested calls
counted once. Coverage sets that profiled time against the window's wall time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Profile, Window


def profiled_us(self_us: Iterable[float]) -> float:
    """The summed self times (µs) of every function of a window, in ``function_stats``
    order: each recorded µs is some one function's self time, so nesting and recursion
    count once. Summed in that order, so every caller that holds the same stats gets
    the same float."""
    return float(sum(self_us))


def share_pct(part_us: float, profiled: float) -> float:
    """``part_us`` as a percentage of the profiled time ``profiled`` (0 when nothing was
    profiled)."""
    return 100.0 * part_us / profiled if profiled else 0.0


def span(profile: Profile, window: Window) -> dict[str, float]:
    """The window's (or the whole capture's) profiled time, its wall time and the
    coverage: profiled against wall."""
    profiled = 0.0
    if profile.n_records:
        profiled = profile.cached(
            ("profiled_us", window),
            lambda: profiled_us(f.self_us for f in profile.function_stats(window)),
        )
    if window is not None:
        wall = max(0.0, min(window[1], profile.t1_us) - max(window[0], profile.t0_us))
    else:
        wall = profile.duration_us if profile.n_records else 0.0
    wall = max(wall, profiled)  # a lone record still covers its own duration
    return {
        "profiled_us": profiled,
        "wall_us": wall,
        "coverage_pct": share_pct(profiled, wall),
    }
