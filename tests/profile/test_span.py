"""``mcuprof info``'s span (CaptureSpan) against the profile's, whatever the packets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile import span as span_mod
from mcuprof.profile.model import Profile
from mcuprof.profile.span import CaptureSpan
from mcuprof.protocol import RECORD_DTYPE, ProfileData

record_st = st.tuples(
    st.just(0x100),
    st.one_of(st.integers(0, 80), st.integers((1 << 32) - 60, (1 << 32) - 1)),
    st.integers(0, 1 << 31),
    st.integers(0, 4),
)


@settings(max_examples=200)
@given(
    rows=st.lists(record_st, min_size=1, max_size=80),
    data=st.data(),
    piece=st.sampled_from([1, 3, 1 << 16]),
    alone=st.sampled_from([1, 5, 1 << 12]),
)
def test_span_is_the_profiles(rows, data, piece, alone) -> None:
    """Packets of any size (small ones joined, large ones alone, both unwrapped a piece
    at a time): the same first entry and last exit as the profile's."""
    recs = np.array(rows, RECORD_DTYPE)
    n = len(recs)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, n), max_size=8))))
    events = [ProfileData(recs[a:b]) for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    split = data.draw(st.integers(0, len(events)))
    saved = span_mod.RECORD_PIECE, span_mod._ALONE
    span_mod.RECORD_PIECE, span_mod._ALONE = piece, alone
    try:
        span = CaptureSpan()
        span.feed(events[:split])
        span.feed(events[split:])
    finally:
        span_mod.RECORD_PIECE, span_mod._ALONE = saved
    want = Profile()
    want.add(recs)
    assert (span._lo, span._hi) == (want.t0_ticks, want.t1_ticks)
    assert span._last_exit == want._last_exit
