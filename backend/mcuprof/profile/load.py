"""Raw capture bytes -> Profile."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..protocol import LinkStats, Metadata, ProfileData, ResponseDecoder
from ..protocol.constants import RECORD_SIZE
from .model import Builder, Profile
from .timebase import concat_records

Progress = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)

# Bytes decoded per Profile.add: at least this, and at most _ADDS adds per capture, so a
# stream whose time keeps jumping back (each add re-parents what the newcomers may
# contain) is added in few steps, while an add's temporaries stay a fraction of the store.
_MIN_ADD_BYTES = 1 << 23
_ADDS = 8


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
    step = chunk  # a caller's chunk also bounds each add's temporaries (the dashboard's)
    if chunk is None:
        chunk = max(_MIN_ADD_BYTES, -(-total // _ADDS))
    view = memoryview(data)
    pieces = (view[start : start + chunk] for start in range(0, total, chunk))
    return load_chunks(pieces, total, symbols, progress, spill, step)


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
    # Arrays, not an event per packet; left as cut (the builder copies them anyway).
    decoder = ResponseDecoder(batch=True, merge=False)
    metadata: Metadata | None = None
    if step is None:
        step = max(_MIN_ADD_BYTES, -(-total // _ADDS))
    # In RAM, a Builder stages the records as they come and parents them once at the end
    # (the same profile as the adds below, without their temporaries or re-parenting);
    # it ends a batch where they would add, so frame ids come in the same order.
    # A record takes RECORD_SIZE bytes of the capture, plus framing: ``total`` bounds the
    # records, so the builder's columns are sized once (untouched pages cost no RSS).
    builder = Builder(profile, total // RECORD_SIZE) if spill is None else None
    batch: list[np.ndarray] = []
    pending = done = 0

    def flush() -> None:
        nonlocal batch, pending
        if builder is not None:
            builder.end_batch()
            pending = 0
        elif batch:
            records = concat_records(batch)
            batch, pending = [], 0  # the packets' arrays go before the add's temporaries come
            profile.add(records)

    def take(events: list[object]) -> None:
        nonlocal metadata, pending
        for event in events:
            if isinstance(event, ProfileData):
                if builder is not None:
                    builder.add(event.records)
                else:
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
            held = builder.n_records if builder is not None else pending // RECORD_SIZE
            progress(min(done, total), total, profile.n_records + held)
    take(decoder.close())  # the end of the stream releases held-back packets
    flush()
    if builder is not None:
        builder.finish()
    profile.settle()  # the records in the levels (on disk with spill), none left staged
    if progress is not None:
        progress(total, total, profile.n_records)
    return LoadResult(profile, metadata, decoder.stats)
