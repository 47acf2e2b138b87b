"""Aggregates that follow a live capture without recomputing the whole of it.

Records whose exit is older than a commit time T have their stack and self time
folded into running sums once; each query recomputes only the rest (the tail).
That is exact as long as no record arrives whose entry is before T: only such a
record can contain (adopt) a committed record or be contained by one. When one does,
everything is rebuilt, and T keeps twice the longest duration seen behind the newest
exit, so in a sane stream this happens a handful of times per capture at most.
A whole capture loaded at once is the same: one update, its tail the calls near its end.
Every time here is whole ticks, whose float64 sums are exact in any order, so the
running sums plus the tail's equal one count over every call.

One set of sums per update: the tail is added to the running sums in place and handed
out, and taken back out at the next update (the values it changed were kept): per stack
that costs the stacks the tail touches, not a copy of every stack's sums.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .aggregate import SUMS, UNKNOWN_ID, Stacks, Sums, depth_calls, mark_nested
from .columns import Column, Spill
from .kernels import pair_keys, unique_pairs
from .paths import DepthRuns, Grow, StackNames

if TYPE_CHECKING:
    from .levels import Level
    from .model import Profile

_NO_KEYS = np.empty(0, np.int64)
_NO_IDS = np.empty(0, np.int32)


def _unique_keys(pst: np.ndarray, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (parent stack, frame) pairs, sorted (int32 halves of
    np.unique((pst << 32) | frame)), and each row's pair number (int32): ``unique_pairs``
    in the stack tables' int32."""
    hi, lo, inv = unique_pairs(pst, frame)
    return hi.astype(np.int32), lo.astype(np.int32), inv


