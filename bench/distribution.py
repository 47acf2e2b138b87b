"""Per-call timing distributions (issue 32): what they cost, and numpy's log buckets
against the ``hdrhistogram`` package. Prints figures, asserts nothing about time.

  load        a stored session opened as ``check``/``compare`` open one (its bytes from
              the store, decoded into the model, the function statistics), then the
              distributions (profile/distribution.py: every function's nearest-rank
              percentiles, max and std): their cost as a share of the load (target <= 20%)
  histograms  every function's log-bucketed histogram (<= 1% error) from the call
              table: numpy (group_sorted + histogram, as distribution.py does) against
              hdrhistogram (HdrHistogram(1, 2**32, 2): 2 significant digits, <= 1%),
              one record_value per call, on a subset and extrapolated

Run: .venv/bin/python bench/distribution.py [--records N] [--runs K]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile import make_records, make_symbols  # bench/profile.py (before any stdlib profile)

from mcuprof.profile import distribution as dist
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.sources import load
from mcuprof.store import SessionStore


def capture(n: int) -> tuple[bytes, object]:
    symbols = make_symbols()
    recs = make_records(symbols, n)
    meta = encode_metadata(Metadata(168_000_000, 1_000_000, 0, "bench-distribution"))
    body = b"".join(encode_profile_data(recs[i : i + 100]) for i in range(0, n, 100))
    return meta + body, symbols


def timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def bench_load(store: SessionStore, sid: int, symbols: object, runs: int) -> None:
    loads, dists = [], []
    for _ in range(runs):

        def opened():
            p = load("miniprofiler", store.raw(sid), symbols).profile
            p.function_stats()
            return p

        t_load, p = timed(opened)
        t_dist, _ = timed(lambda: dist.summaries(p))  # noqa: B023
        loads.append(t_load)
        dists.append(t_dist)
    lo, di = statistics.median(loads), statistics.median(dists)
    print(f"load (store -> model -> function stats): {lo:.3f} s (median of {runs})")
    print(f"distributions (all functions):           {di:.3f} s = {100 * di / lo:.1f}% of the load")


def numpy_histograms(p) -> int:
    gr = dist.grouped(p)
    n = 0
    for i in range(len(gr.group)):
        k, _ = dist.histogram(gr.dur[gr.start[i] : gr.start[i + 1]])
        n += len(k)
    return n


def bench_histograms(p, subset: int) -> None:
    g, d, _ = dist.calls(p)
    t_np, buckets = timed(lambda: numpy_histograms(p))
    print(
        f"numpy log buckets: {len(d):,} calls in {t_np:.3f} s "
        f"({len(d) / t_np:,.0f} calls/s, {buckets:,} buckets)"
    )
    try:
        from hdrh.histogram import HdrHistogram
    except ImportError:
        print("hdrhistogram: not installed (pip install hdrhistogram)")
        return
    m = min(subset, len(d))
    hists: dict[int, HdrHistogram] = {}
    gs, ds = g[:m].tolist(), np.maximum(d[:m], 1).astype(np.int64).tolist()

    def record() -> None:
        for grp, v in zip(gs, ds, strict=True):
            h = hists.get(grp)
            if h is None:
                h = hists[grp] = HdrHistogram(1, 2**32, 2)
            h.record_value(v)

    t_h, _ = timed(record)
    rate = m / t_h
    print(
        f"hdrhistogram:      {m:,} calls in {t_h:.3f} s ({rate:,.0f} calls/s; all {len(d):,}: "
        f"{len(d) / rate:.2f} s, x{(len(d) / rate) / t_np:.0f} numpy's time)"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=float, default=1e6)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--subset", type=int, default=200_000, help="calls hdrhistogram records")
    args = ap.parse_args()
    n = int(args.records)
    data, symbols = capture(n)
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp), autoflush=False)
        sid = store.import_capture("bench", data, None).id
        print(f"{n:,} records, {len(data) / 2**20:.1f} MiB stored")
        bench_load(store, sid, symbols, args.runs)
        p = load("miniprofiler", store.raw(sid), symbols).profile
        store.close()
    bench_histograms(p, args.subset)


if __name__ == "__main__":
    main()
