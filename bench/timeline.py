"""Timeline query benchmark: prints figures, asserts nothing about time.

  Profile.timeline over the whole capture and zoomed to 1%, 0.1% and 0.01% of it, 1600 px
  wide, on 1M and 10M-record captures (bench/profile.py's simulated trace), beside the
  direct per-record computation that main used before the precomputed levels (kept
  here only, as the baseline), measured in the same run; plus what the levels cost:
  bytes per record and the time to refold them after a live add of 2,000 records.

Run: .venv/bin/python bench/timeline.py [--records 1000000 10000000] [--runs K]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from mcuprof.profile import Profile

# bench/profile.py's captures (its name shadows the stdlib's profile, so load it by path).
_spec = importlib.util.spec_from_file_location(
    "bench_profile", Path(__file__).with_name("profile.py")
)
assert _spec is not None and _spec.loader is not None
_bench_profile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_bench_profile)
make_records, make_symbols = _bench_profile.make_records, _bench_profile.make_symbols


def timeline_before(profile: Profile, t0_us: float, t1_us: float, width_px: int) -> dict:
    """main's timeline before the levels: every record of the window, per depth."""
    width = max(1, int(width_px))
    a, b = profile.ticks(t0_us), profile.ticks(t1_us)
    px = max((b - a) / width, 1e-12)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("depth", "start", "end", "frame")}
    frame_of = profile._addrs.frame_of
    for d in sorted(profile.levels):
        lv = profile.levels[d]
        lo = int(np.searchsorted(lv.entry, math.floor(a) - lv.max_dur, side="left"))
        hi = int(np.searchsorted(lv.entry, math.ceil(b), side="right"))
        if hi <= lo:
            continue
        e, dur = lv.entry[lo:hi], lv.dur[lo:hi]
        k0 = int(np.searchsorted(e, math.ceil(a), side="left"))
        head = np.flatnonzero(e[:k0] + dur[:k0] >= a)
        if k0:
            keep = np.concatenate([head, np.arange(k0, len(e))])
            e, dur, addr = e[keep], dur[keep], lv.addr[lo:hi][keep]
        else:
            addr = lv.addr[lo:hi]
        if len(e) == 0:
            continue
        wide = dur >= px
        if wide.any():
            we = e[wide].astype(np.float64)
            _put(cols, d, we, we + dur[wide], frame_of[addr[wide]])
        narrow = np.flatnonzero(~wide)
        if len(narrow):
            ne = e[narrow].astype(np.float64)
            nx = ne + dur[narrow]
            column = np.floor((ne - a) / px).astype(np.int64)
            starts = np.flatnonzero(np.diff(column, prepend=column[0] - 1))
            ends = np.maximum.reduceat(nx, starts)
            order = np.lexsort((-dur[narrow].astype(np.int64), column))
            longest = order[np.flatnonzero(np.diff(column[order], prepend=column[0] - 1))]
            _put(cols, d, ne[starts], ends, frame_of[addr[narrow[longest]]])
    return {k: np.concatenate(v) for k, v in cols.items()}


def _put(cols: dict, depth: int, start: Any, end: Any, frame: Any) -> None:
    cols["depth"].append(np.full(len(start), depth))
    cols["start"].append(start)
    cols["end"].append(end)
    cols["frame"].append(frame)


def median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--width", type=int, default=1600)
    args = ap.parse_args()
    symbols = make_symbols()
    for n in args.records:
        p = Profile(symbols)
        recs = make_records(symbols, n)
        t = time.perf_counter()
        for chunk in np.array_split(recs, max(1, n // 100_000)):
            p.add(chunk)
        build = time.perf_counter() - t
        t0, t1 = p.t0_us, p.t1_us
        span = t1 - t0
        mid = t0 + span * 0.37
        views = {
            "whole": (t0, t1),
            "zoom 1%": (mid, mid + span * 0.01),
            "zoom 0.1%": (mid, mid + span * 0.001),
            "zoom 0.01%": (mid, mid + span * 1e-4),
        }
        lod_bytes = sum(lv.lod.nbytes for lv in p.levels.values())
        print(f"{n:,} records, {len(p.levels)} depths, built in {build:.1f} s")
        print(f"  levels: {lod_bytes / n:.2f} bytes/record (capacity included)")
        for name, (a, b) in views.items():
            got = p.timeline(a, b, args.width)
            ref = timeline_before(p, a, b, args.width)
            same = np.array_equal(ref["depth"], got["depth"]) and np.allclose(
                ref["start"] * (1e6 / p.timer_freq), got["start_us"]
            )
            new = median_ms(lambda p=p, a=a, b=b: p.timeline(a, b, args.width), args.runs)
            old = median_ms(lambda p=p, a=a, b=b: timeline_before(p, a, b, args.width), args.runs)
            print(
                f"  {name:<11} {new:8.2f} ms   before (direct, same run) {old:8.2f} ms"
                f"   x{old / new:5.1f}   {len(got['depth'])} boxes, same as direct: {same}"
            )
        big = max(p.levels.values(), key=lambda lv: lv.n)
        entry, dur = big.entry, big.dur
        k = min(2_000, big.n)
        refold = median_ms(
            lambda big=big, e=entry, d=dur, k=k: big.lod.update(e, d, big.n - k), args.runs
        )
        print(f"  refold after an add of {k:,} to a {big.n:,}-record depth: {refold:.3f} ms")


if __name__ == "__main__":
    main()
