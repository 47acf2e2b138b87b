"""`mcuprof simulate` and `mcuprof record` as a user runs them: real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mcuprof.paths import default_elf
from mcuprof.protocol import Metadata, ProfileData, decode_stream

pytestmark = pytest.mark.timeout(120)

MCUPROF = [sys.executable, "-m", "mcuprof"]


def _simulate(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*MCUPROF, "simulate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    where = proc.stdout.readline().strip()
    assert where, proc.stderr.read() if proc.stderr else ""
    return proc, where


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def _record(port: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MCUPROF, "record", "--port", port, "-o", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=90,
    )


def _saved_records(stderr: str) -> int:
    line = next(x for x in stderr.splitlines() if "saved" in x)
    return int(line.split("saved ", 1)[1].split(" records", 1)[0].replace(",", ""))


@pytest.mark.parametrize("transport", ["--pty", "--tcp"])
def test_simulate_then_record_a_capture_info_reads(transport: str, tmp_path: Path) -> None:
    args = [transport] + (["0"] if transport == "--tcp" else [])
    sim, where = _simulate(*args, "--rate", "2000", "--baud", "921600")
    try:
        assert where.startswith("/dev/pts/" if transport == "--pty" else "socket://127.0.0.1:")
        cap = tmp_path / "cap.bin"
        res = _record(
            where, cap, "--baud", "921600", "--duration", "1", "--elf", str(default_elf())
        )
    finally:
        _stop(sim)
    assert res.returncode == 0, res.stderr
    assert "ELF matches firmware" in res.stderr
    assert "records" in res.stderr and "crc errors" in res.stderr  # the progress line
    events, stats = decode_stream(cap.read_bytes())
    assert stats.crc_errors == stats.malformed == stats.skipped_bytes == 0
    assert any(isinstance(e, Metadata) for e in events)
    assert stats.records == _saved_records(res.stderr) > 0
    assert "est. loss 0" in res.stderr.splitlines()[-1]
    info = subprocess.run([*MCUPROF, "info", str(cap)], capture_output=True, text=True, timeout=60)
    assert info.returncode == 0 and f"records       {stats.records:,}" in info.stdout


def test_record_ctrl_c_stops_the_device_and_closes_the_file(tmp_path: Path) -> None:
    cap = tmp_path / "cap.bin"
    proc = subprocess.Popen(
        [*MCUPROF, "record", "--port", "sim://?rate=1000", "--baud", "921600", "-o", str(cap)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    # Wait for the first progress line: it means profiling has started.
    while True:
        line = proc.stderr.readline()
        assert line, "record exited early"
        if line.startswith("records "):
            break
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=30) == 0, rest
    assert "interrupted; saved" in rest
    _, stats = decode_stream(cap.read_bytes())
    assert stats.records == _saved_records(rest) > 0
    assert stats.crc_errors == stats.malformed == 0
    # The stream ends cleanly: nothing was cut mid-packet.
    assert stats.skipped_bytes == 0


def test_record_warns_loudly_on_build_id_mismatch(tmp_path: Path) -> None:
    res = _record(
        "sim://?mismatch=1&rate=200",
        tmp_path / "c.bin",
        "--duration",
        "0.5",
        "--elf",
        str(default_elf()),
    )
    assert res.returncode == 0, res.stderr
    assert "WARNING: ELF does not match the firmware" in res.stderr
    assert "!!!!!!!!" in res.stderr


@pytest.mark.parametrize(
    "port", ["spy://sim://?file=/tmp/mcuprof-spy-cli", "alt://sim://", "loop://", "/etc/passwd"]
)
def test_record_refuses_bad_ports_in_one_line(port: str, tmp_path: Path) -> None:
    out = tmp_path / "c.bin"
    res = _record(port, out, "--duration", "1")
    assert res.returncode == 2
    assert res.stderr.startswith("mcuprof: error: ") and res.stderr.count("\n") == 1
    assert not out.exists()
    assert not os.path.exists("/tmp/mcuprof-spy-cli")


def test_record_keeps_what_arrived_when_the_device_vanishes(tmp_path: Path) -> None:
    # The device vanishes 5 s after the simulator boots: `mcuprof record` has to start and
    # connect before then, which on a loaded machine can take more than a second or two.
    sim, where = _simulate("--tcp", "0", "--rate", "2000", "--baud", "921600", "-O", "unplug=5")
    try:
        cap = tmp_path / "cap.bin"
        res = _record(where, cap, "--baud", "921600")
    finally:
        sim.wait(timeout=30)
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("mcuprof: error: device disconnected") and "records saved" in last
    saved = int(last.split("; ")[-1].split(" records")[0].replace(",", ""))
    events, stats = decode_stream(cap.read_bytes())
    assert stats.records == saved > 0
    recs = np.concatenate([e.records for e in events if isinstance(e, ProfileData)])
    assert len(recs) == saved


def test_simulate_rejects_bad_options() -> None:
    res = subprocess.run(
        [*MCUPROF, "simulate", "--tcp", "0", "-O", "ber=2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "ber" in res.stderr and res.stderr.count("\n") == 1
