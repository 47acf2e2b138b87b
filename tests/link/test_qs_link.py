"""QSLink on real transports: the simulated QP target over a pty and TCP (we connect),
and QSPY's -t mode (the target connects to our listening port)."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Any

import pytest

from mcuprof.errors import UserError
from mcuprof.link import SimOptions
from mcuprof.link.qs_link import LISTEN_IDLE_S, QSLink, is_qs_port, validate_listen
from mcuprof.link.qs_sim import QSSimDevice
from mcuprof.qs.rx import RxError

from .conftest import wait_until


class Listener:
    def __init__(self) -> None:
        self.records = 0
        self.events = 0
        self.raw = 0
        self.logs: list[str] = []
        self.states: list[str] = []

    def on_raw(self, data: bytes) -> None:
        self.raw += len(data)

    def on_records(self, records) -> None:
        self.records += len(records)

    def on_qs_events(self, events) -> None:
        self.events += len(events)

    def on_metadata(self, meta) -> None:
        pass

    def on_state(self, state: str, reason: str | None) -> None:
        self.states.append(state)

    def on_log(self, level: str, message: str) -> None:
        self.logs.append(message)


def test_sim_target_over_pty_and_tcp(sim_server) -> None:
    server, port = sim_server(SimOptions(proto="qs"))
    listener = Listener()
    link = QSLink(port, 921_600, listener, info_wait_s=3.0)
    try:
        meta = link.connect()
        assert meta.fw_version == "QP 7.4.0"  # its answer to QS-RX INFO
        assert meta.timer_freq == 1_000_000
        link.start()
        wait_until(lambda: listener.records >= 30, "RTC steps from the target")
        link.command("tick")
        link.stop()
        # Global filters off: the target stops tracing (frames in flight still arrive).
        wait_until(lambda: not server.device.enabled, "the target obeying GLB_FILTER off")
        # Bytes already on the wire (the server's buffer, paced to the baud rate) still
        # come; then nothing more does.
        settled = -1
        for _ in range(40):
            if listener.records == settled:
                break
            settled = listener.records
            time.sleep(0.5)
        assert listener.records == settled, "the target kept tracing after Stop"
        assert link.stats.bad_frames == 0 and link.stats.frames > 0
        link.start()
        wait_until(lambda: listener.records > settled, "tracing again after Start")
    finally:
        link.close()
    assert listener.states[-1] == "disconnected"


def test_commands_reach_the_target(sim_server) -> None:
    _server, port = sim_server(SimOptions(proto="qs"))
    link = QSLink(port, 921_600, Listener(), info_wait_s=3.0)
    try:
        link.connect()
        resets = link.stats.target_resets
        link.command("reset")
        wait_until(lambda: link.stats.target_resets > resets, "the target rebooting")
        with pytest.raises(UserError, match="unknown QS command"):
            link.command("format-flash")
    finally:
        link.close()


def _target(address: tuple[str, int], stop: threading.Event, seconds: float = 30.0) -> None:
    """A QP target that connects to the host (QS over TCP, the -t side)."""
    dev = QSSimDevice(baud=2_000_000)
    with socket.create_connection(address, timeout=5) as s:
        s.setblocking(False)
        end = time.monotonic() + seconds
        while not stop.is_set() and time.monotonic() < end:
            with contextlib.suppress(BlockingIOError):
                data = s.recv(4096)
                if not data:
                    return
                dev.receive(data)
            out = dev.poll()
            if out:
                s.setblocking(True)
                s.sendall(out)
                s.setblocking(False)
            time.sleep(0.002)


def test_listening_mode_takes_a_target() -> None:
    listener = Listener()
    link = QSLink("listen://127.0.0.1:0", 115_200, listener)
    stop = threading.Event()
    try:
        link.connect()  # returns at once: no target yet
        assert link.state == "ready"
        host, port = link.listening_on.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        target = threading.Thread(target=_target, args=((host, int(port)), stop), daemon=True)
        target.start()
        link.start()
        wait_until(lambda: listener.records >= 30, "RTC steps from the connecting target")
        assert link.source.metadata is not None  # it answered the INFO sent on accept
        # A second target is turned away while one is connected.
        with socket.create_connection((host, int(port)), timeout=5) as second:
            second.settimeout(5)
            assert second.recv(16) == b""
        stop.set()
        target.join(5)
        wait_until(lambda: any("QS target disconnected" in m for m in listener.logs), "drop")
        assert link.state != "disconnected"  # still listening for the next target
        again = threading.Event()
        seen = listener.records
        threading.Thread(target=_target, args=((host, int(port)), again), daemon=True).start()
        wait_until(lambda: listener.records > seen, "a reconnected target")
        again.set()
    finally:
        stop.set()
        link.close()


@pytest.mark.parametrize(
    "url", ["listen://0.0.0.0:6601", "listen://192.168.1.5:6601", "listen://[::]:7"]
)
def test_listening_off_loopback_needs_allow_remote(url) -> None:
    with pytest.raises(UserError, match="--allow-remote"):
        validate_listen(url)
    assert validate_listen(url, allow_remote=True)[1] in (6601, 7)


@pytest.mark.parametrize(
    "url",
    ["listen://localhost:1", "listen://127.0.0.1", "listen://127.0.0.1:1/x", "listen://a\n:1"],
)
def test_bad_listen_addresses(url) -> None:
    with pytest.raises(UserError):
        validate_listen(url)


def test_listen_default_host_is_loopback() -> None:
    assert validate_listen("listen://:6601") == ("127.0.0.1", 6601)
    assert is_qs_port("listen://:1") and is_qs_port("sim://?proto=qs") and not is_qs_port("sim://")


def test_browser_text_never_reaches_serial_for_url() -> None:
    for text in ("spy://x?file=/tmp/a", "alt:///dev/ttyS0?class=x", "loop://"):
        with pytest.raises(UserError, match="not allowed"):
            QSLink(text, 115_200)


def test_bad_bytes_are_counted_and_good_frames_kept() -> None:
    listener = Listener()
    link = QSLink("sim://?proto=qs", 115_200, listener)
    good = QSSimDevice(baud=10_000_000)
    time.sleep(0.05)
    stream = good.poll()
    link.feed(b"\x7e\x01\x02garbage\x7e" + stream[:500] + b"\x00\xff\x7e" + stream[500:])
    stats = link.stats
    assert stats.bad_frames >= 1
    assert stats.frames >= stream.count(b"\x7e") - 2
    assert listener.events > 0


def test_a_capture_started_mid_step_agrees_with_its_stored_bytes() -> None:
    """Start falls between a dispatch and the transition that ends it: the live profile
    and the stored capture (header + bytes after Start) give the same steps."""
    import numpy as np

    from mcuprof.profile import Profile
    from mcuprof.protocol.qs import Record, decode_capture
    from mcuprof.sources import load
    from tests.sources.conftest import sim_stream

    data = sim_stream(3.0)
    events, _ = decode_capture(data)
    dispatch = next(e for e in events[len(events) // 2 :] if type(e) is Record and e.rec == 8)
    flags = np.flatnonzero(np.frombuffer(data, np.uint8) == 0x7E)
    cut = int(flags[dispatch.index]) + 1  # just after the dispatch's frame

    class Taker(Listener):
        def __init__(self) -> None:
            super().__init__()
            self.taking = False
            self.chunks: list = []

        def on_records(self, records) -> None:
            if self.taking:
                self.chunks.append(records)

    taker = Taker()
    link = QSLink("sim://?proto=qs", 115_200, taker)
    link.feed(data[:cut])
    header = link.capture_header()
    taker.taking = True
    link.feed(data[cut:])
    live = Profile()
    live.add(taker.chunks)
    stored = load("qs", header + data[cut:])
    assert stored.stats["discontinuities"] == 0
    assert live.folded() == stored.profile.folded()


class _Clock:
    """A clock the test moves: the link's idle rule reads it, select() does not."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _listening(listener: Listener, clock: _Clock) -> tuple[QSLink, tuple[str, int]]:
    link = QSLink("listen://127.0.0.1:0", 115_200, listener, clock=clock, idle_s=LISTEN_IDLE_S)
    link.connect()
    host, port = link.listening_on.rsplit(":", 1)
    return link, (host, int(port))


