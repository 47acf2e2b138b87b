"""One capture reduced to what a comparison reads: per-function calls, self and total
time, the spread of the calls, and the capture's length, plus (on request) its folded
stacks. ``compare`` keeps this and drops the capture's records before it reads the
other one.

Two ways in, with the same answers: ``reduce_profile`` reads a Profile's aggregates
(the web page's diffs, QS captures, folded stacks), and ``RecordReducer`` computes
them straight from a MiniProfiler capture's records in one pass per depth, without a
Profile's timeline levels and incremental aggregator (``compare``'s hot path).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..profile.aggregate import UNKNOWN_ID, call_maxima, call_squares, mark_nested
from ..profile.frames import AddressTable
from ..profile.incremental import unique_pairs
from ..profile.levels import Level
from ..profile.model import (
    depth_groups,
    is_sorted,
    set_parents,
    sort_entries,
    stream_candidates,
    worth_guessing,
)
from ..profile.timebase import place
from .table import Spread, capture_span

if TYPE_CHECKING:
    from ..profile import Profile

# A float64 sum of whole numbers is exact, in any order, while it stays below 2**53: a
# computed sum of non-negative terms below 2**52 says every partial sum was exact.
_EXACT = float(2**52)
_PER_STACK = 4  # records per stack under which a depth is summed per frame directly


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

    @property
    def span(self) -> tuple[float, float]:
        return capture_span(self.stats, self.duration_us)


def reduce_profile(profile: Profile, folded: bool = True) -> Reduced:
    """The reference way: the profile's own aggregates (whole capture)."""
    stats = list(profile.function_stats())
    self_sq, incl_sq = call_squares(profile)
    self_max, incl_max = call_maxima(profile)
    us = 1e6 / profile.timer_freq
    us2 = us**2
    spread = {
        s.label: (
            float(self_sq[s.frame]) * us2,
            s.mean_us * s.calls,
            float(incl_sq[s.frame]) * us2,
            float(self_max[s.frame]) * us,
            float(incl_max[s.frame]) * us,
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


# ---------------------------------------------------------------------- from records


def intern(pst: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (parent stack, frame) pairs, in (parent stack, frame) order, and the
    index of each input pair among them: the profile's own ``unique_pairs`` (a table
    lookup when the pairs span a range a few times their count, else one sort of the
    pairs packed with their positions, no argsort)."""
    return unique_pairs(pst, frame)


_NONE = np.empty(0, np.int64)


@dataclass
class _Level:
    """One depth's records sorted by (entry, stream position)."""

    depth: int
    entry: np.ndarray  # int64 ticks
    dur: np.ndarray  # uint32 ticks
    frame: np.ndarray  # int32 frame id
    parent: np.ndarray | None = None  # position one level up, -1 for none
    local: np.ndarray = field(default_factory=lambda: _NONE)  # stack id - first
    first: int = 0  # stack id of the depth's first stack
    n_stacks: int = 0  # the depth's stacks (every one has records)


class RecordReducer:
    """``reduce_profile`` of a Profile holding the records given to ``add`` (in stream
    order, in any split), computed without one: records are split by depth as they
    come (16 bytes each), and the call tree is rebuilt once, at ``finish``."""

    def __init__(self, symbols: Any, table: AddressTable | None = None) -> None:
        # ``table``: one shared with another capture read with the same symbols, so that
        # each address is resolved and named once (ids are only a capture's keys: stats
        # come out in their own order, by time and label).
        self.table = AddressTable(symbols) if table is None else table
        self.n_records = 0
        self._last_exit: int | None = None
        self._t0: int | None = None
        self._t1: int | None = None
        # Per depth, its pieces: entry, duration, frame, and the stream's parent guesses
        # (see ``_guesses``) or None.
        self._parts: dict[int, list[tuple[np.ndarray, ...]]] = {}
        self._seen: dict[int, int] = {}  # records of each depth so far
        self._last_entry: dict[int, int] = {}  # each depth's last entry so far
        self._unordered: set[int] = set()  # depths whose entries went back

    def add(self, records: np.ndarray) -> None:
        if len(records) == 0:
            return
        entry, dur, self._last_exit, lo, hi = place(records, self._last_exit)
        self._t0 = lo if self._t0 is None else min(self._t0, lo)
        self._t1 = hi if self._t1 is None else max(self._t1, hi)
        ids = self.table.ids(records["func_addr"])  # first: it grows the table
        frame = self.table.frame_of[ids]
        del ids
        depth = np.ascontiguousarray(records["depth"])  # read once per depth: not strided
        counts = []
        for idx in depth_groups(depth):
            d = int(depth[idx[0]])
            e = entry[idx]
            if d not in self._unordered and (
                not is_sorted(e) or e[0] < self._last_entry.get(d, e[0])
            ):
                self._unordered.add(d)
            self._last_entry[d] = int(e[-1])
            guess = self._guesses(depth, d, idx, len(records))
            self._parts.setdefault(d, []).append((e, dur[idx], frame[idx], guess))
            counts.append((d, len(idx)))
        for d, k in counts:  # after the guesses: they count the pieces before this one
            self._seen[d] = self._seen.get(d, 0) + k
        self.n_records += len(records)

    def _guesses(self, depth: np.ndarray, d: int, idx: np.ndarray, n: int) -> np.ndarray | None:
        """The parents the stream suggests for the records of depth ``d`` at positions
        ``idx`` (the profile's ``stream_candidates``, as ranks among the capture's records
        of depth d - 1), while both depths stay in stream order; None where not worth it."""
        if d == 0 or d in self._unordered or d - 1 in self._unordered:
            return None
        if not worth_guessing(len(idx), n):
            return None
        guess = stream_candidates(depth, d - 1, idx)
        guess += self._seen.get(d - 1, 0)
        return guess

    def finish(self, timer_freq: int) -> Reduced | None:
        """The capture reduced, at ``timer_freq``. None in the rare case where a float64
        sum would leave the range where it is exact while the Profile adds its terms in
        another order (a function at several depths whose squared call times pass 2**52
        ticks², i.e. calls of ~2**26 ticks and more): the caller then goes the Profile's
        way, for the very same numbers."""
        n = self.n_records
        if n == 0:
            return Reduced(0, 0.0, [], {})
        levels = self._levels()
        st_frame, nested = _stacks(levels)
        sums = _frame_sums(levels, st_frame, nested, len(self.table.frames))
        if sums is None:
            return None
        calls, f_self, f_total, f_sum, self_sq, incl_sq, self_max, incl_max = sums
        us = 1e6 / timer_freq
        us2 = us**2
        # Column by column, each element as the scalar expression would give it.
        fids = np.flatnonzero(calls)
        c = calls[fids]
        frames = self.table.frames
        rows = [
            (FunctionTotals(fr.name, fr.label, n_calls, s, t, m, fr.where), ssq, isq, sm, im)
            for fr, n_calls, s, t, m, ssq, isq, sm, im in zip(
                [frames[f] for f in fids.tolist()],
                c.tolist(),
                (f_self[fids] * us).tolist(),
                (f_total[fids] * us).tolist(),
                (f_sum[fids] * us / c).tolist(),
                (self_sq[fids] * us2).tolist(),
                (incl_sq[fids] * us2).tolist(),
                (self_max[fids] * us).tolist(),
                (incl_max[fids] * us).tolist(),
                strict=True,
            )
        ]
        rows.sort(key=lambda r: (-r[0].self_us, -r[0].total_us, r[0].label))
        stats = [r[0] for r in rows]
        # In stats order, as the Profile's way builds it (a label met twice: the last wins).
        spread = {s.label: (ssq, s.mean_us * s.calls, isq, sm, im) for s, ssq, isq, sm, im in rows}
        duration_us = float(self._t1 * us) - float(self._t0 * us)  # type: ignore[operator]
        return Reduced(n, duration_us, stats, spread)

    def _levels(self) -> list[_Level]:
        """Each depth's records sorted by entry (stably: equal entries in stream order),
        with their parents by the profile's own rule and search; the pieces go as they
        are joined."""
        levels: list[_Level] = []
        guessed = False  # the level above kept stream order (positions are stream ranks)
        for d in sorted(self._parts):
            parts = self._parts.pop(d)
            e, dur, frame = (
                np.concatenate(c) if len(c) > 1 else c[0]
                for c in list(zip(*parts, strict=True))[:3]
            )
            in_order = d not in self._unordered
            up = levels[-1] if levels and levels[-1].depth == d - 1 else None
            guess = None
            if in_order and guessed and up is not None and all(p[3] is not None for p in parts):
                guess = np.concatenate([p[3] for p in parts]) if len(parts) > 1 else parts[0][3]
            del parts
            if not in_order:
                e, perm = sort_entries(e)
                dur, frame = dur[perm], frame[perm]
                del perm
            lv = _Level(d, e, dur, frame)
            if up is not None:
                # The level above as a Level: its columns are these arrays (no copy).
                lv.parent = np.empty(len(e), np.int32)
                set_parents(Level.of(up.entry, up.dur, up.frame), e, dur, guess, lv.parent)
            if levels:  # only the level below asks for entries
                levels[-1].entry = _NONE
            levels.append(lv)
            guessed = in_order
            del e, dur, frame, guess
        levels[-1].entry = _NONE
        return levels


def _stacks(levels: list[_Level]) -> tuple[np.ndarray, np.ndarray]:
    """Intern every record's stack, depth by depth (``lv.local``: its index among its
    depth's stacks, from ``lv.first`` on in the capture's); per stack its frame, and
    whether that frame appears further up (recursion)."""
    st_parent: list[np.ndarray] = [np.array([-1], np.int64)]  # stack 0: "[unknown]"
    st_frame: list[np.ndarray] = [np.array([UNKNOWN_ID], np.int64)]
    count = 1
    prev: _Level | None = None
    for lv in levels:
        m = len(lv.frame)
        if lv.depth == 0:
            pst = np.full(m, -1, np.int64)
        elif lv.parent is None or prev is None:
            pst = np.zeros(m, np.int64)  # orphans hang under "[unknown]"
        else:
            pst = prev.local[lv.parent]  # type: ignore[index]
            pst += prev.first
            pst[lv.parent < 0] = 0
        p, f, local = intern(pst, lv.frame)
        lv.local = local.astype(np.int32)  # 4 bytes a record while the others wait
        del local
        lv.first, lv.n_stacks, lv.frame = count, len(p), _NONE
        st_parent.append(p)
        st_frame.append(f)
        count += len(p)
        prev = lv
        del pst
    parent = np.concatenate(st_parent).astype(np.int32)
    frame = np.concatenate(st_frame).astype(np.int32)
    nested = np.zeros(count, bool)
    mark_nested(parent, frame, nested, 0)
    return frame, nested


def _frame_sums(
    levels: list[_Level], st_frame: np.ndarray, nested: np.ndarray, n_frames: int
) -> tuple[np.ndarray, ...] | None:
    """Per frame: calls, self, total (outermost calls only), every call's inclusive sum,
    the sums of squared self and inclusive ticks, and the largest self and inclusive
    ticks of one call; None when not exact (see above).
    Each depth is summed per stack first (a stack has one frame), then per frame."""
    calls = np.zeros(n_frames, np.int64)
    sums = [np.zeros(n_frames) for _ in range(5)]  # self, total, every call, squares
    self_max, incl_max = np.zeros(n_frames), np.zeros(n_frames)  # the largest call
    whole = 0.0
    durf = levels[0].dur.astype(np.float64) if levels else _NONE
    for i, lv in enumerate(levels):
        below = levels[i + 1] if i + 1 < len(levels) else None
        below_f = below.dur.astype(np.float64) if below is not None else _NONE
        if below is not None and below.parent is not None:
            p, w = below.parent, below_f
            if len(p) and int(p.min()) < 0:  # orphans below: no parent to add to
                has = p >= 0
                p, w = p[has], w[has]
            self_t = np.bincount(p, weights=w, minlength=len(durf)).astype(np.float64, copy=False)
            del p, w  # (an empty bincount is int64)
            np.subtract(durf, self_t, out=self_t)
            np.maximum(self_t, 0.0, out=self_t)
        else:
            self_t = durf.copy()
        local = lv.local.astype(np.intp)
        m = lv.n_stacks
        frame = st_frame[lv.first : lv.first + m]
        outer = ~nested[lv.first : lv.first + m]
        f_self, f_total, f_sum, self_sq, incl_sq = sums
        direct = m * _PER_STACK > len(local)
        if direct:
            # About a stack per record (unique stacks): per-stack sums would cost what
            # the records do, so the records are summed per frame. A frame with one stack
            # sees the same additions in the same order; over several, all is exact.
            key, size, fold = frame.astype(np.intp)[local], n_frames, _as_is
            f_total += np.bincount(key, weights=np.where(outer[local], durf, 0.0), minlength=size)
            local = _NONE
        else:
            key, size = local, m
            fold = functools.partial(_fold, frame, n_frames)
        calls += fold(np.bincount(key, minlength=size)).astype(np.int64)  # exact in float64
        # One per-stack column at a time: a capture of unique stacks has as many.
        incl = np.bincount(key, weights=durf, minlength=size)
        whole += float(incl.sum())
        f_sum += fold(incl)
        if not direct:
            f_total += fold(np.where(outer, incl, 0.0))
        del incl
        f_self += fold(np.bincount(key, weights=self_t, minlength=size))
        # The largest call per frame, per stack first as the sums (max is exact in any
        # order; no per-record array of frames is made).
        for top, values in ((self_max, self_t), (incl_max, durf)):
            per = np.zeros(size)
            np.maximum.at(per, key, values)
            if direct:
                np.maximum(top, per, out=top)
            else:
                np.maximum.at(top, frame, per)
        np.multiply(self_t, self_t, out=self_t)
        self_sq += fold(np.bincount(key, weights=self_t, minlength=size))
        np.multiply(durf, durf, out=durf)
        incl_sq += fold(np.bincount(key, weights=durf, minlength=size))
        del self_t, local, key
        lv.dur = lv.local = lv.parent = _NONE  # done with: memory back
        durf = below_f
    # A frame with one stack has its sums from one bincount over the same records in
    # the same order as the Profile's; over several, the order of additions differs,
    # which only matters past the exact range.
    stacks_of = np.bincount(st_frame[1:], minlength=n_frames)
    if not whole < _EXACT or bool(np.any((stacks_of > 1) & (sums[4] >= _EXACT))):
        return None
    f_self, f_total, f_sum, self_sq, incl_sq = sums
    return calls, f_self, f_total, f_sum, self_sq, incl_sq, self_max, incl_max


def _as_is(sums: np.ndarray) -> np.ndarray:
    return sums


def _fold(frame: np.ndarray, n_frames: int, per_stack: np.ndarray) -> np.ndarray:
    """Per-stack sums of one depth to per-frame sums (``frame``: each stack's)."""
    return np.bincount(frame, weights=per_stack, minlength=n_frames)
