"""The sources seam: any kind of capture in, the shared Profile out; QS RTC steps as
object;state;signal stacks whose numbers are the RTC table's."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.profile import load_capture
from mcuprof.profile.keyed import KeyedCalls
from mcuprof.protocol import RECORD_DTYPE, Metadata, encode_metadata, encode_profile_data
from mcuprof.protocol.qs import decode_capture
from mcuprof.qs.rtc import rtc_steps, rtc_table
from mcuprof.sources import QSSource, detect_kind, load, new_source
from mcuprof.sources.miniprofiler import MiniProfilerSource
from tests.sources.rows import rows


def rows_of(data: bytes):
    return rtc_table(rtc_steps(decode_capture(data)[0]).steps)


def mp_capture() -> bytes:
    recs = np.zeros(40, RECORD_DTYPE)
    recs["func_addr"] = 0x0800_1000 + 0x10 * (np.arange(40) % 4)
    recs["entry_time"] = np.arange(40) * 100
    recs["duration"] = 50
    return encode_metadata(Metadata(48_000_000, 1_000_000, 0x1234, "1.0")) + encode_profile_data(
        recs
    )


@pytest.mark.parametrize("which", ["capture", "sim"])
def test_rtc_table_equals_profile_numbers(which, request) -> None:
    """One definition: the RTC table of qs/rtc.py is the Profile's flame graph (folded)
    and Functions table, for the same capture."""
    data = request.getfixturevalue(which)
    rows = rows_of(data)
    assert len(rows) > 5
    profile = load("qs", data).profile
    assert profile.folded() == {f"{r.obj};{r.state};{r.signal}": r.total for r in rows}
    stats = {(s.file, s.name): s for s in profile.function_stats()}
    for level, key in (("object", "obj"), ("state", "state"), ("signal", "signal")):
        count: dict[str, int] = defaultdict(int)
        total: dict[str, int] = defaultdict(int)
        for r in rows:
            count[getattr(r, key)] += r.count
            total[getattr(r, key)] += r.total
        for name in count:
            s = stats[(level, name)]
            assert s.calls == count[name], (level, name)
            assert s.total_us == pytest.approx(total[name]), (level, name)
    # Every step is a whole stack: objects and states have no self time.
    assert all(s.self_us == 0 for s in profile.function_stats() if s.file != "signal")


def test_reference_capture_steps_by_object(capture) -> None:
    profile = load("qs", capture).profile
    by_obj = {s.name: s.calls for s in profile.function_stats() if s.file == "object"}
    assert sum(by_obj.values()) == 107  # the 107 steps QSPY's own lines show
    assert set(by_obj) >= {f"Philo_inst[{i}]" for i in range(5)}


def test_tick_rate_scales_time(sim) -> None:
    one = load("qs", sim, tick_hz=1_000_000).profile
    two = load("qs", sim, tick_hz=2_000_000).profile
    assert one.timer_freq == 1_000_000 and two.timer_freq == 2_000_000
    assert two.duration_us == pytest.approx(one.duration_us / 2)
    halves = {k: v / 2 for k, v in one.folded().items()}
    assert two.folded() == pytest.approx(halves, abs=1)  # folded values are in µs


@settings(max_examples=25)
@given(cuts=st.lists(st.integers(min_value=0, max_value=40_000), max_size=12))
def test_any_split_gives_the_same_records(sim, cuts) -> None:
    whole = QSSource()
    expected = rows([whole.feed(sim).records, whole.close().records])
    parts = QSSource()
    got = []
    bounds = [0, *sorted(c % len(sim) for c in cuts), len(sim)]
    for a, b in itertools.pairwise(bounds):
        got.append(parts.feed(sim[a:b]).records)
    got.append(parts.close().records)
    assert rows(got) == expected
    assert parts.stats() == whole.stats()


def test_bit_flips_lose_only_their_frames(sim) -> None:
    clean = load("qs", sim)
    rng = random.Random(7)
    data = bytearray(sim)
    for _ in range(20):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    noisy = load("qs", bytes(data))
    assert noisy.stats["bad_frames"] > 0
    assert noisy.stats["frames"] >= clean.stats["frames"] - 2 * 20
    # A flipped byte costs at most the steps whose frames it hit (two per flip at most).
    assert noisy.stats["rtc_steps"] >= clean.stats["rtc_steps"] - 2 * 20


def test_garbage_is_counted_never_raised() -> None:
    src = QSSource()
    rng = random.Random(3)
    for _ in range(50):
        batch = src.feed(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300))))
        assert isinstance(batch.records, KeyedCalls)
    src.close()
    assert src.stats()["bytes"] > 0


def test_preamble_makes_a_capture_stand_alone(sim) -> None:
    """A capture started mid-stream (Start after Connect) begins with the target info
    and dictionaries seen so far, numbered so that no false gap appears."""
    cut = sim.index(b"\x7e", len(sim) // 2) + 1
    src = QSSource()
    src.feed(sim[:cut])
    stored = src.preamble() + sim[cut:]
    alone = load("qs", stored)
    assert alone.stats["discontinuities"] == 0
    assert alone.metadata is not None and alone.metadata.fw_version == "QP 7.4.0"
    names = {s.name for s in alone.profile.function_stats()}
    assert "Philo_inst[0]" in names and "TIMEOUT_SIG" in names
    assert not any(n.startswith("0x") for n in names)


def test_detect_kind(sim) -> None:
    assert detect_kind(sim) == "qs"
    assert detect_kind(mp_capture()) == "miniprofiler"
    assert detect_kind(b"just some text\n" * 100) is None


def test_miniprofiler_source_is_the_old_decoder() -> None:
    data = mp_capture()
    src = new_source("miniprofiler")
    assert isinstance(src, MiniProfilerSource) and not src.own_names
    recs = np.concatenate([src.feed(data[:37]).records, src.feed(data[37:]).records])
    assert len(recs) == 40 and recs["func_addr"][1] == 0x0800_1010
    assert src.metadata is not None and src.metadata.timer_freq == 1_000_000
    assert load("miniprofiler", data).profile.folded() == load_capture(data).profile.folded()


def test_unknown_kind_is_a_user_error() -> None:
    from mcuprof.errors import UserError

    with pytest.raises(UserError, match="unknown capture kind"):
        new_source("s19")
