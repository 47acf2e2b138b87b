"""Replaying a stored QS capture as if a QS target sent it now.

``QSReplayDevice`` is a sans-IO QS target whose firmware is the recording: it puts the
stored frames on the wire, each when its timestamp comes due (speed 1x, 10x; ``None``
as fast as the reader takes them), while the host's global filter is on (Start) and
holds them while it is off (Stop). ReplayPort puts it behind the pyserial surface, so a
replay goes through QSLink's reader, the QS source and the live session as a target
does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..protocol.qs import Frame, Framer, QSDecoder, Record
from ..protocol.qs.records import TARGET_INFO
from .replay import MAX_BURST, Clock, Pacer, ReplayPort

RX_GLB_FILTER = 10


class QSReplayDevice:
    def __init__(
        self, data: bytes, speed: float | None = 1.0, tick_hz: int = 1_000_000, *, clock: Clock
    ) -> None:
        # One frame per closing flag; what follows the last flag is not a frame.
        ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x7E) + 1
        starts = np.concatenate([[0], ends[:-1]]) if len(ends) else np.empty(0, np.int64)
        # Frames as bounds into the recording (a bytes object per frame would cost more
        # than finding when each is due).
        self._data = memoryview(data)
        self._starts, self._ends = starts.tolist(), ends.tolist()
        self._n = len(self._ends)
        self._due = _due_seconds(data, self._n, tick_hz)
        self.speed = speed
        self._pace = Pacer(speed, clock)
        self._next = 0
        self._rx = Framer()
        self._out = bytearray()
        self.profiling = False

    @property
    def finished(self) -> bool:
        return self._next >= self._n

    def receive(self, data: bytes) -> None:
        self._advance()
        for ev in self._rx.feed(data):
            if isinstance(ev, Frame) and ev.rec == RX_GLB_FILTER:
                self.profiling = any(ev.payload[1:])

    def poll(self) -> bytes:
        self._advance()
        while self.profiling and not self.finished and len(self._out) < MAX_BURST:
            if not self._pace.due(self._due[self._next]):
                break
            i = self._next
            self._out += self._data[self._starts[i] : self._ends[i]]
            self._next += 1
        out = bytes(self._out)
        self._out.clear()
        return out

    def seconds_to_next(self) -> float | None:
        if not self.profiling or self.finished:
            return None
        return self._pace.wait(float(self._due[self._next]))

    def _advance(self) -> None:
        self._pace.advance(self.profiling)


def _due_seconds(data: bytes, n: int, tick_hz: int) -> np.ndarray:
    """Capture second of each frame: the time of the last timestamped record at or
    before it, counted from the first. A clock that goes back (a target reset) counts
    as no time passing; frames are matched to flags by position (a bad frame shifts
    the pacing of the rest by one frame, never the data).

    Records of a fixed layout are read as columns (``QSDecoder.feed_columns``); the
    others (application records, odd frames) come one by one, as ``feed`` gives them."""
    due = np.zeros(n)
    if n == 0:
        return due
    decoder = QSDecoder()
    initial = decoder.config.tstamp_size
    batch = decoder.feed_columns(data)
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
        return due
    ix = np.concatenate(index)
    keep = ix < n
    order = np.argsort(ix[keep], kind="stable")
    ix = ix[keep][order]
    ts = np.concatenate(stamps)[keep][order]
    bits = (8 * np.concatenate(size_parts)[keep][order]).astype(np.uint64)
    if len(ix) == 0:
        return due
    # Each step modulo the wrap of the record's timestamp size (uint64 arithmetic wraps
    # modulo 2**64, which every such wrap divides); a step of half a wrap or more is the
    # clock going back: no time.
    step = np.diff(ts, prepend=ts[:1])
    mask = np.where(bits >= 64, np.uint64(~np.uint64(0)), (np.uint64(1) << bits) - np.uint64(1))
    step &= mask
    step[(step >> (bits - np.uint64(1))) != 0] = 0
    if float(step.astype(np.float64).sum()) < 2.0**63:
        t = np.cumsum(step)  # exact in uint64
        due[ix] = t
    else:  # times past 2**63 ticks: sum exactly as Python integers, as the events path does
        total = 0
        for i, s in zip(ix.tolist(), step.tolist(), strict=True):
            total += s
            due[i] = total
    return np.maximum.accumulate(due) / tick_hz


def qs_replay_factory(
    data: bytes, speed: float | None, tick_hz: int = 1_000_000
) -> Callable[..., Any]:
    """A ``session_factory(url, baud, listener)`` for LiveSession.replay: a QSLink whose
    transport plays ``data``."""
    from ..link.qs_link import QSLink

    def factory(url: str, baud: int, listener: Any) -> Any:
        def opener(_port: str, _baud: int) -> ReplayPort:
            return ReplayPort(QSReplayDevice(data, speed, tick_hz, clock=time.monotonic))

        return QSLink(url, baud, listener, tick_hz=tick_hz, opener=opener, info_wait_s=0.0)

    return factory
