"""The simulated device on its own: protocol answers, workload, pacing, faults."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.link.simulator import Firmware, SimDevice, SimOptions, load_firmware
from mcuprof.link.workload import FunctionSpec, Workload, synthetic_functions
from mcuprof.paths import default_elf
from mcuprof.profile.timebase import unwrap_exits
from mcuprof.protocol import (
    Ack,
    Command,
    Metadata,
    Nack,
    ProfileData,
    ResponseDecoder,
    Status,
    encode_command,
)
from mcuprof.symbols import SymbolTable

from .conftest import FakeClock


def _device(clock: FakeClock, **opts: object) -> SimDevice:
    baud = int(opts.pop("baud", 115_200))  # type: ignore[arg-type]
    return SimDevice(SimOptions(**opts), clock=clock, baud=baud, keep_log=True)  # type: ignore[arg-type]


def _ask(
    device: SimDevice, decoder: ResponseDecoder, command: Command, payload: bytes = b""
) -> list:
    device.receive(encode_command(command, payload))
    return decoder.feed(device.poll())


def _run(
    device: SimDevice,
    clock: FakeClock,
    decoder: ResponseDecoder,
    seconds: float,
    step: float = 0.05,
) -> list:
    events = []
    for _ in range(round(seconds / step)):
        clock.advance(step)
        events += decoder.feed(device.poll())
    return events


def _records(events: list) -> np.ndarray:
    chunks = [e.records for e in events if isinstance(e, ProfileData)]
    return np.concatenate(chunks) if chunks else np.empty(0)


def test_boot_metadata_and_every_command_answered() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="default")
    dec = ResponseDecoder()
    boot = dec.feed(dev.poll())
    table = SymbolTable.from_elf(default_elf())
    assert boot == [dev.metadata] and isinstance(boot[0], Metadata)
    assert dev.metadata.elf_build_id == table.build_id  # matches the ELF it runs
    assert _ask(dev, dec, Command.GET_METADATA) == [dev.metadata]
    assert _ask(dev, dec, Command.GET_STATUS) == [Status(False, 0, 0, 0)]
    for cmd in (Command.RESET_BUFFERS, Command.START_PROFILING, Command.STOP_PROFILING):
        assert _ask(dev, dec, cmd) == [Ack()]
    assert _ask(dev, dec, Command.SET_CONFIG, b"\x08\x00") == [Ack()]


def test_mismatch_option_reports_another_build_id() -> None:
    clock = FakeClock()
    table = SymbolTable.from_elf(default_elf())
    dev = _device(clock, elf="default", mismatch=True)
    assert dev.metadata.elf_build_id != table.build_id


def test_bad_checksum_and_unknown_command_get_nack() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="none", boot=False)
    dec = ResponseDecoder()
    bad_sum = bytearray(encode_command(Command.GET_STATUS))
    bad_sum[-1] ^= 0xFF
    unknown = encode_command(0x7E)
    too_long = bytearray(encode_command(Command.SET_CONFIG))
    too_long[2] = 9
    too_long[-1] = sum(too_long[:-1]) & 0xFF
    for raw in (bytes(bad_sum), unknown, bytes(too_long)):
        dev.receive(raw)
        assert dec.feed(dev.poll()) == [Nack()]
    # A good command right behind line noise is still understood.
    dev.receive(b"\x55\x55\x00" + encode_command(Command.GET_STATUS))
    events = dec.feed(dev.poll())
    assert events[-1] == Status(False, 0, 0, 0)


def test_records_stream_while_profiling_and_stop_after_stop() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="default", rate=500)
    dec = ResponseDecoder()
    dec.feed(dev.poll())
    assert _records(_run(dev, clock, dec, 1.0)).size == 0  # not profiling yet
    _ask(dev, dec, Command.START_PROFILING)
    got = _records(_run(dev, clock, dec, 4.0))
    assert 1500 <= len(got) <= 2500  # about 500/s
    _ask(dev, dec, Command.STOP_PROFILING)
    tail = _records(_run(dev, clock, dec, 1.0))  # the ring drains after the ACK
    assert _records(_run(dev, clock, dec, 1.0)).size == 0
    status = _ask(dev, dec, Command.GET_STATUS)[0]
    assert status.records_captured == len(got) + len(tail) == dev.records_sent
    assert status.buffer_overflows == 0 and not status.is_profiling


def test_workload_looks_like_firmware_from_the_elf() -> None:
    clock = FakeClock()
    table = SymbolTable.from_elf(default_elf())
    dev = _device(clock, elf="default", rate=5_000, wrap=True, seed=5, baud=921_600)
    dec = ResponseDecoder()
    _ask(dev, dec, Command.START_PROFILING)
    recs = _records(_run(dev, clock, dec, 4.0))
    assert len(recs) > 10_000
    # Every address lands in a function of the ELF, with the Thumb bit set, and
    # many are return addresses inside the body rather than the entry.
    idx = table.lookup(recs["func_addr"])
    assert (idx >= 0).all()
    assert (recs["func_addr"] & 1).all()
    starts = np.array([f.start for f in table.functions])[idx]
    assert ((recs["func_addr"] & ~np.uint32(1)) != starts).any()
    names = {table.functions[i].name for i in np.unique(idx)}
    # main is not instrumented, like the demo: it never appears; its callees are roots.
    assert "main" not in names and recs["depth"].min() == 0
    assert recs["depth"].max() >= 3
    assert "TIMER1_IRQHandler" in names  # the ISR fires
    # Ticks wrap (the counter started 2 s before 2**32) and unwrap monotonically.
    assert recs["entry_time"].max() > 2**32 - 2_000_000 and recs["entry_time"].min() < 2_000_000
    exits = unwrap_exits(recs["entry_time"], recs["duration"])
    assert (np.diff(exits) >= 0).all()
    assert exits[-1] - exits[0] > 3_000_000


def test_isrs_nest_inside_what_they_interrupt() -> None:
    funcs = synthetic_functions()
    wl = Workload(funcs, rate=10_000, seed=2, thumb=False)
    recs = wl.take_until(5_000_000)
    isr_addrs = {f.start for f in funcs if f.name.endswith("Handler")}
    starts = np.array(sorted(f.start for f in funcs))
    owner = starts[np.searchsorted(starts, recs["func_addr"], side="right") - 1]
    is_isr = np.isin(owner, list(isr_addrs))
    assert is_isr.any()
    depths = recs["depth"][is_isr]
    assert len(set(depths.tolist())) >= 2  # at random depths, not just one level
    entry = recs["entry_time"].astype(np.int64)
    exit_ = entry + recs["duration"]
    # Each ISR at depth d > 1 lies inside a record at depth d - 1 (the interrupted code).
    for i in np.flatnonzero(is_isr & (recs["depth"] > 1))[:50]:
        d = recs["depth"][i]
        later = np.arange(i + 1, len(recs))
        parent = later[(recs["depth"][later] == d - 1)]
        assert len(parent)
        p = parent[0]
        assert entry[p] <= entry[i] and exit_[i] <= exit_[p]


def test_pacing_to_the_baud_rate_and_ring_overflow_last_is_best() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="none", rate=20_000, buffer=512, baud=115_200)
    dec = ResponseDecoder()
    dec.feed(dev.poll())
    _ask(dev, dec, Command.START_PROFILING)
    before = dec.stats.bytes
    events = _run(dev, clock, dec, 10.0)
    wire = dec.stats.bytes - before
    # 10 bits per byte: 115200 baud moves at most 11,520 bytes a second.
    assert wire <= 11_520 * 10 + 2_000
    assert wire >= 11_520 * 10 * 0.9  # and the link is kept busy
    status = _ask(dev, dec, Command.GET_STATUS)[-1]
    assert status.records_captured >= 190_000
    sent = len(_records(events))
    assert status.buffer_overflows > 0
    assert status.records_captured == sent + status.buffer_overflows + len(dev._ring)
    # Last is best: after an overflow the oldest records were dropped, so what is
    # sent next is recent: the newest record sent is close to the device's now.
    last = _records(events)[-1]
    now_tick = round(dev.device_time * 1_000_000)
    assert now_tick - (int(last["entry_time"]) + int(last["duration"])) < 200_000


def test_set_config_limits_records_per_packet() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="none", rate=5000, baud=921_600, packet=64)
    dec = ResponseDecoder()
    assert _ask(dev, dec, Command.SET_CONFIG, (65).to_bytes(2, "little"))[-1] == Nack()
    assert _ask(dev, dec, Command.SET_CONFIG, (8).to_bytes(2, "little"))[-1] == Ack()
    _ask(dev, dec, Command.START_PROFILING)
    sizes = [len(e) for e in _run(dev, clock, dec, 1.0) if isinstance(e, ProfileData)]
    assert sizes and max(sizes) == 8


def test_reset_buffers_clears_counters() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="none", rate=2000, baud=921_600)
    dec = ResponseDecoder()
    _ask(dev, dec, Command.START_PROFILING)
    _run(dev, clock, dec, 1.0)
    assert dev.records_captured > 0
    _ask(dev, dec, Command.RESET_BUFFERS)
    assert _ask(dev, dec, Command.GET_STATUS)[-1].records_captured == 0


def test_unplug_after_n_seconds() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="none", rate=2000, unplug=2.0)
    dec = ResponseDecoder()
    _ask(dev, dec, Command.START_PROFILING)
    _run(dev, clock, dec, 1.9)
    assert not dev.unplugged
    _run(dev, clock, dec, 0.2)
    assert dev.unplugged
    n = dec.stats.bytes
    _run(dev, clock, dec, 1.0)
    dev.receive(encode_command(Command.GET_STATUS))
    assert dec.feed(dev.poll()) == [] and dec.stats.bytes == n  # silence


def test_bit_errors_and_drops_damage_only_what_they_hit() -> None:
    clock = FakeClock()
    dev = _device(clock, elf="none", rate=5000, baud=921_600, ber=1e-4, drop=1e-4, seed=3)
    dec = ResponseDecoder()
    _ask(dev, dec, Command.START_PROFILING)
    got = _records(_run(dev, clock, dec, 5.0))
    sent = dev.sent
    assert sent is not None and dev.records_damaged > 0
    intact = np.concatenate([p.records for p in sent if not p.damaged])
    assert np.array_equal(got, intact)


def test_synthetic_firmware_when_asked() -> None:
    fw = load_firmware("none")
    assert fw.source == "synthetic" and any(f.name == "main" for f in fw.functions)


@settings(max_examples=25)
@given(
    st.lists(
        st.tuples(st.integers(0, 0x0FFF_0000), st.integers(1, 2000)),
        min_size=1,
        max_size=30,
    ),
    st.floats(10, 200_000),
    st.integers(0, 2**31),
)
def test_workload_records_are_well_formed(spans, rate, seed) -> None:
    funcs = []
    addr = 0x0800_0000
    for i, (gap, size) in enumerate(spans):
        addr += gap % 4096 * 2
        # Thumb code: functions start on even addresses.
        funcs.append(FunctionSpec(addr, size * 2, "main" if i == 0 else f"f{i}"))
        addr += size * 2
    wl = Workload(funcs, rate=rate, seed=seed, start_tick=2**32 - 1000)
    # Long enough for ~50 records at any rate (1 MHz timer): at 10 records/s a 20 ms window
    # may rightly hold none. (At 200,000 records/s it holds 4,000, past the timer's wrap.)
    end = 2**32 + max(20_000, int(50e6 / rate))
    recs = wl.take_until(end)
    if len(funcs) == 1:
        return  # only main, which never returns: nothing to record is right
    assert len(recs) > 0
    base = np.array([f.start for f in funcs])
    ends = np.array([f.start + f.size for f in funcs])
    a = (recs["func_addr"] & ~np.uint32(1)).astype(np.int64)
    inside = ((a[:, None] >= base[None, :]) & (a[:, None] < ends[None, :])).any(axis=1)
    assert inside.all()
    exits = unwrap_exits(recs["entry_time"], recs["duration"])
    assert (np.diff(exits) >= 0).all()
    assert exits[-1] <= end


def test_firmware_can_be_passed_in() -> None:
    funcs = [
        FunctionSpec(0x100, 40, "main"),
        FunctionSpec(0x200, 40, "a"),
        FunctionSpec(0x300, 40, "b"),
    ]
    clock = FakeClock()
    dev = SimDevice(
        SimOptions(rate=1000), clock=clock, firmware=Firmware(funcs, 0x1234, True, "test")
    )
    assert dev.metadata.elf_build_id == 0x1234
    dec = ResponseDecoder()
    _ask(dev, dec, Command.START_PROFILING)
    recs = _records(_run(dev, clock, dec, 2.0))
    assert set((recs["func_addr"] & ~np.uint32(1) & ~np.uint32(0xFF)).tolist()) <= {0x200, 0x300}


@pytest.mark.parametrize("elf", ["default", None])
def test_default_firmware_is_the_sample_elf(elf) -> None:
    fw = load_firmware(elf)
    assert fw.source == str(default_elf())
    assert fw.build_id == SymbolTable.from_elf(default_elf()).build_id
