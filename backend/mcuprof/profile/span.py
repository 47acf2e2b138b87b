"""The time span of a capture, accumulated packet by packet while it streams past."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..protocol import Metadata, ProfileData
from .timebase import concat_records, timer_freq_or_default, unwrap_exits

_ALONE = 1 << 12  # records: an array this long is unwrapped alone


class CaptureSpan:
    """First entry to last exit, unwrapped in stream order (CLARIFICATIONS), in µs at the
    timer rate of the last METADATA seen (1 MHz without one)."""

    def __init__(self) -> None:
        self.metadata: Metadata | None = None
        self._last_exit: int | None = None
        self._lo: int | None = None
        self._hi: int | None = None

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

    def _add(self, recs: np.ndarray) -> None:
        dur = recs["duration"]
        exits = unwrap_exits(recs["entry_time"], dur, self._last_exit)
        self._last_exit = int(exits[-1])
        hi = int(exits.max())
        lo = int(np.subtract(exits, dur, out=exits).min())  # entries, in place
        self._lo = lo if self._lo is None else min(self._lo, lo)
        self._hi = hi if self._hi is None else max(self._hi, hi)

    @property
    def duration_us(self) -> float | None:
        if self._lo is None or self._hi is None:
            return None
        freq = timer_freq_or_default(self.metadata.timer_freq if self.metadata else None)
        return (self._hi - self._lo) * 1e6 / freq
