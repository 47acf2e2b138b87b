"""Opening a stored QS session for replay (issue 13): each frame's due second.

Times ``link.qs_replay._due_seconds`` (records of a fixed layout read as columns)
beside the per-record walk it replaced (every record decoded to a Python object), in
the same run, on captures made by bench/qs_scale.py, and checks they agree. Also the
QSReplayDevice construction (since issue 26 it reads nothing: the recording is
decoded a piece at a time as it plays, so this is near 0; bench/qs_hostile.py
measures a replay's start and memory). Medians; asserts nothing
about time.

Run: .venv/bin/python bench/qs_replay.py [--frames 1M] [--shapes dpp,sim] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np

from mcuprof.link.qs_replay import QSReplayDevice, _due_seconds
from mcuprof.protocol.qs import QSDecoder, Record

HERE = Path(__file__).resolve().parent


def per_record(data: bytes, n: int, tick_hz: int) -> np.ndarray:
    """The replaced implementation: decode every record, walk the timestamps."""
    due = np.zeros(n)
    t = 0
    last = None
    for e in QSDecoder().feed(data):
        if e.__class__ is not Record or e.timestamp is None or e.index >= n:
            continue
        wrap = 1 << (8 * e.config.tstamp_size)
        if last is not None:
            step = (e.timestamp - last) % wrap
            t += step if step < wrap // 2 else 0
        last = e.timestamp
        due[e.index] = t
    return np.maximum.accumulate(due) / tick_hz if n else due


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", default="1M")
    ap.add_argument("--shapes", default="dpp,sim")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = _count(args.frames)
    tmp = Path(tempfile.mkdtemp())
    print("| shape | frames | MB | per-record walk | columns | x | QSReplayDevice |")
    print("|---|---|---|---|---|---|---|")
    for shape in args.shapes.split(","):
        path = tmp / f"{shape}.bin"
        subprocess.run(
            [sys.executable, str(HERE / "qs_scale.py"), "--make", shape, str(n), str(path)],
            check=True,
        )
        data = path.read_bytes()
        frames = data.count(b"\x7e")
        assert (
            _due_seconds(data, frames, 10**6).tobytes() == per_record(data, frames, 10**6).tobytes()
        )
        old = _median(partial(per_record, data, frames, 10**6), args.repeat)
        new = _median(partial(_due_seconds, data, frames, 10**6), args.repeat)
        dev = _median(partial(QSReplayDevice, data, None, clock=time.monotonic), args.repeat)
        print(
            f"| {shape} | {frames:,} | {len(data) / 1e6:.0f} | {old:.2f} s | {new:.3f} s "
            f"| {old / new:.0f} | {dev:.2f} s |",
            flush=True,
        )
        path.unlink()


if __name__ == "__main__":
    main()