def test_a_silent_connection_is_dropped_after_the_idle_time() -> None:
    """F3: a client that connects and sends nothing used to hold the port for ever."""
    listener, clock = Listener(), _Clock()
    link, address = _listening(listener, clock)
    try:
        with socket.create_connection(address, timeout=5) as silent:
            wait_until(lambda: any("connected from" in m for m in listener.logs), "accept")
            clock.now += LISTEN_IDLE_S + 1
            silent.settimeout(5)
            assert silent.recv(64)  # the INFO request it was sent on accept
            assert silent.recv(64) == b""  # then closed by the link
        wait_until(lambda: link.idle_dropped == 1, "the idle drop counted")
        assert any(f"sent nothing for {LISTEN_IDLE_S:g} s: dropped" in m for m in listener.logs), (
            listener.logs
        )
        assert link.state != "disconnected"  # still listening
    finally:
        link.close()


def test_a_real_target_takes_over_from_an_idle_connection() -> None:
    """A connection that sent a byte and then nothing is not dropped on its own, but the
    next connection takes its place once it is idle; a busy target is never displaced."""
    listener, clock = Listener(), _Clock()
    link, address = _listening(listener, clock)
    stop = threading.Event()
    try:
        with socket.create_connection(address, timeout=5) as squatter:
            squatter.sendall(b"\x7e")  # one byte: it talked once
            wait_until(lambda: listener.raw >= 1, "the squatter's byte")
            # What the link queued for the squatter (its INFO request) is written before
            # the fake clock jumps: bytes left waiting across the jump read as a target
            # that stopped reading (a CI try under load refused the next command so).
            wait_until(lambda: link._tx.waiting == 0, "the squatter's INFO request written")
            clock.now += LISTEN_IDLE_S + 1
            target = threading.Thread(target=_target, args=(address, stop), daemon=True)
            target.start()
            link.start()
            wait_until(lambda: listener.records >= 30, "RTC steps from the real target")
            squatter.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                while squatter.recv(4096):  # the INFO request, then the close
                    pass
        assert link.idle_dropped == 1
        assert any("replaced by a new connection" in m for m in listener.logs), listener.logs
        # The real target talks: a third connection is turned away, not given its place.
        with socket.create_connection(address, timeout=5) as third:
            third.settimeout(5)
            assert third.recv(16) == b""
        assert link.idle_dropped == 1
        seen = listener.records
        wait_until(lambda: listener.records > seen, "the real target still tracing")
    finally:
        stop.set()
        link.close()


