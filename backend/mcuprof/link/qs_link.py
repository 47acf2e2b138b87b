"""A live QS target: serial, ``socket://HOST:PORT`` (we connect), ``listen://HOST:PORT``
(the target connects to us, QSPY's ``-t`` mode) or ``sim://?proto=qs``.

A ``Link`` (link/base.py), as DeviceSession is, with a QSSource in place of the
MiniProfiler decoder; its optional part is ``control`` (QS-RX), and it has no
``device_control`` (a QS target has no buffers to reset and sends no status). A
reader thread feeds the source and hands the listener the raw bytes, the RTC steps as
Profile records (``on_records``) and the decoded QS events (``on_qs_events``). Start
and Stop are QS-RX global filters all on / all off; reset,
target info and tick are QS-RX commands too. QS has no acknowledgements we can rely
on (QS_RX_STATUS is optional), so commands are queued for a writer thread
(link/qs_tx.py) and not waited for; a target that does not read gets them refused.
"""

from __future__ import annotations

import contextlib
import ipaddress
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import serial

from ..errors import UserError
from ..protocol import Metadata
from ..protocol.qs import encode_frame
from ..qs.rx import FILTER_BYTES, RX, RxCommand, RxCommands
from ..sources.qs import DEFAULT_TICK_HZ, QSSource
from .ports import open_transport, validate_port
from .qs_tx import TxQueue
from .session import (
    CONNECTING,
    DISCONNECTED,
    PROFILING,
    READY,
    LinkError,
    ListenerCalls,
    NullListener,
)

READ_CHUNK = 1 << 16
POLL_S = 0.05
LISTEN_SCHEME = "listen://"
# A listen:// connection that has sent nothing for this long is idle (docs/limits.md):
# dropped if it never sent a byte (a real target answers the INFO request at once), and
# replaced by the next connection either way (a target that talked, then went quiet
# after Stop, is kept until another one comes).
LISTEN_IDLE_S = 5.0
# QS-RX record ids (QP/C 7.4 qs.h, QSpyRxRecords); link/qs_sim.py obeys the same.
RX_INFO = RX["INFO"]
QS_COMMANDS = ("reset", "info", "tick")


def is_qs_port(port: str) -> bool:
    text = port.strip().lower()
    return text.startswith(LISTEN_SCHEME) or (text.startswith("sim://") and "proto=qs" in text)


def validate_listen(text: str, allow_remote: bool = False) -> tuple[str, int]:
    """``listen://[HOST]:PORT`` -> (host, port). HOST defaults to 127.0.0.1 and must be a
    loopback address unless the server runs with --allow-remote."""
    if any(ord(c) < 32 for c in text):
        raise UserError("port contains control characters")
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise UserError(f"{text}: bad listen:// address ({exc})") from None
    if parts.scheme.lower() != "listen" or parts.path not in {"", "/"} or parts.query:
        raise UserError(f"{text}: expected listen://HOST:PORT or listen://:PORT")
    if parts.username is not None or parts.password is not None or port is None:
        raise UserError(f"{text}: expected listen://HOST:PORT with a port from 0 to 65535")
    host = parts.hostname or "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise UserError(f"{text}: listen on an IP address, not {host!r}") from None
    if not ip.is_loopback and not allow_remote:
        raise UserError(
            f"{text}: refusing to listen on {host} (reachable from other machines); "
            "use 127.0.0.1, or start the server with --allow-remote"
        )
    return str(ip), port


def rx_frame(seq: int, rec: int, payload: bytes = b"") -> bytes:
    return encode_frame(seq, rec, payload)


