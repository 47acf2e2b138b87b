"""QSPY's UDP port for front ends (QView, QUTest scripts): ``mcuprof qs listen --udp``.

One socket serves several front ends, each known by its address once it attaches.
Datagrams are read without blocking, at most ``MAX_DATAGRAMS_PER_POLL`` per call, so a
flood cannot starve the target link; each is parsed and checked by qs/frontend.py and
qs/rx.py, and a refusal is one line on the host's output and on the sender's text
channel (at most ``MAX_ERROR_LINES_PER_S`` lines a second; the rest are counted).
What the target sends goes back to every attached front end on the channels it chose.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..protocol.qs import Dictionaries, Malformed, QSConfig, QSEvent, Record
from ..protocol.qs.records import ENUM_DICT, FUN_DICT, OBJ_DICT, SIG_DICT, TARGET_INFO, USR_DICT
from ..qs.frontend import (
    CHAN_BINARY,
    CHAN_TEXT,
    MAX_DATAGRAM,
    TEXT_REC,
    Attach,
    Detach,
    Note,
    SaveDict,
    ToTarget,
    attach_packet,
    binary_packet,
    parse_datagram,
    text_packet,
)
from ..qs.rx import RxCommand, RxCommands, RxError
from ..qs.text import event_lines
from .qs_link import validate_listen
from .session import LinkError

# Records whose lines QSPY 7.4 keeps off the text channel (front ends get them as binary).
NOT_TEXT = frozenset((ENUM_DICT, SIG_DICT, OBJ_DICT, FUN_DICT, USR_DICT, TARGET_INFO))
MAX_FRONT_ENDS = 8  # attached at once on one port
# A front end that ended without DETACH (a killed QView) is never heard of again, and UDP
# does not tell us: when the port is full, an ATTACH takes the place of the front end
# silent longest, if it has been silent this long (docs/limits.md).
FRONT_END_STALE_S = 30.0
MAX_DATAGRAMS_PER_POLL = 64  # read per call before the target link is served again
MAX_ERROR_LINES_PER_S = 20  # refusal lines shown per second; the rest are counted
F_END = "   <F-END> "
F_ERROR = F_END + "ERROR    "
POLL_S = 0.2  # the dashboard's port thread wakes this often to see whether to end


@dataclass
class _Client:
    channels: int
    heard: float  # clock time of its last datagram
    seq: int = 0

    def next_seq(self) -> int:
        self.seq = (self.seq + 1) & 0xFF
        return self.seq


class FrontEndPort:
    """``commands`` gives the target's command builder in force; ``send`` takes a
    checked command for the target and returns None, or a reason it could not go (no
    target, the target is not reading); ``out`` prints one line of the host's output;
    ``save_dic`` saves the dictionaries and says where."""

    def __init__(
        self,
        port: int,
        commands: Callable[[], RxCommands],
        send: Callable[[RxCommand], str | None],
        out: Callable[[str], None],
        save_dic: Callable[[], str],
        *,
        allow_remote: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        host = "0.0.0.0" if allow_remote else "127.0.0.1"
        validate_listen(f"listen://{host}:{port}", allow_remote)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind((host, port))
        except OSError as exc:
            self.sock.close()
            raise UserError(f"cannot open UDP port {host}:{port}: {exc.strerror or exc}") from None
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()[:2]
        self.commands = commands
        self._send_target = send
        self._out = out
        self._save_dic = save_dic
        self._clock = clock
        self.clients: dict[tuple, _Client] = {}
        self.refused = 0
        self.send_failures = 0
        self._second = 0
        self._lines_this_second = 0
        self._unshown = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def poll(self) -> None:
        for _ in range(MAX_DATAGRAMS_PER_POLL):
            try:
                data, addr = self.sock.recvfrom(MAX_DATAGRAM + 1)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                continue  # an ICMP error for an earlier send to a gone front end
            self.handle(data, addr)
        self.roll()

    def handle(self, data: bytes, addr: tuple) -> None:
        client = self.clients.get(addr)
        if client is not None:
            client.heard = self._clock()
        try:
            packet = parse_datagram(data, self.commands())
        except RxError as exc:
            self._refuse(addr, data[1] if len(data) > 1 else 0, str(exc))
            return
        if isinstance(packet, Attach):
            if client is None and len(self.clients) >= MAX_FRONT_ENDS and not self._drop_stale():
                self._refuse(addr, data[1], f"{MAX_FRONT_ENDS} front ends already attached")
                return
            self.clients[addr] = client = _Client(packet.channels, self._clock())
            self._send(addr, attach_packet(client.next_seq()))
            self._out(f"{F_END}Attached Chan={packet.channels:08b}")
        elif client is None:
            self._refuse(addr, data[1], "not attached: send ATTACH (0x80) first")
        elif isinstance(packet, Detach):
            del self.clients[addr]
        elif isinstance(packet, SaveDict):
            try:
                saved = self._save_dic()
            except UserError as exc:  # e.g. the file cannot be written: say so, go on
                self._refuse(addr, data[1], str(exc))
                return
            self._line(saved, data[1])
        elif isinstance(packet, Note):
            self._out(packet.text)
        elif isinstance(packet, ToTarget):
            reason = self._send_target(packet.command)
            if reason is not None:
                self._refuse(addr, data[1], reason)

    def _drop_stale(self) -> bool:
        """Detach the front end silent longest if it is stale; whether one was."""
        addr, client = min(self.clients.items(), key=lambda item: item[1].heard)
        silent = self._clock() - client.heard
        if silent < FRONT_END_STALE_S:
            return False
        del self.clients[addr]
        self._out(f"{F_END}Detached {addr[0]}:{addr[1]}, silent for {silent:.0f} s: port full")
        return True

    def forward(self, events: Iterable[QSEvent]) -> None:
        """The target's records to every attached front end; QSPY's lines to those that
        asked for text. The host prints the lines itself."""
        if not self.clients:
            return
        for event in events:
            cls = event.__class__
            raw = event.raw if cls is Record or cls is Malformed else None
            rec = raw[1] if raw is not None and len(raw) > 1 else 0
            lines = None
            for addr, client in list(self.clients.items()):
                if raw is not None and rec != 0 and client.channels & CHAN_BINARY:
                    self._send(addr, binary_packet(raw))
                if client.channels & CHAN_TEXT and rec not in NOT_TEXT:
                    lines = event_lines(event) if lines is None else lines
                    for line in lines:
                        self._send(addr, text_packet(client.next_seq(), rec, line))

    def text(self, line: str, rec: int = TEXT_REC) -> None:
        """One of the host's own lines (saving dictionaries, held-back refusals), to the
        front ends' text channels."""
        for addr, client in list(self.clients.items()):
            if client.channels & CHAN_TEXT:
                self._send(addr, text_packet(client.next_seq(), rec, line))

    def _line(self, line: str, rec: int) -> None:
        self._out(line)
        self.text(line, rec)

    def _refuse(self, addr: tuple, rec: int, reason: str) -> None:
        self.refused += 1
        self.roll()
        if self._lines_this_second >= MAX_ERROR_LINES_PER_S:
            self._unshown += 1
            return
        self._lines_this_second += 1
        line = F_ERROR + reason
        self._out(line)
        client = self.clients.get(addr)
        if client is not None and client.channels & CHAN_TEXT:
            self._send(addr, text_packet(client.next_seq(), rec, line))

    def roll(self) -> None:
        """At a new second: refusal lines may be shown again; say how many were not."""
        second = int(self._clock())
        if second == self._second:
            return
        self._second, self._lines_this_second = second, 0
        if self._unshown:
            unshown, self._unshown = self._unshown, 0
            self._line(f"{F_ERROR}{unshown} more datagrams refused (lines not shown)", TEXT_REC)

    def _send(self, addr: tuple, packet: bytes) -> None:
        try:
            self.sock.sendto(packet, addr)
        except OSError:
            self.send_failures += 1  # a full socket buffer or a gone front end


