"""The front-end port under hostile input, in-process with a fake TCP target: garbage,
a flood, unknown names and oversized peeks are refused with one line each, nothing
reaches the target, and the target link keeps going."""

from __future__ import annotations

import re
import struct
import threading

import pytest

from mcuprof.errors import UserError
from mcuprof.link.qs_host import MAX_TX_BACKLOG, QSHost
from mcuprof.link.qs_udp import MAX_FRONT_ENDS, FrontEndPort
from mcuprof.link.qs_udp_access import UdpAccess
from mcuprof.protocol.qs import Dictionaries, QSConfig, QSDecoder, encode_frame
from mcuprof.qs.frontend import QSPY_ONLY
from mcuprof.qs.rx import RxCommand, RxCommands

from .qsfe import REAL, FakeTarget, FrontEnd, decoded_frames, wait_for

HELD = re.compile(r"(\d+) more datagrams refused")
LOCAL = UdpAccess("127.0.0.1", 0)


@pytest.fixture(scope="module")
def hello() -> bytes:
    """The real target's bytes to its QS_QF_RUN frame (index 99 is well past it)."""
    data = (REAL.parent / "dpp-posix64.bin").read_bytes()
    return b"\x7e".join(data.split(b"\x7e")[:100]) + b"\x7e"


class Host:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.events: list = []
        self.decoder = QSDecoder()
        self.host = QSHost(("127.0.0.1", 0), self.decoder, self.events.extend,
                           self.lines.append, udp=LOCAL)  # fmt: skip
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.host.step()

    @property
    def tport(self) -> int:
        return self.host.listening.address[1]

    @property
    def uport(self) -> int:
        return self.host.frontends.address[1]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.host.close()


@pytest.fixture
def rig(hello):
    host = Host()
    fe = FrontEnd(host.uport)
    target = FakeTarget(host.tport, hello)
    try:
        fe.send(b"\x80\x03")
        wait_for(lambda: host.decoder.stats.records > 50, "the reset sequence")
        yield host, fe, target
    finally:
        target.close()
        fe.close()
        host.close()


GARBAGE = [
    b"",
    b"\x00",
    b"\x00\xff\x00",
    b"\x00\x11",  # no such QS-RX record
    b"\x00\x04\x00\x00\x04\xff",  # a peek of 1020 bytes
    b"\x00\x04\x00\x00\x03\x01",  # element size 3
    b"\x00\x87\x00\x00\x00\x00\x00NO_SUCH_SIG\x00",
    b"\x00\x87\x00\x00\x00\xff\xff" + b"x" * 40,  # parameter length past the end
    b"\x00\x88\x00" + bytes(8) + b"No_such_inst\x00",
    b"\x00\x89\x00" + bytes(8) + b"Table_inst\x00trailing",
    b"\x00\x89\x00" + bytes(8) + b"\x1b[2J\x00",  # a terminal escape as a name
    b"\x00\x0d\x01" + struct.pack("<Q", 0xDEAD),  # not a known object
    b"\x00\x10\x01\x00\x00\x00\x00",  # signal 0 posted
    b"\x00\x0a\x0f" + b"\xff" * 15,
    b"\x00\x80\x09",
    bytes(600),
]


def test_garbage_is_refused_one_line_each_and_nothing_reaches_the_target(rig):
    host, fe, target = rig
    mark = fe.mark()
    for g in GARBAGE:
        fe.sock.sendto(g, fe.addr)
    wait_for(lambda: host.host.frontends.refused == len(GARBAGE), "every refusal")
    errors = [t for t in fe.texts()[mark:] if "<F-END> ERROR" in t]
    assert len(errors) == len(GARBAGE)
    assert all("\n" not in line for line in errors)
    assert sum("<F-END> ERROR" in line for line in host.lines) == len(GARBAGE)
    assert "'NO_SUCH_SIG' is not in the target's dictionary" in "\n".join(errors)
    assert "peek of 255 x 4 bytes" in "\n".join(errors)
    assert target.received == b""
    fe.send(b"\x00")  # the link still works, and its first frame has sequence 1
    wait_for(lambda: target.frames(), "the INFO frame")
    assert decoded_frames(bytes(target.received)) == [(1, 0, b"")]


