"""DeviceSession against the simulated device over a real pty and real TCP."""

from __future__ import annotations

import numpy as np
import pytest
import serial

from mcuprof.errors import UserError
from mcuprof.link import DeviceSession, LinkError, SimOptions, open_transport
from mcuprof.link.servers import TcpSimServer
from mcuprof.link.simulator import DISCONNECT_MESSAGE
from mcuprof.protocol import Command, ProfileData, decode_stream

from .conftest import FakeClock, Recorder, SteppingClock, run_in_thread, wait_until

pytestmark = pytest.mark.timeout(120)


def _session(
    port: str, listener: Recorder, clock: FakeClock | None = None, **kw: object
) -> DeviceSession:
    return DeviceSession(port, 921_600, listener, clock=clock or FakeClock(), **kw)  # type: ignore[arg-type]


def test_connect_start_records_stop_status(sim_server) -> None:
    server, port = sim_server(SimOptions(rate=5000, seed=3), clock=SteppingClock(), keep_log=True)
    rec = Recorder()
    session = _session(port, rec)
    meta = session.connect()
    try:
        assert meta == server.device.metadata
        assert session.metadata == meta and session.state == "ready"
        session.start()
        assert session.state == "profiling"
        rec.wait_for(lambda: rec.n_records >= 3000, "records to flow")
        final = session.stop()
        assert session.state == "ready"
        assert final is not None and not final.is_profiling
        # Clean link, rate under what 921600 baud carries: nothing lost anywhere.
        assert final.buffer_overflows == 0
        assert final.records_captured == session.records_received == rec.n_records
        assert session.estimated_loss == 0
        assert final.buffer_usage_percent == 0  # drained
        status = session.get_status()
        assert status == final and session.last_status == status
        # The records are the device's records, in order, byte for byte.
        sent = np.concatenate([p.records for p in server.device.sent])  # type: ignore[union-attr]
        assert np.array_equal(rec.records(), sent)
        assert session.stats.records == rec.n_records and session.stats.crc_errors == 0
        # on_raw saw exactly the bytes the decoder saw.
        events, stats = decode_stream(bytes(rec.raw))
        assert stats.records == rec.n_records
        assert any(isinstance(e, ProfileData) for e in events)
    finally:
        session.close()
    assert session.state == "disconnected"
    assert [s for s, _ in rec.states][:3] == ["connecting", "ready", "profiling"]


def test_status_polled_on_the_session_clock(sim_server) -> None:
    server, port = sim_server(SimOptions(rate=1000), clock=SteppingClock())
    rec = Recorder()
    clock = FakeClock()
    session = _session(port, rec, clock, status_interval_s=1.0)
    session.connect()
    try:
        session.start()
        rec.wait_for(lambda: rec.n_records >= 100, "records")
        assert Command.GET_STATUS not in server.device.commands  # the clock has not moved
        clock.advance(1.0)
        rec.wait_for(lambda: len(rec.statuses) >= 1, "a status poll")
        assert rec.statuses[0].is_profiling
        assert Command.GET_STATUS in server.device.commands
    finally:
        session.close()


def test_overflow_warns_with_advice_and_estimates_loss(sim_server) -> None:
    # 50,000 records/s cannot fit through 115200 baud: the device ring overflows.
    server, port = sim_server(
        SimOptions(rate=50_000, buffer=256), clock=SteppingClock(), baud=115_200
    )
    rec = Recorder()
    clock = FakeClock()
    session = DeviceSession(port, 115_200, rec, clock=clock, status_interval_s=1.0)
    session.connect()
    try:
        session.start()
        wait_until(lambda: server.device.buffer_overflows > 0, "the device to overflow")
        clock.advance(1.0)
        rec.wait_for(
            lambda: any(lvl == "warning" and "overflow" in m for lvl, m in rec.logs), "a warning"
        )
        message = next(m for lvl, m in rec.logs if "overflow" in m)
        assert "raise the baud rate" in message and "instrument fewer functions" in message
        assert "filter" in message
        status = session.last_status
        assert status is not None and status.buffer_overflows > 0
        final = session.stop()
        # The link itself is clean, so what is missing is exactly what the ring dropped.
        assert final is not None and final.buffer_overflows >= status.buffer_overflows
        assert session.estimated_loss == final.buffer_overflows > 0
        assert (
            session.records_received_since_start == final.records_captured - final.buffer_overflows
        )
    finally:
        session.close()


