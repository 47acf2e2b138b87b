"""Replaying a stored QS capture as if a QS target sent it now.

``QSReplayDevice`` is a sans-IO QS target whose firmware is the recording: it puts the
stored bytes on the wire, each frame when its timestamp comes due (speed 1x, 10x;
``None`` as fast as the reader takes them), while the host's global filter is on
(Start) and holds them while it is off (Stop). The pacing is the MiniProfiler replay's
(``replay.PacedDevice``): the recording is read and decoded a piece at a time as it plays,
never held whole. ReplayPort puts it behind the pyserial surface, so a replay goes
through QSLink's reader, the QS source and the live session as a target does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..protocol.qs import Framer, QSDecoder, QSFrame, Record
from ..protocol.qs.decoder import ColumnBatch
from ..protocol.qs.records import TARGET_INFO
from ..qs.rx import RX
from .replay import (
    MAX_BURST,
    Clock,
    PacedDevice,
    Piece,
    Stream,
    _chunks,
    link_factory,
    recording_size,
)

RX_GLB_FILTER = RX["GLB_FILTER"]
# Bytes decoded at a time to pace a replay. Small: each bad frame in a piece costs a
# Python object, and a piece of nothing but flags must not hold the start up.
DECODE_BYTES = 1 << 16

Recording = bytes | str | os.PathLike[str] | Stream


class QSReplayDevice(PacedDevice):
    """``data`` is the recording's bytes or a path to it; either is read a piece at a
    time as it plays, so the memory a replay holds is one piece, whatever its size."""

    def __init__(
        self,
        data: Recording,
        speed: float | None = 1.0,
        tick_hz: int = 1_000_000,
        *,
        clock: Clock,
    ) -> None:
        self._data = data
        self.tick_hz = tick_hz
        self.total_records: int | None = None
        pieces = _raw_pieces(data) if speed is None else _frame_pieces(data, tick_hz, DECODE_BYTES)
        PacedDevice.__init__(self, pieces, speed, clock)
        self._rx = Framer()

    def count_records(self) -> int:
        """The profile records the replay will deliver, as opening the session counts
        them (reads and decodes all of it, a piece at a time: run it aside)."""
        if self.total_records is None:
            from ..sources import load_stream

            data = self._data
            size = recording_size(data)
            # Pieces as small as the replay's: a piece of bad frames is an object each.
            pieces = _chunks(data, DECODE_BYTES)
            loaded = load_stream("qs", pieces, size, tick_hz=self.tick_hz)
            self.total_records = int(loaded.stats["records"])
        return self.total_records

    def receive(self, data: bytes) -> None:
        self._advance()
        for ev in self._rx.feed(data):
            if isinstance(ev, QSFrame) and ev.rec == RX_GLB_FILTER:
                self.profiling = any(ev.payload[1:])


def _raw_pieces(data: Recording) -> Iterator[Piece]:
    """At maximum speed nothing waits: the bytes as they are read, a burst at a time."""
    for chunk in _chunks(data):
        view = memoryview(chunk)
        for start in range(0, len(view), MAX_BURST):
            yield None, view[start : start + MAX_BURST], 0


def _frame_pieces(data: Recording, tick_hz: int, read: int = DECODE_BYTES) -> Iterator[Piece]:
    """The recording cut after good frames, each piece due at the capture second of
    the good frame it ends with (frames due together go as one piece). Bad frames and
    junk go with the good frame after them; the bytes after a piece's last good frame
    (a frame cut by the read, bad frames) go at once, due with the frame before them:
    a frame is complete on the wire only when its flag arrives, with its own piece."""
    decoder = QSDecoder()
    clock = _CaptureClock(tick_hz)
    base = 0  # stream offset of the chunk
    due = 0.0
    for chunk in _chunks(data, read):
        view = memoryview(chunk)
        initial = decoder.config.tstamp_size
        batch = decoder.feed_columns(view)
        dues = clock.feed(batch, initial)
        pos = 0
        if len(dues):
            ends = (batch.wire_ends - base).tolist()
            last = np.flatnonzero(np.diff(dues, append=np.inf) != 0).tolist()
            for i, due in zip(last, dues[last].tolist(), strict=True):
                yield due, view[pos : ends[i]], 0
                pos = ends[i]
        if pos < len(view):
            yield due, view[pos:], 0
        base += len(view)


class _CaptureClock:
    """Capture ticks of each good frame, a decoded piece at a time: the time of the last
    timestamped record at or before it, counted from the first. A clock that goes back
    (a target reset) counts as no time passing.

    Records of a fixed layout are read as columns (``QSDecoder.feed_columns``); the
    others (application records, odd frames) come one by one, as ``feed`` gives them."""

    def __init__(self, tick_hz: int) -> None:
        self.tick_hz = tick_hz
        self._last: int | None = None  # the last timestamp seen, as sent
        self._ticks = 0  # capture ticks at it (exact)
        self._top = 0.0  # the latest due so far, in ticks
        self._frames = 0  # good frames before this batch: the index of its first

    def feed(self, batch: ColumnBatch, initial: int) -> np.ndarray:
        """Due seconds of the batch's good frames; ``initial`` is the timestamp size in
        force at its start."""
        n = len(batch.wire_ends)
        due = np.zeros(n)
        if n == 0:
            return due
        ix, ts, bits = _stamps(batch, initial)
        if len(ix):
            due[ix - self._frames] = self._count(ts, bits)
        self._frames += n
        due[0] = max(due[0], self._top)
        due = np.maximum.accumulate(due)
        self._top = float(due[-1])
        return due / self.tick_hz

    def _count(self, ts: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """Capture ticks at each timestamp. Each step is modulo the wrap of the record's
        timestamp size (uint64 arithmetic wraps modulo 2**64, which every such wrap
        divides); a step of half a wrap or more is the clock going back: no time."""
        before = ts[:1] if self._last is None else np.array([self._last], np.uint64)
        step = np.diff(ts, prepend=before)
        mask = np.where(bits >= 64, np.uint64(~np.uint64(0)), (np.uint64(1) << bits) - np.uint64(1))
        step &= mask
        step[(step >> (bits - np.uint64(1))) != 0] = 0
        self._last = int(ts[-1])
        if self._ticks + float(step.astype(np.float64).sum()) < 2.0**63:
            t = np.cumsum(step) + np.uint64(self._ticks)  # exact in uint64
            self._ticks = int(t[-1])
            return t.astype(np.float64)
        out = np.empty(len(step))  # past 2**63 ticks: exact as Python integers
        total = self._ticks
        for i, s in enumerate(step.tolist()):
            total += s
            out[i] = total
        self._ticks = total
        return out


def _stamps(batch: ColumnBatch, initial: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The batch's timestamped records in stream order: good-frame index, timestamp,
    timestamp size in bits."""
    index: list[np.ndarray] = []
    stamps: list[np.ndarray] = []
    # Records decoded one by one: (index, timestamp, timestamp size); target infos mark
    # where the sizes in force (those of the columns' records) change.
    rows: list[tuple[int, int, int]] = []
    infos: list[tuple[int, int]] = []
    for e in batch.others:
        if e.__class__ is not Record:
            continue
        if e.rec == TARGET_INFO:
            infos.append((e.index, e.config.tstamp_size))
        if e.timestamp is not None:
            rows.append((e.index, e.timestamp, e.config.tstamp_size))
    for table in batch.tables.values():
        names = table.fields.dtype.names
        if names and names[0] == "ts":
            index.append(table.index.astype(np.int64))
            stamps.append(table.fields["ts"].astype(np.uint64))
    size_parts: list[np.ndarray] = []
    if index:
        at = np.array([i for i, _ in infos], np.int64)
        sizes = np.array([initial] + [s for _, s in infos], np.int64)
        size_parts = [sizes[np.searchsorted(at, ix, side="left")] for ix in index]
    if rows:
        index.append(np.fromiter((r[0] for r in rows), np.int64, len(rows)))
        stamps.append(np.fromiter((r[1] for r in rows), np.uint64, len(rows)))
        size_parts.append(np.fromiter((r[2] for r in rows), np.int64, len(rows)))
    if not index:
        empty = np.empty(0, np.int64)
        return empty, empty.astype(np.uint64), empty.astype(np.uint64)
    ix = np.concatenate(index)
    order = np.argsort(ix, kind="stable")
    bits = (8 * np.concatenate(size_parts)[order]).astype(np.uint64)
    return ix[order], np.concatenate(stamps)[order], bits


