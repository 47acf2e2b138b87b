"""QS replay streams (issue 26, F6): the recording is read and decoded a piece at a
time as it plays, through the paced core MiniProfiler's replay uses; the bytes on the
wire are the recording's, and each good frame goes when its own timestamp is due,
bad frames or not. F6's input at a smaller scale: one frame, then 128 KiB of flags."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from tests.qs.test_columns import SETTINGS, build, corrupt, stream
from tests.sources.conftest import sim_stream
from tests.store.test_qs_replay_due import reference_due

from mcuprof.link import qs_replay, replay
from mcuprof.link.qs_replay import RX_GLB_FILTER, QSReplayDevice, _frame_pieces
from mcuprof.link.replay import MAX_BURST
from mcuprof.protocol.qs import Framer, encode_frame
from mcuprof.sources import load

START = encode_frame(0, RX_GLB_FILTER, b"\x10" + b"\xff" * 16)  # QSPY's global filter: all on


def dispatch(seq: int, ts: int) -> bytes:
    """QS_QEP_DISPATCH with QSPY's default sizes (4-byte times, 2-byte signals)."""
    return encode_frame(seq, 8, struct.pack("<IHII", ts, 5, 0x100, 0x1000))


def play(dev: QSReplayDevice, clock, step: float = 0.05, steps: int = 10_000) -> bytes:
    out = bytearray()
    for _ in range(steps):
        out += dev.poll()
        if dev.finished:
            break
        clock.now += step
    return bytes(out)


def test_one_frame_then_a_flood_of_flags_is_read_a_piece_at_a_time(
    tmp_path: Path, fake_clock, monkeypatch
) -> None:
    monkeypatch.setattr(qs_replay, "DECODE_BYTES", 1024)
    monkeypatch.setattr(replay, "MAX_BURST", 2048)  # a first poll of a few pieces
    data = dispatch(0, 1_000) + b"\x7e" * (128 << 10)
    path = tmp_path / "flood.raw"
    path.write_bytes(data)
    read: list[int] = []

    def spy(source, size=None):
        for chunk in chunks(source, size):
            read.append(len(chunk))
            yield chunk

    chunks = qs_replay._chunks
    monkeypatch.setattr(qs_replay, "_chunks", spy)
    tracemalloc.start()
    try:
        dev = QSReplayDevice(path, 1.0, clock=fake_clock)
        assert read == []  # nothing read to start
        dev.receive(START)
        first = dev.poll()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first.startswith(dispatch(0, 1_000))
    assert sum(read) <= 4 * 1024  # the first burst read a few pieces, not the recording
    assert peak < 1 << 20  # the recording's 131,072 bad frames would take 20 MB
    rest = play(dev, fake_clock)
    assert first + rest == data and dev.finished
    assert set(read[:-1]) == {1024} and sum(read) == len(data)


def test_each_good_frame_goes_at_its_own_time_bad_frames_or_not(fake_clock) -> None:
    # 1 ms ticks: dispatches at 0, 1 s, 2 s; a bad frame (checksum) and junk between.
    bad = b"\x01\x08\x02\x7e"
    data = dispatch(0, 0) + bad + dispatch(1, 1_000) + b"junk\x7e" + dispatch(2, 2_000)
    dev = QSReplayDevice(data, 1.0, 1_000, clock=fake_clock)
    dev.receive(START)
    assert dev.poll() == dispatch(0, 0)
    fake_clock.now += 0.99
    assert dev.poll() == b"" and 0 < dev.seconds_to_next() <= 0.011
    fake_clock.now += 0.02
    assert dev.poll() == bad + dispatch(1, 1_000)
    fake_clock.now += 1.0
    assert dev.poll() == b"junk\x7e" + dispatch(2, 2_000) and dev.finished
    assert dev.seconds_to_next() is None


def test_max_speed_plays_the_bytes_a_burst_at_a_time(tmp_path: Path, fake_clock) -> None:
    data = b"".join(dispatch(i, 10 * i) for i in range(100_000))
    path = tmp_path / "rec.raw"
    path.write_bytes(data)
    dev = QSReplayDevice(path, None, clock=fake_clock)
    dev.receive(START)
    polls = []
    while not dev.finished:
        polls.append(dev.poll())
    assert b"".join(polls) == data
    assert max(map(len, polls)) <= MAX_BURST


@SETTINGS
@given(stream, st.integers(1, 300))
def test_pieces_are_the_recording_cut_at_good_frames(case, read) -> None:
    ops, flips, cut, _ = case
    data = corrupt(build(ops), flips, cut)
    pieces = [(due, bytes(b)) for due, b, _ in _frame_pieces(data, 7, read)]
    assert b"".join(b for _, b in pieces) == data
    dues = [due for due, _ in pieces]
    assert dues == sorted(dues)
    # Each good frame goes in the piece that holds its flag, due at its own time.
    ends = Framer().feed_batch(data).wire_ends
    want = reference_due(data, len(ends), 7)
    at = np.cumsum([len(b) for _, b in pieces])
    for end, due in zip(ends.tolist(), want.tolist(), strict=True):
        piece = int(np.searchsorted(at, end))
        assert pieces[piece][0] == due


def test_the_record_count_is_read_a_piece_at_a_time(tmp_path: Path, monkeypatch) -> None:
    data = sim_stream(1.0) + b"\x7e" * 20_000
    path = tmp_path / "rec.raw"
    path.write_bytes(data)
    read: list[int] = []
    chunks = qs_replay._chunks

    def spy(source, size=None):
        for chunk in chunks(source, size):
            read.append(len(chunk))
            yield chunk

    monkeypatch.setattr(qs_replay, "_chunks", spy)
    monkeypatch.setattr(qs_replay, "DECODE_BYTES", 4096)
    dev = QSReplayDevice(path, 1.0, clock=lambda: 0.0)
    assert dev.total_records is None  # counted aside, on demand
    assert dev.count_records() == load("qs", data).stats["records"] > 0
    assert max(read) == 4096 and sum(read) == len(data)
