"""Replay from the recording's file, read in chunks: the same device as from bytes,
and a max-speed replay waits for a host that is behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tests.store.conftest import META, capture

from mcuprof.link import replay as replay_mod
from mcuprof.link.replay import ReplayDevice
from mcuprof.protocol import Command, ProfileData, ResponseDecoder, encode_command


def played(dev: ReplayDevice, clock, steps: int = 400) -> list[np.ndarray]:
    dev.receive(encode_command(Command.START_PROFILING))
    decoder = ResponseDecoder()
    out: list[np.ndarray] = []
    for _ in range(steps):
        clock.now += 0.05
        for event in decoder.feed(dev.poll()):
            if isinstance(event, ProfileData):
                out.append(event.records)
        if dev.finished:
            break
    return out


def test_a_file_plays_as_its_bytes(tmp_path: Path, fake_clock, monkeypatch) -> None:
    monkeypatch.setattr(replay_mod, "_READ", 1000)  # many chunks, packets cut across them
    data = capture(300, per_packet=37)
    path = tmp_path / "rec.raw"
    path.write_bytes(data)
    for speed in (1.0, 50.0, None):
        from_bytes = ReplayDevice(data, speed, clock=fake_clock)
        from_file = ReplayDevice(path, speed, clock=fake_clock)
        assert from_file.metadata == from_bytes.metadata == META
        if speed is not None:
            assert from_file.total_records == from_bytes.total_records == 300 * 37
            assert np.array_equal(from_file._due, from_bytes._due)
            assert from_file.capture_seconds == from_bytes.capture_seconds > 0
        else:  # max speed from a file reads nothing ahead; the count comes on demand
            assert from_file.total_records is None
            assert from_file.count_records() == 300 * 37 == from_file.total_records
        a = played(from_bytes, fake_clock)
        b = played(from_file, fake_clock)
        assert from_bytes.finished and from_file.finished
        assert sum(len(r) for r in b) == 300 * 37
        assert np.array_equal(np.concatenate(a), np.concatenate(b))


def test_a_max_speed_replay_waits_while_the_host_is_behind(tmp_path, fake_clock) -> None:
    path = tmp_path / "rec.raw"
    path.write_bytes(capture(50))
    dev = ReplayDevice(path, None, clock=fake_clock)
    behind = [True]
    dev.throttle = lambda: behind[0]
    dev.receive(encode_command(Command.START_PROFILING))
    dev.poll()  # the ACK
    assert dev.poll() == b"" and dev.records_sent == 0
    assert dev.seconds_to_next() > 0  # the port sleeps rather than spin
    behind[0] = False
    assert dev.seconds_to_next() >= 0
    out = played(dev, fake_clock)
    assert sum(len(r) for r in out) == 50 * 50 and dev.finished
