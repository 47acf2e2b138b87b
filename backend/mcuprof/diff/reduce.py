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

from ..profile.aggregate import UNKNOWN_ID, call_squares, mark_nested
from ..profile.frames import AddressTable
from ..profile.incremental import unique_pairs
from ..profile.timebase import place
from .table import Spread, capture_span

if TYPE_CHECKING:
    from ..profile import Profile

# A float64 sum of whole numbers is exact, in any order, while it stays below 2**53: a
# computed sum of non-negative terms below 2**52 says every partial sum was exact.
_EXACT = float(2**52)
_BLOCK = 256  # values per block in ``last_at_least``'s block maxima
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
    us2 = (1e6 / profile.timer_freq) ** 2
    spread = {
        s.label: (float(self_sq[s.frame]) * us2, s.mean_us * s.calls, float(incl_sq[s.frame]) * us2)
        for s in stats
    }
    return Reduced(
        n_records=int(profile.n_records),
        duration_us=float(profile.duration_us),
        stats=[
            FunctionTotals(s.name, s.label, s.calls, s.self_us, s.total_us, s.mean_us)
            for s in stats
        ],
        spread=spread,
        folded=dict(profile.folded()) if folded else None,
    )


# ---------------------------------------------------------------------- from records


def last_at_least(values: np.ndarray, upto: np.ndarray, x: np.ndarray) -> np.ndarray:
    """For each query i, the largest j <= upto[i] with values[j] >= x[i], or -1.

    The query's own position first (a sane trace stops there), a prefix maximum to
    settle the queries with no answer at all (orphans), a few steps back, then the
    query's own block of _BLOCK values, then the same question one level up on the
    blocks' maxima, whose answer is the block holding the result."""
    ok = upto >= 0
    hit = values[upto] >= x  # (upto -1 reads the last value: masked by ok)
    hit &= ok
    out = np.where(hit, upto, -1)
    if bool(hit.all()):
        return out
    live = np.flatnonzero(ok & ~hit)
    del ok, hit
    if len(live) == 0:
        return out
    reach = np.maximum.accumulate(values)
    live = live[reach[upto[live]] >= x[live]]
    del reach
    j = upto[live] - 1
    for _ in range(_STEPS):  # overlapping records (resets): the answer is often close
        if len(live) == 0:
            return out
        hit = values[j] >= x[live]
        out[live[hit]] = j[hit]
        live, j = live[~hit], j[~hit] - 1
    # j >= 0 still: the prefix maximum promised an answer at or before upto
    found, pos = _scan_blocks(values, j // _BLOCK, j, x[live])
    out[live[found]] = pos[found]
    live, j = live[~found], j[~found]
    if len(live) == 0:
        return out
    n = len(values)
    n_blocks = -(-n // _BLOCK)
    padded = np.full(n_blocks * _BLOCK, np.iinfo(np.int64).min, np.int64)
    padded[:n] = values
    maxima = padded.reshape(n_blocks, _BLOCK).max(axis=1)
    del padded
    blk = last_at_least(maxima, j // _BLOCK - 1, x[live])
    _, pos = _scan_blocks(values, blk, blk * _BLOCK + _BLOCK - 1, x[live])
    out[live] = pos
    return out


_STEPS = 16
_GATHER = 1 << 12  # queries per (queries x _BLOCK) gather: a few MB at a time


def _scan_blocks(
    values: np.ndarray, block: np.ndarray, upto: np.ndarray, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per query, the last position in ``block`` at or before ``upto`` whose value is at
    least ``x``: (found, position)."""
    found = np.zeros(len(block), bool)
    pos = np.full(len(block), -1, np.int64)
    n = len(values)
    for k in range(0, len(block), _GATHER):
        b, u, xs = block[k : k + _GATHER], upto[k : k + _GATHER], x[k : k + _GATHER]
        cols = b[:, None] * _BLOCK + np.arange(_BLOCK)
        inside = (cols <= u[:, None]) & (cols < n)
        hits = inside & (values[np.where(inside, cols, 0)] >= xs[:, None])
        any_hit = hits.any(axis=1)
        last = _BLOCK - 1 - np.argmax(hits[:, ::-1], axis=1)
        found[k : k + _GATHER] = any_hit
        pos[k : k + _GATHER] = np.where(any_hit, b * _BLOCK + last, -1)
    return found, pos


def parents(
    up_entry: np.ndarray, up_exit: np.ndarray, entry: np.ndarray, exit_: np.ndarray
) -> np.ndarray:
    """Position of each child's parent among the records one level up (sorted by entry)
    per CLARIFICATIONS: the record whose [entry, exit] contains the child's, entered
    last; -1 for none (an orphan)."""
    upto = count_at_most(up_entry, entry, ascending=True)
    upto -= 1
    return last_at_least(up_exit, upto, exit_)


def count_at_most(values: np.ndarray, x: np.ndarray, ascending: bool = False) -> np.ndarray:
    """``np.searchsorted(values, x, side="right")`` (``values`` ascending; ``ascending``:
    so are the queries). Values that span fewer ticks than twice their number and the
    queries' (a target that resets often sends the same few times again and again) are
    counted per tick once, and each query reads its count: linear, where a binary search
    each is not."""
    if len(values) == 0 or len(x) == 0:
        return np.zeros(len(x), np.int64)
    lo = int(values[0])
    span = int(values[-1]) - lo + 1
    if span > 2 * (len(values) + len(x)):
        if ascending:
            return _search_ascending(values, x)
        return np.searchsorted(values, x, side="right")
    counts = np.cumsum(np.bincount(values - lo, minlength=span))  # values <= lo + i
    at = np.clip(x - lo, -1, span - 1)
    out = counts[at]
    out[at < 0] = 0  # below every value
    return out


_WINDOW = 1 << 12  # ascending queries searched per window of the values they fall in


def _search_ascending(values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``np.searchsorted(values, x, side="right")`` for ascending ``x``: each run of
    _WINDOW queries is searched only among the values between its first and last
    query's answers (fewer steps, in cache), the runs' bounds in one search."""
    n = len(x)
    if n <= 2 * _WINDOW:
        return np.searchsorted(values, x, side="right")
    starts = np.arange(0, n, _WINDOW)
    lo = np.searchsorted(values, x[starts], side="right").tolist()
    hi = np.searchsorted(values, x[np.minimum(starts + _WINDOW, n) - 1], side="right").tolist()
    out = np.empty(n, np.int64)
    for s, a, b in zip(starts.tolist(), lo, hi, strict=True):
        part = out[s : s + _WINDOW]
        part[:] = np.searchsorted(values[a:b], x[s : s + _WINDOW], side="right")
        part += a
    return out


def intern(pst: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (parent stack, frame) pairs, in (parent stack, frame) order, and the
    index of each input pair among them: the profile's own ``unique_pairs`` (a table
    lookup when the pairs span a range a few times their count, else one sort of the
    pairs packed with their positions, no argsort)."""
    return unique_pairs(pst, frame)


def _by_depth(depth: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(depth, positions of its records in stream order), shallowest first."""
    present = np.flatnonzero(np.bincount(depth))
    if len(present) <= 8:
        return [(d, np.flatnonzero(depth == d)) for d in present.tolist()]
    order = np.argsort(depth, kind="stable")
    cuts = np.flatnonzero(np.diff(depth[order])) + 1
    return [(int(depth[g[0]]), g) for g in np.split(order, cuts)]


_NONE = np.empty(0, np.int64)


@dataclass
class _Level:
    """One depth's records sorted by (entry, stream position)."""

    depth: int
    entry: np.ndarray  # int64 ticks
    dur: np.ndarray  # uint32 ticks
    frame: np.ndarray  # int32 frame id
    parent: np.ndarray | None = None  # position one level up, -1 for none
    exit: np.ndarray | None = None  # entry + dur, while the level below is placed
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
        self._parts: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}

    def add(self, records: np.ndarray) -> None:
        if len(records) == 0:
            return
        entry, dur, self._last_exit, lo, hi = place(records, self._last_exit)
        self._t0 = lo if self._t0 is None else min(self._t0, lo)
        self._t1 = hi if self._t1 is None else max(self._t1, hi)
        ids = self.table.ids(records["func_addr"])  # first: it grows the table
        frame = self.table.frame_of[ids]
        del ids
        for d, idx in _by_depth(records["depth"]):
            self._parts.setdefault(d, []).append((entry[idx], dur[idx], frame[idx]))
        self.n_records += len(records)

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
        calls, f_self, f_total, f_sum, self_sq, incl_sq = sums
        us = 1e6 / timer_freq
        us2 = us**2
        # Column by column, each element as the scalar expression would give it.
        fids = np.flatnonzero(calls)
        c = calls[fids]
        frames = self.table.frames
        rows = [
            (FunctionTotals(frames[f].name, frames[f].label, n_calls, s, t, m), ssq, isq)
            for f, n_calls, s, t, m, ssq, isq in zip(
                fids.tolist(),
                c.tolist(),
                (f_self[fids] * us).tolist(),
                (f_total[fids] * us).tolist(),
                (f_sum[fids] * us / c).tolist(),
                (self_sq[fids] * us2).tolist(),
                (incl_sq[fids] * us2).tolist(),
                strict=True,
            )
        ]
        rows.sort(key=lambda r: (-r[0].self_us, -r[0].total_us, r[0].label))
        stats = [r[0] for r in rows]
        # In stats order, as the Profile's way builds it (a label met twice: the last wins).
        spread = {s.label: (ssq, s.mean_us * s.calls, isq) for s, ssq, isq in rows}
        duration_us = float(self._t1 * us) - float(self._t0 * us)  # type: ignore[operator]
        return Reduced(n, duration_us, stats, spread)

    def _levels(self) -> list[_Level]:
        """Each depth's records sorted by entry (stably: equal entries in stream order),
        with their parents; the pieces go as they are joined."""
        levels: list[_Level] = []
        for d in sorted(self._parts):
            parts = self._parts.pop(d)
            cols = [np.concatenate(c) if len(c) > 1 else c[0] for c in zip(*parts, strict=True)]
            del parts
            e, dur, frame = cols
            if len(e) > 1 and not bool(np.all(e[1:] >= e[:-1])):
                order = stable_order(e)
                e, dur, frame = e[order], dur[order], frame[order]
                del order
            lv = _Level(d, e, dur, frame)
            up = levels[-1] if levels and levels[-1].depth == d - 1 else None
            if up is not None:
                if up.exit is None:
                    up.exit = up.entry + up.dur
                lv.exit = lv.entry + lv.dur  # kept for the level below
                lv.parent = parents(up.entry, up.exit, lv.entry, lv.exit).astype(np.int32)
            if levels:  # only the level below asks for entries and exits
                levels[-1].entry, levels[-1].exit = _NONE, None
            levels.append(lv)
            del cols, e, dur, frame
        levels[-1].entry, levels[-1].exit = _NONE, None
        return levels


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")``. Keys within 2**16 of each other (a target that
    resets often sends the same few times again and again) sort as 16-bit offsets, which
    numpy radix-sorts in one linear pass, where merging many short runs is n log n."""
    lo = int(keys.min())
    span = int(keys.max()) - lo
    if span < 1 << 16:
        small = np.subtract(keys, lo).astype(np.uint8 if span < 1 << 8 else np.uint16)
        return np.argsort(small, kind="stable")
    return np.argsort(keys, kind="stable")


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
    and the sums of squared self and inclusive ticks; None when not exact (see above).
    Each depth is summed per stack first (a stack has one frame), then per frame."""
    calls = np.zeros(n_frames, np.int64)
    sums = [np.zeros(n_frames) for _ in range(5)]  # self, total, every call, squares
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
    return calls, f_self, f_total, f_sum, self_sq, incl_sq


def _as_is(sums: np.ndarray) -> np.ndarray:
    return sums


def _fold(frame: np.ndarray, n_frames: int, per_stack: np.ndarray) -> np.ndarray:
    """Per-stack sums of one depth to per-frame sums (``frame``: each stack's)."""
    return np.bincount(frame, weights=per_stack, minlength=n_frames)
