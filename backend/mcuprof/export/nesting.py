"""Calls as one properly nested sequence, for the event-based formats.

Speedscope and Chrome need intervals that nest; a corrupt stream may hold calls that
overlap at one depth, so each call is clamped into its parent and after its previous
sibling. A sane capture is left untouched. Orphans get an "[unknown]" parent each.

``nested_calls`` is the definition (a walk, one call at a time); ``calls`` computes the
same sequence with array operations, one depth at a time, into narrow arrays: this is
the peak memory of the trace exports, so nothing per record is kept that the writers
can derive (depths come from the subtree sizes, chunk by chunk).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..profile import Profile, Window
from ..profile.aggregate import UNKNOWN_ID
from ..profile.levels import Level


@dataclass
class Nested:
    """Pre-order calls: frame id (UNKNOWN_ID for "[unknown]"), start and end ticks
    relative to the capture start, and nesting depth in this sequence."""

    frame: list[int]
    start: list[float]
    end: list[float]
    depth: list[int]


def nested_calls(profile: Profile, window: Window = None) -> Nested:
    t = profile.table()
    n = len(t["depth"])
    out = Nested([], [], [], [])
    if n == 0:
        return out
    base = profile.t0_ticks
    lo, hi = -np.inf, np.inf
    if window is not None:
        a, b = sorted(window)
        lo, hi = profile.ticks(a) - base, profile.ticks(b) - base
    start = (t["entry"] - base).astype(np.float64)
    end = start + t["duration"]
    parent = t["parent"]
    # Rows are depth-major and entry-sorted, so a stable sort by parent lists each
    # call's children in entry order.
    order = np.argsort(parent, kind="stable")
    sorted_parent = parent[order]
    first = np.searchsorted(sorted_parent, np.arange(n), side="left")
    last = np.searchsorted(sorted_parent, np.arange(n), side="right")
    n_roots = int(np.searchsorted(sorted_parent, -1, side="right"))
    roots = order[:n_roots].tolist()
    roots.sort(key=lambda r: (start[r], t["depth"][r], r))
    order_l = order.tolist()
    first_l, last_l = first.tolist(), last.tolist()
    start_l, end_l = start.tolist(), end.tolist()
    frame_l = t["frame"].tolist()
    orphan_l = t["orphan"].tolist()
    f_frame, f_start, f_end, f_depth = out.frame, out.start, out.end, out.depth
    cursor = lo
    for r in roots:
        s = max(start_l[r], cursor)
        e = min(max(end_l[r], s), hi)
        if s > hi or end_l[r] < lo:
            continue
        level = 0
        if orphan_l[r]:
            f_frame.append(UNKNOWN_ID)
            f_start.append(s)
            f_end.append(e)
            f_depth.append(0)
            level = 1
        cursor = e
        # Iterative DFS: (row, clamped start, clamped end, depth)
        stack = [(r, s, e, level)]
        while stack:
            row, s, e, d = stack.pop()
            f_frame.append(frame_l[row])
            f_start.append(s)
            f_end.append(e)
            f_depth.append(d)
            kids = []
            cur = s
            for k in order_l[first_l[row] : last_l[row]]:
                ks = max(start_l[k], cur)
                if ks > e or end_l[k] < lo or ks > hi:
                    continue
                ke = min(max(end_l[k], ks), e)
                kids.append((k, ks, ke, d + 1))
                cur = ke
            stack.extend(reversed(kids))
    return out


@dataclass
class Calls:
    """``nested_calls`` as arrays in pre-order: frame id (int16 or int32), start (ticks
    from the capture start: uint32 when every time fits, else int64; float64 with a
    window), duration (uint32 ticks, or
    ``end`` float64 with a window) and subtree size (int32, the call itself included;
    None when not asked for)."""

    frame: np.ndarray
    start: np.ndarray
    size: np.ndarray | None
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
        """Each call's nesting depth: the calls open at its start (for tests; the writers
        derive it chunk by chunk)."""
        n = len(self.frame)
        q = np.arange(n) + self.size
        closed = np.cumsum(np.bincount(q, minlength=n + 1))[:n]  # calls ended by p
        return np.arange(n) - closed


def calls(profile: Profile, window: Window = None, sizes: bool = True) -> Calls:
    """The calls of ``nested_calls`` in the same order and with the same times; without
    ``sizes`` (Chrome's complete events need none) ``size`` is None, 4 bytes a call less."""
    if window is None:
        return _arrays(profile, sizes)
    walk = nested_calls(profile, window)
    n = len(walk.depth)
    size = np.ones(n, np.int32)
    open_: list[int] = []
    for i, d in enumerate(walk.depth):
        while open_ and walk.depth[open_[-1]] >= d:
            j = open_.pop()
            size[j] = i - j
        open_.append(i)
    for j in open_:
        size[j] = n - j
    end = np.asarray(walk.end, np.float64)
    return Calls(
        np.asarray(walk.frame, frame_dtype(len(profile.frames))),
        np.asarray(walk.start, np.float64),
        size,
        end=end,
        end_max=float(end.max()) if n else 0.0,
    )


def frame_dtype(n_frames: int) -> type:
    """The narrowest type for frame ids and UNKNOWN_ID (-1): int16 for most firmware."""
    return np.int16 if n_frames < 2**15 else np.int32


_LOW = np.iinfo(np.int64).min


def _clamp(child: Level, parent: Level, t0: int, kids, pk, up: _Moved, into: _Moved) -> None:
    """Clamp the children ``kids`` of one depth (rows, None for all; grouped by parent
    ``pk``, in entry order) into their parents' clamped intervals (``up``) and after
    their previous siblings, into ``into``. Within a parent the cursor is a running
    maximum of the siblings' ends bounded by the parent: one accumulate over (parent
    rank, end) keys for every parent at once, slice by slice with the last key carried
    over. A child lies within its parent's unclamped interval (the parent rule) and a
    duration fits in 32 bits, so the key packs into an int64."""
    carry_key = carry_end = _LOW
    rank0 = 0
    for sl in _slices(len(pk)):
        rows = sl if kids is None else kids[sl]
        pks = pk[sl]
        s = child.entry[rows] - t0
        e = s + child.dur[rows]
        base = parent.entry[pks] - t0  # the parents' raw starts
        first = np.empty(len(pks), bool)
        first[0] = sl.start == 0 or pk[sl.start - 1] != pks[0]
        np.not_equal(pks[1:], pks[:-1], out=first[1:])
        rank = np.cumsum(first, dtype=np.int64)
        rank += rank0 - 1
        rank0 = int(rank[-1]) + 1
        rank <<= 32
        run = e - base
        run |= rank
        np.maximum.accumulate(run, out=run)
        np.maximum(run, carry_key, out=run)  # an earlier rank never wins
        carry_key = int(run[-1])
        run -= rank
        run += base
        before = np.empty(len(pks), np.int64)
        before[0] = carry_end
        before[1:] = run[:-1]
        before[first] = _LOW
        carry_end = int(run[-1])
        ps, pe = up.bounds(parent, pks, base)
        cur = np.maximum(ps, before)
        np.minimum(cur, pe, out=cur)
        ks = np.maximum(s, cur, out=cur)
        ke = np.maximum(e, ks)
        np.minimum(ke, pe, out=ke)
        kp = ks <= pe
        if up.keep is not None:
            kp &= up.keep[pks]
        into.set(rows, s, ks, ke, kp)


class _Moved:
    """One depth's clamped times, compactly: the shift of each start and the clamped
    duration (both fit 32 bits: a clamped call stays within its root's reach), and the
    calls kept. All None while the raw times stand."""

    def __init__(self) -> None:
        self.shift: np.ndarray | None = None
        self.dur: np.ndarray | None = None
        self.keep: np.ndarray | None = None

    @property
    def raw(self) -> bool:
        return self.shift is None and self.keep is None

    def begin(self, level: Level) -> None:
        if self.shift is None:
            self.shift = np.zeros(level.n, np.uint32)
            self.dur = np.array(level.dur)

    def set(self, rows, s: np.ndarray, lo: np.ndarray, hi: np.ndarray, keep) -> None:
        """Clamped start and end of ``rows`` (raw starts ``s``), and their kept flags."""
        shift, dur = lo - s, hi - lo
        if len(shift) and (int(shift.max()) >> 32 or int(dur.max()) >> 32):
            raise AssertionError("a clamped call moved further than 32 bits of ticks")
        self.shift[rows] = shift.astype(np.uint32)  # cast, then a plain scatter
        self.dur[rows] = dur.astype(self.dur.dtype, copy=False)
        if keep is not None and not bool(keep.all()):
            if self.keep is None:
                self.keep = np.ones(len(self.shift), bool)
            self.keep[rows] = keep

    def bounds(self, level: Level, rows, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clamped start and end of ``rows`` whose raw starts are ``s``."""
        if self.shift is None:
            return s, s + level.dur[rows]
        lo = s + self.shift[rows]
        return lo, lo + self.dur[rows]


_SLICE = 1 << 16  # rows per step: temporaries below the mmap threshold (1 MB) reuse heap pages


def _slices(n: int, step: int = 0) -> list[slice]:
    step = step or _SLICE
    return [slice(k, min(k + step, n)) for k in range(0, n, step)]


def _sane_children(child: Level, parent: Level) -> bool:
    """Every call of ``child`` has a parent, parents come in order, each call lies in
    its parent and starts after its previous sibling ends: the repair walk would leave
    them as they are. Checked slice by slice on the raw columns."""
    p = child.parent
    for sl in _slices(child.n):
        lo = max(sl.start - 1, 0)  # one row of overlap: order and siblings across slices
        pk = p[lo : sl.stop]
        if int(pk.min()) < 0:
            return False
        entry = child.entry[lo : sl.stop]
        end = entry + child.dur[lo : sl.stop]
        p_entry = parent.entry[pk]
        ok = entry >= p_entry
        p_entry += parent.dur[pk]  # the parents' ends
        ok &= end <= p_entry
        after = pk[1:] > pk[:-1]
        after |= (pk[1:] == pk[:-1]) & (entry[1:] >= end[:-1])
        ok[1:] &= after
        if not ok.all():
            return False
    return True


def _sane_roots(level: Level) -> int | None:
    """The largest end (absolute ticks) when every call of ``level`` starts after the
    ones before it end (the walk's cursor leaves the roots as they are), else None."""
    top = np.iinfo(np.int64).min
    for sl in _slices(level.n):
        entry = level.entry[sl]
        run = entry + level.dur[sl]
        np.maximum.accumulate(run, out=run)
        if not (int(entry[0]) >= top and bool(np.all(entry[1:] >= run[:-1]))):
            return None
        top = max(top, int(run[-1]))
    return top


def _arrays(profile: Profile, sizes: bool = True) -> Calls:
    """``nested_calls`` over the whole capture, one depth at a time. Rows of a depth
    are in entry order, so a parent's children are one run (parents usually come in
    order too: then no sort at all). A depth whose calls all fit their parents and
    follow their siblings (the usual case) keeps its raw times, checked slice by slice;
    only a corrupt one gets clamped copies. Positions in pre-order come from subtree
    sizes: a child sits after its parent and the subtrees of its earlier siblings, and
    the children of the parents before its own fill theirs."""
    depths = sorted(d for d, lv in profile.levels.items() if lv.n)
    levels = [profile.levels[d] for d in depths]
    n = sum(lv.n for lv in levels)
    if n == 0:
        empty = np.zeros(0, np.int32)
        return Calls(empty, np.zeros(0, np.int64), empty, dur=np.zeros(0, np.uint32))
    up = [i - 1 if i and depths[i - 1] == depths[i] - 1 else None for i in range(len(levels))]
    index = np.int32 if 2 * n < 2**31 else np.int64  # positions (with wrappers)
    d = _Depths(levels, depths, up, profile.t0_ticks, index)
    moved = [_Moved() for _ in levels]  # clamped times per depth, where the raw ones move
    roots, end_max = _clamp_roots(d, moved)
    kids = _clamp_children(d, moved)
    size = _subtree_sizes(d, moved, kids)
    if roots is None:
        total, wrappers = int(size[0].sum(dtype=np.int64)), None
    else:
        wrappers, total = roots.place(size)
    # Clamping only moves a start later, and every end stays within end_max: 32 bits
    # (half the memory of int64, and the writers' digits in 32-bit arithmetic) unless a
    # capture spans more ticks.
    low = min(int(lv.entry[0]) for lv in levels) - d.t0
    out = Calls(
        np.empty(total, frame_dtype(len(profile.frames))),
        np.empty(total, np.uint32 if low >= 0 and end_max < 1 << 32 else np.int64),
        np.empty(total, np.int32) if sizes else None,
        dur=np.empty(total, np.uint32),
        end_max=end_max,
    )
    if wrappers is not None:
        at, w_lo, w_hi, w_size = wrappers
        out.frame[at], out.start[at], out.dur[at] = UNKNOWN_ID, w_lo, w_hi - w_lo
        if out.size is not None:
            out.size[at] = w_size
    _place(profile, d, moved, kids, size, roots, out)
    return out


@dataclass
class _Depths:
    """The capture's depths with calls, for ``_arrays``: their levels, the index of
    each one's parent depth (None: a depth of roots), the capture's first tick and the
    positions' integer type."""

    levels: list[Level]
    depths: list[int]
    up: list[int | None]
    t0: int
    index: type


def _clamp_roots(d: _Depths, moved: list[_Moved]) -> tuple[_Roots | None, int]:
    """The roots (depth 0 and orphans), each clamped to start after the ones before it
    end, and the largest end: no ``_Roots`` (None) when the depth-0 calls alone make a
    sane sequence, the usual case; else their moved times go into ``moved``."""
    parts = []
    for i, lv in enumerate(d.levels):
        if d.up[i] is None:
            parts.append((i, None))  # every call of the depth
        elif bool((lv.parent < 0).any()):
            parts.append((i, np.flatnonzero(lv.parent < 0)))
    if len(parts) == 1 and parts[0][0] == 0 and d.depths[0] == 0:
        top = _sane_roots(d.levels[0])
        if top is not None:
            return None, top - d.t0
    roots = _Roots(parts, d.levels, d.t0, np.asarray(d.depths), d.index)
    for i, rows, lo, hi in roots.moved():
        moved[i].begin(d.levels[i])
        moved[i].set(rows, d.levels[i].entry[rows] - d.t0, lo, hi, None)
    return roots, roots.end_max


def _clamp_children(d: _Depths, moved: list[_Moved]) -> list[np.ndarray | None]:
    """Children, top down, clamped only where the walk would move them. Per depth, its
    rows with a parent in parent order (None: every row, in order already)."""
    kids_of: list[np.ndarray | None] = [None] * len(d.levels)
    for i, u in enumerate(d.up):
        if u is None or (moved[u].raw and _sane_children(d.levels[i], d.levels[u])):
            continue
        kids, pk = _by_parent(d.levels[i].parent)
        kids_of[i] = kids
        moved[i].begin(d.levels[i])
        _clamp(d.levels[i], d.levels[u], d.t0, kids, pk, moved[u], moved[i])
    return kids_of


def _by_parent(parent: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """The rows with a parent, in (parent, row) order (None: all rows, in order), and
    their parents."""
    has = parent >= 0
    kids = None if bool(has.all()) else np.flatnonzero(has)
    pk = parent if kids is None else parent[kids]
    if len(pk) > 1 and not bool(np.all(pk[1:] >= pk[:-1])):
        order = np.argsort(pk, kind="stable")
        kids = order if kids is None else kids[order]
        pk = pk[order]
    if kids is not None and kids.dtype != np.int32:
        kids = kids.astype(np.int32)  # rows of a level fit (Level columns are int32)
    return kids, pk


def _subtree_sizes(
    d: _Depths, moved: list[_Moved], kids_of: list[np.ndarray | None]
) -> list[np.ndarray | None]:
    """Per depth, each call's subtree size over the calls kept (0 for a call not kept),
    summed deepest first. A depth without children: one byte per call."""
    size: list[np.ndarray | None] = []
    for i, lv in enumerate(d.levels):
        keep, leaf = moved[i].keep, i not in d.up
        if keep is None:
            size.append(np.ones(lv.n, np.uint8 if leaf else np.int32))
        else:
            size.append(keep.view(np.uint8) if leaf else keep.astype(np.int32))
    for i in reversed(range(len(d.levels))):
        u = d.up[i]
        if u is None:
            continue
        p = d.levels[i].parent
        every = kids_of[i] is None and moved[i].raw  # sane: every row has a parent
        for sl in _slices(d.levels[i].n):
            pk, sz = p[sl], size[i][sl].astype(np.int32, copy=False)  # add.at's fast path
            if not every:
                has = pk >= 0
                pk, sz = pk[has], sz[has]
            np.add.at(size[u], pk, sz)
    return size


def _place(
    profile: Profile,
    d: _Depths,
    moved: list[_Moved | None],
    kids_of: list[np.ndarray | None],
    size: list[np.ndarray | None],
    roots: _Roots | None,
    out: Calls,
) -> None:
    """Each depth's calls kept, at their positions in ``out``: roots one after the
    other (an orphan after its "[unknown]" wrapper), then each depth from its parents'.
    A depth's sizes, sorted rows and clamped times are dropped once its children are
    placed: memory stays the output and two depths' positions."""
    pos_up: np.ndarray | None = None
    for i, lv in enumerate(d.levels):
        u = d.up[i]
        if roots is None and i == 0:  # sane roots: one after the other
            pos = np.cumsum(size[0], dtype=d.index)
            pos -= size[0]
        else:
            pos = np.empty(lv.n, d.index)
        if u is not None:
            offsets = _child_offsets(pos_up, size[u], moved[u].keep, d.index)
            _child_positions(offsets, lv.parent, kids_of[i], size[i], pos, d.index)
            moved[u] = size[u] = kids_of[i] = offsets = None
        if roots is not None:
            roots.positions(i, pos)
        pos_up = pos
        for sl in _slices(lv.n):
            _scatter(profile, lv, d.t0, moved[i], pos, size[i], sl, out)
        moved[i].shift = moved[i].dur = None  # the kept flags serve the next depth


def _child_offsets(
    pos_up: np.ndarray, size_up: np.ndarray, kept: np.ndarray | None, index: type
) -> np.ndarray:
    """Per parent, where its first child goes: after the parent itself, and after
    the children of the parents before it, which fill (size - kept) places each.
    ``pos_up``, the parents' positions, is turned into them in place."""
    filled = (size_up - (1 if kept is None else kept)).astype(index, copy=False)
    pos_up += 1
    pos_up += filled
    np.cumsum(filled, dtype=index, out=filled)
    pos_up -= filled
    return pos_up


def _child_positions(
    offsets: np.ndarray,
    parent: np.ndarray,
    kids: np.ndarray | None,
    size: np.ndarray,
    pos: np.ndarray,
    index: type,
) -> None:
    """Each child's position in ``pos``: its parent's offset and the subtrees of its
    earlier siblings (the children of a parent are one run of ``kids``, in order)."""
    carry = 0  # the sizes of the children before the slice
    for sl in _slices(len(parent) if kids is None else len(kids)):
        rows = sl if kids is None else kids[sl]
        sz = size[rows]
        excl = np.cumsum(sz, dtype=index)
        last = int(excl[-1])
        excl -= sz
        excl += carry
        excl += offsets[parent[rows]]
        pos[rows] = excl
        carry += last


def _scatter(
    profile: Profile,
    lv: Level,
    t0: int,
    mv: _Moved,
    pos: np.ndarray,
    size: np.ndarray,
    sl: slice,
    out: Calls,
) -> None:
    """The calls kept of rows ``sl`` of a depth into ``out`` at their positions. Values
    are cast to the output's types before they are scattered: a scatter that casts as
    it goes takes half as long again as the cast and the scatter."""
    rows = sl if mv.keep is None else np.flatnonzero(mv.keep[sl]) + sl.start
    at = pos[rows].astype(np.intp)  # one conversion for the four scatters
    frames = profile.frame_ids(lv, sl.start, sl.stop)
    frames = frames if mv.keep is None else frames[rows - sl.start]
    out.frame[at] = frames.astype(out.frame.dtype, copy=False)
    s = lv.entry[rows] - t0
    if mv.shift is None:
        out.dur[at] = lv.dur[rows]
    else:
        s += mv.shift[rows]
        out.dur[at] = mv.dur[rows]
    out.start[at] = s.astype(out.start.dtype, copy=False)
    if out.size is not None:
        out.size[at] = size[rows].astype(out.size.dtype, copy=False)


class _Roots:
    """Roots (depth 0 and orphans) in (start, depth, row) order, each clamped to start
    after the ones before it end: the general case, when the depth-0 calls alone do not
    make a sane sequence. Kept part by part (one part per depth: its roots' rows, None
    for all of them), in the parts' own order: each part is in (start, row) order
    already, so one stable sort of the starts merges them, and only the running cursor
    and the positions need the merged order."""

    def __init__(self, parts: list, levels: list, t0: int, depths: np.ndarray, index: type):
        self.index = index
        self.parts = parts
        self.offsets = np.cumsum([0] + [levels[i].n if r is None else len(r) for i, r in parts])
        self.wrap = [int(depths[i]) > 0 for i, _ in parts]
        n = int(self.offsets[-1])
        s = np.empty(n, np.int64)
        e = np.empty(n, np.int64)
        for k, (i, r) in enumerate(parts):
            part = slice(self.offsets[k], self.offsets[k + 1])
            lv = levels[i]
            np.subtract(lv.entry if r is None else lv.entry[r], t0, out=s[part])
            np.add(s[part], lv.dur if r is None else lv.dur[r], out=e[part])
        # Parts come in depth order and rows ascend within each: a stable sort of the
        # starts is the (start, depth, row) order.
        self.order = np.argsort(s, kind="stable").astype(index) if len(parts) > 1 else None
        self.raw = s, e
        self.lo, self.hi = self._clamped(s, e)
        self.end_max = int(self.hi.max())

    def _clamped(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each root's start and end once the cursor (the largest end so far, in the
        merged order) has moved it, in the parts' order; a slice of the merged order at
        a time, the largest end carried over."""
        order = self.order
        lo = np.empty_like(s)
        hi = np.empty_like(e)
        top = _LOW
        for sl in _slices(len(s)):
            at = sl if order is None else order[sl]
            ms = s[at]
            me = e[at]
            cursor = np.maximum.accumulate(me)
            np.maximum(cursor, top, out=cursor)
            m_lo = np.empty_like(ms)
            m_lo[0] = max(int(ms[0]), top)
            np.maximum(ms[1:], cursor[:-1], out=m_lo[1:])
            top = int(cursor[-1])
            np.maximum(me, m_lo, out=me)
            lo[at] = m_lo
            hi[at] = me
        return lo, hi

    def _part(self, k: int) -> slice:
        return slice(int(self.offsets[k]), int(self.offsets[k + 1]))

    def moved(self) -> Iterator[tuple[int, slice | np.ndarray, np.ndarray, np.ndarray]]:
        """(depth index, rows, clamped starts, clamped ends) of the parts whose roots
        the cursor moved; the raw times are dropped after."""
        s, e = self.raw
        for k, (i, r) in enumerate(self.parts):
            part = self._part(k)
            lo, hi = self.lo[part], self.hi[part]
            if not (np.array_equal(lo, s[part]) and np.array_equal(hi, e[part])):
                yield i, slice(None) if r is None else r, lo, hi
        self.raw = None  # type: ignore[assignment]
        # Only the wrappers need the roots' times from here on.
        self.wrapped = {
            k: (self.lo[self._part(k)].copy(), self.hi[self._part(k)].copy())
            for k in range(len(self.parts))
            if self.wrap[k]
        }
        self.lo = self.hi = None  # type: ignore[assignment]

    def place(self, size: list) -> tuple[tuple | None, int]:
        """Positions of the roots from their subtree sizes; the "[unknown]" wrappers
        (position, start, end, size) and the number of calls."""
        span = np.empty(int(self.offsets[-1]), np.int64)
        for k, (i, r) in enumerate(self.parts):
            part = self._part(k)
            span[part] = size[i] if r is None else size[i][r]
            span[part] += self.wrap[k]
        order = self.order
        self.pos = np.empty(len(span), self.index)
        total = 0  # the spans before the slice
        for sl in _slices(len(span)):
            at = sl if order is None else order[sl]
            sp = span[at]
            ends = np.cumsum(sp)
            ends += total
            total = int(ends[-1])
            ends -= sp  # where each root's span starts: its wrapper, if any
            self.pos[at] = ends
        del span
        wrappers = []
        for k, (i, r) in enumerate(self.parts):
            if self.wrap[k]:
                part = self._part(k)
                at = self.pos[part].copy()
                self.pos[part] += 1
                r_size = (size[i] if r is None else size[i][r]).astype(np.int32)
                wrappers.append((at, *self.wrapped.pop(k), r_size + 1))
        self.order = None
        if not wrappers:
            return None, total
        return tuple(np.concatenate(w) for w in zip(*wrappers, strict=True)), total

    def positions(self, i: int, pos: np.ndarray) -> None:
        """Set the positions of depth i's roots in ``pos``."""
        for k, (j, r) in enumerate(self.parts):
            if j == i:
                pos[slice(None) if r is None else r] = self.pos[self._part(k)]
