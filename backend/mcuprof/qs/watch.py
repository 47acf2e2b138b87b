"""What a live QS target's stream says about the target itself (issue 34, point 4): its
tick rate measured against the host clock (tickrate.py), its resets (each starts a new
segment of the capture) and its assertions (``=ASSERT=``, QS_ASSERT_FAIL).

``TargetWatch`` is a QS listener (``LiveSession.links.qs.listeners``): ``qs_events`` runs on
the link's reader thread as each batch is decoded, so the host time it reads is the
batch's arrival; it only appends and stores. ``figures`` (any thread) gives the health
panel's part; ``update`` (the ticker's) refits the rate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from ..protocol.qs import Record
from ..protocol.qs.records import TARGET_INFO
from .tickrate import MIN_SPAN_S, TickRate, differs

ASSERT_FAIL = 69  # QS_ASSERT_FAIL: (timestamp, location, module)
MAX_MODULE_CHARS = 128  # an assertion's module name as shown (the target's text)
# A new profile within this long of the last frames keeps the tick fit (same stream).
KEEP_FIT_S = 1.0
REFIT_S = 1.0  # the rate is refitted at most this often (health is read 10 times a second)


class TargetWatch:
    def __init__(
        self,
        tick_hz: int,
        tick_source: str,
        clock: Callable[[], float] = time.monotonic,
        replaying: Callable[[], bool] = lambda: False,
        log: Callable[[str, str], None] = lambda level, message: None,
    ) -> None:
        self.clock = clock
        self.log = log  # (level, message): the page's log
        # A replay's frames arrive when the replay sends them, not when a target made
        # them: they say nothing of its clock, and are kept out of the fit.
        self.replaying = replaying
        self._replayed = False
        self._lock = threading.Lock()
        self.tick = TickRate()
        self._fitted_at = float("-inf")
        self.tick_hz = tick_hz  # the rate QS times are read with (qs_time.py sets it)
        self.tick_source = tick_source
        self.asserted: dict[str, Any] | None = None  # the last assertion, until a reset
        self.assertions = 0

    # ------------------------------------------------------------ listener

    def qs_reset(self) -> None:
        """A new profile (Connect, Start, a replay). Start on a target that streams on
        keeps the fit (its frames came up to now); after a pause it may be another
        target, and the fit starts again."""
        with self._lock:
            last = self.tick.last_host
            if last is None or self.clock() - last > KEEP_FIT_S:
                self.tick.reset()
            self.asserted = None

    def qs_events(self, events: list[Any]) -> None:
        now = self.clock()
        newest: int | None = None
        bits = 32
        replay = self.replaying()
        with self._lock:
            if replay:
                self._replayed = True
            elif self._replayed:  # live again after a replay: a fit of its own
                self._replayed = False
                self.tick.reset()
            for e in events:
                if e.__class__ is not Record:
                    continue
                if e.rec == TARGET_INFO and e.values and e.values[0]:
                    # A reset target: its clock starts again, a new segment with it.
                    if newest is not None and not replay:
                        self.tick.add(now, newest)
                    newest = None
                    self.asserted = None
                    self.tick.reset(8 * e.config.tstamp_size)
                elif e.rec == ASSERT_FAIL:
                    self._assert(e)
                if e.timestamp is not None:
                    newest = e.timestamp if newest is None else _later(newest, e.timestamp, bits)
                    bits = 8 * e.config.tstamp_size
            if newest is not None and not replay:
                self.tick.add(now, newest)

    def _assert(self, e: Record) -> None:
        _, loc, module = e.values
        self.assertions += 1
        self.asserted = {
            "module": str(module)[:MAX_MODULE_CHARS],
            "location": int(loc),
            "at": time.time(),
            "count": self.assertions,
        }
        self.log(
            "error",
            f"target asserted: module {self.asserted['module']}, location {int(loc)}; "
            "the capture so far is kept",
        )

    # ------------------------------------------------------------ readers

    def health_figures(self) -> dict[str, Any]:
        """The health panel's part (link/open.py QSProtocol.health): the tick rate in
        use (``tick_source``: how it was set: "assumed", "given", "page" or "estimate")
        beside the estimate, refitted at most once per ``REFIT_S``; the last assertion."""
        now = self.clock()
        with self._lock:
            if now - self._fitted_at >= REFIT_S:
                self._fitted_at = now
                self.tick.update()
            est = self.tick.estimate_hz
            return {
                "tick_hz": self.tick_hz,
                "tick_source": self.tick_source,
                "tick_estimate_hz": est,
                "tick_span_s": round(self.tick.span_s, 1),
                "tick_min_span_s": MIN_SPAN_S,
                "tick_differs": differs(est, self.tick_hz),
                "asserted": dict(self.asserted) if self.asserted else None,
                "assertions": self.assertions,
            }


def _later(a: int, b: int, bits: int) -> int:
    """The later of two timestamps of a ``bits``-wide counter (a wrap between them)."""
    span = 1 << bits
    return b if (b - a) % span < span // 2 else a
