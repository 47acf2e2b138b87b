"""The model's second door: calls a source names by key (profile/keyed.py). Past the door
they are the records MiniProfiler's door makes: the same calls given either way, in any
split, give the same tables; frames are one per key, named as the source says; times are
the source's own 64 bits."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.profile.columns import Spill
from mcuprof.profile.keyed import MAX_CALL_TICKS, FrameInfo, KeyedCalls
from mcuprof.profile.model import Profile
from mcuprof.profile.timebase import concat_records
from mcuprof.protocol import RECORD_DTYPE
from mcuprof.symbols import SymbolTable
from mcuprof.symbols.table import Function

NAMES = ["main", "a", "b", "a"]  # two keys named "a": two frames, one folded name
KEYS = [FrameInfo(("f", i), name, f"file{i}.c") for i, name in enumerate(NAMES)]

# (frame, step of the entry from the previous call: back or forward, duration, depth)
row_st = st.tuples(
    st.integers(0, len(KEYS) - 1),
    st.one_of(st.integers(-400, 40), st.integers(-3, 3), st.just(0)),
    st.integers(0, 40),
    st.integers(0, 4),
)


def _keyed(rows: list[tuple[int, int, int, int]], base: int) -> KeyedCalls:
    """The calls, each batch listing its frames in order of first use."""
    frame, step, dur, depth = (np.array(c, np.int64) for c in zip(*rows, strict=True))
    used = list(dict.fromkeys(frame.tolist()))
    local = {f: i for i, f in enumerate(used)}
    return KeyedCalls(
        base + np.cumsum(step),
        dur.astype(np.uint32),
        depth.astype(np.uint16),
        np.array([local[f] for f in frame.tolist()], np.int32),
        [KEYS[f] for f in used],
    )


def _records(calls: KeyedCalls) -> np.ndarray:
    """The same calls through MiniProfiler's door: an address per frame key."""
    recs = np.empty(len(calls), RECORD_DTYPE)
    recs["func_addr"] = [0x100 * (1 + calls.frames[i].key[1]) for i in calls.frame.tolist()]
    recs["entry_time"] = calls.entry & 0xFFFF_FFFF
    recs["duration"] = calls.dur
    recs["depth"] = calls.depth
    return recs


def _named(profile: Profile) -> dict[str, np.ndarray]:
    """``table()`` with each call's frame as its file (unique per key) for comparing."""
    t = profile.table()
    files = np.array([profile.frames[f].file or hex(a) for f, a in
                      zip(t["frame"].tolist(), t["func_addr"].tolist(), strict=True)])  # fmt: skip
    return {k: v for k, v in t.items() if k not in ("frame", "func_addr")} | {"file": files}


@settings(max_examples=80, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    rows=st.lists(row_st, min_size=1, max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=4),
)
def test_keyed_calls_in_any_split_are_the_records_of_the_other_door(rows, cuts) -> None:
    whole = _keyed(rows, 100_000)
    bounds = sorted({0, len(rows), *(c % (len(rows) + 1) for c in cuts)})
    split = Profile()
    for a, b in itertools.pairwise(bounds):
        split.add(_keyed(rows[a:b], 100_000 + int(np.sum([r[1] for r in rows[:a]], dtype=int))))
    by_address = Profile(_symbols())
    by_address.add(_records(whole))
    got, want = _named(split), _named(by_address)
    assert got.keys() == want.keys()
    for k in want:
        assert np.array_equal(got[k], want[k]), k
    assert split.folded() == by_address.folded()
    assert (split.t0_ticks, split.t1_ticks) == (by_address.t0_ticks, by_address.t1_ticks)


def _symbols() -> SymbolTable:
    """A function per key, at the address ``_records`` gives it, with the key's name."""
    return SymbolTable.from_functions(
        [
            Function(k.name, k.name, 0x100 * (1 + i), 0x100 * (2 + i), k.file)
            for i, k in enumerate(KEYS)
        ]
    )


def test_one_frame_per_key_named_by_the_source() -> None:
    calls = KeyedCalls(
        np.array([0, 10, 20, 30], np.int64),
        np.array([5, 5, 5, 5], np.uint32),
        np.zeros(4, np.uint16),
        np.array([0, 1, 2, 0], np.int32),
        [KEYS[1], KEYS[3], KEYS[1]],  # listed twice: one key, one frame
    )
    profile = Profile()
    profile.add(calls)
    assert [(f.name, f.file) for f in profile.frames] == [("a", "file1.c"), ("a", "file3.c")]
    stats = {s.file: s.calls for s in profile.function_stats()}
    assert stats == {"file1.c": 3, "file3.c": 1}
    # An ELF loaded later names addresses, never keyed frames.
    profile.set_symbols(SymbolTable.from_functions([Function("x", "x", 0, 0x1000)]))
    assert [(f.name, f.file) for f in profile.frames] == [("a", "file1.c"), ("a", "file3.c")]


def test_times_are_the_sources_64_bits() -> None:
    """Entries past 2**32, gaps of more than 2**31: taken as they are, not wrapped."""
    entry = np.array([1 << 40, (1 << 40) + (3 << 31), (1 << 41)], np.int64)
    calls = KeyedCalls(entry, np.full(3, 7, np.uint32), np.zeros(3, np.uint16),
                       np.zeros(3, np.int32), [KEYS[0]])  # fmt: skip
    profile = Profile(timer_freq=1_000_000)
    profile.add(calls)
    assert profile.t0_ticks == 1 << 40 and profile.t1_ticks == (1 << 41) + 7
    assert profile.table()["entry"].tolist() == entry.tolist()
    assert MAX_CALL_TICKS == (1 << 32) - 1  # the model's duration column is uint32


def test_live_batches_join_and_land_behind_as_records_do(tmp_path) -> None:
    """What the live profile does with queued batches (web/live_profile.py): joins them
    (``concat_records``) and asks whether they land behind what is held."""
    first = _keyed([(0, 0, 10, 0), (1, 20, 5, 0)], 1000)
    second = _keyed([(2, 0, 10, 0), (0, 2, 3, 1)], 1050)
    joined = concat_records([first, second])
    assert len(joined) == 4 and [f.key for f in joined.frames] == [
        ("f", 0), ("f", 1), ("f", 2), ("f", 0)]  # fmt: skip
    profile = Profile(spill=Spill(tmp_path))
    profile.add(joined)
    assert not profile.lands_behind(_keyed([(0, 0, 1, 0)], 1100))
    assert profile.lands_behind(_keyed([(0, 0, 1, 0)], 10))
    assert sorted(profile.folded()) == ["a", "b", "b;main", "main"]
