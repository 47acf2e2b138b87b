"""What a MiniProfiler capture lost, as far as the device's STATUS packets tell.

The device counts what it captured (``records_captured``) and what its ring dropped
(``buffer_overflows``, one per record) since Start; each STATUS it sends carries both,
in the stream between the profile packets. Where a status shows the overflows grown
since the one before, records were dropped between the two. Which records: the device
keeps its records in order and drops from its ring, so, counted in the order they
arrive (kept index), the dropped ones fall

- after the last record that had arrived before the earlier status (``R``: records
  received when it came; those were on the wire already, so none after them was
  dropped before it), and
- before the first record the device captured after the later status (kept index
  ``C - O``: the kept records captured by then).

A *stretch* is that stretch of the capture's time: from the exit of kept record ``R - 1``
(the capture's first entry when ``R`` is 0) to the exit of kept record ``C - O`` (the
capture's last exit when it never came), on the profile's own time line (unwrapped
ticks, in µs at the capture's timer rate, as ``Profile.us`` gives them). It is as wide
as the counters allow, never narrower than the truth. Records lost on the wire (CRC
errors, malformed packets) are in ``lost`` but in no stretch: the device never counted
them, and their place is not known (``unplaced``).

The one definition of *lost*: the device's last ``records_captured`` less the records
that arrived, never below 0 (after Stop the link drains and asks again, so this is the
health panel's Lost as of Stop). None when the stream holds no STATUS.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .profile.timebase import timer_freq_or_default, unwrap_exits
from .protocol import Metadata, ProfileData, ResponseDecoder, Status

# A hostile capture could hold a STATUS between every pair of records: past this many
# stretches the later ones are merged into the last (counted in ``merged``).
MAX_LOSS_STRETCHES = 10_000


@dataclass
class _Pending:
    """A stretch whose end (the exit of kept record ``end_index``) has not arrived yet."""

    start: int | None  # ticks; None: the capture's first entry
    end_index: int
    dropped: int


@dataclass
class LossTracker:
    """Fed a MiniProfiler stream's decoded events in stream order (``feed``), then
    ``result(stats)`` with the decoder's LinkStats (its CRC and malformed counts)."""

    metadata: Metadata | None = None
    received: int = 0
    statuses: int = 0
    last: Status | None = None
    merged: int = 0
    # (received, captured, overflows, last exit) when the status before came
    _prev: tuple[int, int, int, int | None] = (0, 0, 0, None)
    _base: int = 0  # kept index of the first record since the device's counters restarted
    _last_exit: int | None = None
    _first_entry: int | None = None
    _pending: list[_Pending] = field(default_factory=list)
    _done: list[list[int]] = field(default_factory=list)  # [start, end, dropped] in ticks

    def feed(self, events: Iterable[object]) -> None:
        for event in events:
            if isinstance(event, ProfileData) and len(event.records):
                self._records(event.records)
            elif isinstance(event, Status):
                self._status(event)
            elif isinstance(event, Metadata):
                self.metadata = event

    def _records(self, recs: np.ndarray) -> None:
        dur = recs["duration"].astype(np.uint32)
        exits = unwrap_exits(recs["entry_time"], dur, self._last_exit)
        if self._first_entry is None:
            self._first_entry = int(exits[0]) - int(dur[0])
        lo, hi = self.received, self.received + len(recs)
        while self._pending and self._pending[0].end_index < hi:
            p = self._pending.pop(0)
            end = int(exits[max(p.end_index, lo) - lo])
            self._close(p.start, end, p.dropped)
        self._last_exit = int(exits[-1])
        self.received = hi

    def _status(self, status: Status) -> None:
        self.statuses += 1
        self.last = status
        r0, c0, o0, exit0 = self._prev
        captured, overflows = status.records_captured, status.buffer_overflows
        if captured < c0 or overflows < o0:  # the device's counters restarted
            self._base, (r0, c0, o0) = self.received, (self.received, 0, 0)
            exit0 = self._last_exit
        grown = overflows - o0
        if grown > 0:
            start = None if r0 == 0 else exit0  # the exit of kept record r0 - 1
            self._pending.append(_Pending(start, self._base + captured - overflows, grown))
            if self._pending[-1].end_index < self.received:  # (it has arrived already)
                p = self._pending.pop()
                self._close(p.start, self._last_exit or 0, p.dropped)
        self._prev = (self.received, captured, overflows, self._last_exit)

    def _close(self, start: int | None, end: int, dropped: int) -> None:
        begin = self._first_entry if start is None else start
        begin = end if begin is None else min(begin, end)
        if self._done and begin <= self._done[-1][1]:  # overlaps the one before: one stretch
            last = self._done[-1]
            last[1], last[2] = max(last[1], end), last[2] + dropped
        elif len(self._done) >= MAX_LOSS_STRETCHES:
            last = self._done[-1]
            last[1], last[2] = max(last[1], end), last[2] + dropped
            self.merged += 1
        else:
            self._done.append([begin, end, dropped])

    def result(self, stats: Any = None) -> dict[str, Any] | None:
        """The capture's loss (see the module docstring); None without any STATUS."""
        if self.last is None:
            return None
        for p in self._pending:  # their end never arrived: the capture's last exit
            self._close(p.start, self._last_exit or 0, p.dropped)
        self._pending.clear()
        us = 1e6 / timer_freq_or_default(self.metadata.timer_freq if self.metadata else None)
        captured = self.last.records_captured
        lost = max(0, captured - self.received)
        placed = sum(s[2] for s in self._done)
        return {
            "captured": captured,
            "received": self.received,
            "lost": lost,
            "overflows": self.last.buffer_overflows,
            "crc_errors": int(getattr(stats, "crc_errors", 0)),
            "malformed": int(getattr(stats, "malformed", 0)),
            "statuses": self.statuses,
            "stretches": [[a * us, b * us, n] for a, b, n in self._done],
            "unplaced": max(0, lost - placed),
            "merged": self.merged,
        }


class LossChunks:
    """``LossTracker`` over a stream fed piece by piece; ``counts``: the stream's kind
    carries the device's counters (``Kind.counts_loss``; otherwise ``result`` is None)."""

    def __init__(self, counts: bool = True) -> None:
        self.on = counts
        self.decoder = ResponseDecoder(batch=True, merge=False)
        self.tracker = LossTracker()
        self._done = False
        self._value: dict[str, Any] | None = None

    def feed(self, chunk: bytes | memoryview) -> None:
        if self.on:
            self.tracker.feed(self.decoder.feed(chunk))

    def result(self) -> dict[str, Any] | None:
        """The loss (the stream ends here); the same answer when asked again."""
        if self.on and not self._done:
            self.tracker.feed(self.decoder.close())
            self._value = self.tracker.result(self.decoder.stats)
        self._done = True
        return self._value


def loss_of_chunks(chunks: Iterable[bytes | memoryview]) -> dict[str, Any] | None:
    """``LossTracker`` over a MiniProfiler stream read piece by piece."""
    loss = LossChunks()
    for chunk in chunks:
        loss.feed(chunk)
    return loss.result()


def lost_text(loss: dict[str, Any] | None) -> str:
    """How a list shows a session's loss: 'not recorded' for sessions stored before loss
    was kept (never 0), '?' when the device never sent its counters."""
    if loss is None:
        return "not recorded"
    if loss.get("lost") is None:
        return "?"
    lost, captured = int(loss["lost"]), int(loss["captured"] or 0)
    pct = f" ({100.0 * lost / captured:.1f}%)" if captured and lost else ""
    return f"{lost:,}{pct}"
