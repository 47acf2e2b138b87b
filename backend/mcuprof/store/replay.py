"""Replaying a stored session as if it were live.

``ReplayDevice`` is a sans-IO device, like the simulator: it answers the host's commands
and, while "profiling", puts the stored PROFILE_DATA packets on the wire when their own
timestamps come due (capture time / speed, on the injected clock). ``ReplayPort`` puts it
behind the pyserial-like interface DeviceSession reads, so a replay goes through the very
reader thread, decoder and listener a device does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..profile.timebase import timer_freq_or_default, unwrap_exits
from ..protocol import (
    DEFAULT_TIMER_FREQ,
    Ack,
    BadCommand,
    Command,
    CommandDecoder,
    Metadata,
    Nack,
    ProfileData,
    ResponseDecoder,
    Status,
    encode_event,
    encode_profile_data,
)

Clock = Callable[[], float]

SPEEDS = {"1x": 1.0, "10x": 10.0, "max": None}
MAX_BURST = 1 << 18  # bytes per poll at maximum speed: keeps memory flat, the reader busy


def parse_speed(text: str | float | None) -> float | None:
    """'1x', '10x', 'max' (or a positive number); None means as fast as the reader takes it."""
    if text is None:
        return None
    if isinstance(text, int | float):
        value = float(text)
    else:
        key = text.strip().lower()
        if key in SPEEDS:
            return SPEEDS[key]
        try:
            value = float(key.removesuffix("x"))
        except ValueError:
            raise ValueError(f"bad replay speed {text!r}: use 1x, 10x or max") from None
    if not 0.01 <= value <= 1e6:
        raise ValueError(f"bad replay speed {text!r}: between 0.01x and 1000000x, or max")
    return value


class ReplayDevice:
    """A device whose firmware is a recording. Not thread-safe: one driver at a time."""

    def __init__(
        self,
        data: bytes,
        speed: float | None = 1.0,
        *,
        clock: Clock = time.monotonic,
        metadata: Metadata | None = None,
    ) -> None:
        packets: list[np.ndarray] = []
        found: Metadata | None = None
        decoder = ResponseDecoder()
        for event in decoder.feed(data) + decoder.close():
            if isinstance(event, ProfileData) and len(event.records):
                packets.append(event.records)
            elif isinstance(event, Metadata) and found is None:
                found = event
        self.metadata = metadata or found or Metadata(0, DEFAULT_TIMER_FREQ, 0, "replay")
        self.speed = speed
        self._clock = clock
        self._packets = packets
        self.total_records = int(sum(len(p) for p in packets))
        self._due = _due_times(packets, timer_freq_or_default(self.metadata.timer_freq))
        self._next = 0
        self._played = 0.0  # capture seconds played so far; advances only while profiling
        self._last: float | None = None
        self._decoder = CommandDecoder()
        self._out = bytearray()
        self.profiling = False
        self.records_sent = 0
        self.commands: list[Command | BadCommand] = []

    @property
    def finished(self) -> bool:
        return self._next >= len(self._packets)

    @property
    def capture_seconds(self) -> float:
        return float(self._due[-1]) if len(self._due) else 0.0

    def receive(self, data: bytes) -> None:
        self._advance()
        for event in self._decoder.feed(data):
            if isinstance(event, BadCommand):
                self.commands.append(event)
                self._out += encode_event(Nack())
                continue
            self.commands.append(event.command)
            self._handle(event.command)

    def poll(self) -> bytes:
        self._advance()
        self._emit()
        out = bytes(self._out)
        self._out.clear()
        return out

    def seconds_to_next(self) -> float | None:
        """Wall-clock seconds until the next packet is due; None when nothing is coming."""
        if not self.profiling or self.finished:
            return None
        if self.speed is None:
            return 0.0
        return max(0.0, (float(self._due[self._next]) - self._played) / self.speed)

    def status(self) -> Status:
        return Status(self.profiling and not self.finished, 0, self.records_sent, 0)

    def _handle(self, command: Command) -> None:
        if command is Command.GET_METADATA:
            self._out += encode_event(self.metadata)
            return
        if command is Command.GET_STATUS:
            self._out += encode_event(self.status())
            return
        if command is Command.START_PROFILING:
            self.profiling = True
        elif command is Command.STOP_PROFILING:
            self.profiling = False
        elif command is Command.RESET_BUFFERS:
            self.records_sent = 0  # the counters restart; the recording plays on
        self._out += encode_event(Ack())

    def _advance(self) -> None:
        now = self._clock()
        if self._last is not None and self.profiling and self.speed is not None:
            self._played += (now - self._last) * self.speed
        self._last = now

    def _emit(self) -> None:
        if not self.profiling:
            return
        while not self.finished and len(self._out) < MAX_BURST:
            if self.speed is not None and self._due[self._next] > self._played:
                break
            records = self._packets[self._next]
            self._next += 1
            self._out += encode_profile_data(records)
            self.records_sent += len(records)


def _due_times(packets: list[np.ndarray], timer_freq: int) -> np.ndarray:
    """Capture second at which each packet was complete: its last record's exit, counted
    from the first packet's (the stream is unwrapped as one, per CLARIFICATIONS)."""
    if not packets:
        return np.empty(0)
    recs = np.concatenate(packets)
    exits = unwrap_exits(recs["entry_time"], recs["duration"])
    ends = np.cumsum([len(p) for p in packets]) - 1
    last = exits[ends]
    # Exits are non-decreasing by contract; a glitch must not make time run backwards.
    last = np.maximum.accumulate(last)
    return (last - last[0]).astype(np.float64) / timer_freq


