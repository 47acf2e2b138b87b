"""The time span of a capture, accumulated packet by packet while it streams past."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..protocol import Metadata, ProfileData
from .timebase import concat_records, timer_freq_or_default, unwrap_exits


class CaptureSpan:
    """First entry to last exit, unwrapped in stream order (CLARIFICATIONS), in µs at the
    timer rate of the last METADATA seen (1 MHz without one)."""

    def __init__(self) -> None:
        self.metadata: Metadata | None = None
        self._last_exit: int | None = None
        self._lo: int | None = None
        self._hi: int | None = None

    def feed(self, events: Iterable[object]) -> None:
        # Unwrapping is the same in one call as packet by packet, so the records of
        # every packet given are unwrapped together (a packet holds ~20 records).
        batch: list[np.ndarray] = []
        for event in events:
            if isinstance(event, Metadata):
                self.metadata = event
            elif isinstance(event, ProfileData) and len(event.records):
                batch.append(event.records)
        if not batch:
            return
        recs = concat_records(batch)
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
