"""The live profile and the queue that feeds it.

The link's reader thread only appends to ``pending`` (``put_records``,
``put_metadata``): it never waits for the profile, a query or a browser. ``ingest``
(the ticker, 10 a second, and each REST query) drains the queue into the profile
under ``lock``, which queries and exports also hold while they read the profile.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ..profile import Profile
from ..profile.columns import Spill
from ..profile.timebase import concat_records
from ..protocol import Metadata

INGEST_CHUNK = 1 << 18  # records per Profile.add when a backlog is drained


class LiveProfile:
    def __init__(self, columns_dir: Any, wall: Callable[[], float], symbols: Any) -> None:
        self.columns_dir = columns_dir
        self.wall = wall
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
            self.oldest_unpublished = None
            self.profile = self.empty(symbols)
            if metadata is not None:
                self.profile.set_timer_freq(metadata.timer_freq or 1_000_000)
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

    def records(self) -> int:
        return int(getattr(self.profile, "n_records", 0))

    def time_range(self) -> list[float] | None:
        """The profile's span as of its last ingest, read without the lock (see
        LiveSession.time_range)."""
        profile = self.profile  # (one read: a Reset may put a new one in its place)
        if int(getattr(profile, "n_records", 0)) == 0:
            return None
        return [float(profile.t0_us), float(profile.t1_us)]

    def ingest(self) -> int:
        """Move queued records into the profile. Returns the number of records added;
        ColumnsFull (a full disk) goes to the caller."""
        added = 0
        with self.lock:
            batch: list[np.ndarray] = []
            held = 0
            # What is queued now, not what the reader adds meanwhile: a fast source
            # (a max-speed replay) would otherwise keep this loop, and the lock, forever.
            for _ in range(len(self.pending)):
                kind, item, _ = self.pending.popleft()
                if kind == "meta":
                    if batch:
                        self.profile.add(concat_records(batch))
                        batch, held = [], 0
                    self.profile.set_timer_freq(item.timer_freq or 1_000_000)
                else:
                    batch.append(item)
                    added += len(item)
                    held += len(item)
                    if held >= INGEST_CHUNK:  # bounds an add's temporaries after a backlog
                        self.profile.add(concat_records(batch))
                        batch, held = [], 0
            if batch:
                self.profile.add(concat_records(batch))
            if added:
                self.version += 1
        return added
