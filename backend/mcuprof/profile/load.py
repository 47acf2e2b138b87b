"""Raw capture bytes -> Profile."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..protocol import LinkStats, Metadata, ProfileData, ResponseDecoder
from .model import Profile
from .timebase import concat_records

Progress = Callable[[int, int, int], None]  # (bytes done, bytes total, records so far)

# Bytes decoded per Profile.add: at least this, and at most _ADDS adds per capture, so a
# stream whose time keeps jumping back (each add re-parents what the newcomers may
# contain) is added in few steps, while an add's temporaries stay a fraction of the store.
_CHUNK = 1 << 23
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
    profile = Profile(symbols, spill=spill)  # spill: records on disk (profile/columns.py)
    decoder = ResponseDecoder()
    metadata: Metadata | None = None
    view = memoryview(data)
    total = len(data)
    if chunk is None:
        chunk = max(_CHUNK, -(-total // _ADDS))
    for start in range(0, max(total, 1), chunk):
        batch: list[np.ndarray] = []
        events = decoder.feed(view[start : start + chunk])
        if start + chunk >= total:
            events += decoder.close()  # the end of the stream releases held-back packets
        for event in events:
            if isinstance(event, ProfileData):
                batch.append(event.records)
            elif isinstance(event, Metadata):
                if batch:
                    profile.add(concat_records(batch))
                    batch = []
                metadata = event
                profile.set_timer_freq(event.timer_freq)
        if batch:
            profile.add(concat_records(batch))
        if progress is not None:
            progress(min(start + chunk, total), total, profile.n_records)
    return LoadResult(profile, metadata, decoder.stats)
