"""frames.appearance: frame ids in order of first appearance, chunk by chunk."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcuprof.export import frames


@given(
    st.integers(1, 40).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.integers(-1, n - 1), max_size=80))
    ),
    st.sampled_from([1, 3, 7, 1 << 14]),
    st.sampled_from([np.int16, np.int32]),
)
def test_first_appearance_order(case, chunk, dtype) -> None:
    n_ids, ids = case
    frame = np.array(ids, dtype)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(frames, "CALLS_PER_STEP", chunk)
        got = frames.appearance(frame, n_ids).tolist()
    assert got == list(dict.fromkeys(ids))  # "[unknown]" (-1) included where it first is
