"""Real ELFs for the symbols tests, built once per session from tests/symbols/src.

A missing toolchain makes the fixture (and so every test using it) fail, never skip.
Tests run with --import-mode=importlib and cannot import this file, so the helpers reach
them through the ``tools`` fixture.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from tests.helpers import built_once

from mcuprof.symbols import SymbolTable

SRC = Path(__file__).parent / "src"
ARM_FLAGS = ["-mcpu=cortex-m3", "-mthumb", "-g", "-O1"]


def run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return proc.stdout


@dataclass(frozen=True)
class Elfs:
    arm: Path  # Thumb Cortex-M3, C + C++ + assembly, with DWARF
    arm_nodebug: Path  # the same without .debug_* sections: .symtab and STT_FILE, no DWARF
    arm_stripped: Path  # the same, --strip-all: no .symtab at all
    arm_notext: Path  # the same with .text renamed: no build ID
    host: Path  # x86-64 executable from the same C/C++ sources


def _build_arm(out: Path) -> Path:
    objs = []
    for src in ["main.c", "util_a.c", "util_b.c", "app.cpp", "zero_arm.s"]:
        obj = out / (Path(src).stem + ".o")
        compiler = "arm-none-eabi-g++" if src.endswith(".cpp") else "arm-none-eabi-gcc"
        extra = ["-fno-exceptions", "-fno-rtti"] if src.endswith(".cpp") else []
        run([compiler, *ARM_FLAGS, *extra, "-c", str(SRC / src), "-o", str(obj)])
        objs.append(str(obj))
    elf = out / "arm.elf"
    link = ["-nostdlib", "-nostartfiles", "-Wl,-e,Reset_Handler", "-Wl,-Ttext=0x08000000"]
    run(["arm-none-eabi-gcc", *ARM_FLAGS, *link, *objs, "-o", str(elf)])
    return elf


def _build_all(out: Path) -> None:
    arm = _build_arm(out)
    nodebug = out / "arm-nodebug.elf"
    run(["arm-none-eabi-objcopy", "--remove-section=.debug_*", str(arm), str(nodebug)])
    run(["arm-none-eabi-strip", "--strip-all", str(arm), "-o", str(out / "arm-stripped.elf")])
    notext = out / "arm-notext.elf"
    run(["arm-none-eabi-objcopy", "--rename-section", ".text=.code", str(arm), str(notext)])
    sources = [str(SRC / s) for s in ["main.c", "util_a.c", "util_b.c", "app.cpp", "zero_x86.s"]]
    run(["gcc", "-g", "-O1", "-fno-exceptions", "-fno-rtti", *sources, "-o", str(out / "host.elf")])


@pytest.fixture(scope="session")
def elfs(tmp_path_factory: pytest.TempPathFactory) -> Elfs:
    out = built_once(tmp_path_factory, "elfs", _build_all)  # once per run, shared by workers
    names = ["arm.elf", "arm-nodebug.elf", "arm-stripped.elf", "arm-notext.elf", "host.elf"]
    return Elfs(*(out / name for name in names))


@pytest.fixture(scope="session")
def arm_table(elfs: Elfs) -> SymbolTable:
    return SymbolTable.from_elf(elfs.arm)


@pytest.fixture(scope="session")
def host_table(elfs: Elfs) -> SymbolTable:
    return SymbolTable.from_elf(elfs.host)


@pytest.fixture(scope="session")
def cxxfilt() -> str:
    exe = shutil.which("c++filt")
    assert exe is not None, "c++filt (binutils) is needed to check demangling"
    return exe


def nm_functions(tool: str, elf: Path) -> list[tuple[str, int, int]]:
    """(name, value, size) of sized, defined code symbols, as binutils reads them."""
    out = run([tool, "--defined-only", "--print-size", str(elf)])
    result = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "TtW":
            result.append((parts[3], int(parts[0], 16), int(parts[1], 16)))
    return result


def definition_line(path: Path, needle: str) -> int:
    """1-based line of the one source line that defines a function (no trailing ';')."""
    hits = [
        i
        for i, text in enumerate(path.read_text().splitlines(), 1)
        if needle in text and not text.rstrip().endswith(";")
    ]
    assert len(hits) == 1, f"{needle!r} in {path.name}: {hits}"
    return hits[0]


@pytest.fixture(scope="session")
def tools() -> SimpleNamespace:
    return SimpleNamespace(
        run=run, nm_functions=nm_functions, definition_line=definition_line, src=SRC
    )
