"""A conversation with one device: connect, commands, the record stream, unplugs.

A reader thread owns the port's input: it hands every chunk to the listener
(``on_raw``), feeds the sans-IO ResponseDecoder and dispatches what comes out.
Commands are written by the calling thread, one at a time, and wait for their
answer on a condition the reader signals; PROFILE_DATA keeps flowing meanwhile
and never counts as an answer. A status thread polls GET_STATUS while profiling.

Every wait is measured on the injected clock, so tests drive timeouts and
polling with a fake clock; the real-time waits below are only how often we look.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable
from dataclasses import fields
from typing import Any, Protocol

import numpy as np
import serial

from ..errors import UserError
from ..profile.keyed import Records
from ..protocol import (
    Ack,
    Command,
    LinkStats,
    Metadata,
    Nack,
    ProfileData,
    ResponseDecoder,
    Status,
    encode_command,
    encode_metadata,
)
from .base import DeviceControl, LinkState
from .ports import open_transport, validate_baud, validate_port

Clock = Callable[[], float]
Opener = Callable[[str, int], Any]

READ_CHUNK = 1 << 16
POLL_S = 0.05  # how often blocked threads re-check the clock and the stop flag
# A device pauses between packets, not inside one: after this long without a byte, a
# header still waiting for its body is judged as at end of file, so a false header in
# noise cannot hold back the intact packets behind it while the device is quiet.
IDLE_FLUSH_S = 0.25
OVERFLOW_WARN_S = 10.0

DISCONNECTED = LinkState.DISCONNECTED
CONNECTING = LinkState.CONNECTING
READY = LinkState.READY
PROFILING = LinkState.PROFILING


class LinkError(UserError):
    """A device command failed (NACK, no answer, link lost). ``command`` names it."""

    def __init__(self, message: str, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class SessionListener(Protocol):
    """Callbacks from the session's own threads (the reader, the status poller) or
    from the thread calling a session method; never two at once. They must not
    block: an asyncio consumer should hop to its loop with call_soon_threadsafe."""

    def on_raw(self, data: bytes) -> None: ...
    def on_metadata(self, meta: Metadata) -> None: ...
    def on_records(self, records: Records) -> None: ...
    def on_status(self, status: Status) -> None: ...
    def on_state(self, state: str, reason: str | None) -> None: ...
    def on_log(self, level: str, message: str) -> None: ...


class NullListener:
    """A listener that ignores everything; subclass it and override what you need."""

    def on_raw(self, data: bytes) -> None:
        pass

    def on_metadata(self, meta: Metadata) -> None:
        pass

    def on_records(self, records: Records) -> None:
        pass

    def on_status(self, status: Status) -> None:
        pass

    def on_state(self, state: str, reason: str | None) -> None:
        pass

    def on_log(self, level: str, message: str) -> None:
        pass


def _add_stats(total: LinkStats, part: LinkStats) -> LinkStats:
    out = LinkStats()
    for f in fields(LinkStats):
        a, b = getattr(total, f.name), getattr(part, f.name)
        if isinstance(a, dict):
            keys = list(a) + [k for k in b if k not in a]
            setattr(out, f.name, {k: a.get(k, 0) + b.get(k, 0) for k in keys})
        else:
            setattr(out, f.name, a + b)
    return out


_ACK_ONLY = (Ack, Nack)


class ListenerCalls:
    """How a link (MiniProfiler or QS) calls its listener: one call at a time, from the
    reader thread or the caller's, and never letting a failing listener kill the reader
    thread (and with it the capture). A method the listener lacks is skipped."""

    listener: Any
    state: str

    def __init__(self) -> None:
        self._listener_lock = threading.RLock()  # re-entered when a failure is logged

    def _notify(self, method: str, *args: object) -> None:
        fn = getattr(self.listener, method, None)
        if fn is None:
            return
        with self._listener_lock:
            try:
                fn(*args)
            except Exception as exc:
                if method != "on_log":
                    self._notify("on_log", "error", f"listener {method} failed: {exc!r}")

    def _set_state(self, state: str, reason: str | None) -> None:
        self.state = state
        self._notify("on_state", state, reason)

    def _log(self, level: str, message: str) -> None:
        self._notify("on_log", level, message)


class DeviceSession(ListenerCalls):
    """One device on one port, a ``Link`` (link/base.py). Methods other than close() may
    block for up to (retries + 1) * command_timeout_s; call them off the event loop."""

    kind = "miniprofiler"
    own_names = False  # names come from the firmware's ELF
    traces_while_idle = False  # records flow between START and STOP (and the drain)
    listening_on = None
    control = None  # no QS-RX

    def __init__(
        self,
        port: str,
        baud: int = 115200,
        listener: SessionListener | None = None,
        *,
        clock: Clock = time.monotonic,
        command_timeout_s: float = 1.0,
        retries: int = 2,
        status_interval_s: float = 1.0,
        opener: Opener | None = None,
        idle_flush_s: float = IDLE_FLUSH_S,
    ) -> None:
        self.port = validate_port(port)
        self.baud = validate_baud(baud)
        self.listener: SessionListener = listener or NullListener()
        self._clock = clock
        self.command_timeout_s = command_timeout_s
        self.retries = max(0, int(retries))
        self.status_interval_s = status_interval_s
        self.idle_flush_s = idle_flush_s
        self._opener: Opener = opener or open_transport

        self.state = DISCONNECTED
        self.disconnect_reason: str | None = None
        self.metadata: Metadata | None = None
        self.last_status: Status | None = None
        self.records_received = 0
        self._received_at_start = 0
        self._overflows_seen = 0
        self._warned_at: float | None = None
        self._crc_seen = 0

        self._transport: Any = None
        self._decoder = ResponseDecoder()
        # Held while the decoder is fed or flushed and its events dispatched: the reader
        # feeds, stop() flushes, and events must reach the listener in stream order.
        self._decode_lock = threading.Lock()
        self._old_stats = LinkStats()
        self._reader: threading.Thread | None = None
        self._poller: threading.Thread | None = None
        self._stop = threading.Event()
        self._cmd_lock = threading.Lock()
        self._cond = threading.Condition()
        ListenerCalls.__init__(self)
        self._lost_lock = threading.Lock()
        self._expect: tuple[type, ...] | None = None
        self._reply: object | None = None
        self._pending: Command | None = None
        self.device_control: DeviceControl | None = self

    # ------------------------------------------------------------------ public

    @property
    def stats(self) -> LinkStats:
        """Decoder counters summed over every connection of this session."""
        return _add_stats(self._old_stats, self._decoder.stats)

    @property
    def records_received_since_start(self) -> int:
        return self.records_received - self._received_at_start

    @property
    def estimated_loss(self) -> int:
        """Records the device says it captured since start() that never arrived."""
        if self.last_status is None:
            return 0
        return max(0, self.last_status.records_captured - self.records_received_since_start)

    @property
    def connected(self) -> bool:
        return self.state != DISCONNECTED

    def hold(self) -> threading.Lock:
        """Hold the reader between two chunks (a context manager): the listener gets
        nothing meanwhile, so a capture can begin at a chunk boundary."""
        return self._decode_lock

    def capture_header(self) -> bytes:
        """A stored capture starts with the device's METADATA (timer frequency, build ID)."""
        return encode_metadata(self.metadata) if self.metadata is not None else b""

    def connect(self) -> Metadata:
        """Open the port and learn who is there (GET_METADATA, or the METADATA a
        device sends at boot). Works again after a disconnect."""
        if self.state != DISCONNECTED:
            raise LinkError(f"{self.port}: already connected")
        for thread in (self._reader, self._poller):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=5)
        self._transport = self._opener(self.port, self.baud)
        self._old_stats = self.stats
        self._decoder = ResponseDecoder()
        self.metadata = None
        self.disconnect_reason = None
        self._stop.clear()
        self._set_state(CONNECTING, None)
        self._reader = threading.Thread(target=self._read_loop, name="mcuprof-reader", daemon=True)
        self._reader.start()
        try:
            meta = self._command(Command.GET_METADATA, expect=(Metadata,))
        except LinkError as exc:
            self.close()
            raise LinkError(
                f"{self.port}: no METADATA from the device at {self.baud} baud ({exc}); "
                "check the port, the baud rate and that the firmware runs",
                exc.command,
            ) from None
        if not isinstance(meta, Metadata):  # cannot happen: only METADATA answers it
            raise LinkError(f"{self.port}: unexpected answer to GET_METADATA", "GET_METADATA")
        if self.state == CONNECTING:
            self._set_state(READY, None)
        self._poller = threading.Thread(target=self._poll_loop, name="mcuprof-status", daemon=True)
        self._poller.start()
        return meta

    def start(self, reset: bool = True) -> None:
        """Start profiling. ``reset`` first clears the device's buffers and counters,
        so records_captured and estimated_loss count from here."""
        if reset:
            self.reset_buffers()
        self._command(Command.START_PROFILING)

    def stop(self, drain: bool = True) -> Status | None:
        """Stop profiling. A device ACKs first and then sends what its ring still
        holds; with ``drain`` this waits for those records (until the device's
        final count is reached, or nothing has arrived for command_timeout_s)
        and returns the device's final status. Once STOP is ACKed, the stop has
        happened: a status poll that fails afterwards only costs the final count
        (None is returned) and the drain then waits for the link to go quiet."""
        self._command(Command.STOP_PROFILING)
        if not drain:
            return None  # the ring still drains: the idle flush judges what follows
        status = self._status_after_stop()
        expected = None if status is None else status.records_captured - status.buffer_overflows
        last_count = self.records_received
        last_change = self._clock()
        drained = False
        with self._cond:
            while self.connected and (
                expected is None or self.records_received_since_start < expected
            ):
                drained = True
                if self.records_received != last_count:
                    last_count = self.records_received
                    last_change = self._clock()
                elif self._clock() - last_change >= self.command_timeout_s:
                    break
                self._cond.wait(POLL_S)
        # After a drain the ring is empty: ask again so buffer usage reads true.
        if drained and status is not None:
            status = self._status_after_stop() or status
        self.flush()
        return status

    def _status_after_stop(self) -> Status | None:
        try:
            return self.get_status()
        except LinkError as exc:
            if not self.connected:
                return None
            self._log("warning", f"STOP was acknowledged, but the final status is unknown: {exc}")
            return None

    def reset_buffers(self) -> None:
        self._command(Command.RESET_BUFFERS)

    def get_status(self) -> Status:
        status = self._command(Command.GET_STATUS, expect=(Status,))
        if not isinstance(status, Status):
            raise LinkError("unexpected answer to GET_STATUS", "GET_STATUS")
        return status

    def get_metadata(self) -> Metadata:
        meta = self._command(Command.GET_METADATA, expect=(Metadata,))
        if not isinstance(meta, Metadata):
            raise LinkError("unexpected answer to GET_METADATA", "GET_METADATA")
        return meta

    def set_config(self, payload: bytes) -> None:
        if len(payload) > 8:
            raise LinkError(
                f"SET_CONFIG payload is {len(payload)} bytes; at most 8 fit", "SET_CONFIG"
            )
        self._command(Command.SET_CONFIG, bytes(payload))

    def close(self) -> None:
        """Close the port; records already delivered stay delivered. Idempotent."""
        self._stop.set()
        transport = self._transport
        if transport is not None:
            # Not every transport can cancel a read; the reader polls the stop flag anyway.
            with contextlib.suppress(Exception):
                transport.cancel_read()
        for thread in (self._reader, self._poller):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=5)
        self._close_transport()
        if self.state != DISCONNECTED:
            self._set_state(DISCONNECTED, "closed")
        with self._cond:
            self._cond.notify_all()

    def __enter__(self) -> DeviceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ commands

    def _command(
        self,
        command: Command,
        payload: bytes = b"",
        expect: tuple[type, ...] = (),
        *,
        quiet: bool = False,
    ) -> object:
        name = command.name
        packet = encode_command(command, payload)
        with self._cmd_lock:
            attempts = self.retries + 1
            last = "no answer"
            for attempt in range(1, attempts + 1):
                if not self.connected or self._stop.is_set():
                    raise LinkError(
                        f"{name}: not connected ({self.disconnect_reason or 'closed'})", name
                    )
                with self._cond:
                    if (
                        command is Command.GET_METADATA
                        and self.state == CONNECTING
                        and self.metadata
                    ):
                        return self.metadata  # the device announced itself at boot
                    # A command with a typed answer is never satisfied by a (stale) ACK.
                    self._expect = (*expect, Nack) if expect else _ACK_ONLY
                    self._reply = None
                    self._pending = command
                # The deadline starts before the write, so once the device has the
                # command, moving the clock past the deadline always expires it.
                deadline = self._clock() + self.command_timeout_s
                transport = self._transport
                try:
                    if transport is None:
                        raise serial.SerialException("port closed")
                    transport.write(packet)
                except (serial.SerialException, OSError) as exc:
                    self._lost(f"write failed: {exc}")
                    raise LinkError(f"{name}: link lost ({exc})", name) from None
                reply = self._wait_reply(deadline)
                if isinstance(reply, Nack):
                    last = "device answered NACK"
                elif reply is not None:
                    return reply
                elif not self.connected:
                    raise LinkError(f"{name}: device disconnected ({self.disconnect_reason})", name)
                else:
                    last = f"no answer within {self.command_timeout_s:g} s"
                if attempt < attempts and not quiet:
                    self._log("warning", f"{name}: {last}; retrying ({attempt}/{attempts - 1})")
            raise LinkError(f"{name} failed: {last} ({attempts} attempts)", name)

    def _wait_reply(self, deadline: float) -> object | None:
        with self._cond:
            try:
                while self._reply is None and self.connected and not self._stop.is_set():
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        break
                    self._cond.wait(min(remaining, POLL_S))
                return self._reply
            finally:
                self._expect = None
                self._pending = None

    # ------------------------------------------------------------ reader thread

    def _read_loop(self) -> None:
        transport = self._transport
        try:
            fd: int | None = transport.fileno()
        except Exception:
            fd = None
        if fd is None:
            transport.timeout = POLL_S
        last_data = self._clock()
        try:
            while not self._stop.is_set():
                try:
                    if fd is not None:
                        ready, _, _ = select.select([fd], [], [], POLL_S)
                        data = transport.read(READ_CHUNK) if ready else b""
                    else:
                        waiting = transport.in_waiting
                        data = transport.read(min(waiting, READ_CHUNK) if waiting else 1)
                except (serial.SerialException, OSError, ValueError, TypeError) as exc:
                    if not self._stop.is_set():
                        self.flush()  # before the disconnect is reported, as at close()
                        self._lost(str(exc) or type(exc).__name__)
                    return
                if data:
                    last_data = self._clock()
                    self._dispatch(data)
                elif self._decoder.buffered and self._clock() - last_data >= self.idle_flush_s:
                    self.flush()
        finally:
            # Stop or close: no more bytes will come on this connection.
            self.flush()

    def flush(self) -> None:
        """Judge a header still waiting for bytes as at end of file (ResponseDecoder.close)
        and deliver what that recovers. Feeding may go on afterwards; nothing buffered is
        kept, so nothing is decoded twice."""
        with self._decode_lock:
            if self._decoder.buffered:
                self._dispatch_events(self._decoder.close())

    def _dispatch(self, data: bytes) -> None:
        with self._decode_lock:
            self._notify("on_raw", data)
            self._dispatch_events(self._decoder.feed(data))

    def _dispatch_events(self, events: list[Any]) -> None:
        batch: list[np.ndarray] = []
        for event in events:
            if isinstance(event, ProfileData):
                batch.append(event.records)
                continue
            if batch:
                self._deliver(batch)
                batch = []
            self._handle_event(event)
        if batch:
            self._deliver(batch)

    def _deliver(self, batch: list[np.ndarray]) -> None:
        records = batch[0] if len(batch) == 1 else np.concatenate(batch)
        self._notify("on_records", records)
        with self._cond:
            self.records_received += len(records)
            self._cond.notify_all()

    def _handle_event(self, event: object) -> None:
        with self._cond:
            answers = self._expect is not None and isinstance(event, self._expect)
            pending = self._pending
            if isinstance(event, Metadata):
                rebooted = self.metadata is not None and self.state == PROFILING
                self.metadata = event
        if isinstance(event, Metadata):
            self._notify("on_metadata", event)
            if rebooted:
                self._log("warning", "device announced itself again (reset?); profiling stopped")
                self._set_state(READY, "device reset")
        elif isinstance(event, Status):
            self._on_status(event)
        elif isinstance(event, Ack) and answers:
            if pending is Command.START_PROFILING:
                self._received_at_start = self.records_received
                self._set_state(PROFILING, None)
            elif pending is Command.STOP_PROFILING:
                self._set_state(READY, None)
            elif pending is Command.RESET_BUFFERS:
                self._received_at_start = self.records_received
                self._overflows_seen = 0
                self._warned_at = None
        if answers:
            with self._cond:
                if self._reply is None:
                    self._reply = event
                    self._cond.notify_all()

    def _on_status(self, status: Status) -> None:
        self.last_status = status
        self._notify("on_status", status)
        grown = status.buffer_overflows - self._overflows_seen
        now = self._clock()
        if grown > 0 and (self._warned_at is None or now - self._warned_at >= OVERFLOW_WARN_S):
            # Once per OVERFLOW_WARN_S at most: the advice does not change every poll.
            self._warned_at = now
            self._overflows_seen = status.buffer_overflows
            self._log(
                "warning",
                f"device buffer overflowed: {grown:,} more records dropped on the device "
                f"({status.buffer_overflows:,} in all); the link cannot keep up at "
                f"{self.baud} baud: raise the baud rate, instrument fewer functions "
                "(-finstrument-functions-exclude-file-list), or filter what is traced",
            )
        elif grown < 0:
            self._overflows_seen = status.buffer_overflows  # the device counters were reset
        if self.state == PROFILING and not status.is_profiling:
            self._set_state(READY, "device reports it is not profiling")

    def _lost(self, reason: str) -> None:
        with self._lost_lock:
            if self.state == DISCONNECTED or self._stop.is_set():
                return
            self.disconnect_reason = reason
            self._stop.set()
        self._close_transport()
        self._set_state(DISCONNECTED, reason)
        self._log(
            "error",
            f"device disconnected: {reason}; {self.records_received:,} records received are kept",
        )
        with self._cond:
            self._cond.notify_all()

    def _close_transport(self) -> None:
        transport, self._transport = self._transport, None
        if transport is not None:
            # Closing a vanished device may fail; it is gone either way.
            with contextlib.suppress(Exception):
                transport.close()

    # ------------------------------------------------------------ status poller

    def _poll_loop(self) -> None:
        next_poll = self._clock() + self.status_interval_s
        while not self._stop.wait(POLL_S):
            if self.state != PROFILING:
                next_poll = self._clock() + self.status_interval_s
                continue
            if self._clock() < next_poll:
                continue
            next_poll = self._clock() + self.status_interval_s
            if not self._cmd_lock.locked():
                try:
                    self._command(Command.GET_STATUS, expect=(Status,), quiet=True)
                except LinkError as exc:
                    if self.connected:
                        self._log("warning", f"status poll: {exc}")
            crc = self._decoder.stats.crc_errors + self._old_stats.crc_errors
            if crc > self._crc_seen:
                self._log(
                    "warning", f"{crc - self._crc_seen} packets failed their CRC (noisy link?)"
                )
                self._crc_seen = crc

    # ------------------------------------------------------------ listener glue
