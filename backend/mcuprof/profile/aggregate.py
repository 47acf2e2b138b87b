"""Aggregates over the reconstructed call tree: stacks, sums, folded lines, function stats.

Stacks are interned per depth with one np.unique over (parent stack, frame) keys, so
every per-record step is vectorised; only per-stack and per-frame work is Python.
Sums are counted one way (``depth_calls`` into ``Sums.add``): the whole capture by the
aggregator (incremental.py), a window from scratch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .frames import UNKNOWN_FRAME, Frame, where
from .paths import Depths, StackNames
from .shares import profiled_us, share_pct
from .span import RECORD_PIECE
from .tables import Depth, FrameId

if TYPE_CHECKING:
    from .levels import Level
    from .model import Profile, Window

UNKNOWN_ID = FrameId(-1)  # frame id of the synthetic "[unknown]" root


@dataclass
class Stacks:
    """The StackTable (tables.py): interned stacks. Stack 0 is "[unknown]" (the root of
    orphans)."""

    parent: np.ndarray  # StackId (int32), -1 at a root
    frame: np.ndarray  # FrameId (int32), UNKNOWN_ID for "[unknown]"
    depth: np.ndarray | Depths  # int32 (as runs from the aggregator)
    nested: np.ndarray  # bool: the frame also appears further up (recursion)
    per_level: dict[Depth, np.ndarray]  # the StackId of every call, by depth (CallIndex)

    @property
    def size(self) -> int:
        return len(self.parent)


def stacks(profile: Profile) -> Stacks:
    return _live(profile)[0]


def _live(profile: Profile) -> tuple[Stacks, Sums]:
    """Stacks and whole-capture sums, brought up to date incrementally."""
    return profile.cached("live", lambda: profile.aggregator.update(profile))


_WALK = 32  # ancestors compared in numpy before the deep remainder goes to one DFS


def mark_nested(parent: np.ndarray, frame: np.ndarray, nested: np.ndarray, start: int) -> None:
    """Set ``nested[s]`` for every stack s >= start: does its frame appear among its
    ancestors (recursion)? Parents precede children in id order. The first ancestors
    are compared for all stacks at once; what is deeper and still undecided is settled
    by one walk over the tree spanning those stacks, so a chain D deep costs O(D)."""
    want = frame[start:]
    out = nested[start:]
    out[:] = False
    # int32 positions (stack ids are int32): half the temporaries of numpy's int64
    idx = np.flatnonzero(parent[start:] >= 0).astype(np.int32)
    anc = parent[start:][idx]
    for _ in range(_WALK):
        if len(idx) == 0:
            break
        hit = frame[anc] == want[idx]
        out[idx[hit]] = True
        idx, anc = idx[~hit], parent[anc[~hit]]
        live = anc >= 0
        idx, anc = idx[live], anc[live]
    if len(idx):
        out[idx] = _nested_by_walk(parent, frame, idx + np.int32(start))


def _nested_by_walk(parent: np.ndarray, frame: np.ndarray, todo: np.ndarray) -> np.ndarray:
    """``mark_nested`` for deep stacks: a depth-first walk over them and their ancestors,
    counting the frames on the current path."""
    par = parent.tolist()
    fr = frame.tolist()
    spanned: set[int] = set()
    for s in todo.tolist():
        while s >= 0 and s not in spanned:
            spanned.add(s)
            s = par[s]
    children: dict[int, list[int]] = {}
    walk = []
    for s in spanned:
        p = par[s]
        if p < 0:
            walk.append(s)
        else:
            children.setdefault(p, []).append(s)
    on_path: dict[int, int] = {}
    seen: dict[int, bool] = {}
    while walk:
        s = walk.pop()
        if s < 0:  # leaving ~s
            on_path[fr[~s]] -= 1
            continue
        f = fr[s]
        k = on_path.get(f, 0)
        seen[s] = k > 0
        on_path[f] = k + 1
        walk.append(~s)
        walk.extend(children.get(s, ()))
    return np.array([seen[s] for s in todo.tolist()], bool)


def frame_info(profile: Profile, fid: FrameId) -> Frame:
    return UNKNOWN_FRAME if fid == UNKNOWN_ID else profile.frames[fid]


def stack_names(profile: Profile) -> StackNames:
    def build() -> StackNames:
        st = stacks(profile)
        names = profile.aggregator.names
        names.update(profile, st)
        return names

    return profile.cached("stack_names", build)


# The sums, declared once: (name, per stack (else per frame), dtype, value before any call).
SUMS = (
    ("calls", True, np.int64, 0),
    ("total", True, np.float64, 0),  # inclusive
    ("self_", True, np.float64, 0),
    ("f_calls", False, np.int64, 0),
    ("f_total", False, np.float64, 0),  # outermost calls only (recursion once)
    ("f_self", False, np.float64, 0),
    ("f_sum", False, np.float64, 0),  # every call's inclusive time (for the mean)
    ("f_min", False, np.float64, np.inf),  # per call, inclusive
    ("f_max", False, np.float64, 0),
)


class Sums:
    """Per-stack and per-frame sums of some calls, in ticks (counts int64, times float64).

    ``add`` adds in place, call by call in the order given (ufunc.at, as np.bincount
    sums): adding calls in any split gives the sums of adding them at once, bit for bit,
    even where a window cut times to fractions of a tick. A frame without calls has an
    ``f_min`` of inf."""

    calls: np.ndarray
    total: np.ndarray
    self_: np.ndarray
    f_calls: np.ndarray
    f_total: np.ndarray
    f_self: np.ndarray
    f_sum: np.ndarray
    f_min: np.ndarray
    f_max: np.ndarray

    def __init__(self, n_stacks: int, n_frames: int, start: Sums | None = None) -> None:
        """The sums of no calls, or a copy of ``start``'s grown to these sizes."""
        for name, per_stack, dtype, empty in SUMS:
            a = np.full(n_stacks if per_stack else n_frames, empty, dtype)
            if start is not None:
                old = getattr(start, name)
                a[: len(old)] = old
            setattr(self, name, a)

    def add(
        self,
        stack: np.ndarray,
        frame: np.ndarray,
        inclusive: np.ndarray,
        exclusive: np.ndarray,
        outermost: np.ndarray,
    ) -> None:
        """Count calls: their stack and frame ids, inclusive and self ticks, and which
        are a frame's outermost call (so recursion adds to ``f_total`` once)."""
        np.add.at(self.calls, stack, 1)
        np.add.at(self.total, stack, inclusive)
        np.add.at(self.self_, stack, exclusive)
        np.add.at(self.f_calls, frame, 1)
        np.add.at(self.f_self, frame, exclusive)
        np.add.at(self.f_sum, frame, inclusive)
        if outermost.all():  # no recursion: no copies
            np.add.at(self.f_total, frame, inclusive)
        else:
            np.add.at(self.f_total, frame[outermost], inclusive[outermost])
        np.minimum.at(self.f_min, frame, inclusive)
        np.maximum.at(self.f_max, frame, inclusive)

    def _stack(self, k: int) -> np.ndarray:
        return (self.calls, self.total, self.self_)[k]

    def by(self, k: int, ids: np.ndarray | None, n: int) -> np.ndarray:
        """np.bincount(ids, weights=<per-stack array k>[: len(ids)], minlength=n) (k: 0
        calls, 1 total, 2 self_). ``ids`` None: each stack is its own group (ids
        0..n-1), a copy instead of a count."""
        if ids is None:
            return np.add(self._stack(k)[:n], 0.0, dtype=np.float64)  # as bincount: no -0.0
        return np.bincount(ids, weights=self._stack(k)[: len(ids)], minlength=n)

    def pick(self, k: int, ids: np.ndarray) -> np.ndarray:
        """``by(k, None, n)[ids]`` for a few stacks, without a copy of the whole array."""
        return np.add(self._stack(k)[ids], 0.0, dtype=np.float64)


