"""One seam for sources: each protocol is a sans-IO decoder plus a Source that turns
its events into the shared Profile's records (base.Source). ``load`` and ``load_stream``
take a kind's name; everything else that differs by kind is asked of its object in
kinds/ (which wraps ``new_source`` and ``detect_kind``), so nothing downstream looks at
the protocol itself."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..capture import CHUNK  # bytes of a capture decoded at a time
from ..errors import UserError
from ..profile.load import LoadResult, load_capture, load_chunks
from ..profile.model import Profile
from .base import Batch, Source
from .miniprofiler import MiniProfilerSource

QS_KIND = "qs"
KINDS = (MiniProfilerSource.kind, QS_KIND)
# The QS source (and the QS analysis it uses) loads on first use: a MiniProfiler export
# should not pay for importing it.
_LAZY = {"QSSource", "DEFAULT_TICK_HZ"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from . import qs

        return getattr(qs, name)
    raise AttributeError(name)


def _looks_like_qs(sample: bytes) -> int:
    from ..protocol.qs import QSDecoder

    decoder = QSDecoder()
    decoder.feed(sample)
    return int(decoder.frame_stats.frames)


SAMPLE_BYTES = 1 << 16


def new_source(kind: str, tick_hz: int | None = None) -> Source:
    if kind == QS_KIND:
        from .qs import DEFAULT_TICK_HZ, QSSource

        # Whole captures want the records only: no Python object per QS record.
        return QSSource(tick_hz or DEFAULT_TICK_HZ, events=False)
    if kind == MiniProfilerSource.kind:
        return MiniProfilerSource()
    raise UserError(f"unknown capture kind {kind!r}: one of {', '.join(KINDS)}")


def detect_kind(data: bytes) -> str | None:
    """The kind whose decoder finds more good packets/frames in the stream's start;
    None when neither finds any."""
    sample = bytes(data[:SAMPLE_BYTES])
    packets = MiniProfilerSource.looks_like(sample)
    if packets and packets >= sample.count(b"\x7e"):
        # Every QS frame ends with a 0x7E flag byte, so QS cannot score more (and a tie
        # goes to MiniProfiler): its decoder need not be imported nor run.
        return MiniProfilerSource.kind
    scores = {MiniProfilerSource.kind: packets, QS_KIND: _looks_like_qs(sample)}
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
    view = memoryview(data)
    pieces = (view[start : start + CHUNK] for start in range(0, len(data), CHUNK))
    return load_stream(kind, pieces, len(data), symbols, progress=progress, tick_hz=tick_hz)


def load_stream(
    kind: str,
    chunks: Iterable[bytes | memoryview],
    total: int,
    symbols: Any | None = None,
    *,
    progress: Callable[[int, int, int], None] | None = None,
    tick_hz: int | None = None,
) -> LoadResult:
    """``load`` over a capture read piece by piece (``total`` bytes in all), so the raw
    bytes are never held whole."""
    if kind == MiniProfilerSource.kind:
        return load_chunks(chunks, total, symbols, progress)
    source = new_source(kind, tick_hz)
    # A source that names its own frames (keyed calls) has no use for the ELF's names.
    profile = Profile(None if source.own_names else symbols)
    done = 0

    def add(batch: Batch) -> None:
        if source.metadata is not None:
            profile.set_timer_freq(source.metadata.timer_freq)
        elif tick_hz:
            profile.set_timer_freq(tick_hz)
        profile.add(batch.records)

    for piece in chunks:
        add(source.feed(piece))
        done += len(piece)
        if progress is not None:
            progress(min(done, total), total, profile.n_records)
    add(source.close())
    profile.breaks = list(getattr(source, "breaks", ()))  # a target whose clock can restart
    if source.metadata is None:
        from .qs import DEFAULT_TICK_HZ

        profile.set_timer_freq(tick_hz or DEFAULT_TICK_HZ)
    if progress is not None:
        progress(total, total, profile.n_records)
    return LoadResult(profile, source.metadata, source.stats())  # type: ignore[arg-type]


def peek_kind(chunks: Iterable[bytes]) -> tuple[str, Iterator[bytes]]:
    """The kind of a capture read in chunks (MiniProfiler when unsure), and the same
    chunks again from the start."""
    it = iter(chunks)
    first = next(it, b"")
    return detect_kind(first) or MiniProfilerSource.kind, itertools.chain([first], it)


__all__ = [
    "DEFAULT_TICK_HZ",
    "KINDS",
    "Batch",
    "MiniProfilerSource",
    "QSSource",
    "Source",
    "detect_kind",
    "load",
    "load_stream",
    "new_source",
    "peek_kind",
]
