"""`mcuprof info` through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcuprof.cli import main
from mcuprof.protocol import (
    RECORD_DTYPE,
    Metadata,
    encode_metadata,
    encode_profile_data,
    encode_response,
)


def mcuprof(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcuprof", *args], capture_output=True, text=True, timeout=60
    )


def make_capture(path: Path) -> None:
    meta = Metadata(168_000_000, 2_000_000, 0x1234ABCD, "fw-2.1")
    recs = np.zeros(50, dtype=RECORD_DTYPE)
    recs["func_addr"] = 0x08000101
    recs["entry_time"] = np.arange(50) * 100 + 1_000
    recs["duration"] = 40
    # Entries 1000..5900 ticks, last exit 5940 ticks: 4940 ticks at 2 MHz = 2470 µs.
    packets = [encode_profile_data(recs[i : i + 20]) for i in range(0, 50, 20)]
    bad = bytearray(packets[1])
    bad[12] ^= 0xFF
    stream = encode_metadata(meta) + encode_response(1) + b"noise" + packets[0]
    path.write_bytes(stream + bytes(bad) + packets[2])


def test_json_summary_of_a_capture(tmp_path: Path) -> None:
    cap = tmp_path / "cap.bin"
    make_capture(cap)
    result = mcuprof("info", str(cap), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["metadata"] == {
        "mcu_clock_hz": 168_000_000,
        "timer_freq": 2_000_000,
        "elf_build_id": 0x1234ABCD,
        "fw_version": "fw-2.1",
    }
    assert summary["records"] == 30  # the corrupted middle packet held 20
    assert summary["packets"] == {
        "ack": 1,
        "nack": 0,
        "metadata": 1,
        "status": 0,
        "profile_data": 2,
    }
    assert summary["crc_errors"] == 1
    assert summary["skipped_bytes"] == len(b"noise") + 8 + 3 + 14 * 20
    assert summary["duration_us"] == pytest.approx((5940 - 1000) / 2)
    assert summary["build_id"]["device"] == 0x1234ABCD


def test_human_summary(tmp_path: Path) -> None:
    cap = tmp_path / "cap.bin"
    make_capture(cap)
    result = mcuprof("info", str(cap))
    assert result.returncode == 0
    assert "records       30" in result.stdout
    assert "fw-2.1" in result.stdout
    assert "crc 1" in result.stdout


@pytest.mark.parametrize("content", [b"", os.urandom(20_000)])
def test_empty_or_random_file_gives_an_empty_summary(tmp_path: Path, content: bytes) -> None:
    cap = tmp_path / "junk.bin"
    cap.write_bytes(content)
    result = mcuprof("info", str(cap), "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["records"] == 0
    assert summary["metadata"] is None
    assert summary["duration_us"] == 0


@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_unusable_path_is_one_line_on_stderr(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nope.bin" if kind == "missing" else tmp_path
    result = mcuprof("info", str(target))
    assert result.returncode != 0
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_unreadable_file_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    # Tests run as root, where chmod 000 does not stop a read: make the read fail instead.
    cap = tmp_path / "locked.bin"
    cap.write_bytes(b"x")

    real_open = os.open

    def deny(path, flags, *rest):  # type: ignore[no-untyped-def]
        if str(path) == str(cap):
            raise PermissionError(13, "Permission denied")
        return real_open(path, flags, *rest)

    monkeypatch.setattr(os, "open", deny)
    assert main(["info", str(cap)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"mcuprof: error: {cap}: permission denied"
