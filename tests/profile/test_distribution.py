"""profile/distribution.py: nearest-rank percentiles, spread, log buckets and periods,
against numpy's exact answers and captures whose durations are known."""

from __future__ import annotations

import csv
import io
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile, buckets
from mcuprof.profile import distribution as dist
from mcuprof.profile.synth import flat
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import Function, SymbolTable

QS = list(dist.PERCENTILES.items())


def exact(values: np.ndarray, milli: int) -> float:
    """The nearest-rank percentile in exact arithmetic: numpy's ``inverted_cdf`` takes
    the same order statistic, save where its float q n rounds across an integer
    (np.percentile(x, 99.9) of 3,000 values takes rank 2,998, as 99.9 / 100 > 0.999)."""
    return float(np.sort(values)[math.ceil(Fraction(milli, 1000) * len(values)) - 1])


durations = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300)
groups = st.lists(st.integers(0, 5), min_size=1, max_size=300)


@settings(max_examples=200, deadline=None)
@given(durations, groups, st.booleans())
def test_percentiles_are_numpy_exact_ones(durs, gs, fractional):
    n = min(len(durs), len(gs))
    g = np.array(gs[:n], np.int64)
    # a whole capture's uint32 ticks (one int64 key sort), or a window's cut float ticks
    ticks = np.array(durs[:n], np.uint32)
    d = ticks + 0.25 if fractional else ticks.astype(np.float64)
    gr = dist.group_sorted(g, d if fractional else ticks)
    assert gr.group.tolist() == sorted(set(g.tolist()))
    for k, milli in dist.PERCENTILES.items():
        got = dist.percentiles(gr, milli)
        for i, grp in enumerate(gr.group.tolist()):
            x = d[g == grp]
            assert got[i] == exact(x, milli), (k, grp)
            # numpy's own, given q as the float nearest milli / 1000
            assert got[i] == np.quantile(x, milli / 1000, method="inverted_cdf"), (k, grp)
    for grp in gr.group.tolist():
        assert dist.spread(gr.of(grp)) == pytest.approx(np.std(d[g == grp]), rel=1e-9, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.just(0.0) | st.floats(1e-30, 2**32), min_size=1, max_size=200))
def test_each_value_is_within_one_percent_of_its_bucket(values):
    """Ticks, or a window's fractions of them (float32's normal range: a bucket is its
    exponent and mantissa bits)."""
    v = np.array(values)
    k = buckets.bucket(v)
    mid = buckets.middle(k)
    assert np.all(np.abs(mid - v) <= (buckets.ERROR + 1e-6) * v)
    assert buckets.ERROR < 0.01
    lo, hi = buckets.bounds(k)
    pos = v > 0
    assert np.all((lo[pos] <= v[pos] * (1 + 1e-7)) & (v[pos] <= hi[pos] * (1 + 1e-7)))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 2**32 - 1)), min_size=1, max_size=300),
    st.lists(st.integers(1, 299), max_size=5),
)
def test_counts_in_any_split_equal_one_count(calls, cuts):
    ids = np.array([c[0] for c in calls], np.int32)
    ticks = np.array([c[1] for c in calls], np.uint32)
    whole, split = buckets.Counts(), buckets.Counts()
    whole.add(ids, ticks)
    bounds = [0, *sorted(c for c in cuts if c < len(calls)), len(calls)]
    for a, b in itertools.pairwise(bounds):
        split.add(ids[a:b], ticks[a:b])
    assert np.array_equal(whole.keys, split.keys) and np.array_equal(whole.counts, split.counts)
    g, k, c = whole.grouped(np.arange(41) % 3)  # ids to 3 groups
    assert c.sum() == len(calls)
    for grp in range(3):
        mine = np.isin(ids, np.flatnonzero(np.arange(41) % 3 == grp))
        got = dict(zip(k[g == grp].tolist(), c[g == grp].tolist(), strict=True))
        want = dict(zip(*np.unique(buckets.bucket(ticks[mine]), return_counts=True), strict=True))
        assert got == {int(a): int(b) for a, b in want.items()}


def test_histogram_counts_every_call():
    v = np.sort(np.array([0, 0, 1, 1, 2, 100, 101, 1000, 1010, 1030], np.float64))
    k, counts = dist.histogram(v)
    assert counts.sum() == len(v) and counts[0] == 2  # the zero bucket first
    assert len(k) == len(set(buckets.bucket(v).tolist()))


