"""Calls as one properly nested sequence in pre-order, for the event-based formats.

Speedscope and Chrome need intervals that nest; a corrupt stream may hold calls that
overlap at one depth, so each call is clamped into its parent and after its previous
sibling (a sane capture is left untouched), and each orphan gets an "[unknown]" parent.
A window drops the calls outside it and cuts the rest to it.

``nested_calls`` is the definition, a walk; ``calls`` computes the same with array
operations, a depth at a time over the levels (their rows are in entry order):
1. the roots (depth 0 and orphans) in (start, depth, row) order, each after the ends
   of those before it: a running maximum;
2. top down, children into their parents' clamped intervals, each after the ends of
   its earlier siblings: a running maximum within each run of siblings;
3. bottom up, subtree sizes (0 for a call dropped);
4. top down, positions: a child after its parent and its earlier siblings' subtrees;
   each column is scattered there from the depth-major rows.

Costs: the output, 14 bytes a call in most captures (int16 frame, uint32 start,
duration and subtree size); while it is built, 17 more a call in depth-major order
(those columns, whether the call stays, its position) and one piece's temporaries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID
from .frames import CALLS_PER_STEP


@dataclass
class Nested:
    """Pre-order calls: frame id (UNKNOWN_ID for "[unknown]"), start and end ticks
    relative to the capture start, and nesting depth in this sequence."""

    frame: list[int]
    start: list[float]
    end: list[float]
    depth: list[int]


def nested_calls(profile: Profile, window: Window = None) -> Nested:
    """The definition of ``calls``: a walk, one call at a time."""
    t = profile.table()
    base = profile.t0_ticks
    lo, hi = -np.inf, np.inf
    if window is not None:
        a, b = sorted(window)
        lo, hi = profile.ticks(a) - base, profile.ticks(b) - base
    start_f = (t["entry"] - base).astype(np.float64)
    start, end = start_f.tolist(), (start_f + t["duration"]).tolist()
    frame, depth, orphan = t["frame"].tolist(), t["depth"].tolist(), t["orphan"].tolist()
    # Rows are depth-major and entry-sorted: each call's children come in entry order.
    kids: list[list[int]] = [[] for _ in start]
    roots = []
    for row, p in enumerate(t["parent"].tolist()):
        (kids[p] if p >= 0 else roots).append(row)
    roots.sort(key=lambda r: (start[r], depth[r], r))
    out: list[tuple[int, float, float, int]] = []
    cursor = lo
    for r in roots:
        s = max(start[r], cursor)
        e = min(max(end[r], s), hi)
        if s > hi or end[r] < lo:
            continue
        cursor = e
        if orphan[r]:
            out.append((UNKNOWN_ID, s, e, 0))
        stack = [(r, s, e, int(orphan[r]))]  # depth first: (row, clamped start and end, depth)
        while stack:
            row, s, e, d = stack.pop()
            out.append((frame[row], s, e, d))
            placed = []
            cur = s
            for k in kids[row]:
                ks = max(start[k], cur)
                if ks > e or end[k] < lo or ks > hi:
                    continue
                ke = min(max(end[k], ks), e)
                placed.append((k, ks, ke, d + 1))
                cur = ke
            stack.extend(reversed(placed))
    return Nested(*([list(c) for c in zip(*out, strict=True)] or [[], [], [], []]))


@dataclass
class Calls:
    """``nested_calls`` as arrays in pre-order: frame id (int16 or int32), start (ticks
    from the capture start: uint32 when every time fits, else int64; float64 with a
    window), duration (uint32 ticks; with a window ``end``, float64, instead) and
    subtree size (int32, the call itself included)."""

    frame: np.ndarray
    start: np.ndarray
    size: np.ndarray
    dur: np.ndarray | None = None
    end: np.ndarray | None = None
    end_max: float = 0.0  # the largest end (ticks)

    def __len__(self) -> int:
        return len(self.frame)

    def ends(self, part: slice | np.ndarray) -> np.ndarray:
        if self.dur is None:
            return self.end[part]
        return self.start[part] + self.dur[part]

    def depth(self) -> np.ndarray:
        """Each call's nesting depth: the calls open at its start."""
        n = len(self.frame)
        q = np.arange(n) + self.size
        closed = np.cumsum(np.bincount(q, minlength=n + 1))[:n]  # calls ended by p
        return np.arange(n) - closed


_LOW = np.iinfo(np.int64).min  # no earlier sibling; no window
_HIGH = np.iinfo(np.int64).max


def calls(profile: Profile, window: Window = None) -> Calls:
    """The calls of ``nested_calls``, in the same order and with the same times."""
    t = _Tree(profile, window)
    if t.n == 0:
        empty = np.zeros(0, np.uint32)
        return Calls(np.zeros(0, np.int16), empty, np.zeros(0, np.int32), dur=empty)
    t.clamp_roots()
    for i in range(1, len(t.levels)):
        t.clamp_children(i)
    t.subtree_sizes()
    return t.place(profile)


