"""Profile model benchmark: prints figures, asserts nothing about time.

  records/s   1M records -> Profile.add + folded + function_stats (vectorised)
              vs a plain per-record Python loop (same run, on a subset, extrapolated)
  addr/s      SymbolTable.lookup vs a per-address bisect loop
  bytes/rec   record store footprint (capacity included)

Run: .venv/bin/python bench/profile.py [--records N] [--runs K]
"""

from __future__ import annotations

import argparse
import bisect
import random
import statistics
import time

import numpy as np

from mcuprof.profile import Profile
from mcuprof.profile.synth import addresses, generate
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable


def make_symbols(n: int = 400) -> SymbolTable:
    rng = random.Random(0)
    funcs, addr = [], 0x0800_0100
    for i in range(n):
        size = rng.randrange(16, 512, 2)
        funcs.append(Function(f"ns::func_{i}<int>(int)", f"f{i}", addr, addr + size, "f.c", i))
        addr += size + rng.randrange(0, 64, 2)
    return SymbolTable.from_functions(funcs)


def make_records(symbols: SymbolTable, n: int) -> np.ndarray:
    """A simulated trace of ~20k calls tiled in time to n records (exit order kept)."""
    rng = random.Random(1)
    ranges = [(f.start, f.end) for f in symbols.functions]
    trace = generate(rng, len(ranges), 20_000, isr_funcs=(0, 1), isr_rate=0.1, max_depth=10)
    addrs = addresses(rng, trace, ranges, style="mixed", thumb=True)
    span = int((trace.entry + trace.duration).max()) + 10
    reps = -(-n // len(trace))
    shift = np.repeat(np.arange(reps, dtype=np.int64) * span, len(trace))
    out = np.empty(reps * len(trace), RECORD_DTYPE)
    out["func_addr"] = np.tile(addrs, reps)
    out["entry_time"] = (np.tile(trace.entry, reps) + shift + (1 << 32) - 1000) & 0xFFFFFFFF
    out["duration"] = np.tile(trace.duration, reps)
    out["depth"] = np.tile(trace.depth, reps)
    return out[:n]


def python_loop(records: np.ndarray, symbols: SymbolTable) -> tuple[dict[str, int], dict]:
    """The obvious per-record implementation (sane streams): unwrap, resolve with bisect,
    adopt pending children at the next depth, fold each tree when its root returns."""
    starts = [f.start for f in symbols.functions]
    ends = [f.end for f in symbols.functions]
    names = [f.name for f in symbols.functions]
    pending: dict[int, list] = {}
    folded: dict[str, int] = {}
    stats: dict[str, list] = {}
    last = None
    for addr, entry, dur, depth in records.tolist():
        x = (entry + dur) & 0xFFFFFFFF
        if last is None:
            ux = x
        else:
            step = (x - last) & 0xFFFFFFFF
            ux = last + step if step < 1 << 31 else last - ((last - x) & 0xFFFFFFFF)
        last = ux
        ue = ux - dur
        key = addr & ~1
        i = bisect.bisect_right(starts, key) - 1
        name = names[i] if i >= 0 and key < ends[i] else f"0x{addr:08x}"
        kids = []
        below = pending.get(depth + 1)
        while below and below[-1][1] >= ue:
            kids.append(below.pop())
        node = [name, ue, dur, kids]
        s = stats.setdefault(name, [0, 0, 0])
        s[0] += 1
        s[1] += dur
        s[2] += dur - sum(k[2] for k in kids)
        pending.setdefault(depth, []).append(node)
        if depth == 0:
            todo = [(node, name)]
            while todo:
                n, path = todo.pop()
                self_t = n[2] - sum(k[2] for k in n[3])
                if self_t > 0:
                    folded[path] = folded.get(path, 0) + self_t
                todo.extend((k, f"{path};{k[0]}") for k in n[3])
            pending[0].pop()
    return folded, stats


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    symbols = make_symbols()
    recs = make_records(symbols, args.records)
    n = len(recs)
    print(f"records: {n:,} (depth up to {int(recs['depth'].max())}), runs: {args.runs}, medians")

    def vectorised() -> None:
        p = Profile(symbols)
        p.add(recs)
        p.folded()
        p.function_stats()

    t_vec = median_time(vectorised, args.runs)
    sub = recs[: min(n, 100_000)]
    t_py = median_time(lambda: python_loop(sub, symbols), max(1, args.runs // 2)) * n / len(sub)
    print(f"folded+stats, one add      {n / t_vec:>14,.0f} rec/s  ({t_vec:.3f} s)")
    print(
        f"  python loop baseline     {n / t_py:>14,.0f} rec/s  (extrapolated from "
        f"{len(sub):,}; x{t_py / t_vec:.1f})"
    )

    batches = np.array_split(recs, max(1, n // 2000))

    def live() -> None:
        p = Profile(symbols)
        for b in batches:
            p.add(b)
        p.folded()
        p.function_stats()

    t_live = median_time(live, max(1, args.runs // 2))
    print(f"folded+stats, {len(batches)} adds     {n / t_live:>14,.0f} rec/s  ({t_live:.3f} s)")

    # Live: 5,000-record adds at the end of the capture, each followed by a query.
    p = Profile(symbols)
    head, rest = recs[: n - 100_000], recs[n - 100_000 :]
    p.add(head)
    p.folded()
    t_add, t_query = [], []
    for b in np.array_split(rest, 20):
        t = time.perf_counter()
        p.add(b)
        t_add.append(time.perf_counter() - t)
        t = time.perf_counter()
        p.folded()
        p.function_stats()
        t_query.append(time.perf_counter() - t)
    print(f"  live: add 5000           {statistics.median(t_add) * 1e3:>14.1f} ms (median)")
    print(f"  live: folded+stats after {statistics.median(t_query) * 1e3:>14.1f} ms (median)")
    fresh = Profile(symbols)
    fresh.add(recs)
    t_q = median_time(lambda: (fresh.folded(), fresh.function_stats()), 1)
    print(f"  first aggregate, cold    {t_q * 1e3:>14.1f} ms")
    t_tl = median_time(lambda: p.timeline(p.t0_us, p.t1_us, 1600), args.runs)
    print(f"  timeline, whole, 1600px  {t_tl * 1e3:>14.1f} ms")

    addrs = np.tile(recs["func_addr"], max(1, 10_000_000 // n))
    t_lookup = median_time(lambda: symbols.lookup(addrs), args.runs)
    py_sub = addrs[:200_000].tolist()
    starts = [f.start for f in symbols.functions]
    ends = [f.end for f in symbols.functions]

    def py_lookup() -> list[int]:
        out = []
        for a in py_sub:
            k = a & ~1
            i = bisect.bisect_right(starts, k) - 1
            out.append(i if i >= 0 and k < ends[i] else -1)
        return out

    t_pyl = median_time(py_lookup, args.runs) * len(addrs) / len(py_sub)
    print(f"address lookup             {len(addrs) / t_lookup:>14,.0f} addr/s ({len(addrs):,})")
    print(
        f"  python bisect baseline   {len(addrs) / t_pyl:>14,.0f} addr/s (x{t_pyl / t_lookup:.1f})"
    )

    # Queried once, so the per-record stack ids of the aggregator are counted too.
    one = Profile(symbols)
    one.add(recs)
    one.folded()
    live_p = Profile(symbols)
    for b in batches:
        live_p.add(b)
    live_p.folded()
    print(f"store, one add             {one.nbytes / n:>14.1f} B/record")
    print(f"store, {len(batches)} adds           {live_p.nbytes / n:>14.1f} B/record")


if __name__ == "__main__":
    main()
