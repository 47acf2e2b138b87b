"""Every whole-capture command at scale, run as a user runs it (issue 13).

Makes captures of N records in three shapes and runs each command in a subprocess
(process start included), printing wall time, records/s and peak RSS (bytes/record)
beside the same run's baseline: a subprocess that only reads and decodes the capture
(``decode``), i.e. decoder speed end to end.

Shapes: ``regular`` (a repeating six-call tree), ``reset`` (the same 20 records again and
again: time jumps back at every packet, as a target that keeps resetting sends) and
``unique`` (every child call has a stack of its own, over 4,096 functions).

Run: .venv/bin/python bench/scale.py [--records 1M,10M] [--huge] [--shapes ...] [--repeat K]
Defaults: 1M and 10M records; ``--huge`` adds 30M (long). Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data

PER_PACKET = 20
COMMANDS: dict[str, list[str]] = {
    "decode (baseline)": [
        "-c",
        "import sys; from mcuprof.protocol import ResponseDecoder; d = ResponseDecoder(); "
        "f = open(sys.argv[1], 'rb')\n"
        "while (b := f.read(1 << 22)): d.feed(b)\n"
        "d.close(); print(d.stats.records)",
    ],
    "info": ["-m", "mcuprof", "info"],
    "export folded": ["-m", "mcuprof", "export", "-f", "folded", "-o", "@OUT@"],
    "export csv": ["-m", "mcuprof", "export", "-f", "csv", "-o", "@OUT@"],
    "export svg": ["-m", "mcuprof", "export", "-f", "svg", "-o", "@OUT@"],
    "export callgrind": ["-m", "mcuprof", "export", "-f", "callgrind", "-o", "@OUT@"],
    "export speedscope": ["-m", "mcuprof", "export", "-f", "speedscope", "-o", "@OUT@"],
    "export chrome": ["-m", "mcuprof", "export", "-f", "chrome", "-o", "@OUT@"],
}


def _six_call_tree(n: int) -> np.ndarray:
    """main > (a > (b, c), d > e), repeated; records in exit order, 32-bit wrapped."""
    # (depth, entry offset, duration, function) of one period, in exit order
    period = [(2, 2, 3, 2), (2, 6, 3, 3), (1, 1, 9, 1), (2, 12, 2, 5), (1, 11, 5, 4), (0, 0, 18, 0)]
    reps = -(-n // len(period))
    p = np.array(period, np.int64)
    base = np.repeat(np.arange(reps, dtype=np.int64) * 20, len(period))
    recs = np.empty(reps * len(period), RECORD_DTYPE)
    recs["depth"] = np.tile(p[:, 0], reps)
    recs["entry_time"] = (base + np.tile(p[:, 1], reps)) & 0xFFFFFFFF
    recs["duration"] = np.tile(p[:, 2], reps)
    recs["func_addr"] = 0x0800_0101 + 0x40 * np.tile(p[:, 3], reps)
    return recs[:n]


def _unique_stacks(n: int) -> np.ndarray:
    """Root calls with one child each, over 4,096 functions, where no (root, child) pair
    repeats: every child record has a stack of its own (up to 16.7M of them)."""
    k = n // 2
    i = np.arange(k)
    recs = np.empty(2 * k, RECORD_DTYPE)
    t = np.arange(k, dtype=np.int64) * 10
    recs["depth"][0::2], recs["depth"][1::2] = 1, 0
    recs["entry_time"][0::2], recs["entry_time"][1::2] = (t + 1) & 0xFFFFFFFF, t & 0xFFFFFFFF
    recs["duration"][0::2], recs["duration"][1::2] = 5, 8
    recs["func_addr"][0::2] = 0x0800_0000 + 4 * (i % 4096)
    recs["func_addr"][1::2] = 0x0800_0000 + 4 * (i // 4096 % 4096)
    return recs


def make_capture(path: Path, shape: str, n: int) -> None:
    if shape == "reset":
        one = _six_call_tree(PER_PACKET)
        packet = encode_profile_data(one)
        body = packet * (n // PER_PACKET)
    else:
        recs = _six_call_tree(n) if shape == "regular" else _unique_stacks(n)
        step = PER_PACKET * 5000
        body = b"".join(
            b"".join(
                encode_profile_data(chunk[i : i + PER_PACKET])
                for i in range(0, len(chunk), PER_PACKET)
            )
            for chunk in (recs[j : j + step] for j in range(0, len(recs), step))
        )
    path.write_bytes(encode_metadata(Metadata(168_000_000, 1_000_000, 0, "scale")) + body)


def run(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one subprocess."""
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err[-400:]}")
    return took, usage.ru_maxrss * 1024


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="1M,10M", help="comma-separated sizes (1M, 10M...)")
    ap.add_argument("--huge", action="store_true", help="add a 30M-record capture (long)")
    ap.add_argument("--shapes", default="regular,reset,unique")
    ap.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated subset")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (median)")
    args = ap.parse_args()
    sizes = [_count(s) for s in args.records.split(",") if s]
    if args.huge:
        sizes.append(30_000_000)
    commands = [c.strip() for c in args.commands.split(",")]
    print(
        "| records | shape | command | time | records/s | peak RSS | bytes/record "
        "| bytes/record over baseline |"
    )
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for shape in args.shapes.split(","):
                path = Path(tmp) / f"{shape}-{n}.bin"
                make_capture(path, shape, n)
                base_rss = None
                for name in commands:
                    out = str(Path(tmp) / "out")  # a regular file: what users write to
                    argv = [*COMMANDS[name], str(path)]
                    if argv[0] == "-m" and argv[2] == "export":
                        argv = [*COMMANDS[name][:3], str(path), *COMMANDS[name][3:]]
                        argv = [out if a == "@OUT@" else a for a in argv]
                    runs = [run(argv) for _ in range(max(1, args.repeat))]
                    took = statistics.median(r[0] for r in runs)
                    rss = statistics.median(r[1] for r in runs)
                    if base_rss is None:
                        base_rss = rss  # the first command is the decode baseline
                    print(
                        f"| {n:,} | {shape} | `{name}` | {took:.2f} s | {n / took / 1e6:.2f}M "
                        f"| {rss / 2**20:,.0f} MB | {rss / n:.0f} | {(rss - base_rss) / n:.0f} |",
                        flush=True,
                    )
                path.unlink()
                Path(tmp, "out").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
