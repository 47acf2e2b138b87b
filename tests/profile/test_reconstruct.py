"""The reconstruction rule on arbitrary (also corrupt) streams, and incremental == batch."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile import Profile
from mcuprof.profile.timebase import unwrap_exits
from mcuprof.protocol import RECORD_DTYPE
from tests.profile.helpers import expected_folded, reference_parents, stream_parents

record_st = st.tuples(
    st.sampled_from([0x100, 0x200, 0x300, 0x400]),
    st.integers(0, 60),
    st.integers(0, 25),
    st.integers(0, 3),
)


def _records(rows: list[tuple[int, int, int, int]]) -> np.ndarray:
    return np.array(rows, RECORD_DTYPE)


def _unwrapped(recs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    dur = recs["duration"].astype(np.int64)
    entry = unwrap_exits(recs["entry_time"], recs["duration"]) - dur
    return recs["depth"].astype(np.int64), entry, dur


def _state(p: Profile) -> tuple:
    """Everything observable; frame ids are interning order, so compare names instead."""
    t = p.table()
    names = [p.frames[f].name for f in t.pop("frame").tolist()]
    stats = sorted(
        (s.label, s.calls, s.total_us, s.self_us, s.min_us, s.max_us) for s in p.function_stats()
    )
    return tuple(v.tobytes() for v in t.values()), names, p.folded(), p.n_orphans, stats


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(record_st, min_size=1, max_size=40), data=st.data())
def test_rule_and_incremental_on_arbitrary_records(rows, data) -> None:
    """Any stream, even one whose same-depth calls overlap, follows the literal rule,
    and every split of it gives the very same profile."""
    recs = _records(rows)
    depth, entry, dur = _unwrapped(recs)
    want = reference_parents(depth, entry, dur)
    whole = Profile()
    whole.add(recs)
    assert stream_parents(whole, len(recs), depth, entry) == want
    names = [f"0x{a:08x}" for a in recs["func_addr"].tolist()]
    shown = [
        f"[unknown];{n}" if p < 0 and d > 0 else n
        for n, p, d in zip(names, want, depth.tolist(), strict=True)
    ]
    assert whole.folded() == expected_folded(shown, want, dur, 1_000_000)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(recs)), max_size=10))))
    split = Profile()
    for a, b in zip([0, *cuts], [*cuts, len(recs)], strict=True):
        split.add(recs[a:b])
    assert _state(split) == _state(whole)


def test_block_search_for_far_back_parent() -> None:
    """A containing parent many overlapping same-depth records back (corrupt data) is
    still found: this goes past the vectorised steps into the block search."""
    rows = [(0x10 + i, 10 + 2 * i, 1, 1) for i in range(600)]  # depth-1 noise
    rows.append((0x900, 0, 5000, 1))  # the long depth-1 call, entered first
    rows += [(0x800 + i, 20 + 2 * i, 1, 2) for i in range(5)]  # children inside noise
    rows.append((0x990, 1500, 10, 2))  # only the long one contains it
    recs = _records(rows)
    depth, entry, dur = _unwrapped(recs)
    want = reference_parents(depth, entry, dur)
    p = Profile()
    p.add(recs)
    assert stream_parents(p, len(recs), depth, entry) == want
    assert want[-1] == 600


@settings(max_examples=100)
@given(
    n_parents=st.integers(1, 30),
    data=st.data(),
)
def test_children_before_parents_are_reparented(n_parents: int, data) -> None:
    """Exit order delivers children first; each must move under its parent when the
    parent arrives, whatever the batch boundaries."""
    rows = []
    t = 0
    for i in range(n_parents):
        kids = data.draw(st.integers(0, 4))
        start = t
        t += 1
        for _ in range(kids):
            rows.append((0x200, t, 3, 1))
            t += 4
        rows.append((0x100 + i, start, t - start, 0))
        t += 2
    recs = _records(rows)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(recs)), max_size=8))))
    p = Profile()
    for a, b in zip([0, *cuts], [*cuts, len(recs)], strict=True):
        p.add(recs[a:b])
    assert p.n_orphans == 0
    assert not any(k.startswith("[unknown]") for k in p.folded())


def test_orphan_pending_until_parent_arrives() -> None:
    p = Profile()
    p.add(_records([(0x200, 5, 2, 1)]))
    assert p.folded() == {"[unknown];0x00000200": 2}
    p.add(_records([(0x100, 0, 10, 0)]))
    assert p.folded() == {"0x00000100": 8, "0x00000100;0x00000200": 2}
    assert p.n_orphans == 0


def test_out_of_order_depth_insert_keeps_parents() -> None:
    """A device reset sends time backwards: the new calls are merged before the old ones
    at their depth, and pointers into that depth stay right."""
    p = Profile()
    p.add(_records([(0x2, 1000, 5, 1), (0x1, 990, 20, 0), (0x3, 2000, 3, 1)]))
    p.add(_records([(0x4, 100, 2, 0), (0x5, 50, 10, 0), (0x6, 5, 2, 1), (0x7, 0, 30, 0)]))
    recs = _records(
        [
            (0x2, 1000, 5, 1),
            (0x1, 990, 20, 0),
            (0x3, 2000, 3, 1),
            (0x4, 100, 2, 0),
            (0x5, 50, 10, 0),
            (0x6, 5, 2, 1),
            (0x7, 0, 30, 0),
        ]
    )
    depth, entry, dur = _unwrapped(recs)
    assert stream_parents(p, len(recs), depth, entry) == reference_parents(depth, entry, dur)
    assert "0x00000001;0x00000002" in p.folded()
    assert "0x00000007;0x00000006" in p.folded()


def test_store_bytes_per_record_within_budget() -> None:
    rng = np.random.default_rng(1)
    n = 200_000
    recs = np.empty(n, RECORD_DTYPE)
    recs["func_addr"] = rng.integers(0x0800_0000, 0x0800_4000, n)
    recs["duration"] = 3
    recs["entry_time"] = np.arange(n) * 5
    recs["depth"] = rng.integers(0, 6, n)
    p = Profile()
    for chunk in np.array_split(recs, 37):
        p.add(chunk)
    assert p.nbytes / n <= 40


def test_far_search_in_bulk() -> None:
    """Thousands of children whose only container lies many blocks back, plus orphans
    with no container at all: more than one chunk of the far search."""
    rows = [(0x1, 0, 10_000_000, 0)]  # the long call, entered first
    rows += [(0x2, 100 + 10 * i, 2, 0) for i in range(2000)]  # overlapping noise
    kids = [(0x3, 30_000 + 7 * i, 3, 1) for i in range(6000)]
    lost = [(0x4, 20_000_000 + 9 * i, 3, 1) for i in range(3000)]
    p = Profile()
    p.add(_records(kids + lost))
    p.add(_records(rows))
    t = p.table()
    at1 = t["depth"] == 1
    addr = t["func_addr"][at1]
    parent = t["parent"][at1]
    assert (parent[addr == 0x3] == 0).all()  # row 0: the long call
    assert (parent[addr == 0x4] == -1).all()
    assert p.n_orphans == 3000