def _clip(lv: Level, lo: int, hi: int, win: tuple[float, float] | None) -> np.ndarray:
    """Inclusive ticks (float64) of a level's calls [lo, hi), cut to the window."""
    if win is None:
        return lv.dur[lo:hi].astype(np.float64)
    e = lv.entry[lo:hi].astype(np.float64)
    return np.clip(np.minimum(e + lv.dur[lo:hi], win[1]) - np.maximum(e, win[0]), 0.0, None)


def call_times(
    profile: Profile, d: int, lo: int, hi: int, win: tuple[float, float] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive and self ticks (float64) of depth d's calls [lo, hi): a call's duration
    (its part inside ``win``) less its children's, at least 0. A child enters no earlier
    than its parent, so only children from the first call's entry on are read; those
    outside the window add 0. Children are summed in entry order."""
    incl = _clip(profile.levels[d], lo, hi, win)
    below = profile.levels.get(d + 1)
    if below is None or hi <= lo:
        return incl, incl.copy()
    child = np.zeros(hi - lo)
    first = int(np.searchsorted(below.entry, profile.levels[d].entry[lo], side="left"))
    end = below.n if win is None else _slice(below, win)[1]
    for a in range(first, end, RECORD_PIECE):  # the children's float copies stay small
        b = min(a + RECORD_PIECE, end)
        p = below.parent[a:b]
        use = (p >= lo) & (p < hi)
        np.add.at(child, p[use] - np.int32(lo), _clip(below, a, b, win)[use])
    np.subtract(incl, child, out=child)
    return incl, np.maximum(child, 0.0, out=child)


def depth_calls(
    profile: Profile, st: Stacks, d: int, lo: int, hi: int, win: tuple[float, float] | None = None
) -> tuple[np.ndarray, ...]:
    """Depth d's calls [lo, hi) (those in ``win``, when given), as ``Sums.add`` takes
    them."""
    lv = profile.levels[d]
    incl, excl = call_times(profile, d, lo, hi, win)
    sid = st.per_level[d][lo:hi]
    fid = profile.frame_ids(lv, lo, hi)
    if win is not None:
        e = lv.entry[lo:hi].astype(np.float64)
        m = (e <= win[1]) & (e + lv.dur[lo:hi] >= win[0])
        sid, fid, incl, excl = sid[m], fid[m], incl[m], excl[m]
    return sid, fid, incl, excl, ~st.nested[sid]


def window_ticks(profile: Profile, window: Window) -> tuple[float, float] | None:
    if window is None:
        return None
    a, b = sorted((float(window[0]), float(window[1])))
    return profile.ticks(a), profile.ticks(b)


def sums(profile: Profile, window: Window = None) -> Sums:
    if window is None:
        return _live(profile)[1]

    def count() -> Sums:
        win = window_ticks(profile, window)
        st = stacks(profile)
        out = Sums(st.size, len(profile.frames))
        for d in sorted(profile.levels):
            out.add(*depth_calls(profile, st, d, *_slice(profile.levels[d], win), win))
        return out

    return profile.cached(("sums", float(window[0]), float(window[1])), count)


def _slice(level: Level, win: tuple[float, float]) -> tuple[int, int]:
    lo = level.first_ending_at(math.floor(win[0]))
    hi = int(np.searchsorted(level.entry, math.ceil(win[1]), side="right"))
    return lo, max(lo, hi)


def round_us(profile: Profile, ticks: float) -> int:
    """Whole microseconds, rounded half up, once."""
    f = profile.timer_freq
    if float(ticks).is_integer():
        return (int(ticks) * 2_000_000 + f) // (2 * f)
    return math.floor(ticks * 1e6 / f + 0.5)


def path_sums(
    profile: Profile, window: Window = None
) -> tuple[StackNames, np.ndarray, Sums | None]:
    """``path_ticks``, and the sums when each path is one stack (path id = stack id): a
    caller may then make the ticks array its own and read a path's self ticks from
    them (``Sums.pick``) later."""
    names = stack_names(profile)
    s = sums(profile, window)
    ids = names.ids_or_none
    return names, s.by(2, ids, len(names)), s if ids is None else None


def path_ticks(profile: Profile, window: Window = None) -> tuple[StackNames, np.ndarray]:
    """The folded paths (stacks merged by name, as flamegraph.pl merges them) and the
    self ticks of each, indexed by path id; parents have smaller ids than children."""
    return path_sums(profile, window)[:2]


def folded_lines(
    profile: Profile, window: Window = None
) -> tuple[StackNames, np.ndarray, np.ndarray]:
    """``folded`` as arrays: the path ids of its lines, in order, and their whole µs."""
    # The byte order first: its temporaries then meet fewer arrays (a capture where
    # every record has its own stack has about as many paths as records).
    stack_names(profile).order()
    names, ticks = path_ticks(profile, window)
    us = _whole_us(ticks, profile.timer_freq)
    if us is None:
        us = np.array([round_us(profile, t) for t in ticks.tolist()], np.int64)
    keep = names.sorted(us > 0)
    return names, keep, us[keep]


def _whole_us(ticks: np.ndarray, f: int) -> np.ndarray | None:
    """round_us of every tick count, or None unless all are whole and small enough for
    int64 arithmetic."""
    if len(ticks) and not (0 <= ticks.min() <= ticks.max() < 2**62 / 2_000_000):
        return None
    us = ticks.astype(np.int64)
    if not np.array_equal(us, ticks):
        return None
    us *= 2_000_000
    us += f
    us //= 2 * f
    return us


def folded(profile: Profile, window: Window = None) -> dict[str, int]:
    """Folded stacks per CLARIFICATIONS: stack string -> whole µs, zero lines dropped,
    sorted by byte order. Same-name functions (statics) share a frame string, so their
    stacks are summed as strings before rounding."""
    names, keep, us = folded_lines(profile, window)
    return dict(zip(names.texts(keep), us.tolist(), strict=True))


@dataclass(frozen=True, slots=True)
class FunctionStat:
    frame: FrameId  # stable for the life of the profile
    name: str
    label: str
    file: str | None
    line: int | None
    calls: int
    total_us: float  # inclusive; nested recursive calls counted once
    self_us: float
    min_us: float  # per call, inclusive
    max_us: float
    mean_us: float
    pct: float  # total_us as a share of the window's profiled time (shares.py), in %
    self_pct: float

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}

    @property
    def where(self) -> str | None:
        """The file shown next to the name (frames.where): tells same-name statics apart."""
        return where(self.name, self.label, self.file)


def function_stats(profile: Profile, window: Window = None) -> list[FunctionStat]:
    """Per-function statistics, sorted by self time, then total, then label; shares of
    the window's profiled time (shares.profiled_us of these same stats)."""
    s = sums(profile, window)
    us = 1e6 / profile.timer_freq
    have = np.flatnonzero(s.f_calls)
    frames = profile.frames
    cols = zip(
        have.tolist(),
        s.f_calls[have].tolist(),
        s.f_total[have].tolist(),
        s.f_self[have].tolist(),
        s.f_min[have].tolist(),
        s.f_max[have].tolist(),
        s.f_sum[have].tolist(),
        strict=True,
    )
    rows = []
    for fid, calls, total, self_t, t_min, t_max, t_sum in cols:
        fr = frames[fid]
        rows.append((-self_t * us, -total * us, fr.label, fid, fr, calls, t_min, t_max, t_sum))
    rows.sort(key=lambda r: r[:3])
    # The sorted stats' self times, summed in their order: what profiled_us gives.
    profiled = profiled_us(-r[0] for r in rows)
    return [
        FunctionStat(
            frame=fid,
            name=fr.name,
            label=label,
            file=fr.file,
            line=fr.line,
            calls=calls,
            total_us=-neg_total,
            self_us=-neg_self,
            min_us=t_min * us,
            max_us=t_max * us,
            mean_us=t_sum * us / calls,
            pct=share_pct(-neg_total, profiled),
            self_pct=share_pct(-neg_self, profiled),
        )
        for neg_self, neg_total, label, fid, fr, calls, t_min, t_max, t_sum in rows
    ]


def call_spread(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per frame, over every call: the sums of squared self and inclusive ticks, and the
    largest self ticks of one call (the largest inclusive is ``Sums.f_max``, the stats'
    ``max_us``). With the counts and sums they give each function's spread per call,
    which ``compare`` needs to tell a change from noise (and to set aside one call that
    alone holds most of it)."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n_frames = len(profile.frames)
        self_sq, incl_sq, self_max = np.zeros(n_frames), np.zeros(n_frames), np.zeros(n_frames)
        for d, lv in profile.levels.items():  # in this order: squares may round when summed
            incl, excl = call_times(profile, d, 0, lv.n)
            fid = profile.frame_ids(lv)
            np.maximum.at(self_max, fid, excl)
            self_sq += np.bincount(fid, weights=np.square(excl, out=excl), minlength=n_frames)
            incl_sq += np.bincount(fid, weights=np.square(incl, out=incl), minlength=n_frames)
        return self_sq, incl_sq, self_max

    return profile.cached("call_spread", compute)
