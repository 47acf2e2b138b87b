"""QS captures at scale through the whole-capture commands, run as a user runs them
(issue 13 for the QS source).

Captures (made in a subprocess, so this process never holds one):

- ``dpp``: the reference DPP capture (../shared/reference/qs/dpp-posix64.bin, a 64-bit
  QP/C 7.4 target): its start-up frames, then its running part repeated with
  consecutive sequence numbers and timestamps moved on each time (time runs forward, as
  on the target, and wraps at 32 bits), up to N frames;
- ``sim``: what the simulated 32-bit QP target (link/qs_sim.py) sends, on a 4 Mbaud
  link, until it has sent N frames (its 32-bit µs timestamps wrap every 71 minutes; the
  simulator makes about 70k frames/s, so 10M take minutes to make).

Each command runs in a subprocess (process start included); every cell gives wall time
(frames/s; CPU time) and peak RSS per frame. The baseline, in the same run, is the
framing alone: a subprocess that reads the capture in 4 MB chunks into
``Framer.feed_batch``. ``--before DIR`` runs every command with the code of another
checkout too (``DIR/backend`` first on the path), interleaved, and prints
"before → after".

Run: .venv/bin/python bench/qs_scale.py [--frames 1M,10M] [--shapes dpp,sim]
     [--commands ...] [--repeat K] [--before DIR]
Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import _count, compile_trees, medians

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "qs" / "dpp-posix64.bin"
STARTUP = 87  # frames before the DPP application runs (QS_QF_RUN is frame 86)

FRAMING = (
    "import sys; from mcuprof.protocol.qs import Framer; fr = Framer(); "
    "f = open(sys.argv[1], 'rb')\n"
    "while (b := f.read(1 << 22)): fr.feed_batch(b)\n"
    "fr.close(); print(fr.stats.frames)"
)
_FORMATS = ("folded", "csv", "speedscope", "chrome", "callgrind")
_EXPORT = "-m mcuprof export @CAP@ --kind qs -o @OUT@ -f"
COMMANDS: dict[str, list[str]] = {
    "framing (baseline)": ["-c", FRAMING, "@CAP@"],
    **{f"export {f}": [*_EXPORT.split(), f] for f in _FORMATS},
    "compare": ["-m", "mcuprof", "compare", "@CAP@", "@CAP@"],
    "sessions import": [
        *["-m", "mcuprof", "sessions", "import", "@CAP@"],
        *["--kind", "qs", "--data-dir", "@DIR@"],
    ],
    "qs rtc": ["-m", "mcuprof", "qs", "rtc", "@CAP@"],
    "qs rtc --folded": ["-m", "mcuprof", "qs", "rtc", "@CAP@", "--folded"],
    "qs margins": ["-m", "mcuprof", "qs", "margins", "@CAP@"],
    "qs decode": ["-m", "mcuprof", "qs", "decode", "@CAP@"],
}


def _dpp(n: int) -> bytes:
    """The reference's start-up, then its running part again and again, each time with
    the timestamps moved on by the part's length: time runs forward as on the target
    (wrapping at 32 bits), sequence numbers run on. Encoded with numpy, a block of
    repetitions at a time."""
    from mcuprof.protocol.qs import QSDecoder, Record, encode_frame

    events = QSDecoder().feed(REFERENCE.read_bytes())
    records = [e for e in events if isinstance(e, Record)]
    head, body = records[:STARTUP], records[STARTUP:]
    out = [b"".join(encode_frame(i + 1, r.rec, r.raw[2:-1]) for i, r in enumerate(head))]
    size = body[0].config.tstamp_size
    stamps = [r.timestamp for r in body if r.timestamp is not None]
    period = stamps[-1] - stamps[0] + (stamps[-1] - stamps[0]) // len(stamps)
    # One repetition, unstuffed (seq, rec, data, checksum), and where its fields are.
    template = np.frombuffer(b"".join(r.raw for r in body), dtype=np.uint8)
    lengths = np.array([len(r.raw) for r in body])
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    has_ts = np.array([r.timestamp is not None and r.rec != 64 for r in body])
    ts0 = np.array([r.timestamp or 0 for r in body], dtype=np.int64)
    left = n - len(head)
    seq = len(head) + 1
    rep = 0
    while left > 0:
        reps = min(64, -(-left // len(body)))
        raw = np.tile(template, reps)
        frame_at = (starts[None, :] + len(template) * np.arange(reps)[:, None]).reshape(-1)
        frame_len = np.tile(lengths, reps)
        count = len(frame_at)
        raw[frame_at] = (seq + np.arange(count)) & 0xFF
        shift = np.repeat(np.arange(rep, rep + reps, dtype=np.int64) * period, len(body))
        ts = (np.tile(ts0, reps) + shift) & ((1 << (8 * size)) - 1)
        with_ts = np.tile(has_ts, reps)
        for b in range(size):
            raw[frame_at[with_ts] + 2 + b] = (ts[with_ts] >> (8 * b)) & 0xFF
        ends = frame_at + frame_len - 1  # the checksum byte
        raw[ends] = 0
        sums = np.add.reduceat(raw, frame_at, dtype=np.uint8)
        raw[ends] = ~sums
        # Escape 0x7D and 0x7E, then a flag after each frame.
        special = (raw == 0x7D) | (raw == 0x7E)
        wire = np.repeat(raw, 1 + special.astype(np.int64))
        first = np.cumsum(1 + special.astype(np.int64)) - 1 - special
        wire[first[special]] = 0x7D
        wire[first[special] + 1] ^= 0x20
        flag_at = np.cumsum(1 + special.astype(np.int64))[ends]
        wire = np.insert(wire, flag_at, 0x7E)
        keep = min(count, left)
        if keep < count:
            wire = wire[: flag_at[keep - 1] + keep]
        out.append(wire.tobytes())
        left -= keep
        seq += keep
        rep += reps
    return b"".join(out)


def _sim(n: int) -> bytes:
    from mcuprof.link.qs_sim import QSSimDevice

    t = [0.0]

    class Opts:
        baud = 4_000_000
        seed = 1

    dev = QSSimDevice(Opts(), clock=lambda: t[0])
    out = bytearray()
    frames = 0
    while frames < n:
        t[0] += 0.005
        piece = dev.poll()
        frames += piece.count(b"\x7e")
        out += piece
    # cut after the n-th frame
    cut = -1
    for _ in range(n):
        cut = out.index(b"\x7e", cut + 1)
    return bytes(out[: cut + 1])


def make(shape: str, n: int) -> bytes:
    return _dpp(n) if shape == "dpp" else _sim(n)


def make_capture(path: Path, shape: str, n: int) -> None:
    subprocess.run([sys.executable, __file__, "--make", shape, str(n), str(path)], check=True)


def argv_for(name: str, capture: Path, tmp: Path) -> list[str]:
    subs = {"@OUT@": str(tmp / "out"), "@CAP@": str(capture)}
    if "@DIR@" in COMMANDS[name]:
        subs["@DIR@"] = tempfile.mkdtemp(dir=tmp)  # a fresh store each run
    return [subs.get(a, a) for a in COMMANDS[name]]


def _cell(n: int, took: float, cpu: float, rss: float) -> str:
    return f"{took:.2f} s ({n / took / 1e6:.2f}M/s; cpu {cpu:.2f} s), {rss / n:.0f} B/frame"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", default="1M,10M", help="comma-separated sizes (1M, 10M...)")
    ap.add_argument("--shapes", default="dpp,sim")
    ap.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated subset")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (median)")
    ap.add_argument("--before", help="a checkout of the code to compare with (its backend/)")
    args = ap.parse_args()
    sizes = [_count(s) for s in args.frames.split(",") if s]
    commands = [c.strip() for c in args.commands.split(",")]
    before = str(Path(args.before, "backend").resolve()) if args.before else None
    compile_trees(before)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("Each cell: median wall time (frames/s; CPU time), peak RSS per frame.")
    print()
    head = "before → after" if before else "time, RSS"
    print(f"| frames | shape | MB | command | {head} |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for n in sizes:
            for shape in args.shapes.split(","):
                path = tmp / f"{shape}-{n}.bin"
                make_capture(path, shape, n)
                mb = path.stat().st_size / 1e6
                for name in commands:
                    cells = []
                    for code in [before, None] if before else [None]:
                        took, rss, cpu = medians(
                            partial(argv_for, name, path, tmp), code, args.repeat
                        )
                        cells.append(_cell(n, took, cpu, rss))
                    print(
                        f"| {n:,} | {shape} | {mb:.0f} | `{name}` | {' → '.join(cells)} |",
                        flush=True,
                    )
                path.unlink()
                (tmp / "out").unlink(missing_ok=True)
    print()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--make"]:
        Path(sys.argv[4]).write_bytes(make(sys.argv[2], int(sys.argv[3])))
    else:
        main()
