"""Log buckets of call durations, HDR-style: a duration's bucket is its float32 exponent
and its top ``SUB_BITS`` mantissa bits, so bucket k holds [lo, hi) with hi - lo = lo/64
to lo/128, and its middle is within ``ERROR`` (1/128, 0.78%) of every duration in it.
Zero has bucket 0 (the zero-length calls of a window's edge).

``Counts`` keeps the calls per (id, bucket) as they arrive: the profile counts every
call's (address id, bucket) when its records are merged into the levels
(``Profile._settle``), so a live capture's percentiles are read from the counts without
sorting its calls (distribution.py decides when).
"""

from __future__ import annotations

import numpy as np

SUB_BITS = 6  # mantissa bits kept: buckets 1/64 to 1/128 of their value wide
_SHIFT = 23 - SUB_BITS  # float32 has 23 mantissa bits
ERROR = 1.0 / (1 << (SUB_BITS + 1))  # a bucket's middle against any value in it: 0.78%
KEY_BITS = 15  # bucket numbers of finite float32 values < 2**15 (0x7F800000 >> 17)
_MASK = (1 << KEY_BITS) - 1


def bucket(ticks: np.ndarray) -> np.ndarray:
    """Each duration's bucket (int64): float32 bits >> (23 - SUB_BITS)."""
    f = np.asarray(ticks).astype(np.float32)
    return (f.view(np.uint32) >> np.uint32(_SHIFT)).astype(np.int64)


def bounds(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Buckets' lower and upper bounds in ticks (float64)."""
    k = np.asarray(k, np.int64)
    lo = (k << _SHIFT).astype(np.uint32).view(np.float32).astype(np.float64)
    hi = ((k + 1) << _SHIFT).astype(np.uint32).view(np.float32).astype(np.float64)
    return lo, np.where(k == 0, 0.0, hi)


def middle(k: np.ndarray) -> np.ndarray:
    """The middle of buckets k in ticks; 0 for the zero bucket."""
    lo, hi = bounds(k)
    return (lo + hi) / 2


class Counts:
    """Calls per (id, bucket): keys id << KEY_BITS | bucket, sorted, with their counts."""

    def __init__(self) -> None:
        self.keys = np.empty(0, np.int64)
        self.counts = np.empty(0, np.int64)

    def add(self, ids: np.ndarray, ticks: np.ndarray) -> None:
        if len(ids) == 0:
            return
        key = (np.asarray(ids).astype(np.int64) << KEY_BITS) | bucket(ticks)
        u, c = np.unique(key, return_counts=True)
        at = np.searchsorted(self.keys, u)
        have = at < len(self.keys)
        have[have] = self.keys[at[have]] == u[have]
        np.add.at(self.counts, at[have], c[have])
        if not have.all():  # new keys: inserted in order (a memcpy of the counts)
            self.keys = np.insert(self.keys, at[~have], u[~have])
            self.counts = np.insert(self.counts, at[~have], c[~have])

    def copy(self) -> Counts:
        out = Counts()
        out.keys, out.counts = self.keys.copy(), self.counts.copy()
        return out

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def grouped(self, group_of: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Counts per (group, bucket), ids mapped to groups by ``group_of[id]``: the
        groups, buckets and counts, sorted by group then bucket."""
        g = np.asarray(group_of, np.int64)[self.keys >> KEY_BITS]
        key = (g << KEY_BITS) | (self.keys & _MASK)
        u, inv = np.unique(key, return_inverse=True)
        return u >> KEY_BITS, u & _MASK, np.bincount(inv, self.counts, len(u)).astype(np.int64)
