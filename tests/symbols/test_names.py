"""Names as users read them: demangled like c++filt, file:line from DWARF, statics by file."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from mcuprof.symbols import Function, SymbolTable, demangle
from mcuprof.symbols.table import Function as TableFunction


def cxxfilt_one(exe: str, raw: str) -> str:
    """c++filt NAME, one process per name: independent of how the table batches."""
    out = subprocess.run([exe, raw], capture_output=True, text=True, check=True).stdout
    return out.rstrip("\n")


@pytest.mark.parametrize("table_name", ["arm_table", "host_table"])
def test_every_name_is_what_cxxfilt_prints(
    table_name: str, request: pytest.FixtureRequest, cxxfilt: str
) -> None:
    table: SymbolTable = request.getfixturevalue(table_name)
    for f in table.functions:
        assert f.name == cxxfilt_one(cxxfilt, f.raw_name), f.raw_name
    names = {f.name for f in table.functions}
    assert "int app::clamp<int>(int, int, int)" in names
    assert "long app::clamp<long>(long, long, long)" in names
    assert "app::Filter::apply(int) const" in names


def test_ctypes_fallback_agrees_with_cxxfilt(arm_table: SymbolTable, cxxfilt: str) -> None:
    raws = [f.raw_name for f in arm_table.functions] + ["i", "_Z3foov.part.0", "_Zbogus"]
    via_ctypes = demangle.demangle_ctypes(raws)
    assert via_ctypes is not None, "libstdc++ should be loadable on this system"
    assert via_ctypes == [cxxfilt_one(cxxfilt, r) for r in raws]


def test_batch_keeps_order_and_leaves_odd_names_alone(cxxfilt: str) -> None:
    raws = ["_ZN3app5clampIiEET_S1_S1_S1_", "two words", "main", "_Z3foov.part.0", "a$b", ""]
    got = demangle.demangle_all(raws)
    assert got[0] == "int app::clamp<int>(int, int, int)"
    assert got[1] == "two words" and got[4] == "a$b" and got[5] == ""
    assert got[2] == "main"
    assert got[3] == cxxfilt_one(cxxfilt, "_Z3foov.part.0") == "foo() [clone .part.0]"


def test_without_any_demangler_names_stay_raw(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demangle, "_TOOLS", ())
    monkeypatch.setattr(demangle, "_cxa_demangle", lambda: None)
    raws = ["_ZN3app5clampIiEET_S1_S1_S1_", "main"]
    assert demangle.demangle_cxxfilt(raws) is None
    assert demangle.demangle_all(raws) == raws


def test_without_cxxfilt_ctypes_gives_the_same_table(
    monkeypatch: pytest.MonkeyPatch, elfs: Any, arm_table: SymbolTable
) -> None:
    monkeypatch.setattr(demangle, "_TOOLS", ())
    again = SymbolTable.from_elf(elfs.arm)
    assert [f.name for f in again.functions] == [f.name for f in arm_table.functions]


# (raw symbol, source file, text that starts the definition there)
DEFINITIONS = [
    ("leaf", "main.c", "int leaf(int x)"),
    ("main", "main.c", "int main(void)"),
    ("Reset_Handler", "main.c", "void Reset_Handler(void)"),
    ("util_a", "util_a.c", "int util_a(int x)"),
    ("util_b", "util_b.c", "int util_b(int x)"),
    ("cpp_entry", "app.cpp", 'extern "C" int cpp_entry(int x)'),
    ("_ZNK3app6Filter5applyEi", "app.cpp", "int Filter::apply(int v) const"),
    ("_ZN3app5clampIiEET_S1_S1_S1_", "app.cpp", "T clamp(T v, T lo, T hi)"),
]


@pytest.mark.parametrize("table_name", ["arm_table", "host_table"])
def test_dwarf_file_and_line(table_name: str, request: pytest.FixtureRequest, tools: Any) -> None:
    table: SymbolTable = request.getfixturevalue(table_name)
    for raw, file, needle in DEFINITIONS:
        (f,) = [f for f in table.functions if f.raw_name == raw]
        line = tools.definition_line(tools.src / file, needle)
        assert (f.file, f.line) == (file, line), raw
        assert f.location == f"{file}:{line}"


def test_assembly_gets_file_line_from_the_line_program(arm_table: SymbolTable, tools: Any) -> None:
    # gas -g writes line rows but no subprogram DIE for a label without .size
    (zero,) = [f for f in arm_table.functions if f.raw_name == "zero_size_fn"]
    assert zero.file == "zero_arm.s"
    src_lines = (tools.src / "zero_arm.s").read_text().splitlines()
    assert src_lines[zero.line - 1].strip() == "nop"  # first instruction after the label
    assert src_lines[zero.line - 2].strip() == "zero_size_fn:"


def test_same_name_statics_stay_apart(arm_table: SymbolTable, tools: Any) -> None:
    helpers = [f for f in arm_table.functions if f.raw_name == "helper"]
    assert len(helpers) == 2
    assert all(f.is_static and f.name == "helper" for f in helpers)
    assert sorted(f.label for f in helpers) == ["helper [util_a.c]", "helper [util_b.c]"]
    for f in helpers:
        needle = "static __attribute__((noipa)) int helper(int x)"
        assert f.line == tools.definition_line(tools.src / f.file, needle)


def test_statics_stay_apart_without_dwarf(elfs: Any) -> None:
    table = SymbolTable.from_elf(elfs.arm_nodebug)
    assert table.warnings == []
    helpers = [f for f in table.functions if f.raw_name == "helper"]
    assert all(f.file is None and f.line is None for f in table.functions)
    # the STT_FILE symbols that precede local symbols still name the unit
    assert sorted(f.label for f in helpers) == ["helper [util_a.c]", "helper [util_b.c]"]


def test_label_rules() -> None:
    assert TableFunction is Function
    plain = Function("f", "f", 0x10, 0x20, "a.c", 3, False)
    assert plain.label == "f"
    header_static = Function("g", "g", 0x10, 0x20, "inc/util.h", 3, True, "a.c")
    assert header_static.label == "g [inc/util.h, a.c]"
    unknown = Function("h", "h", 0x10, 0x20, None, None, True)
    assert unknown.label == "h [0x00000010]"
    assert unknown.location is None
    assert Function("k", "k", 0, 1, "k.c", None).location == "k.c"
