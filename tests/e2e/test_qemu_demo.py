"""Real end to end: the demo firmware, built from source, runs in QEMU and is profiled
over its emulated UART through the same session, symbol and profile layers the app uses."""

from __future__ import annotations

import itertools
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from elftools.elf.elffile import ELFFile

from mcuprof.link import DeviceSession, NullListener
from mcuprof.paths import default_elf
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE, Metadata
from mcuprof.qemu import QemuProcess
from mcuprof.symbols import SymbolTable, check_build_id

pytestmark = pytest.mark.qemu

CLAMP = "int app::clamp<int>(int, int, int)"
PID_STEP = "app::Pid::step(long)"
DEMO_FUNCTIONS = {
    "control_iteration",
    "fir_filter",
    "filter_window",
    "window_energy",
    "control_step",
    PID_STEP,
    CLAMP,
    "actuator_write",
    "sensor_take",
    "sensor_sample",
    "adc_read",
    "TIMER1_IRQHandler",
    "sensor_init",
    "app::Pid::Pid(long, long)",
}
# caller -> callee pairs the demo's source makes on every control period.
EDGES = {
    ("control_iteration", "fir_filter"),
    ("control_iteration", "filter_window"),
    ("control_iteration", "window_energy"),
    ("control_iteration", "control_step"),
    ("control_iteration", "actuator_write"),
    ("control_step", PID_STEP),
    (PID_STEP, CLAMP),
    ("TIMER1_IRQHandler", "sensor_sample"),
    ("sensor_sample", "adc_read"),
    ("window_energy", "window_energy"),
}


class Collector(NullListener):
    def __init__(self) -> None:
        self.chunks: list[np.ndarray] = []
        self.count = 0
        self.more = threading.Event()

    def on_records(self, records: np.ndarray) -> None:
        self.chunks.append(np.array(records, dtype=RECORD_DTYPE))
        self.count += len(records)
        self.more.set()

    def wait_for(self, n: int, timeout_s: float) -> int:
        deadline = time.monotonic() + timeout_s
        while self.count < n and time.monotonic() < deadline:
            self.more.wait(0.05)
            self.more.clear()
        return self.count

    def records(self) -> np.ndarray:
        return np.concatenate(self.chunks) if self.chunks else np.empty(0, RECORD_DTYPE)


def text_crc(elf: Path) -> int:
    with elf.open("rb") as f:
        return zlib.crc32(ELFFile(f).get_section_by_name(".text").data())


def test_committed_sample_elf_is_what_the_build_produces(built_elf: Path) -> None:
    committed = default_elf()
    assert committed.read_bytes() == built_elf.read_bytes(), (
        "sample_elfs/mcuprof-demo.elf is stale: run `make -C firmware sample` "
        "(same arm-none-eabi-gcc as sample_elfs/README.md)"
    )


def test_linker_symbols_bracket_exactly_the_text_section(built_elf: Path) -> None:
    """The firmware CRCs [__text_start, __text_end) at boot; the host CRCs .text."""
    with built_elf.open("rb") as f:
        elf = ELFFile(f)
        text = elf.get_section_by_name(".text")
        symtab = elf.get_section_by_name(".symtab")
        start = symtab.get_symbol_by_name("__text_start")[0]["st_value"]
        end = symtab.get_symbol_by_name("__text_end")[0]["st_value"]
        assert (start, end) == (text["sh_addr"], text["sh_addr"] + text["sh_size"])
        # Nothing executable lives outside .text, so the build ID covers all code.
        for section in elf.iter_sections():
            if section["sh_flags"] & 0x4 and section.name != ".text":  # SHF_EXECINSTR
                raise AssertionError(f"code outside .text: {section.name}")


def test_profile_the_demo_firmware_in_qemu(qemu: QemuProcess, built_elf: Path) -> None:
    symbols = SymbolTable.from_elf(built_elf)
    collector = Collector()
    with DeviceSession(qemu.url, listener=collector, command_timeout_s=2.0) as session:
        meta = session.connect()
        assert isinstance(meta, Metadata)
        assert meta.fw_version == "demo-1.0"
        assert meta.timer_freq == 25_000_000
        # The device's CRC-32 of .text, computed at boot, matches the ELF file.
        assert meta.elf_build_id == text_crc(built_elf) == symbols.build_id
        assert check_build_id(meta.elf_build_id, symbols.build_id).state == "match"

        session.start()
        got = collector.wait_for(1000, timeout_s=5.0)
        assert got >= 1000, f"only {got} records within 5 s"
        final = session.stop(drain=True)  # raises unless STOP is ACKed
        assert final is not None and not final.is_profiling

        # What the device says it captured, minus what it overwrote, all arrived.
        status = session.get_status()
        assert status == final
        assert status.records_captured >= got
        assert status.records_captured - status.buffer_overflows == collector.count
        assert session.records_received_since_start == collector.count
        assert session.stats.crc_errors == session.stats.malformed == 0

    records = collector.records()
    index = symbols.lookup(records["func_addr"])
    assert (index >= 0).all(), "every recorded address lies inside a function"
    names = {symbols.functions[i].name for i in np.unique(index)}
    assert names <= DEMO_FUNCTIONS
    assert {"control_iteration", "window_energy", CLAMP, "TIMER1_IRQHandler"} <= names

    profile = Profile(symbols, timer_freq=meta.timer_freq)
    profile.add(records)
    assert profile.n_records == len(records)
    stacks = [stack.split(";") for stack in profile.folded()]
    edges = {(a, b) for frames in stacks for a, b in itertools.pairwise(frames)}
    assert edges >= EDGES, f"missing caller->callee edges: {EDGES - edges}"
    assert any(frames[0] == "TIMER1_IRQHandler" for frames in stacks)
    # window_energy(8) recurses to 8 -> 4 -> 2: three levels deep.
    assert any(frames.count("window_energy") == 3 for frames in stacks)
    assert not any(frames[0] == "[unknown]" for frames in stacks), "no orphans from the hooks"


def test_icount_makes_durations_repeatable(qemu: QemuProcess) -> None:
    """-icount ties time to instructions: an uninterrupted leaf always runs the same
    instructions, so its duration is one value give or take the one tick that comes from
    sampling 32 ns instructions with a 40 ns timer. Only interrupted calls differ."""
    collector = Collector()
    with DeviceSession(qemu.url, listener=collector, command_timeout_s=2.0) as session:
        session.connect()
        session.start()
        collector.wait_for(1000, timeout_s=5.0)
        session.stop(drain=True)
    records = collector.records()
    symbols = SymbolTable.from_elf(qemu.elf)
    names = np.array([f.name for f in symbols.functions])[symbols.lookup(records["func_addr"])]
    for leaf in (CLAMP, "adc_read", "actuator_write", "filter_window"):
        durations = records["duration"][names == leaf].astype(np.int64)
        assert len(durations) >= 20, leaf
        values, counts = np.unique(durations, return_counts=True)
        mode = values[counts.argmax()]
        near = np.count_nonzero(np.abs(durations - mode) <= 1)
        assert near >= 0.95 * len(durations), (leaf, dict(zip(values, counts, strict=True)))
