"""The C target library, compiled for the host against a fake port and checked with the
Python codec: what the device sends must decode, and it must answer commands correctly."""

from __future__ import annotations

import binascii
import zlib
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcuprof_fwhost import FLUSH_TICKS, MAX_DEPTH, MAX_RPP, RING_SIZE, Device, fresh_device

from mcuprof.protocol import (
    RECORD_DTYPE,
    Ack,
    BadCommand,
    Command,
    CommandDecoder,
    CommandPacket,
    Metadata,
    Nack,
    ProfileData,
    ResponseEvent,
    Status,
    encode_command,
)
from mcuprof.protocol.constants import RESPONSE_END, RESPONSE_HEADER

FN_A, FN_B, FN_C, FN_ISR = 0x0800_0101, 0x0800_0201, 0x0800_0301, 0x0800_0F01


def records_of(events: list[ResponseEvent]) -> np.ndarray:
    chunks = [e.records for e in events if isinstance(e, ProfileData)]
    return np.concatenate(chunks) if chunks else np.empty(0, dtype=RECORD_DTYPE)


def only(events: list[ResponseEvent], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def stop_and_collect(device: Device) -> np.ndarray:
    """STOP, then everything the device still had to send."""
    events = device.command(Command.STOP_PROFILING)
    assert events[0] == Ack()
    return records_of(events + device.drain())


def started(device: Device) -> Device:
    device.drain()  # the boot METADATA
    assert device.command(Command.START_PROFILING) == [Ack()]
    return device


# ------------------------------------------------------------------ checksums


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300))
def test_crcs_match_python(device: Device, data: bytes) -> None:
    assert device.lib.mcuprof_crc16(0xFFFF, data, len(data)) == binascii.crc_hqx(data, 0xFFFF)
    assert device.lib.mcuprof_crc32(0, data, len(data)) == zlib.crc32(data)
    half = len(data) // 2
    chained = device.lib.mcuprof_crc32(
        device.lib.mcuprof_crc32(0, data[:half], half), data[half:], len(data) - half
    )
    assert chained == zlib.crc32(data)


def test_crc16_check_value(device: Device) -> None:
    assert device.lib.mcuprof_crc16(0xFFFF, b"123456789", 9) == 0x29B1


# ------------------------------------------------------------------ metadata


def test_boot_metadata_carries_the_text_crc(library_path: Path, tmp_path: Path) -> None:
    text = bytes(range(256)) * 7
    device = fresh_device(library_path, tmp_path, text=text)
    events = device.drain()
    assert events == [Metadata(48_000_000, 1_000_000, zlib.crc32(text), "host-test-1.2.3")]
    assert device.lib.mcuprof_build_id() == zlib.crc32(text)
    # ...and on request, again identical.
    assert device.command(Command.GET_METADATA) == events


# ------------------------------------------------------------------ records


def test_record_made_at_exit_with_entry_time_duration_and_depth(device: Device) -> None:
    started(device)
    device.set_time(1000)
    device.enter(FN_A)  # depth 0
    device.advance(10)
    device.enter(FN_B)  # depth 1
    device.advance(7)
    device.call(FN_C, ticks=3)  # depth 2, entered at 1017
    device.advance(2)
    device.exit(FN_B)
    device.advance(1)
    device.exit(FN_A)
    recs = stop_and_collect(device)
    assert recs.tolist() == [
        (FN_C, 1017, 3, 2),
        (FN_B, 1010, 12, 1),
        (FN_A, 1000, 23, 0),
    ]


def test_duration_survives_timer_wrap(device: Device) -> None:
    started(device)
    device.set_time(0xFFFF_FFF0)
    device.call(FN_A, ticks=0x30)
    assert stop_and_collect(device).tolist() == [(FN_A, 0xFFFF_FFF0, 0x30, 0)]


def test_no_records_while_stopped_but_depth_is_tracked(device: Device) -> None:
    device.drain()
    device.enter(FN_A)  # entered before START: depth still counted
    device.call(FN_B)
    assert records_of(device.drain()).size == 0
    device.command(Command.START_PROFILING)
    device.call(FN_C)
    device.exit(FN_A)
    recs = stop_and_collect(device)
    assert [(r[0], r[3]) for r in recs.tolist()] == [(FN_C, 1), (FN_A, 0)]
    device.call(FN_B)
    assert records_of(device.drain()).size == 0