def _due_seconds(data: bytes, n: int, tick_hz: int, read: int = DECODE_BYTES) -> np.ndarray:
    """Due seconds of the first ``n`` frames of a whole recording, by the replay's
    clock (flags past the last good frame are due with it): what the property tests
    compare with the per-record walk."""
    decoder = QSDecoder()
    clock = _CaptureClock(tick_hz)
    parts = []
    for chunk in _chunks(data, read):
        initial = decoder.config.tstamp_size
        parts.append(clock.feed(decoder.feed_columns(chunk), initial))
    good = np.concatenate(parts) if parts else np.zeros(0)
    due = np.zeros(n)
    m = min(n, len(good))
    due[:m] = good[:m]
    if 0 < m < n:
        due[m:] = good[m - 1]
    return due


def qs_replay_factory(
    data: Recording | QSReplayDevice, speed: float | None, tick_hz: int = 1_000_000
) -> Callable[..., Any]:
    """A ``session_factory(url, baud, listener)`` for LiveSession.replay: a QSLink whose
    transport plays ``data`` (a recording, or a QSReplayDevice made for it, used by the
    first connection)."""
    from .qs_link import QSLink

    source = data._data if isinstance(data, QSReplayDevice) else data

    def link(url: str, baud: int, listener: Any, opener: Any) -> Any:
        return QSLink(url, baud, listener, tick_hz=tick_hz, opener=opener, info_wait_s=0.0)

    return link_factory(
        data if isinstance(data, QSReplayDevice) else None,
        lambda: QSReplayDevice(source, speed, tick_hz, clock=time.monotonic),
        link,
    )
