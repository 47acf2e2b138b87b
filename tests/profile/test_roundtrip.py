"""Simulated call trees -> records -> packets -> decode -> reconstruction == truth."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile
from mcuprof.profile.timebase import unwrap_exits
from tests.profile.helpers import (
    expected_folded,
    feed_stream,
    kept_truth,
    metadata_packet,
    orphan_names,
    packets,
    scenario,
    stream_parents,
)

SCENARIOS = {
    "plain": {},
    "wrap": {"start_tick": (1 << 32) - 3000},
    "wrap_many_times": {"max_gap": 1 << 22, "max_depth": 3, "start_tick": 5 << 32},
    "isr": {"isr": True},
    "thumb_return_addresses": {"style": "mixed", "thumb": True},
    "deep_recursive": {"max_depth": 14, "max_children": 2, "recursive_rate": 0.5},
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("freq", [1_000_000, 2_000_000])
def test_round_trip(name: str, freq: int) -> None:
    trace, records, table, names = scenario(len(name) * 7 + freq, n=600, **dict(SCENARIOS[name]))
    rng = random.Random(freq)
    cuts = rng.sample(range(1, len(records)), 25)
    stream = metadata_packet(freq) + b"".join(packets(records, cuts))
    profile = Profile(table)
    feed_stream(profile, stream, rng.sample(range(1, len(stream)), 40))
    assert profile.n_records == len(records)
    assert profile.timer_freq == freq
    # Entries in the table are unwrapped: they equal the truth up to one constant.
    offset = int(profile.table()["entry"].min()) - int(trace.entry.min())
    shifted = trace.entry + offset
    parents = stream_parents(profile, len(trace), trace.depth, shifted)
    assert parents == trace.parent.tolist()
    assert profile.n_orphans == 0
    assert profile.folded() == expected_folded(names, trace.parent.tolist(), trace.duration, freq)
    assert profile.duration_us == pytest.approx(
        (int((trace.entry + trace.duration).max()) - int(trace.entry.min())) * 1e6 / freq
    )


def test_wrap_really_wraps() -> None:
    trace, records, _, _ = scenario(3, n=2000, **SCENARIOS["wrap_many_times"])
    exits = (records["entry_time"].astype(np.int64) + records["duration"]) & 0xFFFFFFFF
    assert np.count_nonzero(np.diff(exits) < 0) >= 2  # several wraps past 2^32
    span = int((trace.entry + trace.duration).max() - trace.entry.min())
    assert span > 2 * (1 << 32)
    assert np.array_equal(
        unwrap_exits(records["entry_time"], records["duration"]) - exits[0],
        trace.entry + trace.duration - (trace.entry[0] + trace.duration[0]),
    )


@pytest.mark.parametrize("seed", range(4))
def test_lost_packets_make_orphans(seed: int) -> None:
    trace, records, table, names = scenario(100 + seed, n=800, isr=True)
    rng = random.Random(seed)
    cuts = sorted(rng.sample(range(1, len(records)), 60))
    pkts = packets(records, cuts)
    bounds = [0, *cuts, len(records)]
    lost = set(rng.sample(range(len(pkts)), 12))
    keep = np.ones(len(records), bool)
    for i in lost:
        keep[bounds[i] : bounds[i + 1]] = False
    # A lost packet on the wire: corrupt one byte so its CRC fails and the decoder drops it.
    wire = b"".join(
        p[:10] + bytes([p[10] ^ 0xFF]) + p[11:] if i in lost else p for i, p in enumerate(pkts)
    )
    profile = Profile(table)
    dec, _ = feed_stream(profile, wire, rng.sample(range(1, len(wire)), 30))
    assert dec.stats.crc_errors == len(lost)
    parent, idx = kept_truth(trace, keep)
    assert profile.n_records == len(idx)
    assert profile.n_orphans == sum(
        1 for p, d in zip(parent, trace.depth[idx], strict=False) if p < 0 and d > 0
    )
    assert profile.n_orphans > 0
    got = stream_parents(profile, len(idx), trace.depth[idx], trace.entry[idx])
    assert got == parent
    kept_names = [names[i] for i in idx.tolist()]
    shown = orphan_names(kept_names, parent, trace.depth[idx].tolist())
    folded = profile.folded()
    assert folded == expected_folded(shown, parent, trace.duration[idx], 1_000_000)
    assert any(k.startswith("[unknown];") for k in folded)


def test_every_split_of_a_small_trace() -> None:
    trace, records, table, names = scenario(7, n=7, isr=True, max_depth=3)
    n = len(records)
    want = expected_folded(names, trace.parent.tolist(), trace.duration, 1_000_000)
    for mask in itertools.product([False, True], repeat=n - 1):
        cuts = [i + 1 for i, m in enumerate(mask) if m]
        profile = Profile(table)
        feed_stream(profile, b"".join(packets(records, cuts)))
        assert stream_parents(profile, n, trace.depth, trace.entry) == trace.parent.tolist()
        assert profile.folded() == want


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_any_packet_and_byte_split(seed: int, data: st.DataObject) -> None:
    trace, records, table, names = scenario(seed, n=60, isr=True, style="mixed", thumb=True)
    n = len(records)
    cuts = data.draw(st.lists(st.integers(1, n - 1), max_size=n), label="packet cuts")
    stream = b"".join(packets(records, cuts))
    chunks = data.draw(st.lists(st.integers(1, len(stream) - 1), max_size=30), label="byte cuts")
    profile = Profile(table)
    feed_stream(profile, stream, chunks)
    assert stream_parents(profile, n, trace.depth, trace.entry) == trace.parent.tolist()
    assert profile.folded() == expected_folded(
        names, trace.parent.tolist(), trace.duration, 1_000_000
    )
