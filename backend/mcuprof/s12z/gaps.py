"""The cycles between consecutive interrupts, for their spread (count, min, median,
mean, max): held in memory up to MAX_HELD_GAPS, then in a temporary file from which the
median is selected exactly, 16 bits at a time."""

from __future__ import annotations

import tempfile
from typing import Any

import numpy as np

from .measures import spread, us

# Gaps held in memory (8 bytes each) for their median; past this they go to a temporary
# file (8 bytes each on disk; the trace's 1 GiB cap bounds it).
MAX_HELD_GAPS = 1 << 22
_SLICE = 1 << 20
_DIGIT = 16


class Gaps:
    """The cycles between consecutive interrupts: count, min, max and sum as they come;
    the values themselves for the median, in memory up to MAX_HELD_GAPS, then on disk."""

    def __init__(self) -> None:
        self._held: list[np.ndarray] = []
        self._n_held = 0
        self._file: Any = None
        self.count = 0
        self.total = 0
        self.min = self.max = 0

    def add(self, values: np.ndarray) -> None:
        if not len(values):
            return
        values = values.astype(np.int64)
        lo, hi = int(values.min()), int(values.max())
        self.min = lo if not self.count else min(self.min, lo)
        self.max = hi if not self.count else max(self.max, hi)
        self.count += len(values)
        self.total += int(values.sum())
        if self._file is None and self._n_held + len(values) <= MAX_HELD_GAPS:
            self._held.append(values)
            self._n_held += len(values)
            return
        if self._file is None:
            # Closed in spread(), or with the object: it outlives this call.
            self._file = tempfile.TemporaryFile(prefix="mcuprof-s12z-gaps-")  # noqa: SIM115
            for held in self._held:
                self._file.write(held.tobytes())
            self._held, self._n_held = [], 0
        self._file.write(values.tobytes())

    def spread(self, bus_hz: float | None) -> dict[str, Any]:
        if self._file is None:
            values = np.concatenate(self._held) if self._held else np.empty(0, np.int64)
            return spread(values, bus_hz)
        try:
            n = self.count
            lo, hi = _select(self._file, (n - 1) // 2), _select(self._file, n // 2)
            out: dict[str, Any] = {
                "count": n,
                "min": self.min,
                "median": (lo + hi) / 2,
                "mean": self.total / n,
                "max": self.max,
            }
        finally:
            self._file.close()
            self._file = None
        if bus_hz:
            out["unit_us"] = {k: us(out[k], bus_hz) for k in ("min", "median", "mean", "max")}
        return out


def _select(f: Any, rank: int) -> int:
    """The value of rank ``rank`` (0 = least) among the non-negative int64 values in file
    ``f``: a histogram of one 16-bit digit per pass, from the top, over the values whose
    higher digits are those chosen so far."""
    prefix = 0
    for shift in range(64 - _DIGIT, -1, -_DIGIT):
        hist = np.zeros(1 << _DIGIT, np.int64)
        f.seek(0)
        while chunk := f.read(8 * _SLICE):
            v = np.frombuffer(chunk, np.uint64)
            if shift + _DIGIT < 64:
                v = v[(v >> np.uint64(shift + _DIGIT)) == np.uint64(prefix)]
            digits = ((v >> np.uint64(shift)) & np.uint64((1 << _DIGIT) - 1)).astype(np.int64)
            hist += np.bincount(digits, minlength=1 << _DIGIT)
        below = np.cumsum(hist)
        digit = int(np.searchsorted(below, rank, side="right"))
        rank -= int(below[digit - 1]) if digit else 0
        prefix = (prefix << _DIGIT) | digit
    return prefix
