"""The builder's entry sort (one unstable sort of (entry, position) keys) against the
stable argsort it stands for."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile.incremental import _IDS
from mcuprof.profile.model import sort_entries

entries_st = st.lists(
    st.one_of(
        st.integers(-50, 50),  # many ties
        st.integers(-(1 << 62), 1 << 62),  # spans past 63 bits with the positions
        st.integers((1 << 40) - 20, (1 << 40) + 20),
    ),
    min_size=1,
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(entries_st, st.integers(0, 1 << 40))
def test_sort_entries_is_the_stable_sort(values: list[int], shift: int) -> None:
    entry = np.array(values, np.int64)
    if np.abs(entry).max() < (1 << 41):
        entry += shift
    perm_want = np.argsort(entry, kind="stable")
    got, perm = sort_entries(entry.copy())
    assert got.dtype == np.int64
    assert perm.tolist() == perm_want.tolist()
    assert got.tolist() == entry[perm_want].tolist()


def test_sort_entries_positions_past_a_piece() -> None:
    """More records than the piece its positions are written in."""
    rng = np.random.default_rng(5)
    entry = rng.integers(0, 30, _IDS + 1000).astype(np.int64)
    got, perm = sort_entries(entry.copy())
    want = np.argsort(entry, kind="stable")
    assert np.array_equal(perm, want)
    assert np.array_equal(got, entry[want])


def test_sort_entries_few_values() -> None:
    """A saw-tooth of a few ticks (a target that keeps resetting), sorted by one scan
    per value; and one value more than that path takes."""
    from mcuprof.profile.model import _FEW

    rng = np.random.default_rng(6)
    for values in (1, _FEW, _FEW + 1):
        entry = (rng.integers(0, values, 5000) * 7 + (1 << 35)).astype(np.int64)
        got, perm = sort_entries(entry.copy())
        want = np.argsort(entry, kind="stable")
        assert np.array_equal(perm, want)
        assert np.array_equal(got, entry[want])
