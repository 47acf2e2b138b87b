"""A whole capture's aggregate, kept beside its stored session so that opening it shows
the flame graph and Functions at once, while the calls themselves still load.

``aggregate(profile)`` takes, as JSON-ready lists, what those two views read of a
profile without a window: the StackTable (each stack's parent, frame, depth, recursion
flag, and its calls, total and self ticks), the per-function sums, the frames (with the
raw addresses they were interned from, in id order), the time range, and the
distribution Functions shows (``distribution.summaries``: exact, or from the buckets
past EXACT_CALLS). Every figure is computed by the profile code, once, when the
session is stored.

``StoredProfile(view)`` answers the profile calls those views make (``function_stats``,
``top_down``, ``bottom_up``, ``cached``...) from that aggregate: the same aggregate
functions (aggregate.py, trees.py, shares.py) run on it, so its flame payload and
Functions rows equal those of the loaded profile. It holds no calls: its levels are
empty (the timeline shows nothing yet) and a window or an export is refused with a
one-line error until the loaded profile takes its place.
"""

from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UserError
from .aggregate import SUMS, Stacks, Sums, stacks, sums
from .distribution import Summary, summaries, summaries_key
from .frames import Frame
from .timebase import TickClock

if TYPE_CHECKING:
    from .model import Profile, Window

FORMAT = 1  # what a kept aggregate holds; another format is not read (the session opens as before)
# Stacks an aggregate is kept for at most (about 60 bytes of JSON each): a capture whose
# stacks are past this opens by loading its calls, as before (docs/limits.md).
MAX_KEPT_STACKS = 200_000
_FRAME_FIELDS = ("name", "label", "file", "line", "start", "symbol")


def aggregate(profile: Profile, tick_hz: int | None = None) -> dict[str, Any]:
    """The whole capture's aggregate as JSON-ready values (see the module's doc); past
    MAX_KEPT_STACKS stacks, only their count (``stacks_past``), for the open to say why
    it waits for the calls. ``tick_hz``: the rate the profile's loader was given (QS),
    kept so an open with another rate does not use it."""
    st = stacks(profile)
    if st.size > MAX_KEPT_STACKS:
        return {"format": FORMAT, "stacks_past": st.size}
    s = sums(profile)
    dist = summaries(profile)
    table = profile._addrs  # the raw address behind each address id, in id order
    return {
        "format": FORMAT,
        "tick_hz": tick_hz,
        "timer_freq": profile.timer_freq,
        "records": int(profile.n_records),
        "t0": profile.t0_ticks,
        "t1": profile.t1_ticks,
        "addrs": table.addrs.tolist(),
        "frame_of": table.frame_of.tolist(),
        "frames": [[getattr(f, k) for k in _FRAME_FIELDS] for f in profile.frames],
        "stacks": {
            "parent": st.parent.tolist(),
            "frame": st.frame.tolist(),
            "depth": np.asarray(st.depth).tolist(),
            "nested": st.nested.astype(np.int8).tolist(),
        },
        "sums": {name: [_finite(x) for x in getattr(s, name).tolist()] for name, *_ in SUMS},
        "dist": {
            "key": list(summaries_key(profile)),
            "rows": [[g, *(_finite(v) for v in vars(d).values())] for g, d in dist.items()],
        },
    }


def _finite(x: float | int) -> float | int | None:
    """JSON holds no inf (a frame without calls has f_min inf): None stands for it."""
    return x if isinstance(x, int) or math.isfinite(x) else None


def _array(values: list[Any], dtype: Any, empty: Any = 0) -> np.ndarray:
    return np.array([empty if v is None else v for v in values], dtype)


def same_frames(view: dict[str, Any], symbols: Any) -> bool:
    """Whether a loader given ``symbols`` names the aggregate's addresses as it did: the
    same frames, in the same order, for the same addresses."""
    from .frames import AddressTable

    table = AddressTable.of_addresses(symbols, np.array(view["addrs"], np.uint32))
    kept = [Frame(*f) for f in view["frames"]]
    return table.frame_of.tolist() == view["frame_of"] and table.frames == kept


class _Seeded:
    """The aggregator's one question (``update``): the kept stacks and sums."""

    def __init__(self, live: tuple[Stacks, Sums]) -> None:
        self.live = live

    def update(self, profile: Any) -> tuple[Stacks, Sums]:
        return self.live


class StoredProfile(TickClock):
    """The profile calls of the whole-capture flame graph, call tree and Functions,
    answered from a kept aggregate (see the module's doc)."""

    spill = None
    breaks: list[int] = []  # noqa: RUF012 (never written: the timeline is empty)

    def __init__(self, view: dict[str, Any]) -> None:
        self.lock = threading.RLock()
        self.generation = 0
        self.timer_freq = int(view["timer_freq"])
        self.n_records = int(view["records"])
        self.t0_ticks, self.t1_ticks = int(view["t0"]), int(view["t1"])
        self.frames = [Frame(*f) for f in view["frames"]]
        self.frame_of = np.array(view["frame_of"], np.int32)
        self.levels: dict[int, Any] = {}  # no calls: the timeline shows none yet
        st = view["stacks"]
        n = len(st["parent"])
        table = Stacks(
            _array(st["parent"], np.int32),
            _array(st["frame"], np.int32),
            _array(st["depth"], np.int32),
            _array(st["nested"], np.bool_),
            {},
        )
        out = Sums(n, len(self.frames))
        for name, _, dtype, empty in SUMS:
            setattr(out, name, _array(view["sums"][name], dtype, empty))
        self.aggregator = _Seeded((table, out))
        rows = view["dist"]["rows"]
        dist = {int(r[0]): Summary(*(math.inf if v is None else v for v in r[1:])) for r in rows}
        self._seeds: dict[Any, Any] = {tuple(view["dist"]["key"]): dist}
        self._cache: dict[Any, Any] = {}

    @property
    def max_depth(self) -> int:
        return -1

    def settle(self) -> None:
        """Nothing is staged: there are no calls."""

    def cached(self, key: Any, compute: Any) -> Any:
        if key in self._seeds:
            return self._seeds[key]
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def function_stats(self, window: Window = None) -> list[Any]:
        from .aggregate import function_stats

        return function_stats(self, _whole(window))  # type: ignore[arg-type]

    def top_down(self, window: Window = None) -> Any:
        from .trees import top_down

        return top_down(self, _whole(window))  # type: ignore[arg-type]

    def bottom_up(self, window: Window = None) -> Any:
        from .trees import bottom_up

        return bottom_up(self, _whole(window))  # type: ignore[arg-type]

    def timeline(self, t0_us: float, t1_us: float, width_px: int) -> dict[str, Any]:
        from .timeline import timeline

        return timeline(self, t0_us, t1_us, width_px)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        """What needs the calls (exports, snapshots, folded paths): not yet."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise StillLoading(LOADING)


LOADING = "the session's calls are still loading: this shows once the open has ended"


class StillLoading(UserError, AttributeError):
    """A one-line error for the page (UserError); an AttributeError to ``hasattr``."""


def _whole(window: Window) -> None:
    if window is not None:
        raise StillLoading(LOADING)
