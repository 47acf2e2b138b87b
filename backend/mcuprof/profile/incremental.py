"""Aggregates that follow a live capture without recomputing the whole of it.

Records whose exit is older than a commit time T have their stack and self time
folded into running sums once; each query recomputes only the rest (the tail).
That is exact as long as no record arrives whose entry is before T: only such a
record can contain (adopt) a committed record or be contained by one. When one does,
everything is rebuilt, and T keeps twice the longest duration seen behind the newest
exit, so in a sane stream this happens a handful of times per capture at most.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .aggregate import ALONE, UNKNOWN_ID, StackNames, Stacks, Sums, Tally, mark_nested
from .columns import Column, Spill
from .paths import DepthRuns
from .paths import Grow as _Grow

if TYPE_CHECKING:
    from .model import Profile

_MASK32 = (1 << 32) - 1
_NO_KEYS = np.empty(0, np.int64)
_NO_IDS = np.empty(0, np.int32)
_IDS = 1 << 20  # keys whose positions are written at a time (sort_with_order)


def _unique_keys(pst: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (parent stack, frame) pairs, sorted (int32 halves of
    np.unique((pst << 32) | frame)), and each row's pair number (int32): ``unique_pairs``
    (a table lookup when the pairs span a range a few times their count, the usual case;
    else one sort), in the stack tables' int32."""
    hi, lo, inv = unique_pairs(pst, frame)
    return hi.astype(np.int32), lo.astype(np.int32), inv


