"""A capture whose timer restarts often (a board in a reset loop, captures joined with
``cat``) through the live path, as the page opens a stored session: the work grows
linearly with the restarts, and the tables are the CLI's. Each restart's records land
behind those held, and merged at every tick each cost a pass over everything held:
80, 160 and 320 restarts opened in 5.7, 27.8 and 106.8 s (issue 35, finding 6).
The work is counted, not timed: the records the merges pass over."""

from __future__ import annotations

import random
import tempfile

import numpy as np
import pytest

from mcuprof.profile import levels, load_capture
from mcuprof.profile.synth import restarting_records
from mcuprof.protocol import Metadata, encode_metadata, encode_profile_data
from mcuprof.web.live import profile as live_profile
from mcuprof.web.live.profile import LiveProfile

META = Metadata(
    mcu_clock_hz=168_000_000, timer_freq=1_000_000, elf_build_id=0x1234ABCD, fw_version="loop"
)
PACKET = 100  # records per packet, as the device sends them
TICK = 20  # packets between two ingests (the 10 Hz ticker)
CALLS = 1500  # calls per run between two restarts


def capture_bytes(runs: list[np.ndarray]) -> bytes:
    """The runs as a device that reboots sends them: METADATA, then its packets."""
    out = []
    for run in runs:
        out.append(encode_metadata(META))
        out += [encode_profile_data(run[i : i + PACKET]) for i in range(0, len(run), PACKET)]
    return b"".join(out)


def merged_over(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The records each merge into the middle of a level passes over (appends are free)."""
    passed: list[int] = []
    insert = levels.Level.insert

    def counted(self, entry, dur, addr):  # type: ignore[no-untyped-def]
        new_pos, points = insert(self, entry, dur, addr)
        if points is not None:
            passed.append(self.n)
        return new_pos, points

    monkeypatch.setattr(levels.Level, "insert", counted)
    return passed


def fed(runs: list[np.ndarray]) -> LiveProfile:
    """The runs through the live profile a packet at a time, an ingest every TICK packets
    then a read of its levels (the ticker's update for the page), on a clock that stands
    still (only the profile's size decides when to join)."""
    live = LiveProfile(tempfile.mkdtemp(), lambda: 0.0, None, clock=lambda: 0.0)
    records = np.concatenate(runs)
    for n, start in enumerate(range(0, len(records), PACKET)):
        live.put_records(records[start : start + PACKET])
        if n % TICK == TICK - 1:
            live.ingest()
            live.profile.settle()
    live.ingest()  # the last packets
    live.ingest()  # nothing new: the stream paused, what is held back is joined
    return live


@pytest.mark.parametrize("restarts", [20, 40, 80])
def test_restarts_cost_linear_work_and_give_the_cli_tables(monkeypatch, restarts: int) -> None:
    monkeypatch.setattr(live_profile, "INGEST_CHUNK", 4096)  # small steps at small sizes
    runs = restarting_records(random.Random(restarts), restarts, CALLS)
    total = sum(len(r) for r in runs)
    passed = merged_over(monkeypatch)
    live = fed(runs)
    assert live.profile.n_records == total and live.n_held == 0
    # Joined in steps that double the profile: a few passes over it in all, however many
    # restarts (merged at every tick, it was about restarts / 2 passes).
    assert sum(passed) <= 4 * total, (len(passed), sum(passed) / total)
    assert live.joins <= 2 + np.log2(total / 4096)
    monkeypatch.undo()
    want = load_capture(capture_bytes(runs)).profile.table()
    got = live.profile.table()
    assert want.keys() == got.keys()
    for key in want:
        assert np.array_equal(want[key], got[key]), key


def test_a_clock_that_goes_forward_is_never_held_back() -> None:
    (run,) = restarting_records(random.Random(7), 0, 20 * CALLS)
    live = LiveProfile(tempfile.mkdtemp(), lambda: 0.0, None, clock=lambda: 0.0)
    for start in range(0, len(run), PACKET):
        live.put_records(run[start : start + PACKET])
        live.ingest()
        assert live.n_held == 0 and live.profile.n_records == min(start + PACKET, len(run))
    assert live.joins == 0


def test_a_live_board_in_a_reset_loop_is_shown_within_the_join_wait() -> None:
    """A board that keeps resetting sends records all the time: what lands behind is
    joined once JOIN_WAIT_S has passed, not only when the stream pauses."""
    now = [0.0]
    live = LiveProfile(tempfile.mkdtemp(), lambda: now[0], None, clock=lambda: now[0])
    records = np.concatenate(restarting_records(random.Random(3), 5, CALLS))
    shown_at = []
    for start in range(0, len(records), PACKET):
        live.put_records(records[start : start + PACKET])
        live.ingest()  # a tick: records arrived since the last one
        if live.n_held == 0:
            shown_at.append(now[0])
        now[0] += 0.1
    assert live.joins >= 2
    gaps = np.diff(shown_at)
    assert gaps.max() <= live_profile.JOIN_WAIT_S + 0.1 + 1e-9
