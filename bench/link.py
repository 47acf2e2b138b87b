"""Link throughput: the simulator at 100,000 records/s over TCP into `mcuprof record`.

Prints records/s received, the recorder's CPU seconds, and whether a backlog
built up (device ring overflows / growing estimated loss), next to a naive
baseline measured in the same run: a byte-at-a-time pyserial reader.
Asserts nothing about time; run with `.venv/bin/python bench/link.py [SECONDS]`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import serial

from mcuprof.protocol import Command, ProfileData, ResponseDecoder, Status, encode_command

RATE = 100_000
BAUD = 20_000_000  # 100k records/s * ~14.4 bytes * 10 bits needs ~14.4 Mbaud
MCUPROF = [sys.executable, "-m", "mcuprof"]


def start_sim() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*MCUPROF, "simulate", "--tcp", "0", "--rate", str(RATE), "--baud", str(BAUD)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def stop_sim(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=10)


def run_record(url: str, seconds: float) -> dict[str, object]:
    out = Path(tempfile.mkdtemp()) / "bench.cap"
    args = ["--port", url, "--baud", str(BAUD), "--duration", str(seconds), "-o", str(out)]
    proc = subprocess.Popen(
        [*MCUPROF, "record", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    t0 = time.monotonic()
    stderr = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    progress = [
        (int(m[1].replace(",", "")), int(m[2]), int(m[3].replace(",", "")))
        for m in re.finditer(
            r"^records ([\d,]+)\s+[\d,]+/s.*device buffer (\d+)%\s+device overflows ([\d,]+)",
            stderr,
            re.M,
        )
    ]
    final = re.search(
        r"saved ([\d,]+) records \(([\d,]+) bytes\) in ([\d.]+) s.*captured ([\d,]+), "
        r"overflows ([\d,]+), crc errors ([\d,]+), est\. loss ([\d,]+)",
        stderr,
    )
    if proc.returncode != 0 or final is None:
        raise SystemExit(f"mcuprof record failed ({proc.returncode}):\n{stderr}")
    n = lambda i: int(final[i].replace(",", ""))  # noqa: E731
    out.unlink()
    return {
        "records": n(1),
        "bytes": n(2),
        "seconds": float(final[3]),
        "captured": n(4),
        "overflows": n(5),
        "crc": n(6),
        "loss": n(7),
        "cpu": usage.ru_utime + usage.ru_stime,
        "wall": wall,
        "progress": progress,
    }


def run_naive(url: str, seconds: float) -> dict[str, object]:
    """What a first attempt looks like: pyserial read(1) in a loop, one byte per feed."""
    ser = serial.serial_for_url(url, timeout=1.0)
    decoder = ResponseDecoder()
    ser.write(encode_command(Command.RESET_BUFFERS))
    ser.write(encode_command(Command.START_PROFILING))
    cpu0, t0 = time.process_time(), time.monotonic()
    records = 0
    while time.monotonic() - t0 < seconds:
        for event in decoder.feed(ser.read(1)):
            if isinstance(event, ProfileData):
                records += len(event)
    cpu = time.process_time() - cpu0
    elapsed = time.monotonic() - t0
    ser.write(encode_command(Command.STOP_PROFILING))
    ser.write(encode_command(Command.GET_STATUS))
    status = None
    deadline = time.monotonic() + 30
    while status is None and time.monotonic() < deadline:
        for event in decoder.feed(ser.read(4096)):
            if isinstance(event, ProfileData):
                records += len(event)
            elif isinstance(event, Status) and not event.is_profiling:
                status = event
    ser.close()
    return {
        "records": records,
        "seconds": elapsed,
        "cpu": cpu,
        "captured": status.records_captured if status else -1,
        "overflows": status.buffer_overflows if status else -1,
    }


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    print(f"simulator: {RATE:,} records/s over TCP, paced to {BAUD:,} baud, {seconds:g} s each")

    sim, url = start_sim()
    try:
        rec = run_record(url, seconds)
    finally:
        stop_sim(sim)
    rate = rec["records"] / rec["seconds"]  # type: ignore[operator]
    progress = rec["progress"]
    assert isinstance(progress, list)
    usage = [p[1] for p in progress]
    # A backlog shows as a device ring that fills up (and then overflows).
    grew = rec["overflows"] > 0 or (len(usage) >= 4 and usage[-1] > usage[1] + 20)  # type: ignore[operator]
    print(
        f"mcuprof record : {rate:>10,.0f} records/s received  "
        f"cpu {rec['cpu']:.2f} s for {rec['seconds']:.1f} s "
        f"({100 * rec['cpu'] / rec['seconds']:.0f}% of one core)  "  # type: ignore[operator]
        f"device captured {rec['captured']:,} overflows {rec['overflows']:,} "
        f"crc {rec['crc']} est. loss {rec['loss']:,}  backlog grew: {'YES' if grew else 'no'}"
    )
    print(f"  device ring usage % at each progress line: {usage}")

    sim, url = start_sim()
    try:
        naive = run_naive(url, seconds)
    finally:
        stop_sim(sim)
    nrate = naive["records"] / naive["seconds"]  # type: ignore[operator]
    print(
        f"naive read(1)  : {nrate:>10,.0f} records/s received  "
        f"cpu {naive['cpu']:.2f} s for {naive['seconds']:.1f} s "
        f"({100 * naive['cpu'] / naive['seconds']:.0f}% of one core)  "  # type: ignore[operator]
        f"device captured {naive['captured']:,} overflows {naive['overflows']:,}  "
        f"backlog grew: {'YES' if naive['overflows'] else 'no'}"
    )


if __name__ == "__main__":
    main()