def unique_pairs(hi: np.ndarray, lo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (hi, lo) pairs of two integer columns, sorted by hi then lo (int64
    each), and each row's pair number (int32): np.unique over the pairs numbered
    densely, (hi - min) * span(lo) + (lo - min), so that the sort has few bits to move."""
    if len(hi) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int32)
    h0, l0 = int(hi.min()), int(lo.min())
    width = int(lo.max()) - l0 + 1
    span = int(hi.max()) - h0 + 1
    limit = min(4 * len(hi) + 1024, (1 << 31) - 1)  # int32 codes
    fits = min(h0, l0) >= -(1 << 31) and max(h0 + span, l0 + width) <= 1 << 31
    if fits and span <= limit and width <= limit:
        got = _dense_pairs(hi, lo, h0, l0, span, width, limit)
        if got is not None:
            return got
    code = hi.astype(np.int64)
    code -= h0
    code *= width
    code += lo
    code -= l0
    uniq, inv = unique_inverse(code, own=True)
    del code
    h = uniq // width
    low = np.remainder(uniq, width, out=uniq)
    h += h0
    low += l0
    return h, low, inv


def ranks(x: np.ndarray, x0: int, span: int, own: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``x`` (in [x0, x0 + span)), sorted, and each row's rank
    among them (int32), by a table as long as the span. ``own``: ``x`` (int32) may be
    overwritten."""
    seen = np.zeros(span, bool)
    off = x if own and x.dtype == np.int32 else x.astype(np.int32)
    if x0:
        off -= x0
    seen[off] = True
    rank = np.cumsum(seen, dtype=np.int32)
    rank -= 1
    # Indexing, not np.take(out=off): take into its own indices buffers an intp copy
    # of them and the result (3x the offsets), indexing only makes the result.
    inv = rank[off]
    del rank, off
    values = np.flatnonzero(seen)
    values += x0
    return values, inv


def _dense_pairs(
    hi: np.ndarray, lo: np.ndarray, h0: int, l0: int, span: int, width: int, limit: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``unique_pairs`` without a sort, or None: each column's values replaced by their
    ranks among the column's distinct ones, then, when the rank pairs span a table no
    longer than ``limit``, the pairs found in that table (in (hi, lo) order)."""
    hv = lv = None
    if span * width > limit:  # the ranks may span less than the values
        hv, hr = ranks(hi, h0, span)
        lv, lr = ranks(lo, l0, width)
        span, width = len(hv), len(lv)
        if span * width > limit:
            return None
        code = hr
        code *= width
        code += lr
        del lr
    else:
        code = hi.astype(np.int32)
        code -= h0
        code *= width
        code += lo
        code -= l0
    present, inv = ranks(code, 0, span * width, own=True)
    del code
    h = present // width
    low = np.remainder(present, width, out=present)
    if hv is None:
        h += h0
        low += l0
    else:
        h = hv[h]
        low = lv[low]
    return h, low, inv


def pair_keys(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """(hi << 32) | lo as int64, for ``lo`` non-negative and below 2**32."""
    key = hi.astype(np.int64)
    key <<= 32
    key |= lo
    return key


def unique_inverse(key: np.ndarray, own: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_inverse=True) with half its temporaries: each is freed
    once used, and the inverse is int32 (ids are). ``own``: ``key`` (int64) may be
    sorted in place, sparing a copy."""
    key, order = sort_with_order(key, own)
    first = np.empty(len(key), bool)
    first[:1] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    uniq = key[first]
    del key
    rank = np.cumsum(first, dtype=np.int32)
    del first
    rank -= 1
    inv = np.empty(len(rank), np.int32)
    inv[order] = rank
    return uniq, inv


def sort_with_order(key: np.ndarray, own: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(sorted ``key``, the positions it came from), as a stable argsort and a gather
    give them: when the keys' range and their positions fit in 63 bits together, one
    np.sort of the keys with their positions in the low bits (an unstable SIMD sort of
    distinct keys: several times faster than argsort, and equal keys keep their order),
    else the stable argsort. ``own``: ``key`` (int64) may be overwritten."""
    n = len(key)
    if n:
        lo, hi = int(key.min()), int(key.max())
        pos_bits = max(1, (n - 1).bit_length())
        if (hi - lo).bit_length() + pos_bits <= 63:
            packed = key if own and key.dtype == np.int64 else key.astype(np.int64)
            packed -= lo
            packed <<= pos_bits
            for a in range(0, n, _IDS):  # the positions, without a whole-length arange
                packed[a : a + _IDS] |= np.arange(a, min(n, a + _IDS), dtype=np.int64)
            packed.sort()
            order = packed & ((1 << pos_bits) - 1)
            packed >>= pos_bits
            packed += lo
            return packed, order
    order = np.argsort(key, kind="stable")
    return key[order], order


def _split_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys >> 32, keys & 0xFFFFFFFF) as int32, read in place where int64 is little-endian."""
    if np.little_endian:
        halves = keys.view(np.int32).reshape(-1, 2)
        return halves[:, 1], halves[:, 0]
    return (keys >> 32).astype(np.int32), (keys & _MASK32).astype(np.int32)


_CHILDREN = 1 << 16  # children subtracted at a time


def _subtract_children(self_t: np.ndarray, parent: np.ndarray, dur: np.ndarray, c: int) -> None:
    """``self_t[p - c] -= dur`` for each child whose parent p is at least ``c``, a
    piece at a time so that the float copies of the children's columns stay small.
    Times are whole ticks, so the sums are exact in any order."""
    for a in range(0, len(parent), _CHILDREN):
        p = parent[a : a + _CHILDREN]
        w = dur[a : a + _CHILDREN].astype(np.float64)
        use = p >= c
        if not use.all():
            p, w = p[use], w[use]
        np.subtract.at(self_t, p - np.int32(c), w)


class Aggregator:
    def __init__(self, spill: Spill | None = None) -> None:
        self.spill = spill  # the stack id per record lives with the profile's columns
        self.reset()

    def reset(self) -> None:
        self.commit_t: int | None = None  # committed records all exit before this tick
        self.committed: dict[int, int] = {}  # per depth, committed prefix length
        self.stack_of: dict[int, Column] = {}  # per depth, stack id per record
        # Per depth, interned (parent stack << 32 | frame) keys, sorted, with their stack
        # ids: a key only ever meets keys of its own depth, so a deep chain costs O(1) each.
        self.keys: dict[int, tuple[np.ndarray, np.ndarray] | range] = {}
        self.st_parent = _Grow(np.int32)
        self.st_frame = _Grow(np.int32)
        self.depth_runs = DepthRuns()  # depth per stack id, as runs
        self.st_nested = _Grow(np.bool_)
        for g, v in ((self.st_parent, -1), (self.st_frame, UNKNOWN_ID)):
            g.resize(1)
            g.a[0] = v  # stack 0: "[unknown]", the root of orphans
        self.depth_runs.add(0, 1, -1)
        self.names = StackNames()
        # Running sums over committed records, in ticks.
        self.calls = _Grow(np.int64)
        self.total = _Grow(np.float64)
        self.self_ = _Grow(np.float64)
        self.f_calls = _Grow(np.int64)
        self.f_total = _Grow(np.float64)
        self.f_self = _Grow(np.float64)
        self.f_sum = _Grow(np.float64)
        self.f_min = _Grow(np.float64, np.inf)
        self.f_max = _Grow(np.float64)
        self.resets = getattr(self, "resets", -1) + 1
        # The sums last handed out, which may read the running ones above (Sums.settle).
        self._last_sums: Callable[[], Sums | None] = lambda: None

    @property
    def nbytes(self) -> int:
        return sum(c.ram_bytes for c in self.stack_of.values())

    def check(self, min_entry: int) -> None:
        """Called by Profile.add with the smallest new entry tick."""
        if self.commit_t is not None and min_entry < self.commit_t:
            self.reset()

    # -------------------------------------------------------------- stacks

    def _keys_of(self, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """A depth's interned keys, sorted, and their stack ids. A depth's first stacks
        are kept as their id range alone: their keys, in id order, are sorted already and
        are those of st_parent and st_frame, made here only if the depth gets more."""
        got = self.keys.get(depth)
        if got is None:
            return _NO_KEYS, _NO_IDS
        if isinstance(got, range):
            a, b = got.start, got.stop
            got = self.keys[depth] = (
                pair_keys(self.st_parent.a[a:b], self.st_frame.a[a:b]),
                np.arange(a, b, dtype=np.int32),
            )
        return got

    def _intern(self, pst: np.ndarray, frame: np.ndarray, depth: int) -> np.ndarray:
        hi, lo, inv = _unique_keys(pst, frame)
        first = self.st_parent.n
        if depth not in self.keys:  # a depth's first stacks: all new, and sorted already
            end = first + len(hi)
            for g in (self.st_parent, self.st_frame, self.st_nested):
                g.resize(end)
            self.st_parent.a[first:end], self.st_frame.a[first:end] = hi, lo
            self.depth_runs.add(first, end, depth)
            self.keys[depth] = range(first, end)
            del hi, lo
            inv += first  # ids[inv], in place
            return inv
        key_sorted, key_ids = self._keys_of(depth)
        uniq = pair_keys(hi, lo)
        del hi, lo
        pos = np.searchsorted(key_sorted, uniq)
        known = pos < len(key_sorted)
        known[known] = key_sorted[pos[known]] == uniq[known]
        ids = np.empty(len(uniq), np.int32)
        ids[known] = key_ids[pos[known]]
        del pos
        new = uniq[~known]
        if len(new):
            end = first + len(new)
            new_ids = np.arange(first, end, dtype=np.int32)
            ids[~known] = new_ids
            for g in (self.st_parent, self.st_frame, self.st_nested):
                g.resize(end)
            self.st_parent.a[first:end], self.st_frame.a[first:end] = _split_keys(new)
            self.depth_runs.add(first, end, depth)
            # new keys are not among the old: insert them where they sort
            at = np.searchsorted(key_sorted, new)
            self.keys[depth] = np.insert(key_sorted, at, new), np.insert(key_ids, at, new_ids)
        del uniq
        return ids[inv]

    def update(self, profile: Profile) -> tuple[Stacks, Sums]:
        last = self._last_sums()
        if last is not None:  # someone still holds the last sums: they keep their numbers
            last.settle()
        levels = profile.levels
        frame_of = profile._addrs.frame_of
        depths = sorted(levels)
        starts = {d: self.committed.get(d, 0) for d in depths}
        tail_stack: dict[int, np.ndarray] = {}
        first_new = self.st_parent.n
        # Stack ids of every record not yet committed, shallowest depth first.
        for d in depths:
            lv = levels[d]
            c = starts[d]
            col = self.stack_of.get(d)
            if col is None:
                col = self.stack_of[d] = Column(np.int32, self.spill)
            arr = col.reserve(lv.n, c)
            frame = frame_of[lv.addr[c:]]  # int32, as the stack ids: 4 bytes a record
            if d == 0:
                pst = np.full(lv.n - c, -1, np.int32)
            else:
                p = lv.parent[c:]
                pst = np.zeros(lv.n - c, np.int32)  # orphans: under "[unknown]" (stack 0)
                up = self.stack_of.get(d - 1)
                if up is not None:
                    has = p >= 0
                    if has.all():  # no orphans: a plain gather
                        np.take(up.a, p, out=pst)
                    else:
                        pst[has] = up.a[p[has]]
            ids = self._intern(pst, frame, d) if lv.n > c else np.empty(0, np.int32)
            arr[c : lv.n] = ids
            # In RAM the column is the copy to keep; on disk, ids stay the one read.
            tail_stack[d] = arr[c : lv.n] if self.spill is None else ids
            del ids, frame, pst
        n_st = self.st_parent.n
        if n_st > first_new:
            mark_nested(self.st_parent.v, self.st_frame.v, self.st_nested.v, first_new)
        n_fr = len(profile.frames)
        for g in (self.calls, self.total, self.self_):
            g.resize(n_st)
        for g in (self.f_calls, self.f_total, self.f_self, self.f_sum, self.f_min, self.f_max):
            g.resize(n_fr)
        nested = self.st_nested.v
        latest_exit = profile.t1_ticks
        horizon = 2 * max((lv.max_dur for lv in levels.values()), default=0) + 1
        commit_t = latest_exit - horizon
        if self.commit_t is not None:
            commit_t = max(commit_t, self.commit_t)
        # Tail contributions; the part that exits before commit_t is folded in for good.
        kept = Tally(
            self.calls.v,
            self.total.v,
            self.self_.v,
            self.f_calls.v,
            self.f_total.v,
            self.f_self.v,
            self.f_sum.v,
            self.f_min.v,
            self.f_max.v,
        )
        by_stack = (self.st_frame.v, nested)
        # Gathered over all depths and counted once: a count per depth would cost
        # O(stacks) each, quadratic in a deep chain.
        parts: dict[int, list[tuple[np.ndarray, ...]]] = {0: [], 1: []}
        size = n_st + n_fr  # add_parts adds a group this long alone
        for d in depths:
            lv = levels[d]
            c = starts[d]
            if lv.n == c:
                continue
            entry = lv.entry[c:]
            late = entry + lv.dur[c:] >= commit_t
            k = int(late.argmax()) if late.any() else lv.n - c
            del late
            dur = lv.dur[c:].astype(np.float64)
            below = levels.get(d + 1)
            if below is None:  # no children: self time is the duration
                self_t = dur
            else:
                self_t = dur.copy()
                # A child enters no earlier than its parent: only this suffix can hold
                # children of the tail.
                lo = int(np.searchsorted(below.entry, entry[0], side="left"))
                _subtract_children(self_t, below.parent[lo:], below.dur[lo:], c)
                np.maximum(self_t, 0.0, out=self_t)
            sid = tail_stack[d]
            fid = frame_of[lv.addr[c:]]
            for i, part in enumerate((slice(0, k), slice(k, None))):
                n_part = len(sid[part])
                if i == 0 and n_part and ALONE * n_part >= size:
                    # What add_parts would do with it (times here are whole ticks),
                    # done now so one depth's columns are alive at a time, not all.
                    kept.add(sid[part], fid[part], dur[part], self_t[part], None, by_stack)
                elif n_part:
                    outer = ~nested[sid[part]]
                    cols = (sid[part], fid[part], dur[part], self_t[part], outer)
                    # copied when short: a view would keep the depth's columns
                    cut = n_part < len(sid)
                    parts[i].append(tuple(a.copy() for a in cols) if cut else cols)
                    del cols, outer
            self.committed[d] = c + k
            del sid, fid, dur, self_t, entry  # before the next depth's are made
        # Whole ticks: durations, less the sum of the children's (exact in float64).
        # The sums are the kept ones plus the tail's (with_tail): exact in any order.
        kept.add_parts(parts[0], whole=True, by_stack=by_stack)
        del parts[0]
        sums = kept.with_tail(parts.pop(1), float(profile.t1_ticks - profile.t0_ticks))
        self._last_sums = weakref.ref(sums)  # may read the running sums: see update's start
        self.commit_t = commit_t
        profile._aggregated = profile.n_records
        # Views, not copies: a stack's entries never change once written, and growing
        # the arrays makes new ones.
        stacks = Stacks(
            parent=self.st_parent.v,
            frame=self.st_frame.v,
            depth=self.depth_runs.upto(self.st_parent.n),
            nested=nested,
            per_level={d: self.stack_of[d].a[: levels[d].n] for d in depths},
        )
        return stacks, sums