class ReplayPort:
    """The pyserial surface DeviceSession uses (read/write/in_waiting/timeout/cancel_read/
    close), in front of a ReplayDevice. Reads wait on an event, not a busy loop."""

    def __init__(self, device: ReplayDevice) -> None:
        self.device = device
        self.timeout: float | None = 0
        self.is_open = True
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._rx = bytearray()

    def fileno(self) -> int:
        raise OSError("a replay has no file descriptor")

    def _pump(self) -> None:
        with self._lock:
            self._rx += self.device.poll()

    @property
    def in_waiting(self) -> int:
        if not self.is_open:
            raise OSError("replay closed")
        self._pump()
        return len(self._rx)

    def read(self, size: int = 1) -> bytes:
        if not self.is_open:
            raise OSError("replay closed")
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        self._wake.clear()
        while True:
            self._pump()
            if len(self._rx) >= size or not self.is_open:
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            with self._lock:
                nxt = self.device.seconds_to_next()
            waits = [w for w in (remaining, nxt) if w is not None]
            # Sleep until the next packet is due, a command arrives, or the read times out.
            if self._wake.wait(min(waits) if waits else 0.05):
                self._wake.clear()
        out = bytes(self._rx[:size])
        del self._rx[:size]
        return out

    def write(self, data: bytes) -> int:
        if not self.is_open:
            raise OSError("replay closed")
        with self._lock:
            self.device.receive(bytes(data))
        self._wake.set()
        return len(data)

    def cancel_read(self) -> None:
        self._wake.set()

    def close(self) -> None:
        self.is_open = False
        self._wake.set()

    def reset_input_buffer(self) -> None:
        self._pump()
        self._rx.clear()


def replay_factory(
    data: bytes, speed: float | None, metadata: Metadata | None = None
) -> Callable[..., Any]:
    """A ``session_factory(url, baud, listener)`` for LiveSession: a DeviceSession whose
    transport is a ReplayPort playing ``data``. The URL is only validated, never opened."""
    from ..link import DeviceSession

    def factory(url: str, baud: int, listener: Any) -> Any:
        def opener(_port: str, _baud: int) -> ReplayPort:
            return ReplayPort(ReplayDevice(data, speed, metadata=metadata))

        return DeviceSession(url, baud, listener, opener=opener, command_timeout_s=2.0)

    return factory


def replay_for(
    kind: str,
    data: bytes,
    speed: float | None,
    metadata: Metadata | None = None,
    tick_hz: int | None = None,
) -> tuple[Callable[..., Any], int]:
    """The session factory that replays a stored capture of any kind, and the number of
    profile records it will deliver (for the progress bar and the end of the replay)."""
    if kind == "qs":
        from ..sources import load
        from .qs_replay import qs_replay_factory

        hz = tick_hz or DEFAULT_TIMER_FREQ
        return qs_replay_factory(data, speed, hz), int(
            load("qs", data, tick_hz=hz).stats["records"]
        )
    from ..summary import summarize

    return replay_factory(data, speed, metadata), int(summarize(data)["records"])
