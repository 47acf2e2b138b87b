"""Command bytes on their way to a QS target, written by a thread of their own.

A target that stops reading (a board whose lwIP window is full, a stopped debugger)
must not stop anyone else: commands are queued here, at most ``MAX_TX_BACKLOG`` bytes,
and written as the target takes them; the writer never blocks longer than ``POLL_S``
on a socket, or the port's own write timeout on a serial port. A command that does not
fit, or that comes while the target has taken nothing for ``TX_STALL_S``, is refused
in one line (LinkError): Stop, Disconnect and the page's state never wait on it.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import serial

from .session import LinkError

# Command bytes queued for a target that does not read; beyond this a command is
# refused, never buffered without bound (docs/limits.md). The CLI host's too.
MAX_TX_BACKLOG = 4096
# Bytes waiting this long with none taken: the target is not reading, and further
# commands are refused at once rather than queued behind them (docs/limits.md).
TX_STALL_S = 2.0
POLL_S = 0.05  # the writer looks for its end this often while the target does not read
# Bytes handed to a serial port's write at once: whole frames, so that a write that
# times out loses whole frames only.
SERIAL_CHUNK = 512
FLAG = 0x7E  # ends every QS frame, and occurs nowhere else in one


def not_reading(waiting: int) -> str:
    return f"the target is not reading: {waiting:,} command bytes waiting"


class TxQueue:
    """``target()`` is the transport in force (a socket, a pyserial port, the
    simulator), or None; ``log(level, line)`` reports a failed write."""

    def __init__(
        self,
        target: Callable[[], Any],
        log: Callable[[str, str], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        limit: int = MAX_TX_BACKLOG,
        stall_s: float = TX_STALL_S,
    ) -> None:
        self._target = target
        self._log = log
        self._clock = clock
        self.limit = limit
        self.stall_s = stall_s
        self._cond = threading.Condition()
        self._buf = bytearray()  # whole frames queued, not yet written
        self._progress = 0.0  # clock time the target last took bytes (or the queue filled)
        self._generation = 0  # a new connection: what the writer holds is for the old one
        self.refused = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive() and not self._stop.is_set():
            return  # connected again before a close: the writer runs on
        self._stop = threading.Event()  # its own: a writer still ending keeps its stop
        self._thread = threading.Thread(
            target=self._run, args=(self._stop,), name="mcuprof-qs-tx", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        self.clear()

    def put(self, frame: bytes) -> None:
        """Queue one frame, or LinkError (one line) when the target is not reading."""
        with self._cond:
            waiting = len(self._buf)
            stalled = waiting and self._clock() - self._progress >= self.stall_s
            if stalled or waiting + len(frame) > self.limit:
                self.refused += 1
                raise LinkError(not_reading(waiting))
            if not waiting:
                self._progress = self._clock()
            self._buf += frame
            self._cond.notify()

    @property
    def waiting(self) -> int:
        """Bytes queued, not yet written."""
        return len(self._buf)

    def clear(self) -> None:
        """Forget what is queued (the connection it was for is gone)."""
        with self._cond:
            self._buf.clear()
            self._generation += 1

    def _run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            with self._cond:
                if not self._buf:
                    self._cond.wait(POLL_S)
                    continue
                chunk = bytes(self._buf)
                generation = self._generation
            target = self._target()
            if target is None:
                stop.wait(POLL_S)
                continue
            try:
                sent, taken = _write_some(target, chunk)
            except (OSError, serial.SerialException, ValueError) as exc:
                # The reader sees a gone target itself; what was queued is dropped.
                self._log("warning", f"QS command not written: {exc}")
                self.clear()
                continue
            self._took(sent, taken, generation)

    def _took(self, sent: int, taken: bool, generation: int) -> None:
        with self._cond:
            if not sent or generation != self._generation:
                return
            if taken:
                self._progress = self._clock()
            del self._buf[:sent]


def _write_some(target: Any, chunk: bytes) -> tuple[int, bool]:
    """Write what the target takes now (at most ``chunk``): how many bytes are done
    with, and whether the target took them."""
    if isinstance(target, socket.socket):  # a listen:// connection
        if not select.select([], [target], [], POLL_S)[1]:
            return 0, False
        try:
            sent = target.send(chunk, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return 0, False
        return sent, True
    try:
        fd = target.fileno()
    except Exception:  # the simulator: in memory, it never blocks
        fd = None
    if fd is not None and not select.select([], [fd], [], POLL_S)[1]:
        return 0, False
    # A pyserial port: whole frames, bounded by the port's write timeout; those whose
    # write times out are lost (the target drops a cut frame at the next flag byte).
    if len(chunk) > SERIAL_CHUNK:
        end = chunk.rfind(FLAG, 0, SERIAL_CHUNK)
        chunk = chunk[: end + 1 if end >= 0 else chunk.index(FLAG) + 1]
    try:
        target.write(chunk)
    except serial.SerialTimeoutException:
        return len(chunk), False
    return len(chunk), True
