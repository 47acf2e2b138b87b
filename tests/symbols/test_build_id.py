"""Build ID: CRC-32 of .text against METADATA, and ``mcuprof info --elf``."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcuprof.cli import main
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.symbols import NO_SYMTAB_WARNING, SymbolTable, check_build_id


def text_crc(tools: Any, objcopy: str, elf: Path, tmp_path: Path) -> int:
    """CRC of .text as binutils extracts it: independent of pyelftools."""
    out = tmp_path / (elf.name + ".text.bin")
    tools.run([objcopy, "-O", "binary", "--only-section=.text", str(elf), str(out)])
    data = out.read_bytes()
    assert data
    return zlib.crc32(data)


def test_build_id_is_crc32_of_text(
    elfs: Any, tools: Any, arm_table: SymbolTable, host_table: SymbolTable, tmp_path: Path
) -> None:
    assert arm_table.build_id == text_crc(tools, "arm-none-eabi-objcopy", elfs.arm, tmp_path)
    assert host_table.build_id == text_crc(tools, "objcopy", elfs.host, tmp_path)
    assert arm_table.build_id_note is None


def test_stripping_keeps_the_build_id(elfs: Any, arm_table: SymbolTable) -> None:
    stripped = SymbolTable.from_elf(elfs.arm_stripped)
    assert stripped.build_id == arm_table.build_id
    assert stripped.warnings == [NO_SYMTAB_WARNING]


def test_no_text_section_means_unknown(elfs: Any) -> None:
    table = SymbolTable.from_elf(elfs.arm_notext)
    assert table.build_id is None
    assert table.build_id_note == "ELF has no .text section"
    check = check_build_id(0x1234, table.build_id, table.build_id_note)
    assert check.state == "unknown" and check.match is None
    assert check.message == "build ID unknown (ELF has no .text section)"


def test_check_states_and_messages() -> None:
    same = check_build_id(0xDEADBEEF, 0xDEADBEEF)
    assert (same.state, same.match, same.message) == ("match", True, "ELF matches firmware")
    diff = check_build_id(0x00000001, 0xCAFEF00D)
    assert (diff.state, diff.match, diff.device, diff.elf) == ("mismatch", False, 1, 0xCAFEF00D)
    assert diff.message == "ELF does not match the firmware (device 0x00000001, ELF 0xcafef00d)"
    no_meta = check_build_id(None, 5)
    assert no_meta.state == "unknown"
    assert no_meta.message == "build ID unknown (no METADATA from the device)"
    neither = check_build_id(None, None)
    assert neither.message == "build ID unknown (no METADATA from the device; no ELF given)"
    assert check_build_id(0, 0).state == "match"  # 0 is a valid CRC, not "missing"


def capture(tmp_path: Path, build_id: int | None) -> Path:
    recs = np.zeros(3, dtype=RECORD_DTYPE)
    recs["func_addr"] = [0x08000001, 0x0800001D, 0x20000001]
    recs["entry_time"] = [10, 5, 40]
    recs["duration"] = [5, 30, 2]
    data = b""
    if build_id is not None:
        data += encode_metadata(Metadata(72_000_000, 1_000_000, build_id, "test-fw"))
    data += encode_profile_data(recs)
    path = tmp_path / f"cap-{build_id}.bin"
    path.write_bytes(data)
    return path


def info_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict, str]:
    rc = main(["info", *argv, "--json"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if out else {}), err


def test_info_json_match_and_mismatch(
    elfs: Any, arm_table: SymbolTable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crc = arm_table.build_id
    assert crc is not None
    rc, s, err = info_json(capsys, str(capture(tmp_path, crc)), "--elf", str(elfs.arm))
    assert rc == 0 and err == ""
    assert s["build_id"] == {"device": crc, "elf": crc, "match": True}
    assert s["records"] == 3
    other = (crc + 1) & 0xFFFFFFFF
    rc, s, _ = info_json(capsys, str(capture(tmp_path, other)), "--elf", str(elfs.arm))
    assert s["build_id"] == {"device": other, "elf": crc, "match": False}
    rc, s, _ = info_json(capsys, str(capture(tmp_path, None)), "--elf", str(elfs.arm))
    assert s["build_id"] == {"device": None, "elf": crc, "match": None}
    rc, s, _ = info_json(capsys, str(capture(tmp_path, crc)))
    assert s["build_id"] == {"device": crc, "elf": None, "match": None}


def test_info_human_output_shows_verdict(
    elfs: Any, arm_table: SymbolTable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crc = arm_table.build_id
    assert crc is not None
    assert main(["info", str(capture(tmp_path, crc)), "--elf", str(elfs.arm)]) == 0
    assert "ELF matches firmware" in capsys.readouterr().out
    other = crc ^ 0xFFFF
    assert main(["info", str(capture(tmp_path, other)), "--elf", str(elfs.arm)]) == 0
    expected = f"ELF does not match the firmware (device 0x{other:08x}, ELF 0x{crc:08x})"
    assert expected in capsys.readouterr().out
    assert main(["info", str(capture(tmp_path, crc)), "--elf", str(elfs.arm_notext)]) == 0
    assert "build ID unknown (ELF has no .text section)" in capsys.readouterr().out
    assert main(["info", str(capture(tmp_path, crc))]) == 0
    assert "build ID unknown (no ELF given; use --elf)" in capsys.readouterr().out


def test_info_warns_once_for_elf_without_symtab(
    elfs: Any, arm_table: SymbolTable, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cap = capture(tmp_path, arm_table.build_id)
    rc, s, err = info_json(capsys, str(cap), "--elf", str(elfs.arm_stripped))
    assert rc == 0 and s["build_id"]["match"] is True
    assert err == f"mcuprof: warning: {elfs.arm_stripped}: {NO_SYMTAB_WARNING}\n"


def test_info_with_bad_elf_is_one_line_and_nonzero(tmp_path: Path) -> None:
    bad = tmp_path / "not.elf"
    bad.write_bytes(b"\x7fELF\x01\x01\x01" + bytes(range(256)) * 3)
    cap = capture(tmp_path, 1)
    proc = subprocess.run(
        [sys.executable, "-m", "mcuprof", "info", str(cap), "--elf", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"mcuprof: error: {bad}: not a readable ELF (")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_bundled_demo_elf(tools: Any, tmp_path: Path) -> None:
    # Built by the firmware layer; a missing file fails here rather than skipping.
    from mcuprof.paths import default_elf

    elf = default_elf()
    assert elf.is_file(), f"{elf} is missing: build it with `make firmware`"
    table = SymbolTable.from_elf(elf)
    assert table.is_arm and table.warnings == [] and len(table) > 0
    assert table.build_id == text_crc(tools, "arm-none-eabi-objcopy", elf, tmp_path)
    assert any(f.file and f.line for f in table.functions)
