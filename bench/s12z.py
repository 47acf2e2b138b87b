"""S12Z trace decoding: mcuprof's LineDecoder against a byte-at-a-time state machine, and
the command a user types (`mcuprof s12z CAPTURE --elf ELF`, process start included).

Run: .venv/bin/python bench/s12z.py [--lines N] [--repeat K]
Prints medians; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from mcuprof.protocol.s12z import LineDecoder
from mcuprof.s12z.flow import Branch, End, Interrupt, Jump, Start, Step, encode_flow
from mcuprof.s12z.sample import demo_elf, layout


def make_trace(n_lines: int, seed: int = 1) -> bytes:
    """A trace shaped like the demo's: mostly PTIB lines with a few direct COFs each,
    some PTVB, an occasional PTHF. Built in pieces and repeated, to be quick to make."""
    rng = random.Random(seed)
    demo = layout()
    targets = list(demo.addr.values())
    steps: list[Step] = [Start(demo["_Startup"])]
    for _ in range(10_000):
        steps += [Branch(rng.random() < 0.6) for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 40]))]
        if rng.random() < 0.1:
            steps.append(Interrupt(0xE6, rng.randrange(100, 3000)))
        else:
            steps.append(Jump(rng.choice(targets) + rng.randrange(0x20)))
    piece = encode_flow(steps)
    lines_in_piece = sum(1 for s in steps if not isinstance(s, Branch)) + sum(1 for _ in range(0))
    reps = max(1, n_lines // lines_in_piece)
    return piece * reps + encode_flow([Jump(demo["main"]), End("term")])


class ByteAtATime:
    """The way a host tool is usually written: one state transition per byte, the line's
    fields assembled as its bytes arrive, one tuple per line."""

    SIZE: ClassVar[dict[int, int]] = {0: 4, 1: 8, 2: 5, 3: 8, 7: 1}

    def __init__(self) -> None:
        self.need = 0
        self.line = bytearray()
        self.lines: list[tuple[int, int, int, int]] = []
        self.bad = 0

    def feed(self, data: bytes) -> None:
        size = self.SIZE
        for byte in data:
            if not self.need:
                n = size.get(byte & 0x0F)
                if n is None:
                    self.bad += 1
                    continue
                self.line = bytearray((byte,))
                self.need = n - 1
                if not self.need:
                    self.lines.append((byte, 0, 0, 0))
                continue
            self.line.append(byte)
            self.need -= 1
            if not self.need:
                b = self.line
                info = b[0]
                fmt = info & 0x0F
                if fmt == 0:
                    self.lines.append((info, 0, b[1] | b[2] << 8 | b[3] << 16, 0))
                    continue
                word = b[1] | b[2] << 8 | b[3] << 16 | b[4] << 24
                if fmt == 1:
                    self.lines.append((info, word, b[5] | b[6] << 8 | b[7] << 16, 0))
                elif fmt == 3:
                    self.lines.append((info, word, b[5], b[6] | b[7] << 8))
                else:
                    self.lines.append((info, word, 0, 0))


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    data = make_trace(args.lines)
    dec = LineDecoder()
    dec.feed(data)
    dec.close()
    n = dec.stats.good
    print(f"trace: {len(data):,} bytes, {n:,} lines; load average {os.getloadavg()[0]:.1f}")

    def ours() -> None:
        d = LineDecoder()
        d.feed(data)
        d.close()

    def ours_chunked() -> None:
        d = LineDecoder()
        for i in range(0, len(data), 1 << 20):
            d.feed(data[i : i + (1 << 20)])
        d.close()

    t_ours = timed(ours, args.repeat)
    t_chunked = timed(ours_chunked, args.repeat)
    # The baseline is slow: time it on a slice and scale per line.
    cut = min(len(data), 2_000_000)
    base = ByteAtATime()
    t0 = time.perf_counter()
    base.feed(data[:cut])
    t_base = time.perf_counter() - t0
    base_rate = len(base.lines) / t_base
    for label, t in (("one feed", t_ours), ("1 MiB feeds", t_chunked)):
        print(f"LineDecoder, {label + ':':17}median {t:.3f} s = {n / t / 1e6:.2f} M lines/s")
    print(
        f"byte-at-a-time baseline:      {base_rate / 1e6:.2f} M lines/s "
        f"({len(base.lines):,} lines in {t_base:.3f} s); speed-up {n / t_ours / base_rate:.0f}x"
    )
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "big.trace"
        elf = Path(tmp) / "demo.elf"
        trace.write_bytes(data)
        elf.write_bytes(demo_elf())
        cmd = [sys.executable, "-m", "mcuprof", "s12z", str(trace), "--elf", str(elf)]
        cmd += ["--bus-hz", "32e6"]
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}

        def cli() -> None:
            subprocess.run(cmd, check=True, capture_output=True, env=env)

        t_cli = timed(cli, max(3, args.repeat // 2))
        small = Path(tmp) / "demo.trace"
        small.write_bytes(encode_flow([Start(0xFE0000), Jump(0xFE0040), End("term")]))
        t_small = timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "mcuprof", "s12z", str(small), "--elf", str(elf)],
                check=True,
                capture_output=True,
                env=env,
            ),
            3,
        )
    print(
        f"`mcuprof s12z` end to end:    median {t_cli:.3f} s for {n:,} lines "
        f"({n / t_cli / 1e6:.2f} M lines/s including process start, ELF and report)"
    )
    print(f"`mcuprof s12z` on a 3-line trace: median {t_small:.3f} s (process start, ELF)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
