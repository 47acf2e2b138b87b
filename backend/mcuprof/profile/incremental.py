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

from .aggregate import (
    ALONE,
    FRAME_SUMS,
    STACK_SUMS,
    UNKNOWN_ID,
    StackNames,
    Stacks,
    Sums,
    Tally,
    mark_nested,
)
from .columns import Column, Spill
from .kernels import pair_keys, split_keys, unique_pairs
from .paths import DepthRuns
from .paths import Grow as _Grow

if TYPE_CHECKING:
    from .levels import Level
    from .model import Profile

_MASK32 = (1 << 32) - 1
_NO_KEYS = np.empty(0, np.int64)
_NO_IDS = np.empty(0, np.int32)


def _unique_keys(pst: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (parent stack, frame) pairs, sorted (int32 halves of
    np.unique((pst << 32) | frame)), and each row's pair number (int32): ``unique_pairs``
    (a table lookup when the pairs span a range a few times their count, the usual case;
    else one sort), in the stack tables' int32."""
    hi, lo, inv = unique_pairs(pst, frame)
    return hi.astype(np.int32), lo.astype(np.int32), inv


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
        # Running sums over committed records, in ticks (aggregate.Tally's).
        self.stack_sums = {k: _Grow(t, v) for k, t, v in STACK_SUMS}
        self.frame_sums = {k: _Grow(t, v) for k, t, v in FRAME_SUMS}
        self.aggregated = 0  # the profile's n_records at the last update
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
            self.st_parent.a[first:end], self.st_frame.a[first:end] = split_keys(new)
            self.depth_runs.add(first, end, depth)
            # new keys are not among the old: insert them where they sort
            at = np.searchsorted(key_sorted, new)
            self.keys[depth] = np.insert(key_sorted, at, new), np.insert(key_ids, at, new_ids)
        del uniq
        return ids[inv]

    def update(self, profile: Profile) -> tuple[Stacks, Sums]:
        """The stacks of the records added since the last update; the records that exit
        before the commit time folded into the running sums for good; and the sums of
        every record: the running ones plus the rest's (the tail)."""
        last = self._last_sums()
        if last is not None:  # someone still holds the last sums: they keep their numbers
            last.settle()
        levels = profile.levels
        starts = {d: self.committed.get(d, 0) for d in sorted(levels)}
        tail_stack = self._stack_tail(levels, profile.frame_of, starts)
        kept = self._running(self.st_parent.n, len(profile.frames))
        horizon = 2 * max((lv.max_dur for lv in levels.values()), default=0) + 1
        commit_t = profile.t1_ticks - horizon
        if self.commit_t is not None:
            commit_t = max(commit_t, self.commit_t)
        by_stack = (self.st_frame.v, self.st_nested.v)
        parts = self._fold(levels, profile.frame_of, starts, tail_stack, kept, commit_t)
        # Whole ticks: durations, less the sum of the children's (exact in float64).
        # The sums are the kept ones plus the tail's (with_tail): exact in any order.
        kept.add_parts(parts[0], whole=True, by_stack=by_stack)
        del parts[0]
        sums = kept.with_tail(parts.pop(1), float(profile.t1_ticks - profile.t0_ticks))
        self._last_sums = weakref.ref(sums)  # may read the running sums: see update's start
        self.commit_t = commit_t
        self.aggregated = profile.n_records
        # Views, not copies: a stack's entries never change once written, and growing
        # the arrays makes new ones.
        stacks = Stacks(
            parent=self.st_parent.v,
            frame=self.st_frame.v,
            depth=self.depth_runs.upto(self.st_parent.n),
            nested=self.st_nested.v,
            per_level={d: self.stack_of[d].a[: levels[d].n] for d in starts},
        )
        return stacks, sums

    def _stack_tail(
        self, levels: dict[int, Level], frame_of: np.ndarray, starts: dict[int, int]
    ) -> dict[int, np.ndarray]:
        """Intern the stack of every record not yet committed (``starts``: per depth,
        the first), shallowest depth first, and mark the new stacks' recursion; per
        depth, the stack ids of those records."""
        tail_stack: dict[int, np.ndarray] = {}
        first_new = self.st_parent.n
        for d, c in starts.items():
            lv = levels[d]
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
        if self.st_parent.n > first_new:
            mark_nested(self.st_parent.v, self.st_frame.v, self.st_nested.v, first_new)
        return tail_stack

    def _running(self, n_stacks: int, n_frames: int) -> Tally:
        """The running sums, grown to ``n_stacks`` and ``n_frames``, as a Tally of them."""
        for g in self.stack_sums.values():
            g.resize(n_stacks)
        for g in self.frame_sums.values():
            g.resize(n_frames)
        return Tally(
            **{k: g.v for k, g in self.stack_sums.items()},
            **{k: g.v for k, g in self.frame_sums.items()},
        )

    def _fold(
        self,
        levels: dict[int, Level],
        frame_of: np.ndarray,
        starts: dict[int, int],
        tail_stack: dict[int, np.ndarray],
        kept: Tally,
        commit_t: int,
    ) -> dict[int, list[tuple[np.ndarray, ...]]]:
        """Each depth's uncommitted calls, cut where they start exiting at or after
        ``commit_t``: the calls before go to ``kept`` for good (parts[0], or at once when
        a depth's are many), those after stay the tail (parts[1]). Gathered over all
        depths and counted once: a count per depth would cost O(stacks) each, quadratic
        in a deep chain."""
        parts: dict[int, list[tuple[np.ndarray, ...]]] = {0: [], 1: []}
        size = len(kept.calls) + len(kept.f_calls)  # add_parts adds a group this long alone
        by_stack = (self.st_frame.v, self.st_nested.v)
        nested = self.st_nested.v
        for d, c in starts.items():
            lv = levels[d]
            if lv.n == c:
                continue
            late = lv.entry[c:] + lv.dur[c:] >= commit_t
            k = int(late.argmax()) if late.any() else lv.n - c
            del late
            dur = lv.dur[c:].astype(np.float64)
            self_t = _self_ticks(dur, levels.get(d + 1), int(lv.entry[c]), c)
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
            del sid, fid, dur, self_t  # before the next depth's are made
        return parts


def _self_ticks(dur: np.ndarray, below: Level | None, first_entry: int, c: int) -> np.ndarray:
    """Self ticks of a depth's calls from position ``c`` on (their durations ``dur``,
    float64): the durations less their children's in ``below``, at least 0."""
    if below is None:  # no children: self time is the duration
        return dur
    self_t = dur.copy()
    # A child enters no earlier than its parent: only this suffix can hold children of
    # the tail.
    lo = int(np.searchsorted(below.entry, first_entry, side="left"))
    _subtract_children(self_t, below.parent[lo:], below.dur[lo:], c)
    np.maximum(self_t, 0.0, out=self_t)
    return self_t
