"""Precomputed levels of detail for one depth row of the timeline (Perfetto's mipmaps).

Tier t summarises groups of FAN**t consecutive records (in entry order): their latest
exit, their longest duration and the first position holding it. A timeline query walks
down the tiers (from one with ~8 groups per column): a group entirely inside the view,
narrower than a pixel and within one pixel column is taken whole; the rest is split into
its FAN children. Only groups that straddle a column edge (or hold a wide call) are
split, so a query touches O(width x FAN x tiers) groups rather than every record, and
its answer is exactly the record-by-record one. Memory: 16 bytes per FAN records, about
2.3 bytes per record (FAN 16 halves that but makes whole-capture queries ~40% slower).

The entries of the first and last record of every FAN**2 (tier 1's groups) are kept too,
0.25 bytes a record: the walk takes the bounds of its groups from them rather than from
the entry column, which may be on disk (columns.py), where reading one entry per group
of a whole capture would map all of a depth's pages.
"""

from __future__ import annotations

import numpy as np

FAN = 8
_NO_EXIT = np.iinfo(np.int64).min
_GROWTH = 1.5
_START_GROUPS = 8  # per pixel column
_POS_MASK = (1 << 31) - 1  # positions in a depth are int32
_BOUND = FAN * FAN  # records per kept (first, last) entry pair: a tier-1 group
_NO_BOUNDS = np.empty(0, np.int64)  # shared until a level holds _BOUND records (deep chains)


def _room(a: np.ndarray, need: int, keep: int) -> np.ndarray:
    """``a``, or a copy of its first ``keep`` items with room for ``need`` (amortised)."""
    if need <= len(a):
        return a
    grown = np.empty(max(need, int(len(a) * _GROWTH) + 16), a.dtype)
    grown[:keep] = a[:keep]
    return grown


class _Tier:
    __slots__ = ("_dur", "_exit", "_pos", "n")

    def __init__(self) -> None:
        self.n = 0
        self._exit = np.empty(0, np.int64)
        self._dur = np.empty(0, np.uint32)
        self._pos = np.empty(0, np.int32)

    @property
    def exit(self) -> np.ndarray:
        return self._exit[: self.n]

    @property
    def dur(self) -> np.ndarray:
        return self._dur[: self.n]

    @property
    def pos(self) -> np.ndarray:
        return self._pos[: self.n]

    def put(self, g0: int, exit_: np.ndarray, dur: np.ndarray, pos: np.ndarray) -> None:
        need = g0 + len(exit_)
        self._exit, self._dur, self._pos = (
            _room(a, need, g0) for a in (self._exit, self._dur, self._pos)
        )
        self._exit[g0:need] = exit_
        self._dur[g0:need] = dur
        self._pos[g0:need] = pos
        self.n = need

    def copy(self) -> _Tier:
        out = _Tier()
        out.n = self.n
        out._exit, out._dur, out._pos = self.exit.copy(), self.dur.copy(), self.pos.copy()
        return out

    @property
    def nbytes(self) -> int:
        return self._exit.nbytes + self._dur.nbytes + self._pos.nbytes


def _fold(exit_: np.ndarray, dur: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, ...]:
    """Aggregate runs of FAN: latest exit, longest duration, first position holding it."""
    pad = -len(exit_) % FAN
    if pad:
        exit_ = np.concatenate([exit_, np.full(pad, _NO_EXIT, np.int64)])
        dur = np.concatenate([dur, np.zeros(pad, dur.dtype)])
        pos = np.concatenate([pos, np.zeros(pad, pos.dtype)])
    d = dur.reshape(-1, FAN)
    # argmax takes the first maximum and padding sits at the end, so it never wins.
    arg = d.argmax(axis=1)
    rows = np.arange(len(d))
    return exit_.reshape(-1, FAN).max(axis=1), d[rows, arg], pos.reshape(-1, FAN)[rows, arg]