def test_nack_is_a_clear_error_naming_the_command(sim_server) -> None:
    server, port = sim_server(SimOptions(nack=frozenset({int(Command.START_PROFILING)})))
    rec = Recorder()
    session = _session(port, rec, retries=2)
    session.connect()
    try:
        with pytest.raises(LinkError) as info:
            session.start()
        assert isinstance(info.value, UserError)
        assert info.value.command == "START_PROFILING"
        assert "START_PROFILING" in str(info.value) and "NACK" in str(info.value)
        assert server.device.commands.count(Command.START_PROFILING) == 3  # bounded retry
        assert session.state == "ready"
        assert session.get_status().is_profiling is False  # the session is still usable
    finally:
        session.close()


def test_timeout_retries_then_fails_on_the_fake_clock(sim_server) -> None:
    server, port = sim_server(SimOptions(mute=frozenset({int(Command.GET_STATUS)})))
    rec = Recorder()
    clock = FakeClock()
    session = _session(port, rec, clock, command_timeout_s=1.0, retries=2)
    session.connect()
    try:
        thread, box = run_in_thread(session.get_status)
        sent = lambda: server.device.commands.count(Command.GET_STATUS)  # noqa: E731
        for attempt in range(1, 4):
            wait_until(lambda a=attempt: sent() >= a, f"attempt {attempt}")
            assert thread.is_alive()  # frozen clock: no timeout yet
            clock.advance(1.01)
        thread.join(timeout=30)
        assert not thread.is_alive()
        error = box.get("error")
        assert isinstance(error, LinkError)
        assert error.command == "GET_STATUS" and "no answer" in str(error)
        assert sent() == 3
        assert any("retrying" in m for _, m in rec.logs)
        assert session.state == "ready"
    finally:
        session.close()


def test_connect_to_a_silent_device_fails_with_one_clear_error(sim_server) -> None:
    _, port = sim_server(SimOptions(boot=False, mute=frozenset({int(Command.GET_METADATA)})))
    clock = FakeClock()
    session = _session(port, Recorder(), clock, retries=1)
    thread, box = run_in_thread(session.connect)
    while thread.is_alive():
        clock.advance(0.5)
        thread.join(0.01)
    error = box["error"]
    assert isinstance(error, UserError)
    assert "METADATA" in str(error) and "baud" in str(error)
    assert session.state == "disconnected"


def test_unsolicited_boot_metadata_is_accepted() -> None:
    # The device ignores GET_METADATA, but it announced itself when it powered up
    # (the TCP server powers the board on the first connection, as QEMU's ",wait" does).
    server = TcpSimServer(SimOptions(mute=frozenset({int(Command.GET_METADATA)})), baud=921_600)
    with server:
        rec = Recorder()
        session = _session(server.url, rec)
        meta = session.connect()
        session.close()
    assert meta == server.device.metadata
    assert rec.metadata == [meta]
    # Whether GET_METADATA went out at all depends on whether the announcement came
    # first (connect() then does not ask); asked or not, it was never answered.
    assert server.device.commands.count(Command.GET_METADATA) <= 1


def test_unplug_mid_capture_keeps_records_and_reconnects(sim_server) -> None:
    # The simulated board vanishes 1.5 s (device time) after power-up.
    options = SimOptions(rate=5000, unplug=1.5)
    server, port = sim_server(options, clock=SteppingClock())
    rec = Recorder()
    session = _session(port, rec)
    session.connect()
    session.start()
    rec.wait_for(lambda: session.state == "disconnected", "the unplug")
    assert rec.n_records > 0
    assert session.records_received == rec.n_records  # nothing received was dropped
    reason = session.disconnect_reason
    assert reason and rec.states[-1] == ("disconnected", reason)
    assert any(lvl == "error" and "records received are kept" in m for lvl, m in rec.logs)
    with pytest.raises(LinkError, match="GET_STATUS"):
        session.get_status()
    kept = rec.n_records

    # Plug a board back in. TCP: same address, same session object. pty: a new pty.
    if port.startswith("socket://"):
        host_port = int(port.rsplit(":", 1)[1])
        again = TcpSimServer(
            SimOptions(rate=5000), port=host_port, baud=921_600, clock=SteppingClock()
        )
        again.start()
        target = session
    else:
        again = type(server)(SimOptions(rate=5000), baud=921_600, clock=SteppingClock())
        again.start()
        target = _session(again.path, rec)
    try:
        target.connect()
        target.start()
        rec.wait_for(lambda: rec.n_records >= kept + 500, "records after reconnecting")
        target.stop()
        if target is session:
            assert session.records_received == rec.n_records  # counters carry on
            assert session.stats.records == rec.n_records
    finally:
        target.close()
        again.close()


