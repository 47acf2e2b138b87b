"""Cost of the mcuqs QS encoder on the Cortex-M4, measured on the QS demo under QEMU.

QEMU runs the firmware one instruction per translation block (-singlestep) and logs
every block it executes (-d exec,nochain), so each log line is one executed instruction
with the function it belongs to. A call counts from the first instruction of a public
mcuqs_* function until control leaves mcuqs and the port functions it calls. The wire
bytes per record type come from the TCP stream captured at the same time.

Run: .venv/bin/python bench/qs_firmware.py [--elf ELF] [--seconds S]
Prints medians; asserts nothing. The log is about 15 MB per second of run time.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import socket
import statistics
import subprocess
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from mcuprof.protocol.qs import record_name
from mcuprof.qemu import default_qs_elf, find_qemu, free_port, qemu_argv

_LINE = re.compile(r"\] (\S+)$")
_INTERNAL = {
    "put_record",
    "dict",
    "arg",
    "next_frame",
    "stuff",
    "pack",
    "pack_ptr",
    "record_obj",
    "qs_id",
}


def _in_library(name: str) -> bool:
    return name.startswith(("mcuqs_", "mcuprof_port_")) or name in _INTERNAL


def run(elf: Path, seconds: float, log: Path) -> bytes:
    port = free_port()
    argv = qemu_argv(elf, port, qemu=find_qemu())
    argv += ["-singlestep", "-d", "exec,nochain", "-D", str(log)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise SystemExit("QEMU did not listen")
        data = bytearray()
        sock.settimeout(0.1)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            with contextlib.suppress(TimeoutError):
                data += sock.recv(65536)
        sock.close()
        return bytes(data)
    finally:
        proc.terminate()
        proc.wait()


def instructions(log: Path) -> tuple[dict[str, list[int]], Counter[str]]:
    """Per public function: instructions per call; and instructions per function overall."""
    per_call: dict[str, list[int]] = defaultdict(list)
    total: Counter[str] = Counter()
    current, count, prev = None, 0, None
    with log.open() as f:
        for line in f:
            m = _LINE.search(line.rstrip())
            if m is None:
                continue
            name = m.group(1)
            total[name] += 1
            if current is not None:
                if _in_library(name):
                    count += 1
                else:
                    per_call[current].append(count)
                    current = None
            if current is None and name.startswith("mcuqs_") and not _in_library(prev or ""):
                current, count = name, 1
            prev = name
    return per_call, total


def wire_bytes(data: bytes) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for piece in data.split(b"\x7e")[:-1]:
        raw = piece.replace(b"\x7d\x5e", b"\x7e").replace(b"\x7d\x5d", b"\x7d")
        if len(raw) >= 3:
            out[raw[1]].append(len(piece) + 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elf", type=Path, default=default_qs_elf())
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "exec.log"
        data = run(args.elf, args.seconds, log)
        per_call, total = instructions(log)
    print(f"{'function':<20} {'calls':>6} {'median':>7} {'min':>5} {'max':>5}  instructions")
    for name, counts in sorted(per_call.items(), key=lambda kv: -len(kv[1])):
        print(
            f"{name:<20} {len(counts):>6} {statistics.median(counts):>7} "
            f"{min(counts):>5} {max(counts):>5}"
        )
    sent = len(data)
    tx = total["mcuqs_poll"] + total["mcuprof_port_putc"] + total["next_frame"]
    print(f"\nmcuqs_poll (framing + sending, idle time): {tx / max(sent, 1):.1f} instructions/byte")
    frames = wire_bytes(data)
    n = sum(len(v) for v in frames.values())
    print(f"\n{sent} bytes in {n} frames: {sent / max(n, 1):.2f} bytes per frame on the wire")
    print(f"{'record':<28} {'frames':>6} {'bytes (median)':>15}")
    for rec, sizes in sorted(frames.items(), key=lambda kv: -len(kv[1])):
        print(f"{record_name(rec):<28} {len(sizes):>6} {statistics.median(sizes):>15}")


if __name__ == "__main__":
    main()
