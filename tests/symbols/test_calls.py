"""The static call graph from Thumb-2 BL instructions, checked against objdump."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from mcuprof.paths import default_elf
from mcuprof.symbols import Function, SymbolTable
from mcuprof.symbols.elfparse import bl_targets

_HEADER = re.compile(r"^([0-9a-f]+) <(.+)>:$")
_BL = re.compile(r"^\s*([0-9a-f]+):\s+[0-9a-f]{4} [0-9a-f]{4}\s+bl\s+([0-9a-f]+)\b")


def objdump_bl(elf: Path) -> set[tuple[int, int]]:
    """(instruction address, target) of every ``bl`` objdump disassembles."""
    proc = subprocess.run(
        ["arm-none-eabi-objdump", "-d", str(elf)], capture_output=True, text=True, check=True
    )
    out = set()
    for line in proc.stdout.splitlines():
        m = _BL.match(line)
        if m:
            out.add((int(m.group(1), 16), int(m.group(2), 16)))
    assert out, "objdump found no bl at all"
    return out


def _edges_by_objdump(table: SymbolTable, elf: Path) -> set[tuple[str, str]]:
    starts = {f.start: f for f in table.functions}
    edges = set()
    for insn, target in objdump_bl(elf):
        caller = table.function_at(insn)
        if caller is not None and insn + 4 <= caller.end and target in starts:
            edges.add((caller.raw_name, starts[target].raw_name))
    return edges


def _edges(table: SymbolTable) -> set[tuple[str, str]]:
    fs = table.functions
    return {(fs[a].raw_name, fs[b].raw_name) for a, b in table.calls}


def test_demo_call_graph_matches_objdump() -> None:
    table = SymbolTable.from_elf(default_elf())
    assert table.calls == sorted(set(table.calls))
    assert _edges(table) == _edges_by_objdump(table, default_elf())
    named = {(table.functions[a].name, table.functions[b].name) for a, b in table.calls}
    assert {
        ("control_iteration", "fir_filter"),
        ("control_step", "app::Pid::step(long)"),
        ("app::Pid::step(long)", "int app::clamp<int>(int, int, int)"),
        ("TIMER1_IRQHandler", "sensor_sample"),
        ("sensor_sample", "adc_read"),
        ("window_energy", "window_energy"),
        ("main", "control_iteration"),
    } <= named
    # Nothing the demo never calls: main is called only from the reset handler.
    assert {c for c, m in named if m == "main"} == {"Reset_Handler"}


def test_test_firmware_call_graph_matches_objdump(elfs) -> None:
    table = SymbolTable.from_elf(elfs.arm)
    assert table.calls
    assert _edges(table) == _edges_by_objdump(table, elfs.arm)


def test_no_call_graph_without_arm_code_or_symbols(elfs, host_table) -> None:
    assert host_table.functions and host_table.calls == []
    assert SymbolTable.from_elf(elfs.arm_stripped).calls == []
    assert SymbolTable.empty().calls == []


def test_from_functions_keeps_edges_through_sorting() -> None:
    b = Function("b", "b", 0x200, 0x220)
    a = Function("a", "a", 0x100, 0x120)
    table = SymbolTable.from_functions([b, a], calls=[(1, 0), (0, 0), (1, 0)])
    assert [f.name for f in table.functions] == ["a", "b"]
    assert table.calls == [(0, 1), (1, 1)]
    assert SymbolTable.from_functions([a, b]).calls == []


def _encode_bl(offset: int) -> bytes:
    """BL encoding T1 as the ARM Architecture Reference Manual gives it."""
    imm = offset & 0x1FF_FFFF
    s = imm >> 24
    i1, i2 = (imm >> 23) & 1, (imm >> 22) & 1
    j1, j2 = (1 - i1) ^ s, (1 - i2) ^ s
    hw1 = 0xF000 | (s << 10) | ((imm >> 12) & 0x3FF)
    hw2 = 0xD000 | (j1 << 13) | (j2 << 11) | ((imm >> 1) & 0x7FF)
    return struct.pack("<HH", hw1, hw2)


@given(
    st.integers(0, 0x7FFF_0000).map(lambda x: x & ~1),
    st.integers(-(1 << 23), (1 << 23) - 1).map(lambda x: 2 * x),
    st.lists(st.integers(0, 0xFFFF), max_size=20),
    st.lists(st.integers(0, 0xFFFF), max_size=20),
)
def test_bl_decoding_round_trips(
    addr: int, offset: int, before: list[int], after: list[int]
) -> None:
    pad = struct.pack(f"<{len(before)}H", *before)
    code = pad + _encode_bl(offset) + struct.pack(f"<{len(after)}H", *after)
    insn, target = bl_targets(code, addr)
    here = addr + len(pad)
    assert (here, here + 4 + offset) in set(zip(insn.tolist(), target.tolist(), strict=True))
    assert ((insn - addr) % 2 == 0).all() and (target % 2 == 0).all()


def test_bl_decoding_of_short_or_empty_code() -> None:
    for code in (b"", b"\x00", b"\x00\xf0"):
        insn, target = bl_targets(code, 0x1000)
        assert len(insn) == len(target) == 0
