"""Bad ELF input: one-line UserError or a valid table, never a traceback, never a hang."""

from __future__ import annotations

import itertools
import os
import signal
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.errors import UserError
from mcuprof.symbols import NO_SYMTAB_WARNING, SymbolTable, elfparse, loader


def outcome(data: bytes, name: str = "fuzz.elf", timeout_s: float = 10.0) -> SymbolTable | str:
    """The table, or the UserError message; anything else propagates and fails the test."""
    try:
        table = SymbolTable.from_elf_bytes(data, name=name, timeout_s=timeout_s)
    except UserError as exc:
        message = str(exc)
        assert "\n" not in message and "\r" not in message
        assert message.startswith(f"{name}: ")
        return message
    funcs = table.functions
    assert all(0 <= f.start < f.end for f in funcs)
    assert all(a.end <= b.start for a, b in itertools.pairwise(funcs))
    assert all("\n" not in f.name and "\n" not in f.label for f in funcs)
    assert all("\n" not in w for w in table.warnings)
    return table


def sections(data: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (sh_type, sh_offset, sh_size) of a little-endian ELF32, read with struct."""
    (shoff,) = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x2E)
    headers = [struct.unpack_from("<6I", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    out = {}
    for name_off, sh_type, _, _, off, size in headers:
        end = data.index(b"\0", names_at + name_off)
        out[data[names_at + name_off : end].decode()] = (sh_type, off, size)
    return out


@pytest.fixture(scope="module")
def arm_bytes(elfs: Any) -> bytes:
    return elfs.arm.read_bytes()


@settings(max_examples=150)
@given(st.binary(max_size=2048))
def test_random_bytes_are_refused(data: bytes) -> None:
    assert isinstance(outcome(data), str)


@settings(max_examples=20)
@given(
    elf_class=st.sampled_from([1, 2]),
    order=st.sampled_from([1, 2]),
    body=st.binary(min_size=0, max_size=512),
)
def test_random_bytes_behind_a_valid_ident(elf_class: int, order: int, body: bytes) -> None:
    data = b"\x7fELF" + bytes([elf_class, order, 1]) + bytes(9) + body
    result = outcome(data)
    if isinstance(result, SymbolTable):  # a header with no sections is a valid, empty ELF
        assert result.functions == [] and result.build_id is None


def test_truncated_at_many_points(arm_bytes: bytes) -> None:
    cuts = [1, 3, 4, 10, 16, 40, 51, 52, 100, 0x1000, len(arm_bytes) // 2, len(arm_bytes) - 1]
    for cut in cuts:
        message = outcome(arm_bytes[:cut])
        assert isinstance(message, str), cut
        assert "truncated" in message, (cut, message)


def test_wrong_class_or_byte_order(arm_bytes: bytes) -> None:
    for cls in (0, 3, 255):
        message = outcome(arm_bytes[:4] + bytes([cls]) + arm_bytes[5:])
        assert message == (
            f"fuzz.elf: not a readable ELF (unsupported ELF class {cls}; "
            "only 32-bit and 64-bit are read)"
        )
    message = outcome(arm_bytes[:5] + b"\x07" + arm_bytes[6:])
    assert message == "fuzz.elf: not a readable ELF (unsupported ELF byte order 7)"


INTERESTING = {".symtab", ".strtab", ".shstrtab", ".text", ".debug_info", ".debug_line"}
INTERESTING |= {".debug_abbrev", ".debug_str", ".debug_aranges"}


@st.composite
def mutations(draw: st.DrawFn, data: bytes) -> bytes:
    table = sections(data)
    (shoff,) = struct.unpack_from("<I", data, 0x20)
    regions = [(0, 52), (shoff, len(data) - shoff), (0, len(data))]
    regions += [(off, size) for name, (_, off, size) in table.items() if name in INTERESTING]
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 6))):
        start, size = draw(st.sampled_from(regions))
        pos = draw(st.integers(start, start + size - 1))
        width = draw(st.sampled_from([1, 2, 4]))
        value = draw(st.binary(min_size=width, max_size=width))
        out[pos : pos + width] = value
    return bytes(out[: len(data)])


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_headers_never_escape(arm_bytes: bytes, data: st.DataObject) -> None:
    outcome(data.draw(mutations(arm_bytes)))


def test_no_symtab_warns_and_shows_hex(elfs: Any) -> None:
    table = SymbolTable.from_elf(elfs.arm_stripped)
    assert table.warnings == [NO_SYMTAB_WARNING]
    assert table.functions == []
    assert table.name_of(0x08000001) == "0x08000001"
    assert table.build_id is not None


def test_file_errors_are_one_line(tmp_path: Path) -> None:
    cases = {
        tmp_path / "missing.elf": "no such file",
        tmp_path: "is a directory",
    }
    empty = tmp_path / "empty.elf"
    empty.write_bytes(b"")
    cases[empty] = "not a readable ELF (file is empty)"
    text = tmp_path / "notes.txt"
    text.write_text("hello, not an ELF\n")
    cases[text] = "not a readable ELF (no ELF magic number)"
    for path, expected in cases.items():
        with pytest.raises(UserError) as info:
            SymbolTable.from_elf(path)
        assert str(info.value) == f"{path}: {expected}" or expected in str(info.value)
        assert "\n" not in str(info.value)


def test_parse_time_is_bounded(arm_bytes: bytes) -> None:
    message = outcome(arm_bytes, timeout_s=0.001)
    assert message == "fuzz.elf: not a readable ELF (gave up after 0.001 s)"


def fake_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    script = tmp_path / "worker.py"
    script.write_text(body)
    monkeypatch.setattr(loader, "_WORKER", script)


def test_a_hanging_reader_is_killed(
    arm_bytes: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "pid"
    fake_worker(
        tmp_path,
        monkeypatch,
        f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nwhile True:\n    pass\n",
    )
    message = outcome(arm_bytes, timeout_s=1.0)
    assert message == "fuzz.elf: not a readable ELF (gave up after 1 s)"
    # On a loaded machine the child may be killed before it writes its pid; when it did
    # write it, that process must be gone now.
    if pid_file.exists():
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)


def test_a_crashing_reader_is_one_line(
    arm_bytes: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_worker(tmp_path, monkeypatch, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert outcome(arm_bytes) == "fuzz.elf: not a readable ELF (reader exited with status -9)"
    fake_worker(tmp_path, monkeypatch, "raise RuntimeError('boom')\n")
    assert outcome(arm_bytes) == "fuzz.elf: not a readable ELF (RuntimeError: boom)"


def test_slow_dwarf_costs_file_line_not_symbols(arm_bytes: bytes) -> None:
    parsed = elfparse.parse(arm_bytes, dwarf_budget_s=-1.0)
    assert parsed["warnings"] == ["DWARF debug info took too long to read; no file:line shown"]
    assert parsed["functions"] and all(f["file"] is None for f in parsed["functions"])


def test_broken_dwarf_costs_file_line_not_symbols(arm_bytes: bytes) -> None:
    data = bytearray(arm_bytes)
    _, info, _ = sections(arm_bytes)[".debug_info"]
    data[info : info + 4] = b"\xff\xff\xff\xff"  # unit length: 64-bit DWARF escape, no size
    result = outcome(bytes(data))
    assert isinstance(result, SymbolTable)
    assert [f.raw_name for f in result.functions] == [
        f.raw_name for f in SymbolTable.from_elf_bytes(arm_bytes).functions
    ]
    assert len(result.warnings) == 1 and result.warnings[0].startswith("DWARF debug info")


def test_dwarf_alarm_interrupts_a_call_that_never_returns() -> None:
    # stands in for pyelftools spinning inside one call on a hostile DIE chain
    budget = elfparse._Budget(0.05)
    with pytest.raises(elfparse._OutOfTime), elfparse._alarm(budget):
        while True:
            pass
    # the alarm is disarmed afterwards: nothing fires later
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
