"""The decoder's direct path (runs of packets taken straight from the fed bytes, no
buffer) against its byte-wise path: the same events and counters on any input."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol import MAX_PACKET_SIZE, RECORD_DTYPE, ProfileData, ResponseDecoder
from mcuprof.protocol import responses as R
from mcuprof.protocol.responses import encode_event
from tests.protocol.conftest import events_st

SETTINGS = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])


def _decode(
    stream: bytes, cuts: list[int], direct_min: int, direct_bytes: int, **kw: bool
) -> tuple[list, dict, int]:
    saved = R._DIRECT_MIN, R._DIRECT_BYTES
    R._DIRECT_MIN, R._DIRECT_BYTES = direct_min, direct_bytes
    try:
        decoder = ResponseDecoder(**kw)
        events: list = []
        last = 0
        for cut in [*cuts, len(stream)]:
            events += decoder.feed(stream[last:cut])
            last = cut
        events += decoder.close()
    finally:
        R._DIRECT_MIN, R._DIRECT_BYTES = saved
    return events, decoder.stats.as_dict(), decoder.max_buffered


def _records(events: list) -> bytes:
    return b"".join(e.records.tobytes() for e in events if isinstance(e, ProfileData))


def _others(events: list) -> list:
    return [e for e in events if not isinstance(e, ProfileData)]


@SETTINGS
@given(
    st.lists(st.tuples(st.binary(max_size=30), events_st), max_size=10),
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 6)), max_size=6),
    st.integers(0, 2**32 - 1),
    st.data(),
)
def test_direct_runs_equal_the_byte_wise_path(
    items: list, runs: list[tuple[int, int]], seed: int, data: st.DataObject
) -> None:
    """Garbage, every kind of packet and runs of same-sized PROFILE_DATA packets (some
    with a flipped bit), cut anywhere and taken directly in runs of any size: the same
    events, in order, and the same counters as with the direct path off."""
    rng = np.random.default_rng(seed)
    parts = [g + encode_event(e) for g, e in items]
    for n_packets, per_packet in runs:
        raw = rng.integers(0, 256, size=(n_packets, per_packet * 14), dtype=np.uint8)
        parts += [encode_event(ProfileData(row.view(RECORD_DTYPE))) for row in raw]
    order = data.draw(st.permutations(range(len(parts))))
    stream = bytearray(b"".join(parts[i] for i in order))
    for _ in range(data.draw(st.integers(0, 2))):
        if stream:
            at = data.draw(st.integers(0, len(stream) - 1))
            stream[at] ^= 1 << data.draw(st.integers(0, 7))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, len(stream)), max_size=6))))
    direct_min = data.draw(st.sampled_from([8, 64, 700]))
    direct_bytes = data.draw(st.sampled_from([1, 300, 5000, 1 << 22]))
    off = 1 << 62
    want, want_stats, _ = _decode(bytes(stream), cuts, off, off)
    got, got_stats, max_buffered = _decode(bytes(stream), cuts, direct_min, direct_bytes)
    assert got == want
    assert got_stats == want_stats
    assert max_buffered <= MAX_PACKET_SIZE
    # batch, merged or not: the same records and other events, in order
    for merge in (True, False):
        batched, stats, _ = _decode(
            bytes(stream), cuts, direct_min, direct_bytes, batch=True, merge=merge
        )
        assert stats == want_stats
        assert _records(batched) == _records(want)
        assert _others(batched) == _others(want)
