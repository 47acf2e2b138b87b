"""Two profiles compared: per-function deltas, both folded stacks and summaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..profile import Profile
from ..profile.aggregate import call_squares
from .flame import flame_data
from .table import (
    FunctionDelta,
    Spread,
    capture_span,
    function_deltas,
)


@dataclass
class ProfileDiff:
    functions: list[FunctionDelta]
    base_folded: dict[str, int]
    new_folded: dict[str, int]
    base_summary: dict[str, Any]
    new_summary: dict[str, Any]

    def flame(self, max_nodes: int = 5000) -> dict[str, Any]:
        return flame_data(self.base_folded, self.new_folded, max_nodes)

    def table(self) -> list[dict[str, Any]]:
        return [f.as_dict() for f in self.functions]


def diff_profiles(base: Profile, new: Profile) -> ProfileDiff:
    """Deltas of ``new`` against ``base`` (whole captures, no time window)."""
    base_stats = list(base.function_stats())
    new_stats = list(new.function_stats())
    base_span = capture_span(base_stats, float(base.duration_us))
    new_span = capture_span(new_stats, float(new.duration_us))
    return ProfileDiff(
        functions=function_deltas(
            base_stats,
            new_stats,
            base_span,
            new_span,
            _spread(base, base_stats),
            _spread(new, new_stats),
        ),
        base_folded=dict(base.folded()),
        new_folded=dict(new.folded()),
        base_summary=_summary(base, base_span),
        new_summary=_summary(new, new_span),
    )


def _spread(profile: Profile, stats: list[Any]) -> Spread:
    self_sq, incl_sq = call_squares(profile)
    us2 = (1e6 / profile.timer_freq) ** 2
    return {
        s.label: (float(self_sq[s.frame]) * us2, s.mean_us * s.calls, float(incl_sq[s.frame]) * us2)
        for s in stats
    }


def _summary(profile: Profile, span: tuple[float, float]) -> dict[str, Any]:
    return {
        "records": int(profile.n_records),
        "duration_us": span[1],
        "profiled_us": span[0],
    }
