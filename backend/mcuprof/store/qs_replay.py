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
from .replay import MAX_BURST, Clock, Pacer, ReplayPort

RX_GLB_FILTER = 10


class QSReplayDevice:
    def __init__(
        self, data: bytes, speed: float | None = 1.0, tick_hz: int = 1_000_000, *, clock: Clock
    ) -> None:
        # One frame per closing flag; what follows the last flag is not a frame.
        ends = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x7E) + 1
        starts = np.concatenate([[0], ends[:-1]]) if len(ends) else np.empty(0, np.int64)
        self._frames = [data[a:b] for a, b in zip(starts.tolist(), ends.tolist(), strict=True)]
        self._due = _due_seconds(data, len(self._frames), tick_hz)
        self.speed = speed
        self._pace = Pacer(speed, clock)
        self._next = 0
        self._rx = Framer()
        self._out = bytearray()
        self.profiling = False

    @property
    def finished(self) -> bool:
        return self._next >= len(self._frames)

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
            self._out += self._frames[self._next]
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
    the pacing of the rest by one frame, never the data)."""
    events = QSDecoder().feed(data)
    due = np.zeros(n)
    t = 0
    last: int | None = None
    for e in events:
        if e.__class__ is not Record or e.timestamp is None or e.index >= n:
            continue
        wrap = 1 << (8 * e.config.tstamp_size)
        if last is not None:
            step = (e.timestamp - last) % wrap
            t += step if step < wrap // 2 else 0
        last = e.timestamp
        due[e.index] = t
    return np.maximum.accumulate(due) / tick_hz if n else due


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
