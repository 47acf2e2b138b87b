"""Issue 26 F8/F9: S12Z garbage and hostile ELFs cost bounded memory in the server."""

from __future__ import annotations

import tracemalloc

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.protocol.s12z import BadLine, LineDecoder, Lines
from mcuprof.protocol.s12z.decoder import MAX_BAD_EVENTS
from mcuprof.s12z.store import import_trace, session_analysis
from mcuprof.store import SessionStore

PTS = bytes([0x00, 0x11, 0x22, 0x33])


def _split(events: list) -> tuple[np.ndarray, list[BadLine]]:
    good = [e.lines for e in events if isinstance(e, Lines)]
    bad = [e for e in events if isinstance(e, BadLine)]
    return (np.concatenate(good) if good else np.empty(0)), bad


def test_bad_lines_past_the_cap_are_counted_not_kept() -> None:
    n = MAX_BAD_EVENTS + 5000
    data = bytes([0x04]) * n + PTS  # reserved format 4: one bad line per byte
    dec = LineDecoder()
    events = dec.feed(data) + dec.close()
    good, bad = _split(events)
    assert len(bad) == MAX_BAD_EVENTS
    assert [b.offset for b in bad] == list(range(MAX_BAD_EVENTS))
    assert dec.stats.reserved == n and dec.stats.unlisted == n - MAX_BAD_EVENTS
    assert good["offset"].tolist() == [n] and good["address"].tolist() == [0x332211]


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4000), st.integers(0, 8), st.lists(st.integers(1, 4000), max_size=6))
def test_capped_decoder_keeps_every_good_line_and_count(data: bytes, cap: int, cuts) -> None:
    """Whatever the cap and the feed split, the good lines and the counts are those of a
    decoder that keeps every bad line; only the events past the cap are missing."""
    full, capped = LineDecoder(max_bad=1 << 30), LineDecoder(max_bad=cap)
    whole = full.feed(data) + full.close()
    got: list = []
    at = 0
    for c in [*sorted(cuts), len(data)]:
        got += capped.feed(data[at:c])
        at = max(at, c)
    got += capped.close()
    good_full, bad_full = _split(whole)
    good, bad = _split(got)
    assert good.tobytes() == good_full.tobytes()
    listed = [b for b in bad if b.kind != "truncated"]
    assert bad_full[: len(listed)] == listed and len(listed) <= cap
    expect = full.stats.as_dict()
    expect["unlisted"] = len(bad_full) - len(bad)
    assert capped.stats.as_dict() == expect


def test_garbage_session_is_analysed_in_bounded_memory(tmp_path) -> None:
    """1 MiB of reserved bytes: before, one BadLine object per byte (~300 bytes each)."""
    size = 1 << 20
    with SessionStore(tmp_path / "data", autoflush=False) as store:
        info = import_trace(store, "garbage", bytes([0x04]) * size)
        assert info.link_stats["reserved"] == size
        assert info.link_stats["unlisted"] == size - MAX_BAD_EVENTS
        tracemalloc.start()
        try:
            _, result = session_analysis(store, info.id)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result["reserved"] == size and len(result["bad_lines"]) == 20
    assert peak < 64 * size, f"analysis peaked at {peak / size:.0f} bytes per input byte"