@pytest.mark.parametrize("rec", sorted(QSPY_ONLY))
def test_qspy_only_records_are_refused_with_their_reason_and_never_forwarded(rig, rec):
    host, fe, target = rig
    mark = fe.mark()
    fe.send(bytes([rec]) + b"\x00\x01\x02\x03\x04\x00")  # whatever a front end adds
    line = fe.wait_text(r"<F-END> ERROR", mark)
    assert line == f"   <F-END> ERROR    record 0x{rec:02X} refused: {QSPY_ONLY[rec]}"
    assert line in host.lines
    fe.send(b"\x00")  # the next command is the first the target gets
    wait_for(lambda: target.frames(), "the INFO frame")
    assert decoded_frames(bytes(target.received)) == [(1, 0, b"")]


def test_a_flood_is_counted_and_does_not_stall_the_target(rig):
    host, fe, target = rig
    before = host.decoder.frame_stats.frames
    flood = 3000
    for i in range(flood):
        fe.sock.sendto(bytes([i & 0xFF, 0x11]), fe.addr)
        if i % 100 == 0:  # the target keeps talking meanwhile
            target.sock.sendall(encode_frame(i // 100 & 0xFF, 70))
    wait_for(lambda: host.decoder.frame_stats.frames - before == flood // 100, "target frames")
    fe.send(b"\x03\x00")
    wait_for(lambda: target.frames(), "the TICK frame")
    assert decoded_frames(bytes(target.received)) == [(1, 3, b"\x00")]
    refused = host.host.frontends.refused
    assert 0 < refused <= flood  # the kernel may drop some of a flood first

    def accounted() -> bool:
        shown = sum("record 17" in line for line in host.lines)
        held = [int(m.group(1)) for m in map(HELD.search, host.lines) if m]
        return shown + sum(held) == refused and bool(held)

    wait_for(accounted, "every refusal shown or counted")
    assert sum("record 17" in line for line in host.lines) < refused


def test_front_ends_are_bounded_and_must_attach(rig):
    host, _fe, target = rig
    others = [FrontEnd(host.uport) for _ in range(MAX_FRONT_ENDS)]
    try:
        for other in others:
            other.send(b"\x80\x02")
        wait_for(lambda: "port full" in "\n".join(host.lines), "a place reclaimed")
        assert len(host.host.frontends.clients) == MAX_FRONT_ENDS
        stranger = FrontEnd(host.uport)
        stranger.send(b"\x00")
        wait_for(lambda: "not attached" in "\n".join(host.lines), "not attached")
        stranger.close()
    finally:
        for other in others:
            other.close()
    assert target.received == b""


class _Clocked:
    """A front-end port on a clock the test sets, and front ends bound to real local
    ports (each FrontEnd is one place; ``addr(i)`` is its address)."""

    def __init__(self, n: int) -> None:
        self.now = 0.0
        self.lines: list[str] = []
        commands = RxCommands(lambda: (QSConfig(), Dictionaries()))
        self.port = FrontEndPort(LOCAL, lambda: commands, lambda cmd: None, self.lines.append,
                                 lambda: "", clock=lambda: self.now)  # fmt: skip
        self.sinks = [FrontEnd(self.port.address[1]) for _ in range(n)]
        for sink in self.sinks:  # bound to a local port by a first datagram
            sink.sock.sendto(b"", ("127.0.0.1", 9))

    def addr(self, i: int) -> tuple[str, int]:
        return ("127.0.0.1", self.sinks[i].sock.getsockname()[1])

    def busy(self, places: list[tuple[str, int]], until: float) -> None:
        """Each place sends something every 29 s (an INFO), until ``until``."""
        while self.now + 29 <= until:
            self.now += 29
            for addr in places:
                self.port.handle(b"\x05\x00", addr)
        self.now = until

    def close(self) -> None:
        self.port.close()
        for sink in self.sinks:
            sink.close()


def test_one_process_holding_every_place_cannot_keep_a_new_front_end_out():
    """Issue 35, finding 8: eight places held from one address, each heard every 29 s:
    a newcomer still attaches, in the place of the one silent longest, who is told."""
    rig = _Clocked(MAX_FRONT_ENDS + 1)
    try:
        hog = [rig.addr(i) for i in range(MAX_FRONT_ENDS)]
        for addr in hog:
            rig.port.handle(b"\x00\x80\x03", addr)  # binary and text
            rig.now += 1
        rig.busy(hog, 600.0)
        rig.port.handle(b"\x00\x80\x01", rig.addr(MAX_FRONT_ENDS))
        assert rig.addr(MAX_FRONT_ENDS) in rig.port.clients
        assert len(rig.port.clients) == MAX_FRONT_ENDS and hog[0] not in rig.port.clients
        assert f"Detached 127.0.0.1:{hog[0][1]}, silent for 12 s: port full" in rig.lines[-2]
        wait_for(lambda: any("port full" in t for t in rig.sinks[0].texts()), "the reason told")
    finally:
        rig.close()


def test_the_place_reclaimed_is_of_the_address_holding_the_most():
    """A front end from another address keeps its place though it is the one silent
    longest: the address holding the most places gives one up first."""
    rig = _Clocked(MAX_FRONT_ENDS)
    try:
        other = ("127.0.0.2", rig.addr(0)[1])  # another machine's QView, quiet
        rig.port.handle(b"\x00\x80\x01", other)
        hog = [rig.addr(i) for i in range(MAX_FRONT_ENDS - 1)]
        for addr in hog:
            rig.port.handle(b"\x00\x80\x01", addr)
        rig.busy(hog, 100.0)
        rig.port.handle(b"\x00\x80\x01", rig.addr(MAX_FRONT_ENDS - 1))
        assert other in rig.port.clients and hog[0] not in rig.port.clients
    finally:
        rig.close()


def test_a_target_that_does_not_read_gets_no_unbounded_queue(rig):
    host, _fe, _target = rig
    host.host.tx += bytes(MAX_TX_BACKLOG + 1)  # as if the target had stopped reading
    reason = host.host.send(RxCommand(0, b""))
    assert reason is not None and "not reading" in reason


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "sim://?proto=qs", "--udp", "0"], "--udp needs --port listen://HOST:PORT"),
        (["--port", "listen://0.0.0.0:0"], "refusing to listen on 0.0.0.0"),
        (["--port", "listen://127.0.0.1:0", "--udp", "70000"], "--udp 70000"),
        (["--port", "listen://127.0.0.1:0", "--udp", "0.0.0.0:0"], "refusing UDP on 0.0.0.0"),
        (["--port", "listen://0.0.0.0:0", "--allow-remote", "--udp", "0"], "--udp-allow ADDR"),
        (["--port", "listen://127.0.0.1:0", "--udp-allow", "127.0.0.1"], "needs --udp"),
    ],
)
def test_listen_options_are_checked(argv, message, capsys):
    from mcuprof.cli import main

    assert main(["qs", "listen", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_saving_dictionaries_that_fails_is_one_line_and_the_port_goes_on():
    def save() -> str:
        raise UserError("cannot write /nowhere/x.dic: No such file or directory")

    lines: list[str] = []
    host = QSHost(("127.0.0.1", 0), QSDecoder(), lambda events: None, lines.append,
                  udp=LOCAL, save_dic=save)  # fmt: skip
    fe = FrontEnd(host.frontends.address[1])
    try:
        fe.send(b"\x80\x02")
        fe.send(b"\x82")
        fe.send(b"\x8d\x00still here\x00")
        wait_for(lambda: host.step() or "still here" in lines, "the note after the failure")
        assert "   <F-END> ERROR    cannot write /nowhere/x.dic: No such file or directory" in lines
        fe.wait_text(r"ERROR    cannot write /nowhere")
    finally:
        fe.close()
        host.close()


def test_the_front_end_port_is_loopback_unless_allowed():
    host = QSHost(("127.0.0.1", 0), QSDecoder(), lambda events: None, print, udp=LOCAL)
    try:
        assert host.frontends.address[0] == "127.0.0.1"
    finally:
        host.close()
