"""detect_kind's shortcut (no QS decoder when MiniProfiler cannot lose) against the
plain rule: the kind whose decoder finds more good packets/frames, MiniProfiler on ties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.protocol import RECORD_DTYPE, encode_profile_data
from mcuprof.protocol.qs import QSDecoder, encode_frame
from mcuprof.sources import MiniProfilerSource, detect_kind


def _reference(data: bytes) -> str | None:
    decoder = QSDecoder()
    decoder.feed(data)
    scores = {"miniprofiler": MiniProfilerSource.looks_like(data), "qs": decoder.frame_stats.frames}
    best = max(scores, key=lambda k: scores[k])
    return best if scores[best] > 0 else None


def _mp_packet(n: int, seed: int) -> bytes:
    recs = np.zeros(n, RECORD_DTYPE)
    rng = np.random.default_rng(seed)
    recs["func_addr"] = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    recs["entry_time"] = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    recs["duration"] = rng.integers(0, 300, n)
    return encode_profile_data(recs)


piece = st.one_of(
    st.builds(_mp_packet, st.integers(0, 6), st.integers(0, 1000)),
    st.builds(encode_frame, st.integers(0, 255), st.integers(0, 120), st.binary(max_size=12)),
    st.binary(max_size=30),
    st.sampled_from([b"\x7e", b"\x7e\x7e\x7e", b"\x7d\x7e"]),
)


@settings(max_examples=300)
@given(st.lists(piece, max_size=40))
def test_detect_kind_equals_the_full_scores(pieces: list[bytes]) -> None:
    data = b"".join(pieces)
    assert detect_kind(data) == _reference(data)
