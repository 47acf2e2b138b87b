"""The time span of a capture, accumulated packet by packet while it streams past."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..protocol import Metadata, ProfileData
from .keyed import KeyedCalls
from .timebase import concat_records, place, timer_freq_or_default

_ALONE = 1 << 12  # records: an array this long is unwrapped alone
# Records unwrapped (here and in Profile.add) or parented (model.set_parents) at
# a time: bounded temporaries. Defined here: ``mcuprof info`` needs the span, not the model.
RECORD_PIECE = 1 << 16


class CaptureSpan:
    """First entry to last exit, unwrapped in stream order (CLARIFICATIONS), in µs at the
    timer rate of the last METADATA seen (1 MHz without one)."""

    def __init__(self) -> None:
        self.metadata: Metadata | None = None
        self._last_exit: int | None = None
        self._lo: int | None = None
        self._hi: int | None = None
        self._buf = np.empty(0, np.int64)  # entries of a piece
        self._dur = np.empty(0, np.uint32)  # its durations

    def feed(self, events: Iterable[object]) -> None:
        # Unwrapping is the same in one call as packet by packet: large arrays (runs of
        # packets) are unwrapped as they are, small ones (packets between other events)
        # joined first, so the numpy calls stay few whatever the mix.
        small: list[np.ndarray] = []
        held = 0
        for event in events:
            if isinstance(event, Metadata):
                self.metadata = event
            elif isinstance(event, ProfileData) and len(event.records):
                recs = event.records
                if len(recs) >= _ALONE:
                    if small:
                        self._add(concat_records(small))
                        small, held = [], 0
                    self._add(recs)
                    continue
                small.append(recs)
                held += len(recs)
                if held >= _ALONE:
                    self._add(concat_records(small))
                    small, held = [], 0
        if small:
            self._add(concat_records(small))

    def add(self, records: np.ndarray | KeyedCalls) -> None:
        """Records as a source's ``feed`` gives them: MiniProfiler's (unwrapped here) or
        a source's keyed calls (on its own 64-bit clock already)."""
        if not len(records):
            return
        if isinstance(records, KeyedCalls):
            lo, hi = records.lo, records.hi
            self._lo = lo if self._lo is None else min(self._lo, lo)
            self._hi = hi if self._hi is None else max(self._hi, hi)
            return
        self.feed([ProfileData(records)])

    def _add(self, recs: np.ndarray) -> None:
        # A piece at a time into reused buffers: the temporaries stay in the cache and
        # no fresh pages are faulted in per packet run.
        n = len(recs)
        if len(self._buf) < min(n, RECORD_PIECE):
            size = min(max(n, _ALONE), RECORD_PIECE)
            self._buf, self._dur = np.empty(size, np.int64), np.empty(size, np.uint32)
        last, lo, hi = self._last_exit, self._lo, self._hi
        for a in range(0, n, RECORD_PIECE):
            piece = recs[a : a + RECORD_PIECE]
            k = len(piece)
            batch = place(piece, last, self._buf[:k], self._dur[:k])
            last = batch.last_exit
            lo = batch.lo if lo is None else min(lo, batch.lo)
            hi = batch.hi if hi is None else max(hi, batch.hi)
        self._last_exit, self._lo, self._hi = last, lo, hi

    @property
    def duration_us(self) -> float | None:
        if self._lo is None or self._hi is None:
            return None
        freq = timer_freq_or_default(self.metadata.timer_freq if self.metadata else None)
        return (self._hi - self._lo) * 1e6 / freq