class DashboardFrontEnds:
    """``mcuprof serve --qspy-udp``: the same front-end port beside the dashboard.

    ``control`` is ``LiveSession.control``: the connected QS link's control object (its
    ``rx`` checks, its ``send_rx`` sends), or UserError when no QS target is connected;
    front ends may attach before one is. ``log(level, line)`` is the dashboard's log.
    A thread reads the port; the link's reader thread hands the target's records over
    as a QS listener (``qs_events``), so front ends see what the dashboard profiles.
    """

    def __init__(
        self,
        port: int,
        control: Callable[[], Any],
        log: Callable[[str, str], None],
        *,
        allow_remote: bool = False,
    ) -> None:
        self._control = control
        self._log = log
        self._none = RxCommands(lambda: (QSConfig(), Dictionaries()))  # no target yet
        self._lock = threading.Lock()  # the port's clients: reader thread and ours
        self._stop = threading.Event()
        self.port = FrontEndPort(
            port, self._commands, self._send, self._out, self._save_dic,
            allow_remote=allow_remote,
        )  # fmt: skip
        self._thread = threading.Thread(target=self._run, name="mcuprof-qspy-udp", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        return self.port.address

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.port.close()

    def _run(self) -> None:
        dropped = 0
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self.port], [], [], POLL_S)
            except (OSError, ValueError):
                return  # the port was closed
            with self._lock:
                try:
                    if ready:
                        self.port.poll()
                    self.port.roll()
                except Exception as exc:  # a bug must not end the port: say it, go on
                    self._log("error", f"QSPY front end: {type(exc).__name__}: {exc}")
                failures = self.port.send_failures
            if failures > dropped:  # said at most once per POLL_S, with the total
                dropped = failures
                self._log("warning", f"QSPY front end: {dropped} packets to front ends dropped "
                          "(a front end's socket buffer was full, or it is gone)")  # fmt: skip

    # QS listener (the link's reader thread)
    def qs_events(self, events: list[QSEvent]) -> None:
        with self._lock:
            self.port.forward(events)

    def qs_reset(self) -> None:
        pass  # front ends follow the target's own reset records

    def _commands(self) -> RxCommands:
        try:
            return self._control().rx
        except UserError:
            return self._none  # names are then unknown; _send says why nothing goes

    def _send(self, cmd: RxCommand) -> str | None:
        try:
            self._control().send_rx(cmd)
        except (UserError, LinkError, RxError) as exc:  # RxError: the guard refused it
            return str(exc)
        return None

    def _out(self, line: str) -> None:
        self._log("warning" if "ERROR" in line else "info", f"QSPY front end: {line.strip()}")

    def _save_dic(self) -> str:
        raise UserError("saving dictionaries: the dashboard keeps them in each stored session")