def test_calls_deeper_than_the_stack_are_counted_not_recorded(device: Device) -> None:
    started(device)
    fns = [0x1000 + 0x10 * i + 1 for i in range(MAX_DEPTH + 3)]
    for fn in fns:
        device.enter(fn)
        device.advance(1)
    for fn in reversed(fns):
        device.exit(fn)
    recs = stop_and_collect(device)
    assert recs["func_addr"].tolist() == list(reversed(fns[:MAX_DEPTH]))
    assert recs["depth"].tolist() == list(reversed(range(MAX_DEPTH)))
    assert device.lib.mcuprof_depth_drops() == 3


# ------------------------------------------------------------------ packets


def test_full_packets_go_at_once_and_a_partial_one_after_the_flush_interval(
    device: Device,
) -> None:
    started(device)
    for i in range(2 * MAX_RPP + 1):
        device.call(0x2000 + 2 * i + 1)
    shapes = [len(e.records) for e in device.poll() if isinstance(e, ProfileData)]
    assert shapes == [MAX_RPP, MAX_RPP]
    device.advance(FLUSH_TICKS - 100)
    assert device.poll() == []
    device.advance(100)
    shapes = [len(e.records) for e in device.poll() if isinstance(e, ProfileData)]
    assert shapes == [1]


def test_wire_bytes_are_well_framed(device: Device) -> None:
    started(device)
    for i in range(3 * MAX_RPP + 2):
        device.call(0x3000 + 2 * i + 1)
    stop_and_collect(device)
    raw = bytes(device.raw)
    stats = device.decoder.stats
    assert stats.crc_errors == stats.malformed == stats.skipped_bytes == 0
    assert stats.bytes == len(raw)
    # Walk the packets by hand: AA 55, type, LE length, payload, LE CRC-16, 0A.
    pos, lengths = 0, []
    while pos < len(raw):
        assert raw[pos : pos + 2] == RESPONSE_HEADER
        length = int.from_bytes(raw[pos + 3 : pos + 5], "little")
        end = pos + 8 + length
        crc = int.from_bytes(raw[end - 3 : end - 1], "little")
        assert crc == binascii.crc_hqx(raw[pos : end - 3], 0xFFFF)
        assert raw[end - 1] == RESPONSE_END
        lengths.append((raw[pos + 2], length))
        pos = end
    data = [n for t, n in lengths if t == 0x05]
    assert data == [3 + 14 * MAX_RPP] * 3 + [3 + 14 * 2]


def test_slow_transmitter_never_tears_packets(library_path: Path, tmp_path: Path) -> None:
    device = fresh_device(library_path, tmp_path)
    device.lib.fake_set_tx_room(3)
    events = device.poll(20) + device.command(Command.START_PROFILING)
    expected = []
    for i in range(40):
        device.call(0x4000 + 2 * i + 1, ticks=i)
        expected.append(0x4000 + 2 * i + 1)
        device.lib.fake_set_tx_room(3 + i % 5)
        events += device.poll()
    device.send(encode_command(Command.STOP_PROFILING))
    for _ in range(2000):
        device.lib.fake_set_tx_room(7)
        events += device.poll()
    device.lib.fake_set_tx_room(-1)
    events += device.command(Command.GET_STATUS) + device.drain()
    stats = device.decoder.stats
    assert stats.crc_errors == stats.malformed == stats.skipped_bytes == 0
    [st_] = only(events, Status)
    received = records_of(events)["func_addr"].tolist()
    # Overwritten records may be anywhere in the stream; the rest arrive once, in order.
    assert received == sorted(set(received))
    assert set(received) <= set(expected)
    assert received[-1] == expected[-1]  # last is best: the newest record always survives
    assert st_.buffer_overflows > 0
    assert st_.records_captured == len(expected)
    assert st_.records_captured - st_.buffer_overflows == len(received)


# ------------------------------------------------------------------ ring buffer


def test_overflow_keeps_the_newest_records_and_counts_the_lost(device: Device) -> None:
    started(device)
    device.lib.fake_set_tx_room(0)  # the link is stuck: the ring must overwrite
    made = [0x5000 + 2 * i + 1 for i in range(RING_SIZE + 24)]
    for fn in made:
        device.call(fn)
    device.lib.fake_set_tx_room(-1)
    # STATUS is answered first; the held records follow it.
    events = device.command(Command.GET_STATUS)
    assert events[0] == Status(True, 24, RING_SIZE + 24, 100)
    received = np.concatenate([records_of(events), stop_and_collect(device)])
    assert received["func_addr"].tolist() == made[24:]
    [status] = device.command(Command.GET_STATUS)
    assert status == Status(False, 24, RING_SIZE + 24, 0)