class Aggregator:
    """A profile's StackTable, interned as records arrive (``parent``, ``frame``,
    ``nested``, ``depth`` per stack; ``stack_of`` per record), and the running sums of
    its committed calls. ``update`` hands both out as ``Stacks`` (views) and ``Sums``."""

    def __init__(self, spill: Spill | None = None) -> None:
        self.spill = spill  # the stack id per record lives with the profile's columns
        self.reset()

    def reset(self) -> None:
        self.commit_t: int | None = None  # committed records all exit before this tick
        self.committed: dict[int, int] = {}  # per depth, committed prefix length
        self.stack_of: dict[int, Column] = {}  # per depth, stack id per record
        # Per depth, interned (parent stack << 32 | frame) keys, sorted, with their stack
        # ids: a key only ever meets keys of its own depth, so a deep chain costs O(1) each.
        # A depth's first stacks are kept as their id range: in id order their keys are
        # sorted already, made from parent and frame only if the depth gets more.
        self.keys: dict[int, tuple[np.ndarray, np.ndarray] | range] = {}
        self.parent = Grow(np.int32)
        self.frame = Grow(np.int32)
        self.nested = Grow(np.bool_)
        self.depth = DepthRuns()
        self._new_stacks(np.array([-1]), np.array([UNKNOWN_ID]), -1)  # 0: "[unknown]"
        self.names = StackNames()
        self.running = Sums(0, 0)  # over committed records, in ticks (and the last tail)
        # The stacks the last tail added to and their sums before it, and the per-frame
        # sums before it: what takes the tail back out.
        self._untail: tuple[np.ndarray, dict[str, np.ndarray]] | None = None
        self._handed: Callable[[], Sums | None] = lambda: None  # the sums last handed out
        self.aggregated = 0  # the profile's n_records at the last update
        self.resets = getattr(self, "resets", -1) + 1

    @property
    def nbytes(self) -> int:
        return sum(c.ram_bytes for c in self.stack_of.values())

    def check(self, min_entry: int) -> None:
        """Called by Profile.add with the smallest new entry tick."""
        if self.commit_t is not None and min_entry < self.commit_t:
            self.reset()

    def _new_stacks(self, parent: np.ndarray, frame: np.ndarray, depth: int) -> None:
        first = self.parent.n
        self.parent.extend(parent)
        self.frame.extend(frame)
        self.nested.resize(self.parent.n)
        self.depth.add(first, self.parent.n, depth)

    def _intern(self, pst: np.ndarray, frame: np.ndarray, depth: int) -> np.ndarray:
        """The stack id of each (parent stack, frame) row at ``depth``, new pairs added
        as stacks in key order."""
        hi, lo, inv = _unique_keys(pst, frame)
        uniq = pair_keys(hi, lo)
        known_keys = self.keys.get(depth, (_NO_KEYS, _NO_IDS))
        if isinstance(known_keys, range):
            ids = np.arange(known_keys.start, known_keys.stop, dtype=np.int32)
            known_keys = pair_keys(self.parent.a[ids], self.frame.a[ids]), ids
        keys, ids = known_keys
        pos = np.searchsorted(keys, uniq)
        known = pos < len(keys)
        known[known] = keys[pos[known]] == uniq[known]
        got = np.empty(len(uniq), np.int32)
        got[known] = ids[pos[known]]
        new = ~known
        if new.any():
            first = self.parent.n
            got[new] = new_ids = np.arange(first, first + int(new.sum()), dtype=np.int32)
            self._new_stacks(hi[new], lo[new], depth)
            if depth not in self.keys:
                self.keys[depth] = range(first, self.parent.n)
            else:  # new keys are not among the old: insert them where they sort
                at = np.searchsorted(keys, uniq[new])
                self.keys[depth] = np.insert(keys, at, uniq[new]), np.insert(ids, at, new_ids)
        return got[inv]

    def update(self, profile: Profile) -> tuple[Stacks, Sums]:
        """The stacks of the records added since the last update; the records that exit
        before the commit time folded into the running sums for good; and the sums of
        every record: the running ones plus the rest's (the tail)."""
        self._take_back_tail()
        levels = profile.levels
        starts = {d: self.committed.get(d, 0) for d in sorted(levels)}
        first_new = self.parent.n
        for d, c in starts.items():
            self._stack_tail(levels[d], d, c, profile.frame_of)
        if self.parent.n > first_new:
            mark_nested(self.parent.v, self.frame.v, self.nested.v, first_new)
        # Views, not copies: a stack's entries never change once written, and growing
        # the arrays makes new ones.
        st = Stacks(
            parent=self.parent.v,
            frame=self.frame.v,
            depth=self.depth.upto(self.parent.n),
            nested=self.nested.v,
            per_level={d: self.stack_of[d].a[: levels[d].n] for d in starts},
        )
        horizon = 2 * max((lv.max_dur for lv in levels.values()), default=0) + 1
        commit_t = profile.t1_ticks - horizon
        if self.commit_t is not None:
            commit_t = max(commit_t, self.commit_t)
        out = self._fold(profile, st, starts, commit_t)
        self.commit_t = commit_t
        self.aggregated = profile.n_records
        return st, out

    def _fold(self, profile: Profile, st: Stacks, starts: dict[int, int], commit_t: int) -> Sums:
        """Each depth's calls not committed yet, cut where they start exiting at or after
        ``commit_t``: those before go to the running sums for good, those after (the
        tail) are added to them too, to be taken back at the next update."""
        sizes = (st.size, len(profile.frames))
        if sizes != (len(self.running.calls), len(self.running.f_calls)):
            self.running = Sums(*sizes, start=self.running)
        run = self.running
        tail = []
        for d, c in starts.items():
            lv = profile.levels[d]
            if lv.n == c:
                continue
            late = lv.entry[c:] + lv.dur[c:] >= commit_t
            k = int(late.argmax()) if late.any() else lv.n - c
            calls = depth_calls(profile, st, d, c, lv.n)
            run.add(*(a[:k] for a in calls))
            if k < lv.n - c:  # copied when cut: a view would keep the depth's columns
                tail.append(tuple(a[k:].copy() if k else a for a in calls))
            self.committed[d] = c + k
            del calls
        touched = np.unique(np.concatenate([p[0] for p in tail])) if tail else _NO_IDS
        was = {
            k: getattr(run, k)[touched] if per else getattr(run, k).copy() for k, per, *_ in SUMS
        }
        self._untail = touched, was
        for part in tail:
            run.add(*part)
        out = copy.copy(run)  # the same arrays: alive only while someone holds it
        self._handed = weakref.ref(out)
        return out

    def _take_back_tail(self) -> None:
        """The running sums without the last tail, as they were before it (per stack,
        only the stacks it touched). Copied first when the sums handed out with the tail
        are still held: they keep their numbers."""
        if self._untail is None:
            return
        if self._handed() is not None:
            self.running = Sums(len(self.running.calls), len(self.running.f_calls), self.running)
        touched, was = self._untail
        for k, per_stack, *_ in SUMS:
            if per_stack:
                getattr(self.running, k)[touched] = was[k]
            else:
                setattr(self.running, k, was[k])
        self._untail = None

    def _stack_tail(self, lv: Level, d: int, c: int, frame_of: np.ndarray) -> None:
        """Intern the stack of each record of depth d from position ``c`` (the first not
        committed) on; the depth above is done already."""
        col = self.stack_of.get(d)
        if col is None:
            col = self.stack_of[d] = Column(np.int32, self.spill)
        arr = col.reserve(lv.n, c)
        if lv.n == c:
            return
        if d == 0:
            pst = np.full(lv.n - c, -1, np.int32)
        else:
            p = lv.parent[c:]
            pst = np.zeros(lv.n - c, np.int32)  # orphans: under "[unknown]" (stack 0)
            up = self.stack_of.get(d - 1)
            if up is not None:
                has = p >= 0
                pst[has] = up.a[p[has]]
        arr[c : lv.n] = self._intern(pst, frame_of[lv.addr[c:]], d)
