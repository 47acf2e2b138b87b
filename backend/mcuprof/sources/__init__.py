"""One seam for sources: each protocol is a sans-IO decoder plus a Source that turns
its events into the shared Profile's records (base.Source). Everything downstream
(live session, stored sessions, replay, import, exports, compare) picks the source by
the session's ``kind`` and never looks at the protocol itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import UserError
from ..profile.load import LoadResult, load_capture
from ..profile.model import Profile
from .base import Batch, Source
from .miniprofiler import MiniProfilerSource
from .qs import DEFAULT_TICK_HZ, QSSource, QSSymbols

FACTORIES: dict[str, Callable[..., Any]] = {
    MiniProfilerSource.kind: MiniProfilerSource,
    QSSource.kind: QSSource,
}
KINDS = tuple(FACTORIES)
SAMPLE_BYTES = 1 << 16
_CHUNK = 1 << 22


def new_source(kind: str, tick_hz: int | None = None) -> Source:
    if kind == QSSource.kind:
        return QSSource(tick_hz or DEFAULT_TICK_HZ)
    if kind in FACTORIES:
        return FACTORIES[kind]()
    raise UserError(f"unknown capture kind {kind!r}: one of {', '.join(KINDS)}")


def detect_kind(data: bytes) -> str | None:
    """The kind whose decoder finds more good packets/frames in the stream's start;
    None when neither finds any."""
    sample = bytes(data[:SAMPLE_BYTES])
    scores = {kind: FACTORIES[kind].looks_like(sample) for kind in KINDS}
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] > 0 else None


def load(
    kind: str,
    data: bytes,
    symbols: Any | None = None,
    *,
    progress: Callable[[int, int, int], None] | None = None,
    tick_hz: int | None = None,
) -> LoadResult:
    """Raw capture bytes of any kind -> Profile. ``symbols`` (an ELF's) names the frames
    of sources that have no names of their own."""
    if kind == MiniProfilerSource.kind:
        return load_capture(data, symbols, progress=progress)
    source = new_source(kind, tick_hz)
    own = source.symbols
    profile = Profile(own if own is not None else symbols)
    view = memoryview(data)
    total = len(data)
    for start in range(0, max(total, 1), _CHUNK):
        batch = source.feed(view[start : start + _CHUNK])
        if start + _CHUNK >= total:
            tail = source.close()
            batch = Batch(_join(batch.records, tail.records), batch.events + tail.events)
        if source.metadata is not None:
            profile.set_timer_freq(source.metadata.timer_freq)
        elif tick_hz:
            profile.set_timer_freq(tick_hz)
        profile.add(batch.records)
        if progress is not None:
            progress(min(start + _CHUNK, total), total, profile.n_records)
    if source.metadata is None:
        profile.set_timer_freq(tick_hz or DEFAULT_TICK_HZ)
    return LoadResult(profile, source.metadata, source.stats())  # type: ignore[arg-type]


def _join(a: Any, b: Any) -> Any:
    import numpy as np

    return a if len(b) == 0 else np.concatenate([a, b])


__all__ = [
    "DEFAULT_TICK_HZ",
    "KINDS",
    "Batch",
    "MiniProfilerSource",
    "QSSource",
    "QSSymbols",
    "Source",
    "detect_kind",
    "load",
    "new_source",
]