class _Unplugging:
    """A real pty transport that, once armed, fails as a yanked USB adapter does."""

    def __init__(self, inner: serial.SerialBase) -> None:
        self.inner = inner
        self.armed = False

    def fileno(self) -> int:
        return self.inner.fileno()

    def read(self, size: int) -> bytes:
        if self.armed:
            raise serial.SerialException(DISCONNECT_MESSAGE)
        return self.inner.read(size)

    def write(self, data: bytes) -> int:
        return self.inner.write(data)

    def close(self) -> None:
        self.inner.close()


def test_read_error_from_a_vanished_usb_device() -> None:
    from mcuprof.link.servers import PtySimServer

    transports: list[_Unplugging] = []

    def opener(port: str, baud: int) -> _Unplugging:
        t = _Unplugging(open_transport(port, baud))
        transports.append(t)
        return t

    with PtySimServer(SimOptions(rate=5000), baud=921_600, clock=SteppingClock()) as server:
        rec = Recorder()
        session = DeviceSession(server.path, 921_600, rec, clock=FakeClock(), opener=opener)
        session.connect()
        session.start()
        rec.wait_for(lambda: rec.n_records >= 500, "records")
        transports[0].armed = True
        rec.wait_for(lambda: session.state == "disconnected", "the disconnect")
        assert session.disconnect_reason == DISCONNECT_MESSAGE
        assert rec.states[-1] == ("disconnected", DISCONNECT_MESSAGE)
        assert session.records_received == rec.n_records >= 500
        # Reconnect on the same object, same port: the pty is still there.
        session.connect()
        assert session.state == "ready" and len(transports) == 2
        session.close()


def test_bit_errors_lose_only_the_damaged_packets(sim_server) -> None:
    server, port = sim_server(
        SimOptions(rate=5000, ber=1e-4, seed=11), clock=SteppingClock(), keep_log=True
    )
    rec = Recorder()
    # Real clock here: a corrupted ACK must time out and be retried.
    session = DeviceSession(port, 921_600, rec, command_timeout_s=1.0, retries=5)
    session.connect()
    try:
        session.start()
        rec.wait_for(lambda: rec.n_records >= 10_000, "records")
        session.stop()
    finally:
        session.close()
    device = server.device
    sent = device.sent
    assert sent is not None
    assert device.records_damaged > 0  # the line really was noisy
    intact = np.concatenate([p.records for p in sent if not p.damaged])
    assert np.array_equal(rec.records(), intact)
    assert rec.n_records == device.records_sent - device.records_damaged
    assert session.stats.crc_errors + session.stats.malformed > 0


@pytest.fixture
def sim_clock(monkeypatch: pytest.MonkeyPatch) -> SteppingClock:
    from mcuprof.link.urlhandler import protocol_sim

    clock = SteppingClock()
    monkeypatch.setattr(protocol_sim, "CLOCK", clock)
    return clock


def test_sim_url_device_in_process(sim_clock: SteppingClock) -> None:
    rec = Recorder()
    session = DeviceSession("sim://?rate=3000&seed=9", 921_600, rec, clock=FakeClock())
    meta = session.connect()
    try:
        assert meta.fw_version == "sim-1.0" and rec.metadata[0] == meta  # boot METADATA
        session.start()
        rec.wait_for(lambda: rec.n_records >= 2000, "records")
        final = session.stop()
        assert final is not None and final.records_captured == session.records_received
    finally:
        session.close()


def test_sim_url_unplug_raises_what_a_vanished_tty_raises(sim_clock: SteppingClock) -> None:
    rec = Recorder()
    session = DeviceSession("sim://?rate=3000&unplug=1", 921_600, rec, clock=FakeClock())
    session.connect()
    session.start()
    rec.wait_for(lambda: session.state == "disconnected", "the unplug")
    assert session.disconnect_reason == DISCONNECT_MESSAGE
    assert session.records_received == rec.n_records > 0
    session.connect()  # a fresh board on the same URL
    assert session.state == "ready"
    session.close()


class _Clumsy(Recorder):
    def on_records(self, records: np.ndarray) -> None:
        super().on_records(records)
        raise RuntimeError("listener bug")


def test_a_failing_listener_does_not_stop_the_capture(sim_clock: SteppingClock) -> None:
    rec = _Clumsy()
    session = DeviceSession("sim://?rate=3000", 921_600, rec, clock=FakeClock())
    session.connect()
    try:
        session.start()
        rec.wait_for(lambda: rec.n_records >= 1000, "records despite the failing listener")
        assert session.state == "profiling"
        assert any("listener on_records failed" in m for _, m in rec.logs)
    finally:
        session.close()
