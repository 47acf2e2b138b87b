"""`mcuprof s12z` as a user runs it (a subprocess), against the demo firmware and trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mcuprof.s12z.elfwrite import Section, Symbol, write_elf
from mcuprof.s12z.flow import End, Error, Interrupt, Jump, Start, encode_flow


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", "s12z", *args], capture_output=True, text=True
    )


def test_report_names_functions_and_isrs(demo_files) -> None:
    elf, trace = demo_files
    r = run(str(trace), "--elf", str(elf), "--bus-hz", "32e6")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "514 lines (PTS 1, PTIB 470, PTHF 0, PTVB 43, PTW 0)" in out
    assert "direct COFs: 1,559 (taken 1,076, not taken 483)" in out
    assert "start: 0xfe0000 _Startup" in out
    assert "Timer0_ISR @ 0xfe0220" in out and "SCI0_ISR @ 0xfe0240" in out
    assert "end: TBOVF at byte 4100: trace buffer overflow" in out
    assert "µs" in out and r.stderr == ""


def test_json_agrees_with_text_and_sums(demo_files) -> None:
    elf, trace = demo_files
    r = run(str(trace), "--elf", str(elf), "--json")
    a = json.loads(r.stdout)
    assert sum(f["entries"] for f in a["functions"]) == a["indirect"] == a["lines"]["PTIB"]
    assert sum(d["count"] for d in a["destinations"]) == a["indirect"]
    assert abs(sum(f["share"] for f in a["functions"]) - 100) < 0.01
    assert sum(v["count"] for v in a["interrupts"]["vectors"]) == a["lines"]["PTVB"]
    text = run(str(trace), "--elf", str(elf)).stdout
    for f in a["functions"]:
        assert f"{f['entries']:,}" in text and f["function"] in text
    assert a["time"]["us"] is None and "give --bus-hz" in text
    # Without an ELF the destinations stay raw 24-bit addresses.
    bare = json.loads(run(str(trace), "--json").stdout)
    assert bare["functions"][0]["function"].startswith("0xfe")
    assert bare["interrupts"]["vectors"][0]["name"] == "vector 0x1cc"


def test_vector_base_option_and_missing_table(tmp_path: Path) -> None:
    # The vector table sits inside .rodata, not in a section of its own.
    table = bytearray(0x40)
    table[0x10:0x14] = (0x00C00010).to_bytes(4, "big")  # offset 0x10 = vector byte 0x08
    text = Section(".text", 0xC00000, bytes(0x40), executable=True)
    rodata = Section(".rodata", 0xD00000, bytes(table))
    elf = tmp_path / "fw.elf"
    elf.write_bytes(write_elf([text, rodata], [Symbol("isr", 0xC00010, 0x10)]))
    trace = tmp_path / "t.bin"
    trace.write_bytes(
        encode_flow([Start(0xC00000), Interrupt(0x08, 70_000), Jump(0xC00004), End("term")])
    )
    a = json.loads(run(str(trace), "--elf", str(elf), "--vector-base", "0xD00000", "--json").stdout)
    [v] = a["interrupts"]["vectors"]
    assert (v["name"], v["isr"], v["address"]) == ("isr", "0xc00010", "0xd00010")
    assert a["end"]["term"] and a["end"]["tsovf"] == 1 and a["time"]["cycles"] == 70_000
    # No .vectors section and nothing at 0xFFFE00: vectors stay unnamed, no error.
    r = run(str(trace), "--elf", str(elf), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["interrupts"]["vectors"][0]["name"] == (
        "vector 0x010"
    )
    r = run(str(trace), "--elf", str(elf), "--vector-base", "0xE00000")
    assert r.returncode == 0
    assert "no section of the ELF holds the vector table at 0xe00000" in r.stderr


def test_bad_input_is_one_line_and_bad_lines_are_reported(tmp_path: Path) -> None:
    r = run(str(tmp_path / "missing.bin"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such file" in r.stderr
    trace = tmp_path / "t.bin"
    trace.write_bytes(bytes([0x05, 0x01, 0, 0, 0, 0, 1, 2, 3]) + encode_flow([Error(3)]) + b"\x01")
    r = run(str(trace))
    assert r.returncode == 0
    assert "reserved 1, malformed 1, truncated 1" in r.stdout
    assert "bad line at byte 0: reserved: INFO 0x05: reserved line format 5" in r.stdout
    assert "PTW errors: code 3: 1" in r.stdout
    assert "no TERM or TBOVF line" in r.stdout
    r = run(str(trace), "--elf", str(trace))
    assert r.returncode == 2 and "not a readable ELF" in r.stderr
    r = run(str(trace), "--vector-base", "0x10")
    assert r.returncode == 2 and "--vector-base needs --elf" in r.stderr
    r = run(str(trace), "--bus-hz", "fast")
    assert r.returncode == 2 and "not a frequency" in r.stderr
