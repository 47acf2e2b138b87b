"""The live path on odd time (issue 13, item 3): Profile.add fed 2,000 records at a time,
as the link feeds it, on the regular, reset and unique shapes of bench/scale.py.

Prints, per shape and store (records in RAM, or on disk as the dashboard keeps them):
records/s of the adds up to 0.5M, 1M and 1.5M records, and the median ms per add over the
last 50 adds before each mark (does an add cost more as the records held grow?) and the
longest add so far (one that merges what earlier adds staged), then a
query (folded + function stats) at the end. The regular shape is the baseline of the
same run. Asserts nothing about time.

Run: .venv/bin/python bench/live_add.py [--records 1.5M] [--shapes regular,reset,unique]
     [--stores ram,disk] [--batch 2000] [--query-every 0]
``--query-every K`` also runs a query after every K adds (the dashboard's refresh).
Captures come from /tmp/cap/SHAPE.bin when present with enough records, else are made.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from mcuprof.profile import Profile
from mcuprof.profile.columns import Spill
from mcuprof.protocol import ResponseDecoder

HERE = Path(__file__).resolve().parent


def _count(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KM")) * scale)


def records_of(shape: str, n: int) -> np.ndarray:
    path = Path(f"/tmp/cap/{shape}.bin")
    if not path.exists() or path.stat().st_size < n * 14:
        import subprocess
        import sys

        path = Path(tempfile.gettempdir()) / f"live_add_{shape}_{n}.bin"
        if not path.exists():
            subprocess.run(
                [sys.executable, str(HERE / "scale.py"), "--make", shape, str(n), str(path)],
                check=True,
            )
    dec = ResponseDecoder(batch=True)
    parts = [e.records for e in dec.feed(path.read_bytes()) if hasattr(e, "records")]
    parts += [e.records for e in dec.close() if hasattr(e, "records")]
    recs = np.concatenate(parts)
    return recs[:n]


def run(recs: np.ndarray, store: str, batch: int, marks: list[int], query_every: int) -> None:
    spill = Spill() if store == "disk" else None
    p = Profile(spill=spill)
    times: list[float] = []
    q_times: list[float] = []
    start = time.perf_counter()
    out = []
    for i, lo in enumerate(range(0, len(recs), batch)):
        t = time.perf_counter()
        p.add(recs[lo : lo + batch])
        times.append(time.perf_counter() - t)
        if query_every and (i + 1) % query_every == 0:
            t = time.perf_counter()
            p.folded()
            p.function_stats()
            q_times.append(time.perf_counter() - t)
        done = lo + batch
        if marks and done >= marks[0]:
            took = time.perf_counter() - start
            last = statistics.median(times[-50:]) * 1e3
            worst = max(times) * 1e3
            out.append(
                f"{marks[0] / 1e6:.1f}M {marks[0] / took / 1e6:5.2f}M/s {last:6.2f} ms/add "
                f"(max {worst:.0f})"
            )
            marks = marks[1:]
    t = time.perf_counter()
    p.folded()
    p.function_stats()
    q = time.perf_counter() - t
    extra = (
        f" | query every {query_every}: {statistics.median(q_times) * 1e3:.1f} ms"
        if q_times
        else ""
    )
    print(f"  {store:4} " + " | ".join(out) + f" | final query {q * 1e3:.0f} ms{extra}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", default="1.5M")
    ap.add_argument("--shapes", default="regular,reset,unique")
    ap.add_argument("--stores", default="ram,disk")
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--query-every", type=int, default=0)
    args = ap.parse_args()
    n = _count(args.records)
    marks = [m for m in (500_000, 1_000_000, 1_500_000) if m <= n] or [n]
    print(f"Profile.add in adds of {args.batch:,}: records/s up to each mark, median ms per add")
    print("over the 50 adds before it (cumulative rates; regular is the baseline)")
    for shape in args.shapes.split(","):
        recs = records_of(shape, n)
        print(f"{shape} ({len(recs):,} records)", flush=True)
        for store in args.stores.split(","):
            run(recs, store, args.batch, list(marks), args.query_every)


if __name__ == "__main__":
    main()
