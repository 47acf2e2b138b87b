"""The exports' shortcuts through the interned stacks equal the record-by-record
references (issue 13): callgrind's caller/callee pairs from the stacks' sums."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.export.callgrind import _record_edges, _stack_edges
from mcuprof.profile import Profile
from mcuprof.protocol import RECORD_DTYPE

rows_st = st.lists(
    st.tuples(
        st.integers(0, 5),  # depth: gaps make orphans
        st.integers(0, 300),  # entry: going back makes a time jump
        st.integers(0, 40),
        st.sampled_from([0x100, 0x200, 0x300, 0x400, 0x9999]),  # one address repeats
    ),
    min_size=0,
    max_size=60,
)


def _profile(rows: list[tuple[int, int, int, int]], cuts: list[int]) -> Profile:
    recs = np.zeros(len(rows), RECORD_DTYPE)
    for name, k in (("depth", 0), ("entry_time", 1), ("duration", 2), ("func_addr", 3)):
        recs[name] = [r[k] for r in rows]
    p = Profile()
    at = 0
    for cut in [*sorted(set(cuts)), len(rows)]:
        if at < cut <= len(rows):
            p.add(recs[at:cut])
            _stack_edges(p)  # a live reader between the adds
            at = cut
    return p


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_st, cuts=st.lists(st.integers(0, 60), max_size=3))
def test_stack_edges_equal_record_edges(rows, cuts) -> None:
    p = _profile(rows, cuts)
    got = _stack_edges(p)
    want = _record_edges(p, None)
    for g, w in zip(got, want, strict=True):
        assert g.tolist() == w.tolist()
