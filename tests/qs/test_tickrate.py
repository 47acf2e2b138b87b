"""The tick-rate estimator (qs/tickrate.py): synthetic arrivals of frames stamped by a
clock of known rate, with arrival jitter, bursts held back and 32-bit wraps, give the
rate within 5% once 10 s of arrivals are in."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.qs.tickrate import (
    MAX_SAMPLES,
    TickRate,
    differs,
    estimate_tick_hz,
    unwrap,
)

WRAP = 1 << 32


def arrivals(
    seed: int, rate: float, seconds: float, jitter_s: float, bursts: int, start: int
) -> tuple[np.ndarray, np.ndarray]:
    """Frames made every 1-50 ms over ``seconds``, stamped by a ``rate`` Hz clock that
    starts at ``start`` (32 bits), arriving after 0..``jitter_s`` of delay (mostly
    short), and in ``bursts`` spells of up to 2 s held back and sent together."""
    rng = np.random.default_rng(seed)
    made = np.cumsum(rng.uniform(0.001, 0.05, int(seconds / 0.001) + 10))
    made = made[made <= seconds]
    delay = jitter_s * rng.random(len(made)) ** 4
    host = made + delay
    for _ in range(bursts):
        at = rng.uniform(0, seconds)
        held = (made >= at) & (made < at + rng.uniform(0.1, 2.0))
        if held.any():
            host[held] = host[held].max()
    host = np.maximum.accumulate(host)  # read in the order sent
    stamps = (start + np.round(made * rate).astype(np.int64)) % WRAP
    return 1000.0 + host, stamps


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rate=st.sampled_from([1e3, 32768.0, 1e6, 1e7, 8e7, 1e9]) | st.floats(1e3, 1e9),
    seconds=st.floats(10.5, 40.0),
    jitter_s=st.floats(0.0, 0.2),
    bursts=st.integers(0, 4),
    start=st.integers(0, WRAP - 1),
)
def test_known_rate_within_5_percent(seed, rate, seconds, jitter_s, bursts, start) -> None:
    host, stamps = arrivals(seed, rate, seconds, jitter_s, bursts, start)
    got = estimate_tick_hz(host, stamps)
    assert got is not None
    assert abs(got / rate - 1) < 0.05, (got, rate)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rate=st.floats(1e3, 1e8))
def test_live_tracker_thins_to_the_same_estimate(seed, rate) -> None:
    """Fed one arrival at a time (thinned to its hull past MAX_SAMPLES), the tracker
    gives what the pure function gives on everything."""
    host, stamps = arrivals(seed, rate, 20.0, 0.05, 2, seed % WRAP)
    t = TickRate()
    for h, s in zip(host.tolist(), stamps.tolist(), strict=True):
        t.add(h, s)
    assert len(t._host) < MAX_SAMPLES
    assert t.update() is not None
    assert abs(t.estimate_hz / estimate_tick_hz(host, stamps) - 1) < 1e-9


def test_not_before_ten_seconds() -> None:
    host, stamps = arrivals(1, 1e6, 9.5, 0.01, 0, 0)
    assert estimate_tick_hz(host, stamps) is None
    assert estimate_tick_hz([], []) is None
    assert estimate_tick_hz([0.0, 20.0], [5, 5]) is None  # a clock that stands still


@given(st.integers(0, WRAP - 1), st.lists(st.integers(-1000, 2**31 - 1), max_size=50))
def test_unwrap_steps_are_signed(start, steps) -> None:
    true = start + np.cumsum([0, *steps])
    assert unwrap(true % WRAP).tolist() == true.tolist()


def test_differs_by_more_than_20_percent() -> None:
    assert differs(10e6, 1e6) and differs(0.5e6, 1e6)
    assert not differs(1.1e6, 1e6) and not differs(None, 1e6)


def _record(rec: int, ts: int | None, values: tuple = ()) -> Any:
    from mcuprof.protocol.qs import QSConfig, Record

    return Record(0, 0, rec, ts, (), values, QSConfig(), None, b"")


def test_watch_fits_live_arrivals_not_a_replay() -> None:
    """TargetWatch: one sample per batch (its newest stamp at the batch's arrival); a
    replay's batches stay out of the fit; a target reset starts it again; an assertion
    is kept with its module and location until the next reset."""
    from mcuprof.qs.watch import ASSERT_FAIL, TargetWatch

    now = [0.0]
    replaying = [False]
    w = TargetWatch(1_000_000, "assumed", clock=lambda: now[0], replaying=lambda: replaying[0])
    for k in range(25):
        now[0] = k * 0.5
        w.qs_events([_record(8, (k * 5_000_000 + 7) % WRAP), _record(8, k * 5_000_000 % WRAP)])
    fig = w.health_figures()
    assert fig["tick_estimate_hz"] == pytest.approx(10e6, rel=1e-6)
    assert fig["tick_differs"] and fig["tick_span_s"] == 12.0
    replaying[0] = True
    w.qs_events([_record(8, 1)])
    w.qs_events([_record(ASSERT_FAIL, 5, (5, 192, "table.c"))])
    assert w.tick.last_host == 12.0  # the replay's arrivals are no samples
    assert w.health_figures()["asserted"]["module"] == "table.c"
    replaying[0] = False
    info = _record(64, None, (1, 0, None))
    w.qs_events([info, _record(8, 3)])
    assert w.health_figures()["asserted"] is None and len(w.tick._host) == 1
