"""``sim://[?options]``: a simulated MiniProfiler device inside this process.

Reads drive the device: it produces output as its clock (time.monotonic)
advances, paced to the port's baud rate. Options are those of SimOptions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from serial.serialutil import PortNotOpenError, SerialBase, SerialException, Timeout

from ...errors import UserError
from ..simulator import DISCONNECT_MESSAGE, SimDevice, SimOptions, make_device

_POLL_S = 0.001
# The device's clock; tests replace it with a fake one.
CLOCK: Callable[[], float] = time.monotonic


class Serial(SerialBase):
    """A pyserial port whose far end is a SimDevice."""

    BAUDRATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.device: SimDevice | None = None
        # A session reads from one thread and writes from another; the device is single-threaded.
        self._lock = threading.Lock()
        self._rx = bytearray()
        self._cancel = False
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def open(self) -> None:
        if self.is_open:
            raise SerialException("Port is already open.")
        if self._port is None:
            raise SerialException("Port must be configured before it can be used.")
        parts = urlsplit(self.portstr)
        if parts.scheme != "sim" or parts.netloc or parts.path not in {"", "/"}:
            raise SerialException(f"expected sim://[?options], got {self.portstr!r}")
        try:
            options = SimOptions.from_query(parts.query)
            self.device = make_device(options, baud=self._baudrate, clock=CLOCK)
        except (ValueError, UserError) as exc:
            raise SerialException(f"cannot open {self.portstr}: {exc}") from None
        self._rx.clear()
        self.is_open = True

    def close(self) -> None:
        self.is_open = False
        self.device = None
        super().close()

    def _reconfigure_port(self, force_update: bool = False) -> None:
        if self.device is not None and self.device.options.baud is None:
            self.device.baud = self._baudrate

    def _pump(self) -> None:
        if not self.is_open or self.device is None:
            raise PortNotOpenError()
        with self._lock:
            if self.device.unplugged and not self._rx:
                raise SerialException(DISCONNECT_MESSAGE)
            self._rx += self.device.poll()

    @property
    def in_waiting(self) -> int:
        self._pump()
        return len(self._rx)

    def read(self, size: int = 1) -> bytes:
        timeout = Timeout(self._timeout)
        self._cancel = False
        while True:
            self._pump()
            if len(self._rx) >= size or timeout.expired() or self._cancel:
                break
            time.sleep(_POLL_S)  # the simulated wire has no file descriptor to wait on
        with self._lock:
            out = bytes(self._rx[:size])
            del self._rx[:size]
        return out

    def cancel_read(self) -> None:
        self._cancel = True

    def write(self, data: bytes) -> int:
        if not self.is_open or self.device is None:
            raise PortNotOpenError()
        if self.device.unplugged:
            raise SerialException("write failed: device disconnected")
        data = bytes(data)
        with self._lock:
            self.device.receive(data)
        return len(data)

    def reset_input_buffer(self) -> None:
        self._pump()
        with self._lock:
            self._rx.clear()

    def reset_output_buffer(self) -> None:
        if not self.is_open:
            raise PortNotOpenError()

    @property
    def out_waiting(self) -> int:
        return 0

    def _update_break_state(self) -> None:
        pass

    def _update_rts_state(self) -> None:
        pass

    def _update_dtr_state(self) -> None:
        pass

    @property
    def cts(self) -> bool:
        return True

    @property
    def dsr(self) -> bool:
        return True

    @property
    def ri(self) -> bool:
        return False

    @property
    def cd(self) -> bool:
        return True