class _Listening:
    """A listening TCP socket that takes one target connection at a time."""

    def __init__(self, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.server = socket.socket(family, socket.SOCK_STREAM)
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.server.bind((host, port))
        except OSError as exc:
            self.server.close()
            raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.server.listen(1)
        self.address = self.server.getsockname()[:2]
        self.conn: socket.socket | None = None
        self.peer = ""
        self.last_rx = 0.0  # clock time of the connection's last bytes (or its accept)
        self.talked = False  # the connection has sent at least one byte

    def close(self) -> None:
        for s in (self.conn, self.server):
            if s is not None:
                with contextlib.suppress(OSError):
                    s.close()
        self.conn = None


class QSLink(ListenerCalls):
    kind = "qs"
    traces_while_idle = True  # the target traces whenever its filters are on
    device_control = None  # no buffers to reset, no status to poll

    def __init__(
        self,
        port: str,
        baud: int = 115200,
        listener: Any = None,
        *,
        tick_hz: int = DEFAULT_TICK_HZ,
        allow_remote: bool = False,
        opener: Callable[[str, int], Any] | None = None,
        info_wait_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        idle_s: float = LISTEN_IDLE_S,
    ) -> None:
        if port.strip().lower().startswith(LISTEN_SCHEME):
            self._listen_at: tuple[str, int] | None = validate_listen(port, allow_remote)
            self.port = port.strip()
        else:
            self._listen_at = None
            self.port = validate_port(port)
        ListenerCalls.__init__(self)
        self.baud = baud
        self.listener = listener or NullListener()
        self.tick_hz = tick_hz
        self.info_wait_s = info_wait_s
        self._clock = clock
        self.idle_s = idle_s
        self.idle_dropped = 0  # listen:// connections dropped or replaced while idle
        self._opener = opener or open_transport
        self.source = QSSource(tick_hz)
        self.state = DISCONNECTED
        self.metadata: Metadata | None = None
        self.records_received = 0
        self._received_at_start = 0
        self._transport: Any = None
        self._listening: _Listening | None = None
        self._reader: threading.Thread | None = None
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._feed_lock = threading.RLock()
        self._tx_seq = 0
        # Commands go out on a thread of their own, at most MAX_TX_BACKLOG bytes queued:
        # nobody waits on a target that does not read (link/qs_tx.py).
        self._tx = TxQueue(self._tx_target, self._log, clock=clock)
        self._fresh = False  # a new connection whose reset records are not read yet
        self._info = threading.Event()
        # QS-RX commands checked against the decoder's sizes and dictionaries in force
        # (they are replaced, never changed in place, so reading them here is safe).
        self.rx = RxCommands(self._rx_state)
        self._resets_seen = 0  # decoder.stats.target_resets the commands have caught up with
        self.control: QSLink | None = self  # QS-RX: rx and send_rx, for the page's panel

    # ------------------------------------------------------------ what the page reads

    own_names = True  # frames named from the target's dictionaries (QSSource)

    @property
    def stats(self) -> Any:
        return _Stats(self.source.stats())

    @property
    def records_received_since_start(self) -> int:
        return self.records_received - self._received_at_start

    @property
    def listening_on(self) -> str | None:
        if self._listening is None:
            return None
        host, port = self._listening.address
        return f"{host}:{port}"

    def hold(self) -> Any:
        """Hold the reader between two chunks (a context manager), so the caller can
        start or end a capture at a frame boundary of what the listener was given."""
        return self._feed_lock

    def capture_header(self) -> bytes:
        """What a stored capture starts with: target info and dictionaries seen so far.
        Steps whose dispatch came before it are forgotten: decoding the stored bytes will
        not see those dispatches either, so the live profile and the session agree."""
        with self._feed_lock:
            self.source.tracker.pending.clear()
            return self.source.preamble()

    # ------------------------------------------------------------ commands

    def connect(self) -> Metadata:
        if self.state != DISCONNECTED:
            raise LinkError(f"{self.port}: already connected")
        self._stop.clear()
        self._info.clear()
        self.state = CONNECTING
        if self._listen_at is not None:
            self._listening = _Listening(*self._listen_at)
            self._log("info", f"waiting for a QS target to connect to {self.listening_on}")
        else:
            self._transport = self._opener(self.port, self.baud)
        self._tx.start()
        self._reader = threading.Thread(target=self._read_loop, name="mcuprof-qs", daemon=True)
        self._reader.start()
        if self._transport is not None:
            self._send(RX_INFO)
            self._info.wait(self.info_wait_s)
        self.metadata = self.source.metadata or Metadata(0, self.tick_hz, 0, "QS target")
        self._set_state(READY, None)
        return self.metadata

    def start(self, reset: bool = True) -> None:
        self._require()
        self._received_at_start = self.records_received
        self._send_cmd(self.rx.glb_filter(b"\xff" * FILTER_BYTES))
        self._set_state(PROFILING, None)

    def stop(self, drain: bool = True) -> None:
        """Global filters all off; a QS target sends no final count to wait for. A
        target that is not reading keeps its filters, and the capture stops anyway."""
        self._require()
        try:
            self._send_cmd(self.rx.glb_filter(bytes(FILTER_BYTES)))
        except LinkError as exc:
            self._log("warning", f"Stop: filters-off not sent ({exc})")
            drain = False
        if drain:
            # Frames already on the wire arrive after the filter goes off.
            self._stop.wait(0.2)
        self._set_state(READY, None)

    def command(self, name: str) -> None:
        """A QS-RX command from the page's buttons: reset, info or tick. Logged either way."""
        try:
            if name not in QS_COMMANDS:
                raise UserError(f"unknown QS command {name!r}: one of {', '.join(QS_COMMANDS)}")
            self._require()
            self._send_cmd(getattr(self.rx, name)())
        except UserError as exc:
            self._log("error", f"QS {name} failed: {exc}")
            raise
        self._log("info", f"QS-RX {name} sent")

    def send_rx(self, cmd: RxCommand) -> None:
        """Send a command ``rx`` built (and so checked) to the target; LinkError when
        there is no target to take it (a listen:// port nobody connected to yet)."""
        self._require()
        lst = self._listening
        if lst is not None and lst.conn is None:
            raise LinkError(f"no QS target is connected to {self.listening_on} yet")
        self.rx.admit(cmd)  # RxError when it would crash the target (qs/guard.py)
        self._send_cmd(cmd)

    def _send_cmd(self, cmd: RxCommand) -> None:
        """Start, Stop and the page's buttons: no target yet on listen:// is fine (it
        sends its own target info and runs with its own filters when it comes)."""
        if self._send(cmd.rec, cmd.payload):
            self.rx.sent(cmd)

    def close(self) -> None:
        self._stop.set()
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout=5)
        self._close_transport()
        self._tx.close()  # after the transport: a write in progress then ends at once
        if self._listening is not None:
            self._listening.close()
            self._listening = None
        if self.state != DISCONNECTED:
            self._set_state(DISCONNECTED, "closed")

    def _require(self) -> None:
        if self.state == DISCONNECTED:
            raise LinkError("not connected")

    def _tx_target(self) -> Any:
        """The transport commands are written to: ours, or the listen:// connection."""
        target = self._transport
        lst = self._listening
        if target is None and lst is not None:
            target = lst.conn
        return target

    def _send(self, rec: int, payload: bytes = b"") -> bool:
        """Queue one frame for the writer; False when a listen:// port has no target to
        write to; LinkError (one line) when the target is not reading."""
        with self._write_lock:
            if self._tx_target() is None:
                if self._listening is not None:
                    return False  # no target yet: it sends its own target info when it comes
                raise LinkError("not connected")
            # As QSPY: the first frame after a (re)connection or a target reset is
            # number 1; a QP target answers a 0 there with Trg-ERR 0x42.
            self._caught_up()
            seq = (self._tx_seq + 1) & 0xFF
            self._tx.put(rx_frame(seq, rec, payload))  # refused: the number is not used
            self._tx_seq = seq
            return True

    # ------------------------------------------------------------ reader thread

    def _read_loop(self) -> None:
        try:
            while not self._stop.is_set():
                data = self._read_listening() if self._listening else self._read_transport()
                if data is None:
                    return
                if data:
                    self.feed(data)
        finally:
            self._flush()

    def _read_transport(self) -> bytes | None:
        transport = self._transport
        try:
            try:
                fd = transport.fileno()
            except Exception:
                fd = None
            if fd is not None:
                ready, _, _ = select.select([fd], [], [], POLL_S)
                return transport.read(READ_CHUNK) if ready else b""
            transport.timeout = POLL_S
            waiting = transport.in_waiting
            return transport.read(min(waiting, READ_CHUNK) if waiting else 1)
        except (serial.SerialException, OSError, ValueError, TypeError, AttributeError) as exc:
            if not self._stop.is_set():
                self._lost(str(exc) or type(exc).__name__)
            return None

    def _read_listening(self) -> bytes | None:
        lst = self._listening
        if lst is None:
            return None
        conn = lst.conn
        watch = [lst.server] + ([conn] if conn is not None else [])
        try:
            ready, _, _ = select.select(watch, [], [], POLL_S)
        except (OSError, ValueError):
            return None
        if conn is not None and not lst.talked and self._idle(lst):
            self._drop_idle(lst, "dropped")
            conn = None
        # The connection first: a target that exits and comes back (a reset) may be seen
        # closing and connecting again in one select; its end must free the port before
        # the new connection is judged, or the returning target is turned away.
        data = b""
        if conn is not None and conn in ready:
            try:
                data = conn.recv(READ_CHUNK)
            except OSError:
                data = b""
            if data:
                lst.last_rx, lst.talked = self._clock(), True
            else:
                self._flush()
                conn.close()
                lst.conn = conn = None
                self._tx.clear()
                self._log("warning", f"QS target disconnected; waiting on {self.listening_on}")
        if lst.server in ready:
            self._accept(lst, conn)
        return data

    def _accept(self, lst: _Listening, conn: Any) -> None:
        """A new connection: taken when the port is free (or its connection idle), else
        turned away (one target at a time, as QSPY)."""
        new, addr = lst.server.accept()
        if conn is not None and self._idle(lst):
            self._drop_idle(lst, "replaced by a new connection")
            conn = None
        if conn is not None:
            new.close()
            self._log("warning", f"QS target {addr[0]}:{addr[1]} refused: one is connected")
            return
        lst.conn = new
        lst.peer, lst.last_rx, lst.talked = f"{addr[0]}:{addr[1]}", self._clock(), False
        self._restart_seq(fresh=True)
        self._log("info", f"QS target connected from {addr[0]}:{addr[1]}")
        with contextlib.suppress(LinkError):
            self._send(RX_INFO)

    def _restart_seq(self, fresh: bool = False) -> None:
        """The next command is number 1, as the target expects after its reset. A new
        listen:// connection is a reset target whose reset records are still to come."""
        with self._write_lock:
            self._tx_seq = 0
            self._fresh = fresh
            self._tx.clear()  # queued for the connection before: not for this one

    def _caught_up(self) -> None:
        """Follow target resets read since the last command (checked when a command is
        built or sent, not on the reader thread): a reset target has no current objects,
        its own filters, and wants frame 1 next; a new connection's own reset records
        were counted from its accept already."""
        resets = self.source.decoder.stats.target_resets
        if resets != self._resets_seen:
            self._resets_seen = resets
            self.rx.target_reset()
            if not self._fresh:
                self._tx_seq = 0
            self._fresh = False

    def _rx_state(self) -> tuple[Any, Any]:
        """The sizes and dictionaries in force (replaced, never changed in place, so
        they are safe to read beside the reader thread)."""
        with self._write_lock:
            self._caught_up()
        decoder = self.source.decoder
        return decoder.config, decoder.dicts

    def _idle(self, lst: _Listening) -> bool:
        return self._clock() - lst.last_rx >= self.idle_s

    def _drop_idle(self, lst: _Listening, what: str) -> None:
        """Close the idle connection, with what it sent so far decoded and kept."""
        self._flush()
        if lst.conn is not None:
            with contextlib.suppress(OSError):
                lst.conn.close()
        lst.conn = None
        self._tx.clear()
        self.idle_dropped += 1
        said = "sent nothing" if not lst.talked else "sent nothing more"
        self._log(
            "warning",
            f"QS connection from {lst.peer} {said} for {self.idle_s:g} s: {what} "
            f"(idle connections dropped so far: {self.idle_dropped})",
        )

    def feed(self, data: bytes) -> None:
        """Decode bytes as if they came from the target (the reader, and tests)."""
        with self._feed_lock:
            self._notify("on_raw", data)
            self._deliver(self.source.feed(data))

    def _flush(self) -> None:
        with self._feed_lock:
            self._deliver(self.source.close())

    def _deliver(self, batch: Any) -> None:
        meta = self.source.metadata
        if meta is not None and meta is not self.metadata:
            self.metadata = meta
            self._info.set()
            self._notify("on_metadata", meta)
        if batch.events:
            self.rx.observe(batch.events)  # what the target holds, for the guard
            self._notify("on_qs_events", batch.events)
        if len(batch.records):
            self._notify("on_records", batch.records)
            self.records_received += len(batch.records)

    def _lost(self, reason: str) -> None:
        self._stop.set()
        self._close_transport()
        self._set_state(DISCONNECTED, reason)
        self._log(
            "error", f"QS target disconnected: {reason}; {self.source.steps:,} RTC steps are kept"
        )

    def _close_transport(self) -> None:
        transport, self._transport = self._transport, None
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()


class _Stats:
    """The source's counters as attributes, as the live session reads link stats."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)
        self.values = values
