"""Live use: queries between adds must equal a fresh computation over the same records."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE
from tests.profile.helpers import scenario

record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400]),
    st.integers(0, 80),
    st.integers(0, 30),
    st.integers(0, 3),
)


def _view(p: Profile) -> tuple:
    stats = sorted(
        (s.label, s.calls, round(s.total_us, 6), round(s.self_us, 6), s.min_us, s.max_us)
        for s in p.function_stats()
    )
    td = sorted(
        (n.label, n.calls, round(n.total_us, 6), round(n.self_us, 6)) for n in p.top_down().walk()
    )
    return p.folded(), stats, td


def _fresh(recs: np.ndarray, **kw) -> Profile:
    p = Profile(**kw)
    p.add(recs)
    return p


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=40), data=st.data())
def test_queries_between_adds_on_arbitrary_streams(rows, data) -> None:
    recs = np.array(rows, RECORD_DTYPE)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(recs)), max_size=8))))
    live = Profile()
    for a, b in zip([0, *cuts], [*cuts, len(recs)], strict=True):
        live.add(recs[a:b])
        assert _view(live) == _view(_fresh(recs[:b]))


@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_queries_between_adds_on_simulated_captures(seed, data) -> None:
    _, recs, table, _ = scenario(seed, n=400, isr=True, recursive_rate=0.2)
    n = len(recs)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n), min_size=3, max_size=15))))
    live = Profile(table)
    for a, b in zip([0, *cuts], [*cuts, n], strict=True):
        live.add(recs[a:b])
        assert _view(live) == _view(_fresh(recs[:b], symbols=table))


def test_live_commits_most_records_and_rarely_rebuilds() -> None:
    """A long sane capture streamed in small batches: the tail stays small."""
    _, recs, table, _ = scenario(4, n=20_000, max_depth=5)
    live = Profile(table)
    for chunk in np.array_split(recs, 100):
        live.add(chunk)
        live.folded()
    agg = live.aggregator
    committed = sum(agg.committed.values())
    assert committed > 0.5 * live.n_records
    assert agg.resets <= 12
    assert _view(live) == _view(_fresh(recs, symbols=table))


def test_a_late_long_call_rebuilds_exactly() -> None:
    rng = random.Random(2)
    rows = []
    t = 0
    for _ in range(500):
        d = rng.randint(1, 5)
        rows.append((0x200, t + 1, d, 1))
        t += d + 3
    live = Profile()
    for i in range(0, 500, 50):
        live.add(np.array(rows[i : i + 50], RECORD_DTYPE))
        live.function_stats()
    before = live.aggregator.resets
    live.add(np.array([(0x100, 0, t, 0)], RECORD_DTYPE))  # the parent of everything
    assert live.folded() == _fresh(np.array([*rows, (0x100, 0, t, 0)], RECORD_DTYPE)).folded()
    assert live.aggregator.resets == before + 1
    assert live.n_orphans == 0
