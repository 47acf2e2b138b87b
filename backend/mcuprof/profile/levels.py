"""Per-depth columnar storage and the parent search of the call-tree rule.

Records are kept per depth, sorted by (entry, stream position). Within one depth a
sane trace has disjoint intervals, so exit order (the stream order) is also entry
order and new records are plain appends; anything else is merged in place.
"""

from __future__ import annotations

import numpy as np

from .columns import Column, Spill
from .kernels import RUNS, last_at_or_before
from .lod import Pyramid

_BLOCK = 256
_STEPS = 16
_FAR_CHUNK = 4096  # children searched far at a time (see the loop in find_parents)
# Records per step of the block maxima and levels of detail (a multiple of _BLOCK).
_BUILD_PIECE = 1 << 18


class Level:
    """All records at one depth: entry (unwrapped ticks), duration (ticks), address id
    and parent (position in the level one up, -1 for none)."""

    __slots__ = ("_addr", "_bmax", "_cols", "_dur", "_entry", "_lod", "_parent", "max_dur", "n")

    _NAMES = (("_entry", np.int64), ("_dur", np.uint32), ("_addr", np.int32), ("_parent", np.int32))

    def __init__(self, spill: Spill | None = None) -> None:
        self.n = 0
        self.max_dur = 0
        # The four columns live in RAM, or on disk with ``spill`` (see columns.py); the
        # attributes are their current arrays (the whole capacity).
        self._cols = {name: Column(dtype, spill) for name, dtype in self._NAMES}
        self._entry, self._dur, self._addr, self._parent = (c.a for c in self._cols.values())
        self._bmax = np.empty(0, np.int64)  # max exit per block of _BLOCK records
        # The timeline's levels of detail, kept up to date by each insert (a spilled
        # level's timeline then reads its column files only near pixel edges); in a
        # level made whole (Level.of) None until first asked for: an export never
        # draws a timeline.
        self._lod: Pyramid | None = Pyramid()

    @property
    def block_max(self) -> np.ndarray:
        return self._bmax

    def _update_block_max(self, start: int) -> None:
        """Recompute the block maxima from the block holding position ``start`` on, a
        piece at a time (temporaries of a few MB whatever the level's size), and the
        levels of detail once they were asked for."""
        maxima = [self._bmax[: start // _BLOCK]]
        for lo in range(start // _BLOCK * _BLOCK, self.n, _BUILD_PIECE):
            hi = min(self.n, lo + _BUILD_PIECE)
            exits = self._entry[lo:hi] + self._dur[lo:hi]
            full = (hi - lo) // _BLOCK  # whole blocks at once, the partial last one apart
            maxima.append(exits[: full * _BLOCK].reshape(-1, _BLOCK).max(axis=1))
            if full * _BLOCK < hi - lo:
                maxima.append(exits[full * _BLOCK :].max(keepdims=True))
        self._bmax = np.concatenate(maxima)
        if self._lod is not None:
            self._lod.update(self.entry, self.dur, start)

    def first_ending_at(self, tick: int) -> int:
        """A position before which every record exits before ``tick``: where a window
        starting at ``tick`` has to start reading. From the entry order and the longest
        duration, tightened by the block maxima (one long call far back no longer makes
        every window read from there)."""
        lo = int(np.searchsorted(self.entry, tick - self.max_dur, side="left"))
        if len(self._bmax):
            reach = np.maximum.accumulate(self._bmax)
            lo = max(lo, int(np.searchsorted(reach, tick, side="left")) * _BLOCK)
        return min(lo, self.n)

    @property
    def entry(self) -> np.ndarray:
        return self._entry[: self.n]

    @property
    def dur(self) -> np.ndarray:
        return self._dur[: self.n]

    @property
    def addr(self) -> np.ndarray:
        return self._addr[: self.n]

    @property
    def parent(self) -> np.ndarray:
        return self._parent[: self.n]

    @property
    def nbytes(self) -> int:
        """Bytes held in RAM (columns on disk count for nothing)."""
        return sum(c.ram_bytes for c in self._cols.values()) + (
            self._lod.nbytes if self._lod is not None else 0
        )

    def copy(self, spill: Spill | None = None) -> Level:
        """An independent copy, trimmed to the records held (on disk with ``spill``)."""
        out = Level.__new__(Level)  # a deep chain has thousands of levels: no empty columns
        out.n, out.max_dur = self.n, self.max_dur
        out._cols = {name: col.copy(self.n, spill) for name, col in self._cols.items()}
        out._entry, out._dur, out._addr, out._parent = (c.a for c in out._cols.values())
        out._bmax = self._bmax.copy()
        out._lod = None if self._lod is None else self._lod.copy()
        return out

    @classmethod
    def of(cls, entry: np.ndarray, dur: np.ndarray, addr: np.ndarray) -> Level:
        """A level (in RAM) holding these records, already sorted by (entry, stream
        order), parents -1: what ``insert`` into an empty level gives, without copying
        the arrays (they become its columns)."""
        out = cls()
        n = len(entry)
        parent = np.full(n, -1, np.int32)
        for col, a in zip(out._cols.values(), (entry, dur, addr, parent), strict=True):
            col.a = a
        out._entry, out._dur, out._addr, out._parent = entry, dur, addr, parent
        out.n = n
        out.max_dur = int(dur.max()) if n else 0
        out._lod = None  # built on first use
        out._update_block_max(0)
        return out

    @property
    def lod(self) -> Pyramid:
        if self._lod is None:
            lod = Pyramid()
            for hi in range(_BUILD_PIECE, self.n + _BUILD_PIECE, _BUILD_PIECE):  # a piece at a time
                lod.update(self.entry[:hi], self.dur[:hi], hi - _BUILD_PIECE)
            self._lod = lod
        return self._lod

    def _reserve(self, need: int) -> None:
        # Growth (1.5x in RAM) keeps the slack bounded while staying amortised O(1).
        for name, col in self._cols.items():
            setattr(self, name, col.reserve(need, self.n))

    def insert(
        self, entry: np.ndarray, dur: np.ndarray, addr: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Add records (given in stream order). Returns their new positions and, when they
        were merged rather than appended, the insertion points in old coordinates (so the
        level below can shift its parent pointers)."""
        k = len(entry)
        n = self.n
        if k:
            self.max_dur = max(self.max_dur, int(dur.max()))
        in_order = k < 2 or bool(np.all(entry[1:] >= entry[:-1]))
        if in_order and (n == 0 or k == 0 or entry[0] >= self._entry[n - 1]):
            self._reserve(n + k)
            self._entry[n : n + k] = entry
            self._dur[n : n + k] = dur
            self._addr[n : n + k] = addr
            self._parent[n : n + k] = -1
            self.n = n + k
            self._update_block_max(n)
            return np.arange(n, n + k), None
        # Stable sort: equal entries keep stream order, and side="right" puts them after
        # the (earlier-streamed) records already stored with that entry.
        order = np.argsort(entry, kind="stable")
        entry, dur, addr = entry[order], dur[order], addr[order]
        points = np.searchsorted(self.entry, entry, side="right")
        new_pos = points + np.arange(k)
        # Records before the first insertion point stay where they are.
        p0 = int(points[0])
        keep = np.ones(n + k - p0, bool)
        keep[new_pos - p0] = False
        self._reserve(n + k)
        for name, new in (("_entry", entry), ("_dur", dur), ("_addr", addr), ("_parent", None)):
            col = getattr(self, name)
            old = col[p0:n].copy()
            col[p0 : n + k][keep] = old
            col[new_pos] = -1 if new is None else new
        self.n = n + k
        self._update_block_max(int(new_pos[0]))
        return new_pos, points

    def shift_parents(self, points: np.ndarray) -> None:
        """The level above had records inserted before ``points`` (old coordinates)."""
        p = self.parent
        has = p >= 0
        p[has] += np.searchsorted(points, p[has], side="right").astype(np.int32)


def find_parents(up: Level, c_entry: np.ndarray, c_exit: np.ndarray) -> np.ndarray:
    """Position in ``up`` of each child's parent per CLARIFICATIONS: the record whose
    [entry, entry + duration] contains the child's interval, entered last; -1 if none."""
    m = len(c_entry)
    if m >= 1024 and up.n:
        # Runs of equal children (the same call again and again, as a target that keeps
        # resetting replays it) have one answer: searched once per run.
        same = c_entry[1:] == c_entry[:-1]
        same &= c_exit[1:] == c_exit[:-1]
        if np.count_nonzero(same) * RUNS > m * (RUNS - 1):
            starts = np.flatnonzero(~same)
            starts += 1
            heads = np.r_[0, starts]
            found = find_parents(up, c_entry[heads], c_exit[heads])
            return np.repeat(found, np.diff(np.r_[heads, m]))
    result = np.full(m, -1, np.int32)
    if up.n == 0 or m == 0:
        return result
    entry = up.entry
    dur = up.dur
    j = last_at_or_before(entry, c_entry)
    # A sane trace resolves in the first step, taken for every child at once (no index
    # lists); overlapping same-depth records (corrupt streams, device resets) walk back
    # a few more, and the rest fall to a block search.
    has = j >= 0
    at = j if bool(has.all()) else np.where(has, j, 0)
    hit = entry[at] + dur[at] >= c_exit
    del at
    hit &= has
    np.copyto(result, j, where=hit, casting="unsafe")  # positions in a level fit int32
    if bool(hit.all()):
        return result
    pending = np.flatnonzero(has & ~hit)
    del has, hit
    jj = j[pending] - 1
    del j
    alive = jj >= 0
    if len(pending):
        # No record up to the end of the candidate's block exits late enough: an
        # orphan (a target that resets sends calls without their callers), with no
        # walk back through the records before it.
        reach = np.maximum.accumulate(up.block_max)
        alive &= reach[np.maximum(jj, 0) // _BLOCK] >= c_exit[pending]
    pending, jj = pending[alive], jj[alive]
    for _ in range(1, _STEPS):
        if len(pending) == 0:
            return result
        ok = entry[jj] + dur[jj] >= c_exit[pending]
        result[pending[ok]] = jj[ok]
        pending = pending[~ok]
        jj = jj[~ok] - 1
        alive = jj >= 0
        pending, jj = pending[alive], jj[alive]
    # Chunks bound the (children x block) gather below to a few MB.
    for k in range(0, len(pending), _FAR_CHUNK):
        _far_search(up, c_exit, pending[k : k + _FAR_CHUNK], jj[k : k + _FAR_CHUNK], result)
    return result


def _far_search(
    up: Level, c_exit: np.ndarray, pending: np.ndarray, start: np.ndarray, result: np.ndarray
) -> None:
    """For children whose candidates so far failed: the last record at or before
    ``start`` that still contains them. Block maxima rule most out at once (the usual
    case: an orphan whose parent has not arrived)."""
    x = c_exit[pending]
    block = start // _BLOCK
    # No record up to the child's own block ends late enough: no parent at all (the
    # common orphan, e.g. a target that resets and sends a call without its caller).
    prefix = np.maximum.accumulate(up.block_max)
    hope = prefix[block] >= x
    if not hope.all():
        pending, start, x, block = pending[hope], start[hope], x[hope], block[hope]
        if len(pending) == 0:
            return
    # The rest of each child's own block, as a (children x _BLOCK) gather.
    cols = block[:, None] * _BLOCK + np.arange(_BLOCK)
    inside = cols <= start[:, None]
    cols = np.where(inside, cols, 0)
    hits = inside & (up.entry[cols] + up.dur[cols] >= x[:, None])
    any_hit = hits.any(axis=1)
    last = _BLOCK - 1 - np.argmax(hits[:, ::-1], axis=1)
    result[pending[any_hit]] = (block * _BLOCK + last)[any_hit].astype(np.int32)
    before = ~any_hit & (block > 0)
    before[before] = prefix[block[before] - 1] >= x[before]
    bmax = up.block_max
    for i, b, xi in zip(
        pending[before].tolist(), block[before].tolist(), x[before].tolist(), strict=True
    ):
        blk = int(np.flatnonzero(bmax[:b] >= xi)[-1])
        lo = blk * _BLOCK
        seg = up.entry[lo : lo + _BLOCK] + up.dur[lo : lo + _BLOCK]
        result[i] = lo + int(np.flatnonzero(seg >= xi)[-1])
