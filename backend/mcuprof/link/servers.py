"""Serving a SimDevice on a real pty or a TCP port, from a background thread.

Host-to-device bytes go to ``device.receive``; whatever ``device.poll`` returns
goes to the wire. When the host reads slower than the device writes, the
bytes wait here and the device is not polled, so its ring buffer overflows:
the same backpressure a real board sees from a slow link.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import socket
import threading
import time
import tty

from .simulator import Clock, Firmware, SimOptions, make_device

TICK_S = 0.002
HIGH_WATER = 1 << 16


class _Server:
    def __init__(
        self,
        options: SimOptions | None = None,
        *,
        clock: Clock = time.monotonic,
        baud: int = 115_200,
        firmware: Firmware | None = None,
        keep_log: bool = False,
        tick_s: float = TICK_S,
    ) -> None:
        self.device = make_device(
            options, clock=clock, baud=baud, firmware=firmware, keep_log=keep_log
        )
        self._tick = tick_s
        self._wake_r, self._wake_w = os.pipe()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="mcuprof-sim", daemon=True)
        self.finished = threading.Event()
        self.error: str | None = None
        self._tx = bytearray()

    def start(self) -> _Server:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing = True
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._release()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        try:
            self._serve()
        except Exception as exc:  # surfaced to whoever runs the server, not swallowed
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._release()
            self.finished.set()

    def _pump_device(self) -> bool:
        """Move device output into the send buffer; False once it is unplugged."""
        if len(self._tx) < HIGH_WATER:
            self._tx += self.device.poll()
        return not self.device.unplugged

    def _serve(self) -> None:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError


class PtySimServer(_Server):
    """The device on a pseudo-terminal; ``path`` is the slave any serial tool opens."""

    def __init__(self, options: SimOptions | None = None, **kwargs: object) -> None:
        super().__init__(options, **kwargs)  # type: ignore[arg-type]
        self._master, self._slave = os.openpty()
        # Raw from the start: no echo of device output back into the device, no CR/LF games.
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self.path = os.ttyname(self._slave)

    def _serve(self) -> None:
        master = self._master
        while not self._closing:
            want_write = [master] if self._tx else []
            readable, _, _ = select.select([master, self._wake_r], want_write, [], self._tick)
            if master in readable:
                try:
                    data = os.read(master, 4096)
                except BlockingIOError:
                    data = b""
                except OSError as exc:
                    if exc.errno != errno.EIO:  # EIO: no one has the slave open
                        raise
                    data = b""
                if data:
                    self.device.receive(data)
            if not self._pump_device():
                return  # unplugged: closing the master is what the host sees
            if self._tx:
                try:
                    sent = os.write(master, self._tx[:HIGH_WATER])
                except BlockingIOError:
                    sent = 0
                del self._tx[:sent]

    def _release(self) -> None:
        for name in ("_master", "_slave"):
            fd = getattr(self, name, -1)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)


class TcpSimServer(_Server):
    """The device behind a TCP port on 127.0.0.1, like QEMU's ``-serial
    tcp::PORT,server,wait``: the board powers up when the first host connects (so
    that host sees the METADATA sent at boot) and keeps running between
    connections. One host at a time. ``port`` is the bound port (0: any free one)."""

    def __init__(self, options: SimOptions | None = None, port: int = 0, **kwargs: object) -> None:
        super().__init__(options, **kwargs)  # type: ignore[arg-type]
        self._listen = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listen.bind(("127.0.0.1", port))
        self._listen.listen(1)
        self._listen.setblocking(False)
        self.port: int = self._listen.getsockname()[1]
        self.url = f"socket://127.0.0.1:{self.port}"
        self._client: socket.socket | None = None
        self.connections = 0

    def _serve(self) -> None:
        while not self._closing:
            client = self._client
            watch = [client or self._listen, self._wake_r]
            want_write = [client] if client is not None and self._tx else []
            readable, _, _ = select.select(watch, want_write, [], self._tick)
            if client is None:
                if self._listen in readable:
                    with contextlib.suppress(BlockingIOError):
                        self._client, _ = self._listen.accept()
                        self._client.setblocking(False)
                        self._client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        if self.connections == 0:
                            self.device.power_up()
                        self.connections += 1
                        continue
                if self.connections == 0:
                    continue  # not powered yet
                if not self._pump_device():
                    return
                self._tx.clear()  # nobody listens: the bytes fall off the wire
                continue
            if client in readable:
                try:
                    data = client.recv(4096)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    self._drop_client()
                    continue
                if data:
                    self.device.receive(data)
            if not self._pump_device():
                return
            if self._tx:
                try:
                    sent = client.send(self._tx[:HIGH_WATER])
                except BlockingIOError:
                    sent = 0
                except OSError:
                    self._drop_client()
                    continue
                del self._tx[:sent]

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        self._tx.clear()
        if client is not None:
            with contextlib.suppress(OSError):
                client.close()

    def _release(self) -> None:
        self._drop_client()
        with contextlib.suppress(OSError):
            self._listen.close()
