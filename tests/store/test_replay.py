"""Replay: the stored stream played back by a device-like source, paced by its timestamps."""

from __future__ import annotations

import numpy as np
import pytest

from mcuprof.link import DeviceSession, NullListener
from mcuprof.link.replay import MAX_BURST, ReplayDevice, ReplayPort, parse_speed, replay_factory
from mcuprof.protocol import (
    RECORD_DTYPE,
    Ack,
    Command,
    Metadata,
    Nack,
    ProfileData,
    ResponseDecoder,
    Status,
    encode_command,
    encode_metadata,
    encode_profile_data,
)

META = Metadata(168_000_000, 1_000_000, 0xABCD, "replayed")


def packet(first_entry: int, n: int = 4, step: int = 100) -> np.ndarray:
    rec = np.zeros(n, RECORD_DTYPE)
    rec["func_addr"] = 0x0800_0101
    rec["entry_time"] = first_entry + np.arange(n) * step
    rec["duration"] = 50
    return rec


def stream() -> bytes:
    # Packets complete at capture times 0 s, 1 s and 3 s (last exits at 350, +1e6, +3e6 µs).
    return (
        encode_metadata(META)
        + encode_profile_data(packet(0))
        + b"\x13\x37 line noise"
        + encode_profile_data(packet(1_000_000))
        + encode_profile_data(packet(3_000_000))
    )


def decode(data: bytes) -> list[object]:
    return ResponseDecoder().feed(data)


def records_in(events: list[object]) -> int:
    return sum(len(e) for e in events if isinstance(e, ProfileData))


def test_speed_parsing():
    assert parse_speed("1x") == 1.0 and parse_speed("10X") == 10.0
    assert parse_speed("max") is None and parse_speed("2.5") == 2.5
    for bad in ("fast", "0", "-1x", "1e9"):
        with pytest.raises(ValueError):
            parse_speed(bad)


def test_answers_like_a_device(fake_clock):
    dev = ReplayDevice(stream(), 1.0, clock=fake_clock)
    dev.receive(encode_command(Command.GET_METADATA))
    assert decode(dev.poll()) == [META]
    dev.receive(encode_command(Command.GET_STATUS))
    assert decode(dev.poll()) == [Status(False, 0, 0, 0)]
    dev.receive(b"\x55\xee" + bytes(10))  # a bad command is NACKed
    assert decode(dev.poll()) == [Nack()]
    # Not profiling: nothing flows, however much time passes.
    fake_clock.now += 100
    assert dev.poll() == b""


def test_paced_by_the_capture_timestamps(fake_clock):
    dev = ReplayDevice(stream(), 1.0, clock=fake_clock)
    dev.receive(encode_command(Command.START_PROFILING))
    events = decode(dev.poll())
    assert events[0] == Ack() and records_in(events) == 4  # first packet is due at once
    assert dev.seconds_to_next() == pytest.approx(1.0, abs=1e-6)
    fake_clock.now += 0.9
    assert dev.poll() == b""
    fake_clock.now += 0.1
    assert records_in(decode(dev.poll())) == 4
    # STOP pauses the capture clock; time passing meanwhile does not count.
    dev.receive(encode_command(Command.STOP_PROFILING))
    assert decode(dev.poll()) == [Ack()]
    fake_clock.now += 50
    assert dev.poll() == b""
    dev.receive(encode_command(Command.START_PROFILING))
    dev.poll()
    fake_clock.now += 1.999
    assert dev.poll() == b""
    fake_clock.now += 0.001
    assert records_in(decode(dev.poll())) == 4
    assert dev.finished and dev.records_sent == 12
    dev.receive(encode_command(Command.GET_STATUS))
    assert decode(dev.poll()) == [Status(False, 0, 12, 0)]  # the recording has ended


def test_ten_times_and_max_speed(fake_clock):
    dev = ReplayDevice(stream(), 10.0, clock=fake_clock)
    dev.receive(encode_command(Command.START_PROFILING))
    dev.poll()
    fake_clock.now += 0.0625  # 0.625 s of capture: the 1 s packet is not due yet
    assert dev.poll() == b""
    fake_clock.now += 0.0625
    assert records_in(decode(dev.poll())) == 4
    fake_clock.now += 0.25
    assert records_in(decode(dev.poll())) == 4
    fast = ReplayDevice(stream(), None, clock=fake_clock)
    fast.receive(encode_command(Command.START_PROFILING))
    assert records_in(decode(fast.poll())) == 12  # no waiting at all
    assert fast.seconds_to_next() is None


def test_max_speed_is_bounded_per_poll(fake_clock):
    big = b"".join(encode_profile_data(packet(i * 10_000, n=1000, step=10)) for i in range(50))
    dev = ReplayDevice(big, None, clock=fake_clock)
    dev.receive(encode_command(Command.START_PROFILING))
    sizes = []
    total = 0
    while not dev.finished or sizes == []:
        chunk = dev.poll()
        sizes.append(len(chunk))
        total += records_in(decode(chunk))
    assert total == 50_000
    assert max(sizes) < MAX_BURST + 14_100  # at most one packet past the burst limit


def test_wrapped_timestamps_keep_their_order(fake_clock):
    near = 2**32 - 500_000  # the tick counter wraps 0.5 s into the capture
    data = encode_profile_data(packet(near)) + encode_profile_data(packet(near + 1_000_000))
    dev = ReplayDevice(data, 1.0, clock=fake_clock)
    dev.receive(encode_command(Command.START_PROFILING))
    assert records_in(decode(dev.poll())) == 4
    assert dev.seconds_to_next() == pytest.approx(1.0, abs=1e-6)


def test_through_a_real_device_session():
    """The replay port behind DeviceSession: the same reader thread and decoder a device
    goes through deliver every stored record."""
    got: list[np.ndarray] = []

    class Listener(NullListener):
        def on_records(self, records: np.ndarray) -> None:
            got.append(records)

    session = replay_factory(stream(), None)("sim://", 115200, Listener())
    try:
        assert session.connect() == META
        session.start()
        status = session.stop()
        assert status is not None and status.records_captured == 12
    finally:
        session.close()
    recs = np.concatenate(got)
    assert len(recs) == 12
    assert list(recs["entry_time"][:4]) == [0, 100, 200, 300]
    assert isinstance(session, DeviceSession)


def test_port_read_times_out_without_data():
    port = ReplayPort(ReplayDevice(stream(), 1.0))
    port.timeout = 0
    assert port.read(1) == b""
    port.close()
    with pytest.raises(OSError):
        port.read(1)