class _Tree:
    """The calls in depth-major rows (the levels one after the other) while they are
    clamped, sized and placed: clamped start, ``stop`` (duration; end with a window),
    whether the call stays, subtree size and position in pre-order. A depth is handled
    a piece of CALLS_PER_STEP rows at a time, so temporaries stay small; what a run of
    siblings needs from the piece before is carried over."""

    def __init__(self, profile: Profile, window: Window) -> None:
        self.depths = sorted(d for d, lv in profile.levels.items() if lv.n)
        self.levels = [profile.levels[d] for d in self.depths]
        self.row0 = [0, *np.cumsum([lv.n for lv in self.levels]).tolist()]  # per depth
        self.n = self.row0[-1]
        self.t0 = profile.t0_ticks
        self.lo, self.hi = _LOW, _HIGH
        if window is not None:
            a, b = sorted(window)
            self.lo, self.hi = profile.ticks(a) - self.t0, profile.ticks(b) - self.t0
        self.stop_name = "dur" if window is None else "end"
        self.frame_dtype = np.int16 if len(profile.frames) < 2**15 else np.int32

    def rows(self, i: int) -> slice:
        """The rows of depth index ``i``."""
        return slice(self.row0[i], self.row0[i + 1])

    def clamp_roots(self) -> None:
        """Clamp the roots, in (start, depth, row) order, and allocate the rows: the
        roots' largest end sets the starts' type."""
        parts = [np.flatnonzero(lv.parent < 0) for lv in self.levels]
        pairs = list(zip(self.levels, parts, strict=True))
        s = np.concatenate([lv.entry[r] for lv, r in pairs]) - self.t0
        order = slice(None)  # depth-major rows: a stable sort is the (start, depth, row) order
        if not bool(np.all(s[1:] >= s[:-1])):
            order = np.argsort(s, kind="stable")
            s = s[order]
        e = s + np.concatenate([lv.dur[r] for lv, r in pairs])[order]
        roots = np.concatenate([r + r0 for r, r0 in zip(parts, self.row0, strict=False)])
        self.roots = roots[order].astype(np.int32 if self.n < 2**31 else np.int64)
        if self.stop_name == "end":
            self.start, self.stop = np.empty(self.n), np.empty(self.n)
        else:
            fits = s[0] >= 0 and e.max() < 1 << 32  # 32 bits: half the memory
            self.start = np.empty(self.n, np.uint32 if fits else np.int64)
            self.stop = np.empty(self.n, np.uint32)  # clamped, a call is no longer
        self.keep = np.empty(self.n, bool)
        self.end_max, carry = 0, _LOW
        for a in range(0, len(s), CALLS_PER_STEP):
            part = slice(a, a + CALLS_PER_STEP)
            one_run = np.zeros(len(s[part]), bool)
            ks, ke, kept, carry = _clamp(
                s[part], e[part], one_run, 0, self.lo, self.hi, self.lo, carry
            )
            self._set(slice(None), self.roots[part], ks, ke, kept)
            if kept.any():
                self.end_max = max(self.end_max, ke[kept].max().item())

    def clamp_children(self, i: int) -> None:
        """Clamp the children at depth index ``i`` into their parents, clamped already."""
        lv, up = self.levels[i], self.levels[i - 1]
        carry = _LOW
        for rows, pk, first in _runs(lv.parent):
            s = lv.entry[rows] - self.t0
            e = s + lv.dur[rows]
            ps, pe = self.bounds(self.rows(i - 1), pk)
            base = up.entry[pk] - self.t0
            ks, ke, kept, carry = _clamp(s, e, first, base, ps, pe, self.lo, carry)
            kept &= self.keep[self.rows(i - 1)][pk]
            self._set(self.rows(i), rows, ks, ke, kept)

    def bounds(self, depth: slice, rows) -> tuple[np.ndarray, np.ndarray]:
        """Clamped start and end of ``rows`` of a depth (int64; float64 with a window)."""
        s, stop = self.start[depth][rows], self.stop[depth][rows]
        if self.stop_name == "end":
            return s, stop
        s = s.astype(np.int64)
        return s, s + stop

    def _set(self, depth: slice, rows, s: np.ndarray, e: np.ndarray, keep: np.ndarray) -> None:
        self.start[depth][rows] = s
        self.stop[depth][rows] = e if self.stop_name == "end" else e - s
        self.keep[depth][rows] = keep

    def subtree_sizes(self) -> None:
        """Each call's subtree size over the calls that stay (0 for one dropped),
        summed bottom up."""
        self.size = self.keep.astype(np.int32)
        for i in reversed(range(1, len(self.levels))):
            here, up = self.size[self.rows(i)], self.size[self.rows(i - 1)]
            for rows, pk, _ in _runs(self.levels[i].parent):
                np.add.at(up, pk, here[rows])

    def place(self, profile: Profile) -> Calls:
        """Each call at its position in pre-order, top down: the roots one after the
        other (an orphan right after its "[unknown]" wrapper), a child after its parent
        and the subtrees of its earlier siblings."""
        wrapped = self.roots >= self.row0[1 if self.depths[0] == 0 else 0]
        wrapped &= self.keep[self.roots]
        span = self.size[self.roots] + wrapped
        at = np.cumsum(span, dtype=np.int64)
        total = int(at[-1])
        at -= span
        at += wrapped
        self.pos = np.empty(self.n, np.int32 if total < 2**31 else np.int64)
        self.pos[self.roots] = at
        spare = total + 1  # calls dropped go to the last slot
        out = {
            "frame": np.empty(spare, self.frame_dtype),
            "start": np.empty(spare, self.start.dtype),
            "size": np.empty(spare, np.int32),
            self.stop_name: np.empty(spare, self.stop.dtype),
        }
        for i, lv in enumerate(self.levels):
            if i:
                self._children_positions(i)
            for a in range(0, lv.n, CALLS_PER_STEP):
                part = slice(a, min(a + CALLS_PER_STEP, lv.n))
                self._scatter(out, i, part, profile.frame_ids(lv, a, part.stop), total)
        return Calls(**{k: v[:total] for k, v in out.items()}, end_max=self.end_max)

    def _children_positions(self, i: int) -> None:
        """Each child's position at depth index ``i``: its parent's and one, and the
        subtree sizes of its earlier siblings (those in earlier pieces carried over)."""
        pos, up, size = self.pos[self.rows(i)], self.pos[self.rows(i - 1)], self.size[self.rows(i)]
        carry = 0
        for rows, pk, first in _runs(self.levels[i].parent):
            sz = size[rows]
            before = np.cumsum(sz, dtype=np.int64)
            before -= sz
            # Less the sum at the run's first row (before it, the carried sum)
            before -= np.maximum.accumulate(np.where(first, before, -carry))
            carry = int(before[-1] + sz[-1])
            before += up[pk]
            before += 1
            pos[rows] = before

    def _scatter(self, out: dict, i: int, part: slice, frame: np.ndarray, total: int) -> None:
        """Rows ``part`` of depth index ``i`` into ``out`` at their positions (calls
        dropped at ``total``); an orphan's wrapper right before it, as long as its
        subtree and one."""
        g = slice(self.row0[i] + part.start, self.row0[i] + part.stop)
        keep = self.keep[g]
        at = np.where(keep, self.pos[g], total)
        out["frame"][at] = frame
        for name, column in (
            ("start", self.start),
            ("size", self.size),
            (self.stop_name, self.stop),
        ):
            out[name][at] = column[g]
        orphan = (self.levels[i].parent[part] < 0) & keep if self.depths[i] > 0 else None
        if orphan is not None and orphan.any():
            at = at[orphan]
            for column in out.values():
                column[at - 1] = column[at]
            out["frame"][at - 1] = UNKNOWN_ID
            out["size"][at - 1] += 1


