"""The event flow a dashboard view keeps, fed one record at a time by ``QsMonitor``
(the live monitor and a stored session's alike, so both show the same for the same
capture): the last FLOW_ITEMS_MAX flow items, the last STATE_SPANS_MAX state
intervals, and each kept dispatch's RTC-step duration. Older ones go first and are
counted, never silently."""

from __future__ import annotations

import collections
from dataclasses import dataclass

from ..protocol.qs import Record
from .rtc import STEP_RECORDS, RtcTracker
from .sequence import FlowItem, StateInterval, StateTimeline, flow_item

# Flow items (posts, publishes, dispatches, time events, state changes, ticks) kept
# per monitor: about 300 bytes each with their step durations, 6 MiB at most.
FLOW_ITEMS_MAX = 20_000
# Closed state intervals kept per monitor (the open ones, one per machine, come on top).
STATE_SPANS_MAX = 20_000
_STEP_IDS = frozenset(STEP_RECORDS)


@dataclass(frozen=True, slots=True)
class FlowSnapshot:
    """A reader's copy: ``items`` and ``spans`` in stream order, ``open_spans`` the
    intervals not closed yet; ``*_dropped`` the older ones no longer kept."""

    items: list[FlowItem]
    items_dropped: int
    spans: list[StateInterval]
    open_spans: list[StateInterval]
    spans_dropped: int
    machines_dropped: int
    steps: dict[int, int]  # dispatch index -> its step's duration (target ticks)


class FlowLog:
    """Not thread-safe: the monitor calls ``add`` and ``snapshot`` under its lock."""

    def __init__(self, items_max: int = FLOW_ITEMS_MAX, spans_max: int = STATE_SPANS_MAX) -> None:
        self.items: collections.deque[FlowItem] = collections.deque(maxlen=items_max)
        self.seen = 0
        self.timeline = StateTimeline()
        self.spans: collections.deque[StateInterval] = collections.deque(maxlen=spans_max)
        self.spans_seen = 0
        self.tracker = RtcTracker()
        # (dispatch index, its step's duration), as many as there are kept items at
        # most: a deque, not a dict, so dropping the oldest frees its room at once.
        self.steps: collections.deque[tuple[int, int]] = collections.deque(maxlen=items_max)

    def add(self, r: Record, time: int | None) -> None:
        if r.rec in _STEP_IDS:
            self._step(r)
        item = flow_item(r, time)
        if item is None:
            return
        self.items.append(item)
        self.seen += 1
        if item.time is not None and item.obj is not None and item.kind in ("tran", "init"):
            for iv in self.timeline.feed((item,)):
                self.spans.append(iv)
                self.spans_seen += 1

    def _step(self, r: Record) -> None:
        for s in self.tracker.feed((r,)):
            self.steps.append((s.index, s.duration))

    def target_reset(self) -> None:
        """A step open across a target reset never ends (as QSSource has it)."""
        self.tracker.unfinished += len(self.tracker.pending)
        self.tracker.pending.clear()

    def snapshot(self) -> FlowSnapshot:
        return FlowSnapshot(
            list(self.items),
            self.seen - len(self.items),
            list(self.spans),
            list(self.timeline.still_open()),
            self.spans_seen - len(self.spans),
            self.timeline.dropped,
            dict(self.steps),
        )
