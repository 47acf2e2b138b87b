"""Per-call timing distributions (issue 32): what they cost, and numpy's log buckets
against the ``hdrhistogram`` package. Prints figures, asserts nothing about time.

  load        a stored session opened as ``check``/``compare`` open one (its bytes from
              the store, decoded into the model, the function statistics), with and
              without the profile's bucket counts, then every function's percentiles
              and max, sorted and from the buckets: their cost as a share of the load
              without them (target <= 20%)
  histograms  every call counted into its function's log buckets (<= 1% error): numpy
              (buckets.Counts.add, what the profile does as records settle) against
              hdrhistogram (HdrHistogram(1, 2**32, 2): 2 significant digits, <= 1%),
              one record_value per call, on a subset and extrapolated

Run: .venv/bin/python bench/distribution.py [--records N] [--runs K]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from profile import make_records, make_symbols  # bench/profile.py (before any stdlib profile)

from mcuprof.profile import buckets
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
    """The load without the distributions (the profile's bucket counts switched off);
    the bucket counts alone (``Counts.add`` on every call's address and duration, the
    work ``_settle`` adds), and the Functions figures: sorted (``exact=True``, as the CSV
    and ``check``), and as the web reads them past EXACT_CALLS (from the counts). The
    fastest of ``runs`` each: this host's load only ever adds time."""
    plain, counting, exact, live = [], [], [], []

    def opened():
        p = load("miniprofiler", store.raw(sid), symbols).profile
        p.function_stats()
        return p

    add = buckets.Counts.add
    for _ in range(runs):
        buckets.Counts.add = lambda self, ids, ticks: None  # type: ignore[method-assign]
        try:
            t, p = timed(opened)
        finally:
            buckets.Counts.add = add  # type: ignore[method-assign]
        plain.append(t)
        ids = np.concatenate([lv.addr for lv in p.levels.values()])
        ticks = np.concatenate([lv.dur for lv in p.levels.values()])
        counting.append(timed(lambda: buckets.Counts().add(ids, ticks))[0])  # noqa: B023
        p.buckets.add(ids, ticks)
        exact.append(timed(lambda: dist.summaries(p, exact=True))[0])  # noqa: B023
        live.append(timed(lambda: dist.from_buckets(p))[0])  # noqa: B023
    lo, co, ex, li = (min(x) for x in (plain, counting, exact, live))
    print(f"load without distributions (store -> model -> stats): {lo:.3f} s (fastest of {runs})")
    print(f"bucket counts as the records settle:                 {co:.3f} s")
    print(f"percentiles sorted (CSV, check, web <= EXACT_CALLS): {ex:.3f} s")
    print(f"percentiles from the counts (web past EXACT_CALLS):  {li:.3f} s")
    print(
        f"distributions, all told: {100 * (co + ex) / lo:.1f}% of the load sorted, "
        f"{100 * (co + li) / lo:.1f}% from the counts (target <= 20%)"
    )


def bench_histograms(p, subset: int) -> None:
    g, d, _ = dist.calls(p, entries=False)
    ids = np.concatenate([lv.addr for lv in p.levels.values()])
    ticks = np.concatenate([lv.dur for lv in p.levels.values()])
    t_np, _ = timed(lambda: buckets.Counts().add(ids, ticks))
    print(f"numpy (buckets.Counts.add): {len(d):,} calls in {t_np:.3f} s ({len(d) / t_np:,.0f}/s)")
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
