"""Strategies shared by the protocol tests."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from mcuprof.protocol import (
    RECORD_DTYPE,
    Ack,
    Metadata,
    Nack,
    ProfileData,
    ResponseEvent,
    Status,
)

u32 = st.integers(0, 2**32 - 1)

records_st = st.lists(
    st.tuples(u32, u32, u32, st.integers(0, 2**16 - 1)), min_size=0, max_size=30
).map(lambda rows: np.array(rows, dtype=RECORD_DTYPE))

events_st: st.SearchStrategy[ResponseEvent] = st.one_of(
    st.just(Ack()),
    st.just(Nack()),
    st.builds(
        Metadata,
        u32,
        u32,
        u32,
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789.-", max_size=15),
    ),
    st.builds(Status, st.booleans(), u32, u32, st.integers(0, 100)),
    records_st.map(ProfileData),
)
