"""QSPY's host loop for ``mcuprof qs listen --port listen://HOST:PORT [--udp PORT]``.

The target is the TCP client (QSPY's ``-t``): it connects, sends its reset sequence and
its records; when it resets (a POSIX target exits and connects again) the new connection
is taken without a click, and the host's target sequence number restarts, as QSPY's
does: the first command frame after a reset carries sequence number 1. Front ends
attach over UDP (qs_udp.py); their commands are framed here and queued for the target,
written as the target reads, so a target that stops reading never blocks the loop.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from collections.abc import Callable
from typing import Any

from ..protocol.qs import QSDecoder, QSEvent, Record, encode_frame
from ..protocol.qs.records import TARGET_INFO
from ..qs.rx import RxCommand, RxCommands, RxError
from .qs_link import READ_CHUNK, _Listening
from .qs_udp import FrontEndPort

POLL_S = 0.05
# Command bytes queued for a target that does not read; beyond this a command is
# refused, never buffered without bound (docs/limits.md).
MAX_TX_BACKLOG = 4096
COMMS = "   <COMMS> "


class QSHost:
    def __init__(
        self,
        listen_at: tuple[str, int],
        decoder: QSDecoder,
        write: Callable[[list[QSEvent]], None],
        out: Callable[[str], None],
        *,
        udp_port: int | None = None,
        allow_remote: bool = False,
        capture: Any = None,
        save_dic: Callable[[], str] = lambda: "",
    ) -> None:
        self.decoder = decoder
        self.commands = RxCommands(lambda: (decoder.config, decoder.dicts))
        self._write = write
        self._out = out
        self._capture = capture
        self.listening = _Listening(*listen_at)
        self.frontends: FrontEndPort | None = None
        if udp_port is not None:
            try:
                self.frontends = FrontEndPort(
                    udp_port, lambda: self.commands, self.send, out, save_dic,
                    allow_remote=allow_remote,
                )  # fmt: skip
            except BaseException:
                self.listening.close()
                raise
        self.tx = bytearray()
        self.tx_seq = 0
        self.connections = 0
        self._peer: tuple = ("", 0)

    def line(self, text: str) -> None:
        """One line of the host's own output (connections): stdout only, as QSPY."""
        self._out(text)

    def close(self) -> None:
        self.listening.close()
        if self.frontends is not None:
            self.frontends.close()

    def run(self, end: float | None) -> None:
        while end is None or time.monotonic() < end:
            self.step()

    def step(self) -> None:
        lst, conn = self.listening, self.listening.conn
        watch: list[Any] = [lst.server] + ([conn] if conn is not None else [])
        if self.frontends is not None:
            watch.append(self.frontends)
        writing = [conn] if conn is not None and self.tx else []
        ready, writable, _ = select.select(watch, writing, [], POLL_S)
        if lst.server in ready:
            self._accept()
        if conn is not None and conn in ready:
            self._read(conn)
        if conn is not None and conn in writable and lst.conn is conn:
            self._flush_tx(conn)
        if self.frontends is not None:
            if self.frontends in ready:
                self.frontends.poll()
            self.frontends.roll()  # refusal lines held back are counted out each second

    def send(self, cmd: RxCommand) -> str | None:
        """Queue a checked command for the target; None, or why it cannot go."""
        if self.listening.conn is None:
            return "no target connected"
        if len(self.tx) > MAX_TX_BACKLOG:
            return f"the target is not reading: {len(self.tx)} command bytes waiting"
        try:
            self.commands.admit(cmd)  # what would crash the target (qs/guard.py)
        except RxError as exc:
            return str(exc)
        self.tx_seq = (self.tx_seq + 1) & 0xFF
        self.tx += encode_frame(self.tx_seq, cmd.rec, cmd.payload)
        self.commands.sent(cmd)
        return None

    def _target_reset(self) -> None:
        self.tx_seq = 0
        self.commands.target_reset()

    def _accept(self) -> None:
        lst = self.listening
        try:
            new, addr = lst.server.accept()
        except OSError as exc:  # out of file descriptors, or the client gave up
            self.line(f"{COMMS}ERROR    cannot accept a target: {exc.strerror or exc}")
            return
        if lst.conn is not None:
            new.close()  # one target at a time, as QSPY
            self.line(f"{COMMS}ERROR    Target {addr[0]}:{addr[1]} refused: one is connected")
            return
        new.setblocking(False)
        lst.conn = new
        self._peer = addr
        self.connections += 1
        self.tx.clear()
        self._target_reset()
        self.line(f"{COMMS}TCP-IP   Connected to Host={addr[0]},Port={addr[1]}")

    def _read(self, conn: socket.socket) -> None:
        try:
            data = conn.recv(READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            with contextlib.suppress(OSError):
                conn.close()
            self.listening.conn = None
            self.tx.clear()
            host, port = self._peer[:2]
            self.line(f"{COMMS}TCP-IP   Disconn from Host={host},Port={port}")
            return
        if self._capture is not None:
            self._capture.write(data)
        events = self.decoder.feed(data)
        self.commands.observe(events)
        for event in events:
            if event.__class__ is Record and event.rec == TARGET_INFO and event.values[0]:
                self._target_reset()
        self._write(events)
        if self.frontends is not None:
            self.frontends.forward(events)

    def _flush_tx(self, conn: socket.socket) -> None:
        try:
            sent = conn.send(self.tx)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return  # the read side sees the connection end
        del self.tx[:sent]
