"""The numeric kernels of the profile: small pure functions on numpy arrays, each the
fast form of one plain numpy (or Python) expression, which its docstring names and a
property test (tests/profile/test_kernels.py, test_find_parents.py) checks it against.

Every kernel gives exactly what its reference gives (same values, same dtype where the
docstring says so); they differ only in time and temporaries. An optimisation of the
model's numeric work belongs here, behind such a function, with its reference beside it.

- ``is_sorted(a)``: ``bool(np.all(a[1:] >= a[:-1]))``
- ``depth_groups(depth)``: ``[np.flatnonzero(depth == d) for d in np.unique(depth)]``
- ``distinct(raw)``: ``np.unique(raw)`` (uint32)
- ``sort_with_order(key)``: ``order = np.argsort(key, kind="stable"); (key[order], order)``
- ``sort_entries(entry)``: the same, for a depth's entry ticks (consumed)
- ``unique_inverse(key)``: ``np.unique(key, return_inverse=True)`` (inverse int32)
- ``ranks(x, x0, span)``: ``np.unique(x, return_inverse=True)`` (inverse int32)
- ``unique_pairs(hi, lo)``: ``np.unique`` of the (hi, lo) rows, split into columns, and
  the inverse (int32)
- ``pair_keys(hi, lo)`` / ``split_keys(keys)``: ``(hi << 32) | lo`` and back
- ``last_at_or_before(entry, keys)``: ``np.searchsorted(entry, keys, side="right") - 1``,
  the first step of the parent search (levels.find_parents: the record of the depth
  above that contains the child, entered last)
"""

from __future__ import annotations

import numpy as np

_MASK32 = (1 << 32) - 1


def is_sorted(a: np.ndarray) -> bool:
    """``bool(np.all(a[1:] >= a[:-1]))``, true for fewer than two values."""
    return len(a) < 2 or bool(np.all(a[1:] >= a[:-1]))


def depth_groups(depth: np.ndarray) -> list[np.ndarray]:
    """Positions of the records of each depth, in stream order, shallowest depth first.
    A few depths (the usual tree) take a scan each; a deep chain, one stable sort."""
    present = np.flatnonzero(np.bincount(depth))
    if len(present) <= 8:
        return [np.flatnonzero(depth == d) for d in present.tolist()]
    order = np.argsort(depth, kind="stable")
    cuts = np.flatnonzero(np.diff(depth[order])) + 1
    return np.split(order, cuts)


ID_PIECE = 1 << 18  # records whose address ids are looked up at a time


def distinct(raw: np.ndarray) -> np.ndarray:
    """np.unique of u32 addresses, by a table over their range when it is small (firmware
    addresses span a few times their count)."""
    lo, hi = int(raw.min()), int(raw.max())
    if hi - lo >= 2 * len(raw) + 4096:
        return np.unique(raw)
    seen = np.zeros(hi - lo + 1, bool)
    for a in range(0, len(raw), ID_PIECE):  # offsets as indices, a piece at a time
        seen[np.subtract(raw[a : a + ID_PIECE], lo, dtype=np.intp)] = True
    return (np.flatnonzero(seen) + lo).astype(np.uint32)


_IDS = 1 << 20  # keys whose positions are written at a time (sort_with_order)


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


def sort_entries(entry: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``sort_with_order`` of a depth's entry ticks (int64, consumed): equal entries keep
    their order, as Level.insert's merge keeps them."""
    return sort_with_order(entry, own=True)


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


def split_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(keys >> 32, keys & 0xFFFFFFFF) as int32, read in place where int64 is little-endian."""
    if np.little_endian:
        halves = keys.view(np.int32).reshape(-1, 2)
        return halves[:, 1], halves[:, 0]
    return (keys >> 32).astype(np.int32), (keys & _MASK32).astype(np.int32)


# Keys per distinct key, on average, from which levels.find_parents searches a run of
# equal keys once.
RUNS = 4


def last_at_or_before(entry: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The position of the last entry at or before each key (-1: none), the first step
    of the parent search: plain ``np.searchsorted``. (A per-tick count table and windowed
    or run-deduplicated searches gained nothing measurable end to end: they went.)"""
    out = np.searchsorted(entry, keys, side="right")
    out -= 1
    return out
