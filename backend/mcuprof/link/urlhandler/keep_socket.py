"""``socket://`` that keeps what the peer sent as the connection opened.

pyserial's socket handler calls ``reset_input_buffer()`` at the end of ``open()``, which
reads and throws away whatever has arrived. A target behind ser2net, QEMU or a TCP bridge
sends its boot (QS: target info and its dictionaries) the moment the connection opens,
so that would lose it. This class is the same handler without that discard; an explicit
``reset_input_buffer()`` later still discards, as it should. Its ``read`` also gives the
bytes that came before the peer hung up, then says so on the next call (pyserial's
raises "socket disconnected" with those bytes still in hand, and they are lost).
"""

from __future__ import annotations

import select

from serial.serialutil import PortNotOpenError, SerialException, Timeout
from serial.urlhandler import protocol_socket


class KeepInputSocket(protocol_socket.Serial):
    _opening = False
    _ended = False  # the peer hung up after the bytes the last read gave

    def open(self) -> None:
        self._opening = True
        try:
            super().open()
        finally:
            self._opening = False

    def reset_input_buffer(self) -> None:
        if self._opening:
            return  # the bytes wait in the socket until the first read decodes them
        super().reset_input_buffer()

    def read(self, size: int = 1) -> bytes:
        if not self.is_open:
            raise PortNotOpenError()
        if self._ended:
            raise SerialException("socket disconnected")
        out = bytearray()
        timeout = Timeout(self._timeout)
        while len(out) < size:
            if not select.select([self._socket], [], [], timeout.time_left())[0]:
                break
            try:
                got = self._socket.recv(size - len(out))
            except (BlockingIOError, InterruptedError):
                got = None
            except OSError as exc:
                if not out:
                    raise SerialException(f"read failed: {exc}") from None
                got = b""
            if got == b"":
                if not out:
                    raise SerialException("socket disconnected")
                self._ended = True  # what came before the end goes first
                break
            if got:
                out += got
            if timeout.expired():
                break
        return bytes(out)
