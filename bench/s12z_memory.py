"""Peak memory of `mcuprof s12z TRACE --json` (issue 35 F12), process start included, on
traces of the issue's sizes and on shapes that stress each thing the analysis keeps:
reserved lines (a bad line a byte), a valid demo-like trace, PTIB lines to random 24-bit
destinations (the counts per address), PTVB lines with random stamps (the gaps, spilled to
disk past MAX_HELD_GAPS), PTS lines (start PCs). The bound is 256 MiB (docs/limits.md).

Run: .venv/bin/python bench/s12z_memory.py [--mib 64]
Prints peak RSS and time per trace; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mcuprof.s12z.flow import encode_flow
from mcuprof.s12z.sample import demo_flow

PROBE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def _lines(n: int, width: int, info) -> np.ndarray:
    out = np.zeros((n, width), np.uint8)
    out[:, 0] = info
    return out


def traces(mib: int, rng: np.random.Generator) -> dict[str, bytes]:
    size = mib << 20
    demo = encode_flow(demo_flow())
    n8 = size // 8
    ptib = _lines(n8, 8, 0x01)
    ptib[:, 1] = 1
    ptib[:, 5:8] = rng.integers(0, 256, (n8, 3))
    ptvb = _lines(n8, 8, 0x03 | 0x40 * (rng.random(n8) < 0.3))
    ptvb[:, 1] = 1
    ptvb[:, 5:8] = rng.integers(0, 256, (n8, 3))
    pts = _lines(size // 4, 4, 0x00)
    pts[:, 1:4] = rng.integers(0, 256, (size // 4, 3))
    return {
        "reserved lines (half the size)": bytes([0x04, 0x05, 0x06, 0x08]) * (size // 8),
        "valid demo-like": demo * (size // len(demo) + 1),
        "PTIB, random destinations": ptib.tobytes(),
        "PTVB, random stamps": ptvb.tobytes(),
        "PTS, random PCs": pts.tobytes(),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64, help="trace size in MiB")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in traces(args.mib, np.random.default_rng(1)).items():
            path = Path(tmp) / "trace.bin"
            path.write_bytes(data)
            del data
            argv = [sys.executable, "-c", PROBE, sys.executable, "-m", "mcuprof", "s12z"]
            t = time.perf_counter()
            out = subprocess.run([*argv, str(path), "--json"], capture_output=True, text=True)
            took = time.perf_counter() - t
            peak = int(out.stdout) >> 10 if out.returncode == 0 else -1
            size = path.stat().st_size >> 20
            print(f"{name:32} {size:5} MiB  peak {peak:5} MiB  {took:6.1f} s")


if __name__ == "__main__":
    main()
