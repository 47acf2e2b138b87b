"""QS decoder throughput: mcuprof's numpy framer and decoder against a byte-at-a-time
QSPY-style parser, plus `mcuprof qs decode` end to end against the same pipeline
written the simple way.

The capture is the reference DPP stream (../shared/reference/qs/dpp-posix64.bin): its
start-up frames (target info, dictionaries), then its running part repeated with
fresh sequence numbers up to --frames frames.

Run: .venv/bin/python bench/qs.py [--frames N] [--repeat K]
Prints medians of CPU time (this process, or the child for commands) and of wall time: on a
shared machine the CPU time is the steadier figure. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcuprof.protocol.qs import (
    ByteFramer,
    Framer,
    QSDecoder,
    QSFrame,
    encode_frame,
)
from mcuprof.qs.rtc import STEP_RECORDS
from mcuprof.qs.text import event_lines
from mcuprof.sources.qs import QSSource

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "qs" / "dpp-posix64.bin"
STARTUP = 87  # frames before the application runs (QS_QF_RUN is frame 86)


def make_capture(n_frames: int) -> bytes:
    frames = [e for e in Framer().feed(REFERENCE.read_bytes()) if isinstance(e, QSFrame)]
    head = [(f.rec, f.payload) for f in frames[:STARTUP]]
    body = [(f.rec, f.payload) for f in frames[STARTUP:]]
    parts = [encode_frame(i + 1, rec, p) for i, (rec, p) in enumerate(head)]
    for i in range(n_frames - len(head)):
        rec, p = body[i % len(body)]
        parts.append(encode_frame(len(head) + i + 1, rec, p))
    return b"".join(parts)


def source_records(data: bytes) -> None:
    """What export, import and compare run on a QS capture, in load_stream's chunks."""
    source = QSSource(events=False)
    for start in range(0, len(data), 1 << 22):
        source.feed(data[start : start + (1 << 22)])
    source.close()


def byte_decode(data: bytes) -> list[str]:
    """The simple pipeline: QSPY's per-byte framing, then one record at a time."""
    decoder = QSDecoder()
    lines: list[str] = []
    for ev in ByteFramer().feed(data):
        events = decoder._decode_other(ev) if isinstance(ev, QSFrame) else [ev]
        for e in events:
            lines.extend(event_lines(e))
    return lines


def median_time(fn, repeat: int) -> tuple[float, float]:
    """Median (CPU seconds, wall seconds) of ``repeat`` calls."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median (child CPU seconds, wall seconds), process start included."""
    cpu, wall = [], []
    for _ in range(repeat):
        c, w = _children_cpu(), time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu.append(_children_cpu() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--byte-cli":
        sys.stdout.write("\n".join(byte_decode(Path(sys.argv[2]).read_bytes())) + "\n")
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    data = make_capture(args.frames)
    n = args.frames
    print(f"capture: {n} frames, {len(data) / 1e6:.1f} MB (DPP, 64-bit target)")

    def rate(label: str, times: tuple[float, float], what: str = "frames") -> None:
        cpu, wall = times
        print(
            f"  {label:<48} {n / cpu / 1e6:6.2f} M {what}/s CPU ({cpu * 1e3:7.1f} ms),"
            f" {n / wall / 1e6:6.2f} M/s wall"
        )

    print("inner functions (median of", args.repeat, "runs):")
    rate("baseline: byte-at-a-time framer", median_time(lambda: ByteFramer().feed(data), 3))
    rate(
        "Framer.feed_batch (numpy columns)",
        median_time(lambda: Framer().feed_batch(data), args.repeat),
    )
    rate(
        "Framer.feed (one QSFrame tuple each)",
        median_time(lambda: Framer().feed(data), args.repeat),
    )
    rate("QSDecoder.feed_columns (typed columns)",
         median_time(lambda: QSDecoder().feed_columns(data), args.repeat), "records")  # fmt: skip
    rate("QSDecoder.feed_select (RTC records as columns)",
         median_time(lambda: QSDecoder().feed_select(data, STEP_RECORDS), args.repeat))  # fmt: skip
    rate("QSSource(events=False): frames -> Profile records",
         median_time(lambda: source_records(data), args.repeat))  # fmt: skip
    rate("QSDecoder.feed (one Record each)",
         median_time(lambda: QSDecoder().feed(data), args.repeat), "records")  # fmt: skip

    def text() -> None:
        for e in QSDecoder().feed(data):
            event_lines(e)

    rate("feed + QSPY text lines", median_time(text, 3), "records")
    baseline = median_time(lambda: byte_decode(data), 3)
    rate("baseline: byte framer + per-record decode + text", baseline, "records")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dpp.bin"
        path.write_bytes(data)
        mcuprof = str(Path(sys.executable).with_name("mcuprof"))
        print("end to end (subprocess, process start included, median of 3):")
        rate(
            "mcuprof qs decode CAPTURE", run_cli([mcuprof, "qs", "decode", str(path)], 3), "records"
        )
        rate("mcuprof qs decode CAPTURE --json",
             run_cli([mcuprof, "qs", "decode", str(path), "--json"], 3), "records")  # fmt: skip
        baseline_cli = run_cli([sys.executable, __file__, "--byte-cli", str(path)], 3)
        rate("baseline: byte-at-a-time pipeline, same text", baseline_cli, "records")


if __name__ == "__main__":
    main()