def _known_profile(
    rng: np.random.Generator, adds: int = 1
) -> tuple[Profile, dict[str, np.ndarray]]:
    """Three functions with known per-call durations (ticks = µs at 1 MHz): log-normal,
    bimodal, and log-normal with rare 10x outliers; one with 99 calls (no check)."""
    n = 3000
    lognormal = np.maximum(1, np.round(rng.lognormal(np.log(120), 0.5, n)))
    bimodal = np.where(rng.random(n) < 0.7, rng.normal(50, 5, n), rng.normal(400, 30, n))
    outliers = np.round(rng.lognormal(np.log(80), 0.2, n))
    outliers[rng.random(n) < 0.01] *= 10
    few = np.round(rng.uniform(10, 20, 99))
    truth = {
        "lognormal": lognormal,
        "bimodal": np.maximum(1, np.round(bimodal)),
        "outliers": np.maximum(1, outliers),
        "few": few,
    }
    names = list(truth)
    func = np.concatenate([np.full(len(v), i) for i, v in enumerate(truth.values())])
    dur = np.concatenate(list(truth.values())).astype(np.int64)
    order = rng.permutation(len(func))
    trace = flat(func[order], dur[order], rng.integers(1, 30, len(func)))
    funcs = [Function(nm, nm, 0x100 * (i + 1), 0x100 * (i + 2)) for i, nm in enumerate(names)]
    recs = trace.records(np.array([funcs[f].start for f in trace.func], np.uint32))
    p = Profile(SymbolTable.from_functions(funcs), timer_freq=1_000_000)
    for part in np.array_split(recs, adds):
        p.add(part)
        p.settle()  # merged add by add, as the live side's reads do
    return p, truth


def test_csv_percentiles_within_one_percent_of_exact():
    from mcuprof import export

    p, truth = _known_profile(np.random.default_rng(7))
    rows = {r["function"]: r for r in csv.DictReader(io.StringIO(export.render("csv", p)))}
    checked = 0
    for name, values in truth.items():
        if len(values) < 100:
            continue
        for key, milli in QS:
            want = exact(values, milli)
            assert float(rows[name][f"{key}_us"]) == pytest.approx(want, rel=0.01), (name, key)
            checked += 1
    assert checked == 12


def test_a_window_counts_the_calls_mean_us_counts():
    p, _ = _known_profile(np.random.default_rng(8))
    w = (p.t0_us + 20_000.5, p.t0_us + 90_000.5)
    stats = {s.frame: s for s in p.function_stats(w)}
    got = dist.summaries(p, w)
    assert set(got) == set(stats)
    for fid, s in stats.items():
        assert got[fid].calls == s.calls
        assert got[fid].max_us == pytest.approx(s.max_us)
        assert got[fid].p50_us >= s.min_us


def test_period_jitter_and_the_calls_that_broke_it():
    entries = np.arange(0, 100_000, 1000, dtype=np.int64)
    entries[1:] += np.tile([0, 7, -5, 3], 25)[: len(entries) - 1]
    entries = np.delete(entries, 40)  # a missed call: one interval of ~2000
    per = dist.period(entries)
    assert per is not None
    assert per.period == pytest.approx(1000, abs=12)
    assert per.broke.tolist() == [entries[40]]
    assert 0 < per.jitter <= 12 + 7
    assert dist.period(np.array([0, 10, 500, 505, 3000])) is None  # not periodic


def test_steps_group_by_path():
    """Calls grouped by their folded path (a QS step's object;state;signal)."""
    funcs = [Function(n, n, 0x100 * (i + 1), 0x100 * (i + 2)) for i, n in enumerate("abc")]
    recs = np.zeros(4, RECORD_DTYPE)
    recs["func_addr"] = [0x300, 0x100, 0x300, 0x200]  # c under a, c under b
    recs["entry_time"] = [1, 0, 21, 20]
    recs["duration"] = [5, 10, 7, 10]
    recs["depth"] = [1, 0, 1, 0]
    p = Profile(SymbolTable.from_functions(funcs))
    p.add(recs)
    s = dist.summaries(p, by="path")
    names = dist.stack_names(p)
    by_text = {names.string(g): v.max_us for g, v in s.items()}
    assert by_text == {"a": 10, "b": 10, "a;c": 5, "b;c": 7}


def test_past_the_exact_bound_percentiles_come_from_the_buckets(monkeypatch):
    """A live capture past EXACT_CALLS: the Functions figures from the counts kept as
    records arrive (in many adds), within the buckets' error of the sorted ones; the
    max stays exact; a window the same; the CSV (exact=True) still sorts."""
    p, _ = _known_profile(np.random.default_rng(9), adds=40)
    exact = dist.summaries(p, exact=True)
    monkeypatch.setattr(dist, "EXACT_CALLS", 100)
    w = (p.t0_us + 10_000.5, p.t0_us + 200_000.5)
    for window in (None, w):
        live = dist.summaries(p, window)
        sorted_ = dist.summaries(p, window, exact=True)
        assert live.keys() == sorted_.keys()
        for fid, s in live.items():
            want = sorted_[fid]
            assert s.calls == want.calls and s.max_us == want.max_us
            for key in ("p50_us", "p90_us", "p99_us", "p999_us"):
                assert getattr(s, key) == pytest.approx(getattr(want, key), rel=buckets.ERROR)
    assert dist.summaries(p, exact=True) == exact
