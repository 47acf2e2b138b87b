"""The numeric kernels (profile/kernels.py) against the plain numpy each one stands for,
on random inputs: same values, same order, the dtype the kernel promises."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile.incremental import _unique_keys
from mcuprof.profile.kernels import (
    _IDS,
    depth_groups,
    distinct,
    is_sorted,
    pair_keys,
    ranks,
    sort_entries,
    sort_with_order,
    split_keys,
    unique_inverse,
    unique_pairs,
)

ids_st = st.lists(st.integers(-1, 70), min_size=0, max_size=60)


@settings(max_examples=100)
@given(st.lists(st.integers(-5, 5), max_size=30))
def test_is_sorted_is_the_pairwise_check(values) -> None:
    a = np.array(values, np.int64)
    assert is_sorted(a) == bool(np.all(a[1:] >= a[:-1]))


@settings(max_examples=100)
@given(st.lists(st.integers(0, 40), max_size=200), st.sampled_from([1, 30]))
def test_depth_groups_are_the_positions_of_each_depth(depths, scale) -> None:
    """A few depths (a scan each) or many (one stable sort)."""
    depth = np.array(depths, np.uint16) // scale
    got = depth_groups(depth) if len(depth) else []
    want = [np.flatnonzero(depth == d) for d in np.unique(depth)]
    assert [g.tolist() for g in got] == [w.tolist() for w in want]


@settings(max_examples=100)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=100), st.booleans())
def test_distinct_is_np_unique(values, dense) -> None:
    """By a table over a small range of addresses, or np.unique over a wide one."""
    raw = np.array(values, np.uint32)
    if dense:
        raw = raw % np.uint32(300) + np.uint32(0x0800_0000)
    got = distinct(raw)
    assert got.dtype == np.uint32
    assert got.tolist() == np.unique(raw).tolist()


@settings(max_examples=100)
@given(
    st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**31 - 1)), max_size=50)
)
def test_pair_keys_and_split_keys_are_shifts(pairs) -> None:
    hi = np.array([p[0] for p in pairs], np.int32)
    lo = np.array([p[1] for p in pairs], np.int32)
    keys = pair_keys(hi, lo)
    assert keys.tolist() == [(h << 32) | v for h, v in pairs]
    h, v = split_keys(keys)
    assert (h.tolist(), v.tolist()) == (hi.tolist(), lo.tolist())


@settings(max_examples=200)
@given(pst=ids_st, data=st.data())
def test_unique_keys_equal_numpy_unique(pst, data) -> None:
    frame = data.draw(st.lists(st.integers(0, 5000), min_size=len(pst), max_size=len(pst)))
    p, f = np.array(pst, np.int32), np.array(frame, np.int32)
    want, want_inv = np.unique((p.astype(np.int64) << 32) | f, return_inverse=True)
    hi, lo, inv = _unique_keys(p, f)
    assert hi.dtype == lo.dtype == inv.dtype == np.int32
    assert ((hi.astype(np.int64) << 32) | lo).tolist() == want.tolist()
    assert inv.reshape(-1).tolist() == want_inv.reshape(-1).tolist()


@settings(max_examples=200)
@given(keys=st.lists(st.integers(-(2**40), 2**40), max_size=80))
def test_unique_inverse_is_np_unique(keys) -> None:
    k = np.array(keys, np.int64)
    want, want_inv = np.unique(k, return_inverse=True)
    uniq, inv = unique_inverse(k.copy())
    assert uniq.tolist() == want.tolist()
    assert inv.tolist() == want_inv.reshape(-1).tolist()


@settings(max_examples=200)
@given(
    keys=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=60),
    small=st.lists(st.integers(-50, 50), max_size=60),
)
def test_sort_with_order_is_a_stable_argsort(keys, small) -> None:
    """Packed (small range) or not (the whole int64 range): a stable argsort's order."""
    for k in (np.array(keys, np.int64), np.array(small, np.int64)):
        want = np.argsort(k, kind="stable")
        got_keys, got = sort_with_order(k.copy(), own=True)
        assert got_keys.tolist() == k[want].tolist()
        span = max(k.tolist(), default=0) - min(k.tolist(), default=0)  # Python ints
        if len(set(k.tolist())) == len(k) or span < 2**40:
            assert got.tolist() == want.tolist()  # packed: stable


@settings(max_examples=200)
@given(
    pairs=st.lists(st.tuples(st.integers(-3, 2**31 - 1), st.integers(-3, 2**31 - 1)), max_size=60)
)
def test_unique_pairs_equals_numpy(pairs) -> None:
    hi = np.array([p[0] for p in pairs], np.int32)
    lo = np.array([p[1] for p in pairs], np.int32)
    want, want_inv = np.unique(
        np.array(pairs, np.int64).reshape(-1, 2), axis=0, return_inverse=True
    )
    h, lw, inv = unique_pairs(hi, lo)
    assert list(zip(h.tolist(), lw.tolist(), strict=True)) == [tuple(r) for r in want.tolist()]
    assert inv.tolist() == want_inv.reshape(-1).tolist()


@settings(max_examples=300)
@given(
    hi=st.lists(st.integers(-3, 10**6), min_size=0, max_size=80).map(lambda v: v * 2),
    data=st.data(),
)
def test_unique_pairs_equal_numpy_unique(hi, data) -> None:
    """unique_pairs, by its tables (values, or their ranks when the values are sparse) or
    by a sort, is np.unique over the pairs: sorted distinct pairs and each row's number."""
    lo = data.draw(st.lists(st.integers(0, 5000), min_size=len(hi), max_size=len(hi)))
    h, lo_ = np.array(hi, np.int32), np.array(lo, np.int32)
    want, want_inv = np.unique((h.astype(np.int64) << 32) | lo_, return_inverse=True)
    got_h, got_l, inv = unique_pairs(h, lo_)
    assert ((got_h.astype(np.int64) << 32) | got_l).tolist() == want.tolist()
    assert inv.dtype == np.int32
    assert inv.reshape(-1).tolist() == want_inv.reshape(-1).tolist()


@given(st.lists(st.integers(-3, 60), max_size=200))
def test_frame_ranks_equal_numpy_unique(values: list[int]) -> None:
    """The timeline names its boxes' frames by ``ranks``: np.unique's answer."""
    ids = np.array(values, np.int64)
    lo = int(ids.min()) if len(ids) else 0
    used, idx = ranks(ids, lo, int(ids.max()) - lo + 1 if len(ids) else 0)
    want_used, want_idx = np.unique(ids, return_inverse=True)
    assert used.tolist() == want_used.tolist()
    assert idx.tolist() == want_idx.reshape(-1).tolist()


entries_st = st.lists(
    st.one_of(
        st.integers(-50, 50),  # many ties
        st.integers(-(1 << 62), 1 << 62),  # spans past 63 bits with the positions
        st.integers((1 << 40) - 20, (1 << 40) + 20),
    ),
    min_size=1,
    max_size=200,
)


@settings(max_examples=300)
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