def test_rx_follows_the_decoder_and_a_target_reset_clears_it() -> None:
    """QSLink.rx names objects from the dictionaries the link decoded; after a target
    reset (TARGET_INFO with the reset flag) the next command built finds no current
    objects and no known masks."""
    from mcuprof.link.session import LinkError
    from tests.qs.conftest import REFERENCE

    capture = (REFERENCE / "dpp-posix64.bin").read_bytes()
    link = QSLink("listen://127.0.0.1:0", 115_200, Listener())
    with pytest.raises(RxError, match="not in the target's dictionary"):
        link.rx.curr_obj(1, "Table_inst")  # no dictionaries yet
    link.feed(capture)
    cmd = link.rx.curr_obj(1, "Table_inst")
    with pytest.raises(LinkError, match="not connected"):
        link.send_rx(cmd)  # nothing was sent, so nothing is current
    assert link.rx.current == {}
    link.rx.sent(cmd)
    link.rx.sent(link.rx.glb_filter(bytes(16)))
    assert link.rx.current and link.rx.masks
    link.feed(capture[: capture.index(b"\x7e", 100) + 1])  # the reset sequence again
    link.rx.tick()  # the next command built sees the reset
    assert link.rx.current == {} and link.rx.masks == {}


def test_a_serial_target_that_does_not_read_gets_commands_refused() -> None:
    """Issue 35, finding 3, on a serial port: a pty whose other end never reads. The
    commands that fit are queued for the writer thread; then each is refused at once in
    one line (it waited 2 s for the port's write timeout, then failed, before)."""
    from mcuprof.link.qs_tx import MAX_TX_BACKLOG
    from mcuprof.link.session import LinkError

    master, slave = os.openpty()
    listener = Listener()
    link = QSLink(os.ttyname(slave), 115_200, listener, info_wait_s=0.1)
    try:
        link.connect()
        poke = link.rx.poke(0, 1, bytes(64))  # 72 bytes a frame
        refused = None
        for _ in range(10_000):  # the pty's buffer, then the queue, fill
            try:
                link.send_rx(poke)
            except LinkError as exc:
                refused = str(exc)
                break
        assert refused is not None and refused.startswith("the target is not reading: ")
        assert link._tx.waiting <= MAX_TX_BACKLOG
        link.stop()  # queued if it fits, else said in the log: Stop never waits
        assert link.state == "ready"
    finally:
        link.close()
        os.close(master)
        os.close(slave)
    assert listener.states[-1] == "disconnected"


def test_a_target_seen_leaving_and_coming_back_in_one_look_is_taken(monkeypatch) -> None:
    """A target that resets (exits, connects again) may close and reconnect while the
    reader is busy, so one select() sees both. The end of the old connection must free
    the port before the new one is judged; the new one was turned away ("refused: one is
    connected") and the page saw no more records (a CI try of test_qs_time)."""
    import select as select_module

    real = select_module.select
    busy = threading.Event()

    def late(*args: Any) -> Any:
        if busy.is_set():  # the reader is busy elsewhere: both events are waiting
            time.sleep(1.0)
        return real(*args)

    monkeypatch.setattr(select_module, "select", late)
    listener, clock = Listener(), _Clock()
    link, address = _listening(listener, clock)
    try:
        first = socket.create_connection(address, timeout=5)
        wait_until(lambda: any("connected from" in m for m in listener.logs), "accept")
        first.sendall(b"\x7e")
        wait_until(lambda: listener.raw >= 1, "the target's byte")
        busy.set()
        time.sleep(0.2)  # the reader is now inside a late select
        first.close()
        second = socket.create_connection(address, timeout=5)
        try:
            wait_until(
                lambda: sum("connected from" in m for m in listener.logs) >= 2,
                "the returning target taken",
            )
            assert not any("refused: one is connected" in m for m in listener.logs)
        finally:
            second.close()
    finally:
        busy.clear()
        link.close()