def test_ring_wraps_many_times_without_losing_order(device: Device) -> None:
    started(device)
    made: list[int] = []
    received: list[int] = []
    for round_ in range(9):
        for i in range(RING_SIZE - 3):
            made.append(0x6000 + 2 * (round_ * RING_SIZE + i) + 1)
            device.call(made[-1])
        device.advance(FLUSH_TICKS)
        received += records_of(device.poll())["func_addr"].tolist()
    device.advance(FLUSH_TICKS)  # the odd records of the last round
    received += records_of(device.poll())["func_addr"].tolist()
    assert received == made
    [status] = device.command(Command.GET_STATUS)
    assert status == Status(True, 0, len(made), 0)


def test_usage_percent_and_reset_buffers(device: Device) -> None:
    started(device)
    device.lib.fake_set_tx_room(0)
    for i in range(RING_SIZE // 4):
        device.call(0x7001 + 2 * i)
    device.lib.fake_set_tx_room(-1)
    device.send(encode_command(Command.GET_STATUS) + encode_command(Command.RESET_BUFFERS))
    device.send(encode_command(Command.GET_STATUS))
    events = device.poll()
    assert events[0] == Status(True, 0, RING_SIZE // 4, 25)
    assert events[1] == Ack()
    assert events[2] == Status(True, 0, 0, 0)
    device.advance(FLUSH_TICKS)
    assert records_of(device.drain()).size == 0


# ------------------------------------------------------------------ commands


def test_every_command_is_answered(device: Device) -> None:
    device.drain()
    assert device.command(Command.GET_STATUS) == [Status(False, 0, 0, 0)]
    assert device.command(Command.START_PROFILING) == [Ack()]
    assert device.command(Command.GET_STATUS) == [Status(True, 0, 0, 0)]
    assert device.command(Command.SET_CONFIG, b"\x02\x00") == [Ack()]
    assert device.command(Command.RESET_BUFFERS) == [Ack()]
    assert device.command(Command.STOP_PROFILING) == [Ack()]
    assert only(device.command(Command.GET_METADATA), Metadata)


def test_bad_checksum_unknown_command_and_long_payload_are_nacked(device: Device) -> None:
    device.drain()
    bad_sum = bytearray(encode_command(Command.START_PROFILING))
    bad_sum[-1] ^= 0xFF
    unknown = encode_command(0x7E)
    long_payload = bytearray(encode_command(Command.GET_STATUS))
    long_payload[2] = 9
    long_payload[-1] = sum(long_payload[:11]) & 0xFF
    assert device.command(0x7E) == [Nack()]
    device.send(bytes(bad_sum))
    assert device.poll() == [Nack()]
    device.send(bytes(long_payload))
    assert device.poll() == [Nack()]
    device.send(unknown)
    assert device.poll() == [Nack()]
    # The NACKed START did not start anything.
    assert device.command(Command.GET_STATUS) == [Status(False, 0, 0, 0)]


def test_a_bad_packet_does_not_swallow_the_command_behind_it(device: Device) -> None:
    device.drain()
    # A stray header and 3 bytes of noise, then a real command: the bad 12-byte
    # window is NACKed and hunting resumes inside it, at the real header.
    device.send(b"\x55\x01\x02\x03" + encode_command(Command.GET_STATUS))
    events = device.drain()
    assert events == [Nack(), Status(False, 0, 0, 0)]


def test_set_config_records_per_packet(device: Device) -> None:
    started(device)
    assert device.command(Command.SET_CONFIG, (MAX_RPP + 1).to_bytes(2, "little")) == [Nack()]
    assert device.command(Command.SET_CONFIG, (2).to_bytes(2, "little")) == [Ack()]
    for i in range(5):
        device.call(0x8001 + 2 * i)
    shapes = [len(e.records) for e in device.poll() if isinstance(e, ProfileData)]
    assert shapes == [2, 2]
    # A flush interval of 10 ticks sends the odd one soon.
    assert device.command(Command.SET_CONFIG, b"\0\0" + (10).to_bytes(4, "little")) == [Ack()]
    device.advance(10)
    assert [len(e.records) for e in device.poll() if isinstance(e, ProfileData)] == [1]


def _expected_response(event: BadCommand | CommandPacket) -> type:
    if isinstance(event, BadCommand):
        return Nack
    if event.command == Command.GET_STATUS:
        return Status
    if event.command == Command.GET_METADATA:
        return Metadata
    if event.command == Command.SET_CONFIG and len(event.payload) >= 2:
        rpp = int.from_bytes(event.payload[:2], "little")
        return Nack if rpp > MAX_RPP else Ack
    return Ack


command_bytes = st.builds(
    encode_command,
    st.sampled_from([*Command, 0x00, 0x07, 0x55, 0xAA]),
    st.binary(max_size=8),
)
noise = st.binary(max_size=14)


@settings(
    max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=st.lists(st.one_of(command_bytes, noise), max_size=12))
def test_device_parser_agrees_with_the_host_codec(device: Device, parts: list[bytes]) -> None:
    """Whatever the bytes, the device answers exactly the packets the reference decoder
    finds, in order: a NACK for each bad one, the right reply for each good one."""
    device.init(b"text")
    device.drain()
    stream = b"".join(parts)
    expected = [_expected_response(e) for e in CommandDecoder().feed(stream)]
    got: list[ResponseEvent] = []
    for i in range(len(stream)):
        device.send(stream[i : i + 1])  # one byte per poll: the queue never overflows
        got += device.poll()
    got += device.drain()
    got = [e for e in got if not isinstance(e, ProfileData)]
    assert [type(e) for e in got] == expected
    device.command(Command.STOP_PROFILING)
    device.drain()


# ------------------------------------------------------------------ interrupts


def _check_nesting(recs: list[tuple[int, int, int, int]]) -> None:
    """Every record at depth d > 0 lies inside a record at depth d - 1 (CLARIFICATIONS)."""
    for fn, entry, dur, depth in recs:
        if depth == 0:
            continue
        parents = [
            r for r in recs if r[3] == depth - 1 and r[1] <= entry and entry + dur <= r[1] + r[2]
        ]
        assert parents, f"orphan {fn:#x} at depth {depth} in {recs}"


def test_an_interrupt_at_any_port_call_keeps_the_tree_consistent(
    library_path: Path, tmp_path: Path
) -> None:
    # Count the port calls of one undisturbed run, then fire an interrupt at each.
    calls = [0]

    def scenario(device: Device) -> list[tuple[int, int, int, int]]:
        device.set_time(100)
        device.enter(FN_A)
        device.advance(10)
        device.enter(FN_B)
        device.advance(10)
        device.exit(FN_B)
        device.advance(10)
        device.exit(FN_A)
        calls[0] = device.lib.fake_port_calls()
        device.advance(FLUSH_TICKS)
        return [tuple(r) for r in records_of(device.poll()).tolist()]

    base = fresh_device(library_path, tmp_path)
    started(base)
    base.lib.fake_schedule_irq(0, 0, 0)
    assert scenario(base) == [(FN_B, 110, 10, 1), (FN_A, 100, 30, 0)]
    hook_calls = calls[0]  # port calls made by the hooks alone
    assert hook_calls >= 6
    for at in range(1, hook_calls + 1):
        device = fresh_device(library_path, tmp_path)
        started(device)
        device.lib.fake_schedule_irq(at, FN_ISR, 4)
        recs = scenario(device)
        assert device.lib.fake_irq_fired()
        assert sorted(r[0] for r in recs) == sorted([FN_A, FN_B, FN_ISR]), at
        isr = next(r for r in recs if r[0] == FN_ISR)
        assert isr[2] == 4
        _check_nesting(recs)
        assert device.lib.fake_crit_depth() == 0
        assert device.lib.fake_crit_max() >= 1


def test_critical_sections_are_balanced_and_never_nested_by_the_hooks(device: Device) -> None:
    started(device)
    for i in range(50):
        device.call(0x9001 + 2 * i)
    device.command(Command.GET_STATUS)
    assert device.lib.fake_crit_depth() == 0
    assert device.lib.fake_crit_max() == 1


# ------------------------------------------------------------------ compile-time switch


def test_compile_time_switch_removes_the_hooks(disabled_library_path: Path, tmp_path: Path) -> None:
    device = fresh_device(disabled_library_path, tmp_path)
    assert only(device.drain(), Metadata)
    assert device.command(Command.START_PROFILING) == [Ack()]
    for i in range(10):
        device.call(0xA001 + 2 * i)
    device.advance(FLUSH_TICKS)
    assert records_of(device.drain()).size == 0
    assert device.command(Command.GET_STATUS) == [Status(True, 0, 0, 0)]
