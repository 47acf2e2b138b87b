"""The target's records on their way to QSPY front ends, on a thread of their own.

The link's reader (or the CLI host's loop) only appends a batch to a bounded queue and
goes on: formatting QSPY's lines and one datagram per record and front end costs far
more than decoding, and it must never cost the capture. The thread sends what it can
in at most ``FRONT_END_TIME_SHARE`` of the time; batches that do not fit the queue are
not sent, and each front end attached then counts them as its own loss.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

# Records waiting for front ends; a batch that would pass it is dropped (docs/limits.md).
MAX_FRONT_END_BACKLOG = 20_000
# The share of the time the thread may spend sending: it sleeps in proportion to what
# a batch took, so the reader keeps the rest of the interpreter (docs/limits.md).
FRONT_END_TIME_SHARE = 0.1
# Longest pause between two batches, so a slow batch does not stall what follows.
MAX_PAUSE_S = 0.5


class Fanout:
    """``send(item)`` delivers one queued item (events, or a line) to the front ends;
    ``lost(n)`` counts ``n`` records the attached front ends did not get."""

    def __init__(
        self,
        send: Callable[[Any], None],
        lost: Callable[[int], None],
        *,
        limit: int = MAX_FRONT_END_BACKLOG,
        share: float = FRONT_END_TIME_SHARE,
    ) -> None:
        self._send = send
        self._lost = lost
        self.limit = limit
        self.share = share
        self._queue: collections.deque[tuple[Any, int]] = collections.deque()
        self._queued = 0  # records in the queue
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mcuprof-qspy-out", daemon=True)
        self._thread.start()

    def put(self, item: Any, records: int) -> bool:
        """Queue an item of ``records`` records; False (and counted) when it does not fit."""
        with self._cond:
            if records and self._queued + records > self.limit:
                dropped = True
            else:
                dropped = False
                self._queue.append((item, records))
                self._queued += records
                self._cond.notify()
        if dropped:
            self._lost(records)
        return not dropped

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                if not self._queue:
                    self._cond.wait(0.2)
                    continue
                item, records = self._queue.popleft()
                self._queued -= records
            began = time.perf_counter()
            try:
                self._send(item)
            except Exception:  # a bug must not end the front ends' feed: count, go on
                self._lost(records)
            took = time.perf_counter() - began
            if records:  # lines the host says (refusals) cost nothing worth pausing for
                pause = min(MAX_PAUSE_S, took * (1 - self.share) / self.share)
                self._stop.wait(pause)