class Pyramid:
    """The tiers of one Level, kept up to date as records arrive, and the entries that
    bound each run of _BOUND records (``first[k]`` = entry[k * _BOUND], ``last[k]`` =
    entry[k * _BOUND + _BOUND - 1], for the complete runs)."""

    __slots__ = ("_first", "_last", "n_bounds", "tiers")

    def __init__(self) -> None:
        self.tiers: list[_Tier] = []
        self._first = self._last = _NO_BOUNDS
        self.n_bounds = 0

    def copy(self) -> Pyramid:
        out = Pyramid()
        out.tiers = [t.copy() for t in self.tiers]
        if self.n_bounds:
            out._first, out._last = self.first.copy(), self.last.copy()
            out.n_bounds = self.n_bounds
        return out

    @property
    def first(self) -> np.ndarray:
        return self._first[: self.n_bounds]

    @property
    def last(self) -> np.ndarray:
        return self._last[: self.n_bounds]

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tiers) + self._first.nbytes + self._last.nbytes

    def entry_at(self, entry: np.ndarray, pos: np.ndarray) -> np.ndarray:
        """entry[pos], from the kept bounds where they hold it (from RAM), else from
        ``entry`` (which may be on disk)."""
        k, r = np.divmod(pos, _BOUND)
        full = k < self.n_bounds
        head = full & (r == 0)
        tail = full & (r == _BOUND - 1)
        out = np.empty(len(pos), np.int64)
        out[head] = self._first[k[head]]
        out[tail] = self._last[k[tail]]
        rest = ~(head | tail)
        if rest.any():
            out[rest] = entry[pos[rest]]
        return out

    def _update_bounds(self, entry: np.ndarray, start: int) -> None:
        k0 = min(start // _BOUND, self.n_bounds)
        k1 = len(entry) // _BOUND
        if k1 <= k0:  # no complete run changed (a short level: one check, nothing else)
            return
        self._first, self._last = (_room(a, k1, k0) for a in (self._first, self._last))
        lo, hi = k0 * _BOUND, k1 * _BOUND
        self._first[k0:k1] = entry[lo:hi:_BOUND]
        self._last[k0:k1] = entry[lo + _BOUND - 1 : hi : _BOUND]
        self.n_bounds = k1

    def update(self, entry: np.ndarray, dur: np.ndarray, start: int) -> None:
        """Records from position ``start`` on changed (appended or merged in): refold the
        groups holding them. An append costs O(new records + FAN x tiers)."""
        n = len(entry)
        if n == 0:
            return
        self._update_bounds(entry, start)
        g = start // FAN
        lo = g * FAN
        parts = _fold(entry[lo:] + dur[lo:], dur[lo:], np.arange(lo, n, dtype=np.int32))
        level = 0
        while True:
            if level == len(self.tiers):
                self.tiers.append(_Tier())
            tier = self.tiers[level]
            tier.put(g, *parts)
            if tier.n <= 1:
                del self.tiers[level + 1 :]
                return
            g //= FAN
            lo = g * FAN
            parts = _fold(tier.exit[lo:], tier.dur[lo:], tier.pos[lo:])
            level += 1


def visible(
    entry: np.ndarray,
    dur: np.ndarray,
    pyramid: Pyramid,
    lo: int,
    k0: int,
    hi: int,
    a: float,
    px: float,
    width: int,
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """What one depth row shows of records [lo, hi): the calls entered before ``k0``
    count only if they exit at or after ``a``. Returns the positions of the wide calls
    (at least ``px`` long) and the narrow ones merged per pixel column, in column order:
    first position, latest exit, count and the position of the longest call (the first
    of equals)."""
    cols = _Columns(width)
    tiers = pyramid.tiers
    # Start at the coarsest tier with a few groups per column: above it nearly every group
    # straddles a column and would only be split; a short range is read record by record.
    top = -1
    while top + 1 < len(tiers) and (hi - lo) // FAN ** (top + 1) > _START_GROUPS * width:
        top += 1
    groups = np.arange(lo // FAN ** (top + 1), (hi - 1) // FAN ** (top + 1) + 1, dtype=np.int64)
    for level in range(top, -1, -1):
        size = FAN ** (level + 1)
        tier = tiers[level]
        s = groups * size
        e = np.minimum(s + size, len(entry))
        mexit = tier.exit[groups]
        mdur = tier.dur[groups]
        dead = (e <= k0) & (s >= lo) & (mexit < a) if k0 > lo else False
        # Tier 1 and up: group bounds from RAM (entry may be on disk, see Pyramid).
        at = pyramid.entry_at if level else _read
        col_first = _column(at(entry, s), a, px)
        col_last = _column(at(entry, e - 1), a, px)
        whole = (s >= k0) & (e <= hi) & (mdur < px) & (col_first == col_last)
        if whole.any():
            cols.add(
                col_first[whole],
                s[whole],
                mexit[whole].astype(np.float64),
                (e - s)[whole],
                mdur[whole],
                tier.pos[groups[whole]],
            )
        split = groups[~(dead | whole)]
        child = FAN**level
        groups = (split[:, None] * FAN + np.arange(FAN)).ravel()
        # Children that hold no record or none of [lo, hi) are dropped.
        cs = groups * child
        groups = groups[(cs < min(hi, len(entry))) & (cs + child > lo)]
    p = groups
    p = p[(p >= lo) & (p < hi)]
    if len(p):
        p = p[(p >= k0) | (entry[p] + dur[p] >= a)]
    d = dur[p]
    wide_mask = d >= px
    wide = p[wide_mask]
    narrow = p[~wide_mask]
    if len(narrow):
        nd = dur[narrow]
        end = entry[narrow].astype(np.float64) + nd
        one = np.ones(len(narrow), np.int64)
        cols.add(_column(entry[narrow], a, px), narrow, end, one, nd, narrow)
    return wide, cols.result()


class _Columns:
    """Per pixel column of one row: first position, latest exit, count and the longest
    call. Narrow calls that count start after ``a - px``, so columns run from -1; past
    the view's end (``b``) only calls entered at tick ceil(b) count, all in one column,
    so anything past ``width + 1`` shares the last slot."""

    __slots__ = ("count", "end", "first", "key", "last")

    def __init__(self, width: int) -> None:
        self.last = width + 2
        n = width + 4
        self.first = np.full(n, np.iinfo(np.int64).max, np.int64)
        self.end = np.full(n, -np.inf)
        self.count = np.zeros(n, np.int64)
        # Longest duration, then earliest position, in one int64: (dur << 31) | ~pos.
        self.key = np.full(n, -1, np.int64)

    def add(
        self,
        column: np.ndarray,
        first: np.ndarray,
        end: np.ndarray,
        count: np.ndarray,
        ldur: np.ndarray,
        lpos: np.ndarray,
    ) -> None:
        i = np.minimum(column, self.last).astype(np.intp) + 1
        np.minimum.at(self.first, i, first)
        np.maximum.at(self.end, i, end)
        np.add.at(self.count, i, count)
        key = (ldur.astype(np.int64) << 31) | (_POS_MASK - lpos.astype(np.int64))
        np.maximum.at(self.key, i, key)

    def result(self) -> dict[str, np.ndarray]:
        used = np.flatnonzero(self.count)
        return {
            "first": self.first[used],
            "end": self.end[used],
            "count": self.count[used],
            "lpos": _POS_MASK - (self.key[used] & _POS_MASK),
        }


def _read(entry: np.ndarray, pos: np.ndarray) -> np.ndarray:
    return entry[pos]


def _column(entry: np.ndarray, a: float, px: float) -> np.ndarray:
    """Pixel column, as a whole float (only compared, never used to index)."""
    return np.floor((entry.astype(np.float64) - a) / px)
