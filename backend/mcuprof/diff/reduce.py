"""One capture reduced to what a comparison reads: per-function calls, self and total
time, the spread of the calls, and the capture's length, plus (on request) its folded
stacks. ``compare`` keeps this and drops the capture's records before it reads the
other one. It reads the profile's own aggregates, as ``info`` and the exports do: one
loader and one set of tables for every consumer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from ..profile.aggregate import call_spread
from .table import Spread, capture_span

if TYPE_CHECKING:
    from ..profile import Profile


class FunctionTotals(NamedTuple):
    """The fields of ``profile.FunctionStat`` a comparison reads (see ``StatLike``); a
    NamedTuple, quick to make by the thousand."""

    name: str
    label: str
    calls: int
    self_us: float
    total_us: float
    mean_us: float
    file: str | None = None  # shown next to the name (frames.where)


@dataclass
class Reduced:
    """A capture as a comparison sees it. ``stats`` in ``function_stats`` order."""

    n_records: int
    duration_us: float
    stats: list[FunctionTotals]
    spread: Spread
    folded: dict[str, int] | None = None  # only when asked for (it costs per stack)
    calls: dict[str, Any] | None = None  # every call's times (diff/gate.py), when asked for
    loss: dict[str, Any] | None = None  # what the device's counters say was lost (loss.py)

    @property
    def span(self) -> tuple[float, float]:
        return capture_span(self.stats, self.duration_us)


def reduce_profile(profile: Profile, folded: bool = True) -> Reduced:
    """The profile's own aggregates (whole capture). The spread first: its per-depth
    temporaries then sit on the records alone, not on the records plus the stacks and
    sums that ``function_stats`` keeps cached (the compare's peak: 132 -> 114 MB for
    1.5M records of unique stacks)."""
    self_sq, incl_sq, self_max = call_spread(profile)
    stats = list(profile.function_stats())
    us = 1e6 / profile.timer_freq
    us2 = us**2
    spread = {
        s.label: (
            float(self_sq[s.frame]) * us2,
            s.mean_us * s.calls,
            float(incl_sq[s.frame]) * us2,
            float(self_max[s.frame]) * us,
            s.max_us,  # the largest inclusive time of one call, as every view shows it
        )
        for s in stats
    }
    return Reduced(
        n_records=int(profile.n_records),
        duration_us=float(profile.duration_us),
        stats=[
            FunctionTotals(s.name, s.label, s.calls, s.self_us, s.total_us, s.mean_us, s.where)
            for s in stats
        ],
        spread=spread,
        folded=dict(profile.folded()) if folded else None,
    )
