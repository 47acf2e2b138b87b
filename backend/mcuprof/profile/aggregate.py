"""Aggregates over the reconstructed call tree: stacks, folded lines, function stats.

Stacks are interned per depth with one np.unique over (parent stack, frame) keys, so
every per-record step is vectorised; only per-stack and per-frame work is Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .frames import UNKNOWN_FRAME, Frame, where
from .paths import DepthRuns, Depths, StackNames, depth_cuts  # noqa: F401
from .shares import profiled_us, share_pct
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
        np.logical_not(hit, out=hit)
        idx = idx[hit]
        anc = parent[anc[hit]]
        del hit
        live = anc >= 0
        if not live.all():
            idx, anc = idx[live], anc[live]
        del live
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


class Sums:
    """Per-stack and per-frame sums for one window, in ticks.

    The per-stack arrays (``calls``, ``total``, ``self_``) may be given as running sums
    (``base``) plus the few stacks a live tail adds to (``extra``), and are then made when
    first read: an export that reads one of them pays for one copy, not three. ``settle``
    makes them all before the running sums change."""

    __slots__ = (
        "__weakref__",
        "_base",
        "_extra",
        "_made",
        "f_calls",
        "f_max",
        "f_min",
        "f_self",
        "f_sum",
        "f_total",
        "span",
    )

    def __init__(
        self,
        tally: Tally,
        span: float,  # ticks covered: capture length or window length
        extra: tuple[np.ndarray, tuple[np.ndarray, ...]] | None = None,
    ) -> None:
        """The sums of ``tally`` (its per-stack arrays, plus ``extra`` when given), read
        as they are, not copied; a frame without calls has a minimum of 0."""
        stack_sums = (tally.calls, tally.total, tally.self_)
        self._base: tuple[np.ndarray, ...] | None = stack_sums if extra else None
        self._extra = extra  # (stack ids, their additions to calls, total, self_)
        self._made: list[np.ndarray | None] = [None] * 3 if extra else list(stack_sums)
        self.f_calls, self.f_total, self.f_self = tally.f_calls, tally.f_total, tally.f_self
        self.f_min = np.where(tally.f_calls == 0, 0.0, tally.f_min)
        self.f_max, self.f_sum = tally.f_max, tally.f_sum
        self.span = span

    def _stack(self, k: int) -> np.ndarray:
        made = self._made[k]
        if made is None:
            assert self._base is not None and self._extra is not None
            ids, add = self._extra
            made = self._base[k].copy()
            made[ids] += add[k]
            self._made[k] = made
        return made

    @property
    def calls(self) -> np.ndarray:
        """Per stack."""
        return self._stack(0)

    @property
    def total(self) -> np.ndarray:
        """Per stack, inclusive (float64 ticks)."""
        return self._stack(1)

    @property
    def self_(self) -> np.ndarray:
        return self._stack(2)

    def by(self, k: int, ids: np.ndarray | None, n: int) -> np.ndarray:
        """np.bincount(ids, weights=<per-stack array k>[: len(ids)], minlength=n) (k: 0
        calls, 1 total, 2 self_), without making the array when it is not made yet. Lazy
        sums are of whole ticks, which add up exactly in any order. ``ids`` None: each
        stack is its own group (ids 0..n-1), a copy instead of a count."""
        made = self._made[k]
        if ids is None:
            base = made if made is not None else self._base[k]  # type: ignore[index]
            out = np.add(base[:n], 0.0, dtype=np.float64)  # as bincount: -0.0 made 0.0
            if made is None:
                at, add = self._extra  # type: ignore[misc]
                inside = at < n
                out[at[inside]] += add[k][inside] + 0.0
            return out
        if made is not None:
            return _count(ids, made[: len(ids)], n)
        assert self._base is not None and self._extra is not None
        at, add = self._extra
        out = _count(ids, self._base[k][: len(ids)], n)
        inside = at < len(ids)
        np.add.at(out, ids[at[inside]], add[k][inside])  # whole ticks: exact in any order
        return out

    def pick(self, k: int, ids: np.ndarray) -> np.ndarray:
        """``by(k, None, n)[ids]`` (float64) for a few stacks, without a copy of the
        per-stack array."""
        made = self._made[k]
        if made is not None:
            return np.add(made[ids], 0.0, dtype=np.float64)
        assert self._base is not None and self._extra is not None
        out = np.add(self._base[k][ids], 0.0, dtype=np.float64)
        at, add = self._extra
        pos = np.searchsorted(at, ids)  # at: sorted, distinct (np.unique)
        pos[pos == len(at)] = 0
        hit = (at[pos] == ids) if len(at) else np.zeros(len(ids), bool)
        out[hit] += add[k][pos[hit]] + 0.0
        return out

    def settle(self) -> None:
        """Make the per-stack arrays not made yet: their running sums are about to change."""
        if self._base is not None:
            for k in range(3):
                self._stack(k)
            self._base = self._extra = None


def _count(ids: np.ndarray, weights: np.ndarray, n: int) -> np.ndarray:
    """np.bincount(ids, weights, minlength=n) (float64), added in place by ufunc.at in
    the weights' own dtype: no int64 copy of the ids nor float64 one of the weights,
    and the same sums (float64 ones in the same order; integer ones exact)."""
    if len(ids) and int(ids.max()) >= n:
        n = int(ids.max()) + 1
    out = np.zeros(n, np.float64 if weights.dtype.kind == "f" else np.int64)
    np.add.at(out, ids, weights if weights.dtype.kind == "f" else np.asarray(weights, np.int64))
    return out if out.dtype == np.float64 else out.astype(np.float64)


def _whole(x: np.ndarray) -> bool:
    return len(x) == 0 or (bool(np.all(x == np.floor(x))) and float(np.abs(x).max()) < 2**52)


ALONE = 8  # see Tally.add_parts
_NONE = np.empty(0, np.int64)


# The running sums, in ticks: (name, dtype, value before any call). Declared once here:
# Tally holds them, the aggregator grows arrays of them, Sums reads them.
STACK_SUMS = (("calls", np.int64, 0), ("total", np.float64, 0), ("self_", np.float64, 0))
FRAME_SUMS = (
    ("f_calls", np.int64, 0),
    ("f_total", np.float64, 0),  # outermost calls only (recursion counted once)
    ("f_self", np.float64, 0),
    ("f_sum", np.float64, 0),  # every call's inclusive time (for the mean)
    ("f_min", np.float64, np.inf),  # per call, inclusive
    ("f_max", np.float64, 0),
)


@dataclass
class Tally:
    """The running sums (STACK_SUMS per stack, FRAME_SUMS per frame) in ticks, added to in
    place. The batch path and the live (incremental) path both count calls through
    ``add``."""

    calls: np.ndarray
    total: np.ndarray
    self_: np.ndarray
    f_calls: np.ndarray
    f_total: np.ndarray
    f_self: np.ndarray
    f_sum: np.ndarray
    f_min: np.ndarray
    f_max: np.ndarray

    @classmethod
    def zeros(cls, n_stacks: int, n_frames: int) -> Tally:
        return cls(
            **{k: np.full(n_stacks, v, t) for k, t, v in STACK_SUMS},
            **{k: np.full(n_frames, v, t) for k, t, v in FRAME_SUMS},
        )

    def copy(self) -> Tally:
        return Tally(**{k: np.array(a) for k, a in vars(self).items()})

    def add(
        self,
        stack: np.ndarray,
        frame: np.ndarray,
        inclusive: np.ndarray,
        exclusive: np.ndarray,
        outermost: np.ndarray | None,
        by_stack: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Count calls: their stack and frame ids, inclusive and self ticks, and which
        are a frame's outermost call (so recursion adds to ``f_total`` once).
        ``by_stack``: each stack's frame and nested mark, given when every time is whole
        ticks (whose float64 sums are exact in any order): the per-frame sums are then
        those of the per-stack ones, a pass over the stacks instead of the records."""
        n_st, n_fr = len(self.calls), len(self.f_calls)
        if by_stack is not None and len(stack):
            self._add_by_stack(stack, frame, inclusive, exclusive, *by_stack)
            return
        self.calls += np.bincount(stack, minlength=n_st)
        self.total += np.bincount(stack, weights=inclusive, minlength=n_st)
        self.self_ += np.bincount(stack, weights=exclusive, minlength=n_st)
        self.f_calls += np.bincount(frame, minlength=n_fr)
        self.f_self += np.bincount(frame, weights=exclusive, minlength=n_fr)
        self.f_sum += np.bincount(frame, weights=inclusive, minlength=n_fr)
        if outermost.all():  # no recursion: no copies
            self.f_total += np.bincount(frame, weights=inclusive, minlength=n_fr)
        else:
            self.f_total += np.bincount(
                frame[outermost], weights=inclusive[outermost], minlength=n_fr
            )
        np.minimum.at(self.f_min, frame, inclusive)
        np.maximum.at(self.f_max, frame, inclusive)

    def _add_by_stack(
        self,
        stack: np.ndarray,
        frame: np.ndarray,
        inclusive: np.ndarray,
        exclusive: np.ndarray,
        stack_frame: np.ndarray,
        stack_nested: np.ndarray,
    ) -> None:
        n_fr = len(self.f_calls)
        # A depth's stacks: ids in [lo, hi)
        lo, hi = int(stack.min()), int(stack.max()) + 1
        # Added in place (ufunc.at: no copy of the ids, as bincount makes, and no
        # per-stack temporary when, as on a capture where every call has its own stack,
        # the stacks are about as many as the calls).
        one = np.broadcast_to(np.int64(1), len(stack))
        np.add.at(self.calls, stack, one)
        np.add.at(self.f_calls, frame, one)
        if 2 * (hi - lo) >= len(stack):  # many stacks: per-frame sums over the calls
            np.add.at(self.self_, stack, exclusive)
            np.add.at(self.f_self, frame, exclusive)
            np.add.at(self.total, stack, inclusive)
            before = self.f_sum.copy()
            np.add.at(self.f_sum, frame, inclusive)
            self.f_total += self.f_sum - before  # whole ticks: exact
            del before
            if stack_nested[lo:hi].any():  # inside an outer call of the same frame:
                inner = np.flatnonzero(stack_nested[stack])  # counted there, not again
                np.subtract.at(self.f_total, frame[inner], inclusive[inner])
                del inner
        else:  # few stacks: per-frame sums over the stacks' sums (taken as differences)
            # stack 0 ("[unknown]", frame -1) has no calls
            fr = stack_frame[lo:hi] if lo > 0 else np.maximum(stack_frame[lo:hi], 0)
            add = self.self_[lo:hi].copy()
            np.add.at(self.self_, stack, exclusive)
            np.subtract(self.self_[lo:hi], add, out=add)
            self.f_self += np.bincount(fr, weights=add, minlength=n_fr)
            add = self.total[lo:hi].copy()
            np.add.at(self.total, stack, inclusive)
            np.subtract(self.total[lo:hi], add, out=add)
            self.f_sum += np.bincount(fr, weights=add, minlength=n_fr)
            nested = stack_nested[lo:hi]
            if nested.any():
                add[nested] = 0.0  # inside an outer call of the same frame: counted there
            self.f_total += np.bincount(fr, weights=add, minlength=n_fr)
            del add, fr
        np.minimum.at(self.f_min, frame, inclusive)
        np.maximum.at(self.f_max, frame, inclusive)

    def add_parts(
        self,
        parts: list[tuple[np.ndarray, ...]],
        whole: bool | None = None,
        by_stack: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """``add`` of several groups of calls, in time linear in their rows whatever their
        number: a group at least 1/ALONE as long as the tally is added alone (its
        O(stacks) cost is paid by its own rows, and no copy of it is made), the shorter
        ones together.
        Only when every time is whole ticks (no window cut), whose float64 sums are exact
        in any order: otherwise one pass in the given order, so results never depend on
        the grouping. ``whole`` says so when the caller knows (durations and what is left
        of them after the children's); ``by_stack`` as for ``add``, used when whole."""
        size = len(self.calls) + len(self.f_calls)
        if whole is None:
            whole = all(_whole(p[2]) and _whole(p[3]) for p in parts)
        small = []
        for part in parts:
            if whole and ALONE * len(part[0]) >= size:
                self.add(*part, by_stack=by_stack)
            else:
                small.append(part)
        if small:
            cols = (np.concatenate(c) for c in zip(*small, strict=True))
            self.add(*cols, by_stack=by_stack if whole else None)

    def plus(self, other: Tally) -> Tally:
        return Tally(
            self.calls + other.calls,
            self.total + other.total,
            self.self_ + other.self_,
            self.f_calls + other.f_calls,
            self.f_total + other.f_total,
            self.f_self + other.f_self,
            self.f_sum + other.f_sum,
            np.minimum(self.f_min, other.f_min),
            np.maximum(self.f_max, other.f_max),
        )

    def sums(self, span: float) -> Sums:
        return Sums(self, span)

    def with_tail(self, parts: list[tuple[np.ndarray, ...]], span: float) -> Sums:
        """The sums of this tally and ``parts`` (calls as for ``add``, in whole ticks),
        leaving the tally as it is. A short tail is tallied over the stacks it touches
        alone: the per-stack sums are these plus that, made when first read (``Sums``),
        rather than three copies made now. Whole ticks sum exactly in any order, so
        both ways give the same numbers."""
        rows = sum(len(p[0]) for p in parts)
        if ALONE * rows >= len(self.calls) + len(self.f_calls):
            every = self.copy()
            every.add_parts(parts, whole=True)
            return every.sums(span)
        if not parts:
            parts = [(_NONE, _NONE, np.empty(0), np.empty(0), np.empty(0, bool))]
        sid, fid, incl, excl, outer = (np.concatenate(c) for c in zip(*parts, strict=True))
        ids, local = np.unique(sid, return_inverse=True)
        # The tail's own per-stack sums (of the stacks it touches), and copies of the
        # per-frame ones to add it to.
        frame_sums = {k: getattr(self, k).copy() for k, _, _ in FRAME_SUMS}
        tail = Tally(**{k: np.zeros(len(ids), t) for k, t, _ in STACK_SUMS}, **frame_sums)
        tail.add(local.reshape(-1), fid, incl, excl, outer)
        both = Tally(self.calls, self.total, self.self_, **frame_sums)
        return Sums(both, span, extra=(ids, (tail.calls, tail.total, tail.self_)))


def window_ticks(profile: Profile, window: Window) -> tuple[float, float] | None:
    if window is None:
        return None
    a, b = sorted((float(window[0]), float(window[1])))
    return profile.ticks(a), profile.ticks(b)


def sums(profile: Profile, window: Window = None) -> Sums:
    if window is None:
        return _live(profile)[1]
    key = ("sums", float(window[0]), float(window[1]))
    return profile.cached(key, lambda: full_sums(profile, window_ticks(profile, window)))


def _slice(level: Level, win: tuple[float, float] | None) -> tuple[int, int]:
    if win is None:
        return 0, level.n
    lo = level.first_ending_at(math.floor(win[0]))
    hi = int(np.searchsorted(level.entry, math.ceil(win[1]), side="right"))
    return lo, max(lo, hi)


def full_sums(profile: Profile, win: tuple[float, float] | None, st: Stacks | None = None) -> Sums:
    """Sums over every record (in the window), computed from scratch."""
    st = st or stacks(profile)
    n_frames = len(profile.frames)
    depths = sorted(profile.levels)
    spans = {d: _slice(profile.levels[d], win) for d in depths}
    eff: dict[int, np.ndarray] = {}
    inwin: dict[int, np.ndarray] = {}
    for d in depths:
        lv = profile.levels[d]
        lo, hi = spans[d]
        e = lv.entry[lo:hi]
        dur = lv.dur[lo:hi]
        if win is None:
            eff[d] = dur.astype(np.float64)
            inwin[d] = np.ones(hi - lo, bool)
        else:
            ef = e.astype(np.float64)
            xf = ef + dur
            eff[d] = np.clip(np.minimum(xf, win[1]) - np.maximum(ef, win[0]), 0.0, None)
            inwin[d] = (ef <= win[1]) & (xf >= win[0])
    tally = Tally.zeros(st.size, n_frames)
    parts = []
    for d in depths:
        lv = profile.levels[d]
        lo, hi = spans[d]
        child_sum = np.zeros(hi - lo)
        below = profile.levels.get(d + 1)
        if below is not None:
            blo, bhi = spans[d + 1]
            p = below.parent[blo:bhi]
            use = (p >= 0) & inwin[d + 1]
            # In-window children always have in-window parents, so they fall in [lo, hi).
            child_sum = np.bincount(p[use] - lo, weights=eff[d + 1][use], minlength=hi - lo)
        m = inwin[d]
        sid = st.per_level[d][lo:hi][m]
        fid = profile.frame_ids(lv, lo, hi)[m]
        ef = eff[d][m]
        parts.append((sid, fid, ef, np.maximum(ef - child_sum[m], 0.0), ~st.nested[sid]))
    tally.add_parts(parts)
    span = float(profile.t1_ticks - profile.t0_ticks) if win is None else win[1] - win[0]
    return tally.sums(span)


def round_us(profile: Profile, ticks: float) -> int:
    """Whole microseconds, rounded half up, once."""
    f = profile.timer_freq
    if float(ticks).is_integer():
        return (int(ticks) * 2_000_000 + f) // (2 * f)
    return math.floor(ticks * 1e6 / f + 0.5)


def _per_string(profile: Profile, window: Window) -> tuple[StackNames, np.ndarray]:
    names = stack_names(profile)
    s = sums(profile, window)
    return names, s.by(2, names.ids_or_none, len(names))


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
    return _per_string(profile, window)


def folded_ticks(profile: Profile, window: Window = None) -> dict[str, float]:
    """Self ticks per folded stack string (unrounded, unsorted, no zero lines)."""
    names, ticks = _per_string(profile, window)
    keep = np.flatnonzero(ticks > 0)
    return dict(zip(names.texts(keep), ticks[keep].tolist(), strict=True))


def folded_lines(
    profile: Profile, window: Window = None
) -> tuple[StackNames, np.ndarray, np.ndarray]:
    """``folded`` as arrays: the path ids of its lines, in order, and their whole µs."""
    # The byte order first: its temporaries then meet fewer arrays (a capture where
    # every record has its own stack has about as many paths as records).
    stack_names(profile).order()
    names, ticks = _per_string(profile, window)
    us = _whole_us(ticks, profile.timer_freq)
    if us is None:
        us = np.array([round_us(profile, t) for t in ticks.tolist()], np.int64)
    del ticks
    keep = names.sorted(us > 0)
    return names, keep, us[keep]


_ROUND_PIECE = 1 << 18  # paths whose ticks are rounded to µs at a time


def _whole_us(ticks: np.ndarray, f: int) -> np.ndarray | None:
    """round_us of every tick count, or None unless all are whole and small enough for
    int64 arithmetic. Made a piece at a time, in int32 when the largest fits (the paths
    can be about as many as the records)."""
    if len(ticks) and not (0 <= ticks.min() <= ticks.max() < 2**62 / 2_000_000):
        return None
    top = (int(ticks.max()) * 2_000_000 + f) // (2 * f) if len(ticks) else 0
    us = np.empty(len(ticks), np.int32 if top < 2**31 else np.int64)
    for a in range(0, len(ticks), _ROUND_PIECE):
        t = ticks[a : a + _ROUND_PIECE]
        piece = t.astype(np.int64)
        if not bool(np.all(piece == t)):
            return None
        piece *= 2_000_000
        piece += f
        piece //= 2 * f
        us[a : a + _ROUND_PIECE] = piece
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


def call_spread(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per frame, over every call: the sums of squared self and inclusive ticks, and the
    largest self and inclusive ticks of one call. With the counts and sums they give each
    function's spread per call, which ``compare`` needs to tell a change from noise (and
    to set aside one call that alone holds most of it). One pass per depth, its
    temporaries made in place."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        n_frames = len(profile.frames)
        self_sq, incl_sq = np.zeros(n_frames), np.zeros(n_frames)
        self_max, incl_max = np.zeros(n_frames), np.zeros(n_frames)
        for d, lv in profile.levels.items():
            # intp: ufunc.at takes its fast path with native indices (~7x on int32)
            fid = profile.frame_ids(lv).astype(np.intp)
            dur = lv.dur.astype(np.float64)
            below = profile.levels.get(d + 1)
            if below is None:
                self_t = dur.copy()
            else:
                p, w = below.parent, below.dur
                if int(p.min(initial=0)) < 0:  # orphans below: no parent to add to
                    has = p >= 0
                    p, w = p[has], w[has]
                    del has
                self_t = np.bincount(p, weights=w, minlength=lv.n)
                del p, w
                np.subtract(dur, self_t, out=self_t)  # the children's time off
                np.maximum(self_t, 0.0, out=self_t)
            np.maximum.at(self_max, fid, self_t)
            np.maximum.at(incl_max, fid, dur)
            np.multiply(self_t, self_t, out=self_t)
            self_sq += np.bincount(fid, weights=self_t, minlength=n_frames)
            np.multiply(dur, dur, out=dur)
            incl_sq += np.bincount(fid, weights=dur, minlength=n_frames)
            del fid, dur, self_t
        return self_sq, incl_sq, self_max, incl_max

    return profile.cached("call_spread", compute)
