"""One group's calls as a budget reads them: their count, the k-th smallest duration,
how many are at or under a limit, and the longest. Sorted durations answer exactly;
past ``distribution.EXACT_CALLS`` calls a live check reads the bucket counts the profile
keeps (buckets.py): a rank's bucket middle, within ``buckets.ERROR``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import buckets
from . import distribution as dist
from .aggregate import sums

if TYPE_CHECKING:
    from .model import Profile, Window


class Sorted:
    """Exact: the group's durations, ascending (ticks)."""

    exact = True

    def __init__(self, durs: np.ndarray) -> None:
        self.d = np.asarray(durs, np.float64)
        self.n = len(self.d)
        self.max = float(self.d[-1])

    def at(self, r: int) -> float:
        return float(self.d[r - 1])

    def below(self, limit: float) -> int:
        return int(np.searchsorted(self.d, limit, side="right"))


class Counted:
    """From bucket counts: each call taken at its bucket's middle."""

    exact = False

    def __init__(self, k: np.ndarray, counts: np.ndarray, longest: float) -> None:
        self.mid = buckets.middle(k)
        self.cum = np.cumsum(counts)
        self.n = int(self.cum[-1])
        self.max = longest

    def at(self, r: int) -> float:
        return float(self.mid[int(np.searchsorted(self.cum, r, side="left"))])

    def below(self, limit: float) -> int:
        i = int(np.searchsorted(self.mid, limit, side="right"))
        return int(self.cum[i - 1]) if i else 0


def samples(
    profile: Profile, window: Window, by: str, live: bool
) -> tuple[dict[int, str], dict[int, Sorted | Counted]]:
    """Each group's name and sample: sorted, or (``live``, functions, past EXACT_CALLS
    calls) from the whole capture's bucket counts."""
    n_calls = profile.n_records if window is None else int(sums(profile, window).f_calls.sum())
    if live and by == "frame" and window is None and n_calls > dist.EXACT_CALLS:
        g, k, c = profile.buckets.grouped(profile.frame_of)
        top = sums(profile, None).f_max
        ends = np.flatnonzero(np.r_[g[1:] != g[:-1], True])
        starts = np.r_[0, ends[:-1] + 1]
        out: dict[int, Sorted | Counted] = {
            int(g[a]): Counted(k[a : b + 1], c[a : b + 1], float(top[g[a]]))
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True)
        }
    else:
        gr = dist.grouped(profile, window, by)
        out = {int(grp): Sorted(gr.of(grp)) for grp in gr.group.tolist()}
    if by == "frame":
        names = {grp: profile.frames[grp].name for grp in out}
    else:
        sn = dist.stack_names(profile)
        names = {grp: sn.string(grp) for grp in out}
    return names, out
