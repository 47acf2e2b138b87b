"""Raw capture bytes -> Profile."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..protocol import LinkStats, Metadata, ProfileData, ResponseDecoder
from ..protocol.constants import RECORD_SIZE
from .model import Profile
from .timebase import concat_records

Progress = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)

# Bytes decoded per Profile.add: at least this, and at most _ADDS adds per capture, so a
# stream whose time keeps jumping back (each merge re-parents what the newcomers may
# contain) is added in few steps, while an add's temporaries stay a fraction of the store.
# Addresses are interned per add: these steps also set the order of the frame ids.
_MIN_ADD_BYTES = 1 << 23
_ADDS = 8
# Records whose timer restarted (a board in a reset loop, captures joined with ``cat``)
# land behind those held, and each merge of them passes over the records held: added as
# they come into a profile on disk (``spill``, which is merged a few hundred thousand
# records at a time), R restarts cost R passes. They are held back and joined in one
# merge at the end, or whenever JOIN_MAX_HELD wait (16 bytes each, in RAM;
# docs/limits.md). The live profile holds them back too (web/live/profile.py).
JOIN_MAX_HELD = 1 << 22


@dataclass
class LoadResult:
    profile: Profile
    metadata: Metadata | None
    stats: LinkStats


def load_capture(
    data: bytes,
    symbols: Any | None = None,
    progress: Progress | None = None,
    chunk: int | None = None,
    spill: Any | None = None,
) -> LoadResult:
    """Decode a raw device-to-host capture into a Profile. The timer rate comes from the
    last METADATA packet before each batch of records (1 MHz without one)."""
    total = len(data)
    if chunk is None:  # a caller's chunk also bounds each add's temporaries (the dashboard's)
        chunk = max(_MIN_ADD_BYTES, -(-total // _ADDS))
    view = memoryview(data)
    pieces = (view[start : start + chunk] for start in range(0, total, chunk))
    return load_chunks(pieces, total, symbols, progress, spill, chunk)


def load_chunks(
    chunks: Iterable[bytes | memoryview],
    total: int,
    symbols: Any | None = None,
    progress: Progress | None = None,
    spill: Any | None = None,
    step: int | None = None,
) -> LoadResult:
    """``load_capture`` over a capture read piece by piece (``total`` bytes in all), so
    the raw bytes are never held whole. Records are added to the profile ``step`` bytes at
    a time (default: ``total / _ADDS``, at least _MIN_ADD_BYTES), whatever the size of
    the pieces."""
    profile = Profile(symbols, spill=spill)  # spill: records on disk (profile/columns.py)
    # Arrays, not an event per packet; left as cut (the add copies them anyway).
    decoder = ResponseDecoder(batch=True, merge=False)
    metadata: Metadata | None = None
    if step is None:
        step = max(_MIN_ADD_BYTES, -(-total // _ADDS))
    if spill is None:
        # A record takes RECORD_SIZE bytes of the capture, plus framing: ``total`` bounds
        # the records, so the staging columns are sized once and merged once, at the end.
        profile.reserve(total // RECORD_SIZE)
    batch: list[np.ndarray] = []
    pending = done = 0
    joins = _Joins(profile)

    def flush() -> None:
        nonlocal batch, pending
        if batch:
            if spill is None:
                profile.add(batch)  # one add: the batch's new addresses interned together
            else:
                joins.add(concat_records(batch))
            batch, pending = [], 0

    def take(events: list[object]) -> None:
        nonlocal metadata, pending
        for event in events:
            if isinstance(event, ProfileData):
                batch.append(event.records)
                pending += event.records.nbytes
            elif isinstance(event, Metadata):
                flush()
                metadata = event
                profile.set_timer_freq(event.timer_freq)

    for piece in chunks:
        take(decoder.feed(piece))
        done += len(piece)
        if pending >= step:
            flush()
        if progress is not None:
            progress(min(done, total), total, profile.n_records + pending // RECORD_SIZE)
    take(decoder.close())  # the end of the stream releases held-back packets
    flush()
    joins.join()
    profile.settle()  # the records in the levels (on disk with spill), none left staged
    if progress is not None:
        progress(total, total, profile.n_records)
    return LoadResult(profile, metadata, decoder.stats)


class _Joins:
    """Records added to a profile on disk, those that land behind held back and joined in
    few merges (see JOIN_MAX_HELD)."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self.held: list[np.ndarray] = []
        self.n_held = 0

    def add(self, records: np.ndarray) -> None:
        if not self.held and not self.profile.lands_behind(records):
            self.profile.add(records)
            return
        self.held.append(records)
        self.n_held += len(records)
        if self.n_held >= JOIN_MAX_HELD:
            self.join()

    def join(self) -> None:
        """The records held back merged at once (``reserve``: one merge)."""
        if self.held:
            held, self.held, self.n_held = self.held, [], 0
            self.profile.reserve(sum(len(r) for r in held))
            self.profile.add(held)
            self.profile.settle()
