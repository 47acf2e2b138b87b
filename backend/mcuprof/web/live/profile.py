"""The live profile and the queue that feeds it.

The link's reader thread only appends to ``pending`` (``put_records``,
``put_metadata``): it never waits for the profile, a query or a browser. ``ingest``
(the ticker, 10 a second, and each REST query) drains the queue into the profile
under ``lock``, which queries and exports also hold while they read the profile.

Records whose timer restarted (a board in a reset loop, captures joined with ``cat``)
land behind those held, and each merge of such records costs a pass over the records
held: merged at every tick, a capture of R restarts opened in time growing as R². They
are held back and joined as the whole-capture loader joins them, in few large merges:
when the records held back reach 1/JOIN_PARTS of the profile's (so the merges' work is a
geometric series: linear in all), when the stream pauses (a replay's end, Stop), when an
export asks, or, for a live board, once JOIN_WAIT_S and JOIN_COST_FACTOR times the last
join's cost have passed (joins then take at most a fifth of the time).
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...profile import Profile
from ...profile.columns import Spill
from ...profile.load import JOIN_MAX_HELD
from ...profile.timebase import concat_records
from ...protocol import Metadata

INGEST_CHUNK = 1 << 18  # records per Profile.add when a backlog is drained
# Joining records that land behind (see above; docs/limits.md): at most JOIN_MAX_HELD held
# back (16 bytes each), joined at 1/JOIN_PARTS of the profile's records, or after
# JOIN_WAIT_S and JOIN_COST_FACTOR times the last join's cost.
JOIN_PARTS = 1
JOIN_WAIT_S = 1.0
JOIN_COST_FACTOR = 4.0


class LiveProfile:
    def __init__(
        self,
        columns_dir: Any,
        wall: Callable[[], float],
        symbols: Any,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.columns_dir = columns_dir
        self.wall = wall
        self.clock = clock
        self.held: list[np.ndarray] = []  # records that land behind, not yet joined
        self.n_held = 0
        self.joins = 0  # merges of held-back records, for the tests and the log
        self._joined_at = clock()
        self._join_cost = 0.0
        self.lock = threading.RLock()
        self.pending: collections.deque[tuple[str, Any, float]] = collections.deque()
        self.version = 0  # bumped whenever the profile gains data or is replaced
        self.oldest_unpublished: float | None = None  # wall clock of the oldest record
        self.profile = self.empty(symbols)

    def empty(self, symbols: Any) -> Profile:
        # Records on disk, memory-mapped: an hour of capture fits in bounded RSS.
        return Profile(symbols, spill=Spill(self.columns_dir))

    # ------------------------------------------------------------- reader thread

    def put_records(self, records: np.ndarray) -> None:
        now = self.wall()
        if self.oldest_unpublished is None:
            self.oldest_unpublished = now
        self.pending.append(("records", records, now))

    def put_metadata(self, meta: Metadata) -> None:
        self.pending.append(("meta", meta, self.wall()))

    # ------------------------------------------------------------- the rest

    def restart(self, symbols: Any, metadata: Metadata | None) -> None:
        """An empty profile in place of this one; what is queued is dropped."""
        with self.lock:
            self.pending.clear()
            self.held, self.n_held = [], 0
            self.oldest_unpublished = None
            self.profile = self.empty(symbols)
            if metadata is not None:
                self.profile.set_timer_freq(metadata.timer_freq or 1_000_000)
            self.version += 1

    def replace(self, profile: Profile) -> None:
        """``profile`` (a stored session's, loaded whole) in place of this one."""
        with self.lock:
            self.pending.clear()
            self.held, self.n_held = [], 0
            self.oldest_unpublished = None
            self.profile = profile
            self.version += 1

    def renamed(self, symbols: Any) -> None:
        """The names changed (an ELF was loaded): ``symbols`` become the profile's, if
        given; the views redraw either way."""
        with self.lock:
            if symbols is not None:
                self.profile.set_symbols(symbols)
            self.version += 1

    def take_oldest_unpublished(self) -> float | None:
        """Wall clock of the oldest record not yet published (an update takes it)."""
        with self.lock:
            oldest, self.oldest_unpublished = self.oldest_unpublished, None
        return oldest

    def drop_pending(self) -> None:
        with self.lock:
            self.pending.clear()
            self.held, self.n_held = [], 0

    def records(self) -> int:
        return int(getattr(self.profile, "n_records", 0))

    def time_range(self) -> list[float] | None:
        """The profile's span as of its last ingest, read without the lock (see
        LiveSession.time_range)."""
        profile = self.profile  # (one read: a Reset may put a new one in its place)
        if int(getattr(profile, "n_records", 0)) == 0:
            return None
        return [float(profile.t0_us), float(profile.t1_us)]

    def ingest(self, flush: bool = False) -> int:
        """Move queued records into the profile (those that land behind: held back, see
        above; with ``flush`` joined now). Returns the number of records that entered the
        profile; ColumnsFull (a full disk) goes to the caller."""
        added = 0
        with self.lock:
            before = self.profile.n_records
            batch: list[np.ndarray] = []
            queued = 0
            # What is queued now, not what the reader adds meanwhile: a fast source
            # (a max-speed replay) would otherwise keep this loop, and the lock, forever.
            for _ in range(len(self.pending)):
                kind, item, _ = self.pending.popleft()
                if kind == "meta":
                    if batch:
                        self._add(concat_records(batch))
                        batch, queued = [], 0
                    self._join()  # the records before it are timed by the rate before it
                    self.profile.set_timer_freq(item.timer_freq or 1_000_000)
                else:
                    batch.append(item)
                    added += len(item)
                    queued += len(item)
                    if queued >= INGEST_CHUNK:  # bounds an add's temporaries after a backlog
                        self._add(concat_records(batch))
                        batch, queued = [], 0
            if batch:
                self._add(concat_records(batch))
            if self.held and (flush or not added or self._join_due()):
                self._join()  # (no records since the last ingest: the stream paused)
            entered = self.profile.n_records - before
            if entered:
                self.version += 1
        return entered

    def _add(self, records: np.ndarray) -> None:
        if not self.held and not self.profile.lands_behind(records):
            self.profile.add(records)
            return
        self.held.append(records)
        self.n_held += len(records)
        enough = max(INGEST_CHUNK, self.profile.n_records // JOIN_PARTS)
        if self.n_held >= min(enough, JOIN_MAX_HELD):
            self._join()

    def _join_due(self) -> bool:
        waited = self.clock() - self._joined_at
        return waited >= max(JOIN_WAIT_S, JOIN_COST_FACTOR * self._join_cost)

    def _join(self) -> None:
        """Merge the records held back at once, as one add (one merge: ``reserve``)."""
        if not self.held:
            return
        began = self.clock()
        held, self.held, self.n_held = self.held, [], 0
        self.profile.reserve(sum(len(r) for r in held))
        self.profile.add(held)
        self.profile.settle()
        self.joins += 1
        self._joined_at = self.clock()
        self._join_cost = self._joined_at - began
