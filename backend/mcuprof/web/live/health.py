"""The link's health figures: counts, loss, rates and the overflow warning.

``on_status`` runs on the link's threads and only stores; ``update`` (the ticker's, and
only the ticker's: it advances the rate window) computes the rates and logs the growth
of the link's error counters; ``figures`` reads both, from any thread.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from ...link.base import LinkState
from ...protocol import Status

RATE_WINDOW_S = 2.0
OVERFLOW_WARN_S = 10.0


class Health:
    def __init__(self, clock: Callable[[], float], log: Callable[[str, str], None]) -> None:
        self.clock = clock
        self.log = log
        self.last_status: Status | None = None
        self.status_at: float | None = None  # clock time of last_status
        self.received_at_status = 0  # Received when the device sent last_status
        self.final_received = 0  # Received of the link last closed (health after Disconnect)
        self.rates: dict[str, Any] | None = None  # as the ticker last computed them
        self._window: collections.deque[tuple[float, int, int]] = collections.deque()
        self._overflow_seen: int | None = None
        self._overflow_grew_at: float | None = None
        self._counted: dict[str, int] = {}  # logged counters as last seen

    def on_status(self, status: Status, link: Any) -> None:
        # What had arrived when the device sent this: records before it in the stream
        # were decoded first (one reader thread), so this is its own moment's count.
        if link is not None:
            self.received_at_status = int(link.records_received_since_start)
        self.status_at = self.clock()
        self.last_status = status

    def forget_status(self) -> None:
        """A new capture: the previous capture's device count is not this one's."""
        self.last_status = None
        self.status_at = None
        self.received_at_status = 0

    def buffers_reset(self) -> None:
        self._overflow_seen = None
        self._overflow_grew_at = None

    def figures(self, link: Any, state: str) -> dict[str, Any]:
        """The link's counts as they are now."""
        stats = link.stats if link is not None else None
        status = self.last_status
        received = (
            int(link.records_received_since_start) if link is not None else self.final_received
        )
        captured = status.records_captured if status is not None else None
        # Captured is the device's counter as of its last status; Received counts what
        # arrived since Start. While profiling, records the device still holds or has on
        # the wire are "in flight" (captured, neither dropped nor received when that
        # status was sent); what the device dropped (overflows) is lost. After Stop the
        # link drains and asks again, so Captured = Received + Lost exactly.
        profiling = state == LinkState.PROFILING
        in_flight = 0
        loss = 0
        if captured is not None:
            at_status = self.received_at_status if profiling else received
            overflows = status.buffer_overflows if status is not None else 0
            if profiling:
                in_flight = max(0, captured - overflows - at_status)
                loss = min(overflows, captured)
                # The device's count is as of its last status; what arrived since was
                # captured too, so the count shown is never below Received.
                captured = max(captured, received)
            else:
                loss = max(0, captured - received)
        loss = max(0, loss)
        return {
            "profiling": profiling,
            "buffer_usage": status.buffer_usage_percent if status is not None else None,
            "overflows": status.buffer_overflows if status is not None else None,
            "captured": captured,
            "received": received,
            "in_flight": in_flight,
            "status_age_s": self._status_age(),
            "loss": loss,
            "loss_pct": (100.0 * loss / captured) if captured else 0.0,
            "crc_errors": stats.crc_errors if stats is not None else 0,
            "malformed": stats.malformed if stats is not None else 0,
            "skipped_bytes": stats.skipped_bytes if stats is not None else 0,
            "unsupported_version": stats.unsupported_version if stats is not None else 0,
        }

    def current_rates(self, link: Any) -> dict[str, Any]:
        """The rates as the ticker last computed them (before its first tick: now)."""
        return self.rates if self.rates is not None else self._advance(link)

    def _status_age(self) -> float | None:
        if self.status_at is None or self.last_status is None:
            return None
        return self.clock() - self.status_at

    def update(self, link: Any, logged: dict[str, str]) -> None:
        """Advance the rate window, log the growth of ``logged`` counters (name ->
        message), and keep the rates for ``current_rates``."""
        self.rates = self._advance(link)
        if link is not None:
            self._log_growth(link.stats, logged)

    def _advance(self, link: Any) -> dict[str, Any]:
        now = self.clock()
        stats = link.stats if link is not None else None
        bytes_total = stats.bytes if stats is not None else 0
        records_total = stats.records if stats is not None else 0
        window = self._window
        if window and (bytes_total < window[-1][1] or records_total < window[-1][2]):
            window.clear()  # a new link: counters restarted
        window.append((now, bytes_total, records_total))
        while len(window) > 2 and now - window[0][0] > RATE_WINDOW_S:
            window.popleft()
        t0, b0, r0 = window[0]
        dt = now - t0
        status = self.last_status
        overflows = status.buffer_overflows if status is not None else None
        if overflows is not None:
            # The link logs each growth; here it only lights the warning for a while.
            if self._overflow_seen is not None and overflows > self._overflow_seen:
                self._overflow_grew_at = now
            self._overflow_seen = overflows
        return {
            "bytes_per_s": (bytes_total - b0) / dt if dt > 0 else 0.0,
            "records_per_s": (records_total - r0) / dt if dt > 0 else 0.0,
            "overflow_warning": self._overflow_grew_at is not None
            and now - self._overflow_grew_at < OVERFLOW_WARN_S,
        }

    def _log_growth(self, stats: Any, logged: dict[str, str]) -> None:
        for name, message in logged.items():
            total = int(getattr(stats, name, 0))
            seen = self._counted.get(name, 0)
            if total < seen:
                seen = 0  # a new link: its counters restarted
            if total > seen:
                self.log("warning", message.format(grown=total - seen, total=total))
            self._counted[name] = total