def _runs(parent: np.ndarray):
    """A depth's rows with a parent grouped by parent, rows in order within a group
    (the rows of a level are in entry order, and their parents usually too: then no
    sort), a piece at a time: (rows, their parents, which row starts a group)."""
    kids = None  # every row, in order
    if parent[0] < 0 or not bool(np.all(parent[1:] >= parent[:-1])):
        kids = np.argsort(parent, kind="stable")[np.count_nonzero(parent < 0) :]
    m = len(parent) if kids is None else len(kids)
    last = -1
    for a in range(0, m, CALLS_PER_STEP):
        b = min(a + CALLS_PER_STEP, m)
        rows = slice(a, b) if kids is None else kids[a:b]
        pk = parent[rows]
        first = np.empty(len(pk), bool)
        first[0] = pk[0] != last
        np.not_equal(pk[1:], pk[:-1], out=first[1:])
        last = pk[-1]
        yield rows, pk, first


def _clamp(s, e, first, base, ps, pe, lo, carry):
    """The walk's clamp of calls with raw times ``s``..``e``, in runs of siblings
    (``first`` marks a run's first call; the calls before continue the run of the
    piece before, whose largest end is ``carry``) within parents spanning ``ps``..``pe``
    (clamped) whose raw starts are ``base``. The cursor is the largest end of the
    earlier siblings, within the parent; a call starts at the cursor at the earliest
    and is cut to its parent's end. It stays unless it starts after its parent ends or
    (``lo``, a window's start) ends before the window. Returns the clamped starts and
    ends, which calls stay, and the largest end of the last run."""
    # The largest end so far in each run: one accumulate over (run number, end − base)
    # packed into an int64. A child lies within its parent's raw interval (the parent
    # rule) and a duration fits 32 bits, so end − base does too.
    run = np.cumsum(first, dtype=np.int64)
    run <<= 32
    top = e - base
    top += run
    np.maximum.accumulate(top, out=top)
    top -= run
    top += base
    lead = int(np.argmax(first)) if first.any() else len(first)
    np.maximum(top[:lead], carry, out=top[:lead])
    cursor = np.empty_like(top)
    cursor[0] = carry
    cursor[1:] = top[:-1]
    cursor[first] = _LOW
    cursor = np.minimum(np.maximum(ps, cursor), pe)
    ks = np.maximum(s, cursor)
    ke = np.minimum(np.maximum(e, ks), pe)
    return ks, ke, (ks <= pe) & (e >= lo), int(top[-1])
