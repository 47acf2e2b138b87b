"""Every whole-capture command at scale, run as a user runs it (issue 13).

Makes captures of N records in three shapes and runs each command in a subprocess
(process start included), printing wall time, records/s and peak RSS (bytes/record)
beside the same run's baseline: a subprocess that only reads and decodes the capture
(``decode``), i.e. decoder speed end to end.

Shapes: ``regular`` (a repeating six-call tree), ``reset`` (the same 20 records again and
again: time jumps back at every packet, as a target that keeps resetting sends) and
``unique`` (every child call has a stack of its own, over 4,096 functions).

``compare`` compares the capture with itself; ``sessions import`` stores it in a fresh
data directory each run.

``--before DIR`` also runs every command with the code of another checkout (``DIR/backend``
first on the path, e.g. ``git worktree add /tmp/before main``), interleaved with this one
so that both see the same machine load, and prints "before → after" cells.

Run: .venv/bin/python bench/scale.py [--records 1M,10M] [--huge] [--shapes ...] [--repeat K]
     [--before DIR]
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
from collections.abc import Callable
from functools import partial
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
    "compare": ["-m", "mcuprof", "compare", "@CAP@"],
    "sessions import": ["-m", "mcuprof", "sessions", "import", "--data-dir", "@DIR@"],
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
    """In a subprocess: the peak RSS that wait4 reports for a child can include what its
    parent held when it forked, so this process never holds a capture."""
    subprocess.run([sys.executable, __file__, "--make", shape, str(n), str(path)], check=True)


def _make(path: Path, shape: str, n: int) -> None:
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


def run(argv: list[str], pythonpath: str | None = None) -> tuple[float, int, float]:
    """Wall seconds, peak RSS (bytes) and CPU seconds (user + system) of one subprocess.
    CPU time shows the work itself when other jobs share the machine's cores."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    t = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err[-400:]}")
    return took, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def compile_trees(before: str | None) -> None:
    """What users run has bytecode (Python writes it on the first import); with
    PYTHONDONTWRITEBYTECODE set, every run would compile the package again instead."""
    for tree in [Path(__file__).resolve().parents[1] / "backend", before]:
        if tree is not None:
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)


def medians(
    argv: Callable[[], list[str]], pythonpath: str | None, repeat: int
) -> tuple[float, float, float]:
    """Median wall seconds, peak RSS and CPU seconds of ``repeat`` runs (at least one)."""
    runs = [run(argv(), pythonpath) for _ in range(max(1, repeat))]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        statistics.median(r[2] for r in runs),
    )


def argv_for(name: str, capture: Path, tmp: Path) -> list[str]:
    """The command line of ``name`` on ``capture``: the capture goes right after the
    subcommand's words (before its options), as a user types it."""
    argv = COMMANDS[name]
    at = 4 if argv[2:4] == ["sessions", "import"] else 3  # after "-m mcuprof SUBCOMMAND"
    out = [*argv[:at], str(capture), *argv[at:]]
    subs = {"@OUT@": str(tmp / "out"), "@CAP@": str(capture)}
    # Each export writes a new file, as a first export does: replacing the last run's output
    # would add the kernel's freeing of it (0.1 s for 130 MB) to the next command's time.
    (tmp / "out").unlink(missing_ok=True)
    if "@DIR@" in out:
        subs["@DIR@"] = tempfile.mkdtemp(dir=tmp)  # a fresh store each run
    if argv[0] == "-c":
        return [*argv, str(capture)]
    return [subs.get(a, a) for a in out]


def _cell(n: int, took: float, cpu: float, rss: float, base_rss: float) -> str:
    return (
        f"{took:.2f} s ({n / took / 1e6:.2f}M/s; cpu {cpu:.2f} s), "
        f"{rss / n:.0f} B/rec (+{(rss - base_rss) / n:.0f})"
    )


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", default="1M,10M", help="comma-separated sizes (1M, 1.5M...)")
    ap.add_argument("--huge", action="store_true", help="add a 30M-record capture (long)")
    ap.add_argument("--shapes", default="regular,reset,unique")
    ap.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated subset")
    ap.add_argument("--repeat", type=int, default=1, help="runs per command (median)")
    ap.add_argument("--before", help="a checkout of the code to compare with (its backend/)")
    args = ap.parse_args()
    sizes = [_count(s) for s in args.records.split(",") if s]
    if args.huge:
        sizes.append(30_000_000)
    commands = [c.strip() for c in args.commands.split(",")]
    before = str(Path(args.before, "backend").resolve()) if args.before else None
    compile_trees(before)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        "Each cell: median wall time (records/s; CPU time), peak RSS per record "
        "(+ above the baseline)."
    )
    print()
    head = "before → after" if before else "time, RSS"
    print(f"| records | shape | command | {head} |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for n in sizes:
            for shape in args.shapes.split(","):
                path = tmp / f"{shape}-{n}.bin"
                make_capture(path, shape, n)
                base: dict[str | None, float] = {}
                for name in commands:
                    cells = []
                    for code in [before, None] if before else [None]:
                        took, rss, cpu = medians(
                            partial(argv_for, name, path, tmp), code, args.repeat
                        )
                        base.setdefault(code, rss)  # the first command is the baseline
                        cells.append(_cell(n, took, cpu, rss, base[code]))
                    print(f"| {n:,} | {shape} | `{name}` | {' → '.join(cells)} |", flush=True)
                path.unlink()
                (tmp / "out").unlink(missing_ok=True)
    print()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--make"]:
        _make(Path(sys.argv[4]), sys.argv[2], int(sys.argv[3]))
    else:
        main()
