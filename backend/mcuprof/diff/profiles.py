"""Two profiles compared: per-function deltas, both folded stacks and summaries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .flame import flame_data
from .reduce import Reduced, reduce_profile
from .table import FunctionDelta, function_deltas

if TYPE_CHECKING:
    from ..profile import Profile


@dataclass
class ProfileDiff:
    functions: list[FunctionDelta]
    base_folded: dict[str, int]  # empty when the captures were reduced without them
    new_folded: dict[str, int]
    base_summary: dict[str, Any]
    new_summary: dict[str, Any]

    def flame(self, max_nodes: int = 5000) -> dict[str, Any]:
        return flame_data(self.base_folded, self.new_folded, max_nodes)

    def table(self) -> list[dict[str, Any]]:
        return [f.as_dict() for f in self.functions]


def diff_profiles(base: Profile, new: Profile) -> ProfileDiff:
    """Deltas of ``new`` against ``base`` (whole captures, no time window)."""
    return diff_reduced(reduce_profile(base), reduce_profile(new))


def diff_reduced(base: Reduced, new: Reduced) -> ProfileDiff:
    """``diff_profiles`` of two captures already reduced (see reduce.py)."""
    base_span, new_span = base.span, new.span
    return ProfileDiff(
        functions=function_deltas(
            base.stats, new.stats, base_span, new_span, base.spread, new.spread
        ),
        base_folded=base.folded or {},
        new_folded=new.folded or {},
        base_summary=_summary(base, base_span),
        new_summary=_summary(new, new_span),
    )


def _summary(capture: Reduced, span: tuple[float, float]) -> dict[str, Any]:
    return {
        "records": capture.n_records,
        "duration_us": span[1],
        "profiled_us": span[0],
    }
