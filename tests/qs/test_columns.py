"""The column path for whole captures (QSDecoder.feed_select, RtcTracker.feed_selected,
QSSource(events=False)) against the per-record path it replaces, on random QS streams:
target infos of several sizes and resets, dictionaries, RTC steps of a few objects,
application and other records, misfits, sequence gaps, flipped bytes and cuts anywhere
(inside a step included), split into random chunks."""

from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import QSDecoder, encode_frame, parse_target_info
from mcuprof.qs.margins import SAMPLE_RECORDS, margins, margins_columns
from mcuprof.qs.rtc import STEP_RECORDS, RtcTracker, rtc_steps, rtc_table, rtc_table_columns
from mcuprof.sources.qs import QSSource
from tests.sources.rows import rows

from .test_properties import split

SETTINGS = settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
_UINT = {1: "B", 2: "H", 4: "I", 8: "Q"}


def _info(reset: bool, obj: int, fun: int, ts: int, sig: int = 2) -> bytes:
    """QS_TARGET_INFO data: QP 7.4.0 with these sizes (bytes)."""
    sizes = bytes([0x20 | sig, 0x41, 0x22, (fun << 4) | obj, ts, 8, 0x13])
    return bytes([0xFF if reset else 0]) + struct.pack("<H", 740) + sizes + bytes(6)


INFOS = [
    (True, 4, 4, 4),  # the simulator's 32-bit target
    (True, 8, 8, 4),  # the reference capture's 64-bit target
    (False, 4, 4, 4),
    (True, 4, 4, 2),
    (True, 8, 8, 8),  # 8-byte timestamps: the Python fallback for wide times
]
OBJS = [0x100, 0x200, 0x7E7D]  # the last one needs escapes on the wire
STATES = [0x1000, 0x1100, 0x1200]
SIGS = [4, 5, 0x7E]

ts_step = st.one_of(st.integers(0, 50), st.integers(0, 1 << 33))
step = st.tuples(st.just("step"), st.sampled_from(OBJS), st.sampled_from(SIGS),
                st.sampled_from(STATES), ts_step, st.sampled_from([5, 6, 7]), ts_step,
                st.booleans())  # fmt: skip
op = st.one_of(
    step,
    step,
    step,
    st.tuples(st.just("disp"), st.sampled_from(OBJS), st.sampled_from(SIGS),
              st.sampled_from(STATES), ts_step),
    st.tuples(st.just("close"), st.sampled_from([5, 6, 7]), st.sampled_from(OBJS),
              st.sampled_from(SIGS), ts_step),
    st.tuples(st.just("unhandled"), st.sampled_from(OBJS), st.sampled_from(SIGS)),
    st.tuples(st.just("info"), st.integers(0, len(INFOS) - 1)),
    st.tuples(st.just("dict"), st.sampled_from([60, 61, 62]),
              st.sampled_from(OBJS + STATES + SIGS), st.sampled_from(["A", "b;c", "Ph[1]"])),
    st.tuples(st.just("user"), st.integers(100, 130), st.binary(max_size=12)),
    st.tuples(st.just("post"), st.sampled_from(OBJS), ts_step),
    st.tuples(st.just("pool"), st.sampled_from([24, 25]), st.sampled_from(OBJS),
              st.integers(0, 9), st.integers(0, 9)),
    st.tuples(st.just("junk"), st.integers(0, 255), st.binary(max_size=20)),
    st.tuples(st.just("gap"), st.integers(1, 5)),
)  # fmt: skip


def build(ops: list[tuple]) -> bytes:
    """Frames as a target sends them, sizes following the last target info."""
    return build_from(ops, (4, 4, 4, 2), 1, 0)  # QSPY's default sizes


def build_from(ops: list[tuple], sizes: tuple[int, ...], seq: int, clock: int) -> bytes:
    obj_size, fun_size, ts_size, sig_size = sizes
    out = []

    def u(size: int, v: int) -> bytes:
        return struct.pack("<" + _UINT[size], v & ((1 << (8 * size)) - 1))

    def frame(rec: int, payload: bytes) -> None:
        nonlocal seq
        out.append(encode_frame(seq, rec, payload))
        seq += 1

    for o in ops:
        kind = o[0]
        if kind == "step":  # dispatch, maybe unhandled on the way, then its close
            _, obj, sig, state, t1, rec, t2, hop = o
            ops_here = [("disp", obj, sig, state, t1)]
            ops_here += [("unhandled", obj, sig)] * hop + [("close", rec, obj, sig, t2)]
            out.append(build_from(ops_here, (obj_size, fun_size, ts_size, sig_size), seq, clock))
            seq += 2 + hop
            clock += t1 + t2
        elif kind == "disp":
            clock += o[4]
            frame(8, u(ts_size, clock) + u(sig_size, o[2]) + u(obj_size, o[1]) + u(fun_size, o[3]))
        elif kind == "close":
            clock += o[4]
            body = u(ts_size, clock) + u(sig_size, o[3]) + u(obj_size, o[2]) + u(fun_size, 0x1000)
            frame(o[1], body + (u(fun_size, 0x1100) if o[1] == 6 else b""))
        elif kind == "unhandled":
            frame(9, u(sig_size, o[2]) + u(obj_size, o[1]) + u(fun_size, 0x1000))
        elif kind == "info":
            reset, obj_size, fun_size, ts_size = INFOS[o[1]]
            frame(64, _info(reset, obj_size, fun_size, ts_size))
        elif kind == "dict":
            key = u(fun_size if o[1] == 62 else obj_size, o[2])
            if o[1] == 60:
                key = u(sig_size, o[2]) + u(obj_size, 0)
            frame(o[1], key + o[3].encode() + b"\0")
        elif kind == "user":
            frame(o[1], u(ts_size, clock) + o[2])
        elif kind == "post":  # QS_QF_ACTIVE_POST: counted, never decoded one by one
            clock += o[2]
            rest = u(obj_size, 0) + u(sig_size, 4) + u(obj_size, o[1]) + bytes([0, 0, 3, 2])
            frame(14, u(ts_size, clock) + rest)
        elif kind == "pool":  # QS_QF_MPOOL_GET (free, min) and _PUT (free): pool size 2
            _, rec, obj, free, least = o
            body = u(ts_size, clock) + u(obj_size, obj) + u(2, free)
            frame(rec, body + (u(2, least) if rec == 24 else b""))
        elif kind == "junk":
            frame(o[1], o[2])
        else:
            seq += o[1]
    return b"".join(out)


stream = st.tuples(
    st.lists(op, min_size=1, max_size=80),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3),  # flips
    st.one_of(st.none(), st.none(), st.integers(0, 1 << 16)),  # cut
    st.lists(st.integers(0, 1 << 16), max_size=6),  # chunk boundaries
)


def corrupt(data: bytes, flips: list[tuple[int, int]], cut: int | None) -> bytes:
    buf = bytearray(data)
    for pos, value in flips:
        if buf:
            buf[pos % len(buf)] = value
    if cut is not None and buf:
        del buf[cut % (len(buf) + 1) :]
    return bytes(buf)


def _source(data: bytes, chunks: list[bytes], events: bool) -> tuple[QSSource, list]:
    """The source after ``chunks``, and its calls as rows (tests/sources/rows.py)."""
    source = QSSource(events=events)
    parts = [source.feed(c).records for c in chunks]
    parts.append(source.close().records)
    return source, rows(parts)


@SETTINGS
@given(stream)
def test_source_columns_equal_per_record(case):
    ops, flips, cut, cuts = case
    data = corrupt(build(ops), flips, cut)
    slow, expected = _source(data, split(data, cuts), events=True)
    # the per-record path a byte at a time is the reference: no chunk to straddle
    one_by_one, records = _source(data, [data[i : i + 1] for i in range(len(data))], True)
    assert records == expected
    assert one_by_one.stats() == slow.stats()
    fast, got = _source(data, split(data, cuts), events=False)
    assert got == expected
    assert fast.stats() == slow.stats()
    assert fast.frames.seen == slow.frames.seen
    assert fast.metadata == slow.metadata
    assert fast.last_seq == slow.last_seq
    assert fast.breaks == slow.breaks == one_by_one.breaks
    assert fast.preamble() == slow.preamble()
    for a, b in ((fast.decoder, slow.decoder),):
        assert a.stats == b.stats
        assert a.frame_stats.as_dict() == b.frame_stats.as_dict()
        assert a.dicts == b.dicts and a.run_dicts == b.run_dicts and a.config == b.config
    assert fast.tracker.unfinished == slow.tracker.unfinished
    assert fast.tracker.pending.keys() == slow.tracker.pending.keys()


@SETTINGS
@given(stream)
def test_rtc_columns_equal_rtc_steps(case):
    """`mcuprof qs rtc`'s steps (no reset handling there) from columns, chunk by chunk."""
    ops, flips, cut, cuts = case
    data = corrupt(build(ops), flips, cut)
    decoder = QSDecoder()
    expected = rtc_steps(decoder.feed(data) + decoder.close())
    decoder, tracker, got, parts = QSDecoder(), RtcTracker(), [], []
    for chunk in split(data, cuts):
        selected = decoder.feed_select(chunk, STEP_RECORDS)
        parts.append(tracker.feed_selected(selected, decoder.dicts))
        got += parts[-1].steps()
    assert rtc_table_columns(parts) == (rtc_table(expected.steps), len(expected.steps))
    key = [(s.obj, s.state, s.signal, s.start, s.duration, s.outcome, s.index) for s in got]
    want = [(s.obj, s.state, s.signal, s.start, s.duration, s.outcome, s.index)
            for s in expected.steps]  # fmt: skip
    assert key == want
    assert tracker.unfinished + len(tracker.pending) == expected.unfinished


@SETTINGS
@given(stream)
def test_margins_columns_equal_margins(case):
    ops, flips, cut, cuts = case
    data = corrupt(build(ops), flips, cut)
    decoder = QSDecoder()
    expected = margins(decoder.feed(data) + decoder.close())
    decoder, chunks = QSDecoder(), []
    for chunk in split(data, cuts):
        chunks.append((decoder.feed_select(chunk, SAMPLE_RECORDS), decoder.dicts))
    assert margins_columns(chunks) == expected


def test_wide_timestamps_and_many_values():
    """8-byte timestamps past 32 bits keep their 64-bit gaps (steps 2**40 ticks apart
    stay so: no 32-bit round trip), either path; thousands of distinct objects and
    states name steps as the per-record path does."""
    ops = [("info", 4)] + [("step", 0x100, 4, 0x1000, 1 << 40, 6, 3, False)] * 3
    ops += [("info", 1)]
    ops += [("step", o, 5, 0x5000 + o, 7, 5, o % 13, True) for o in range(1, 3000)]
    data = build(ops)
    for cuts in ([], [len(data) // 2]):
        slow, expected = _source(data, split(data, cuts), events=True)
        fast, got = _source(data, split(data, cuts), events=False)
        assert got == expected
        assert fast.stats() == slow.stats()
        assert fast.stats()["rtc_steps"] == 3002
        wide = [r[0] for r in got[:9:3]]  # the three wide steps' entries
        assert wide == [0, (1 << 40) + 3, (2 << 40) + 6]  # from 2**40 modulo 2**32


def test_an_epoch_clock_keeps_its_microseconds():
    """8-byte timestamps counting from an epoch (ns since 1970 is about 2**61): the
    capture starts at the first step's time modulo 2**32, so the model's float
    microseconds stay exact (on the target's clock itself 33 ticks were 0 µs, or 512),
    and a first step across the 32-bit wrap starts where it started (not before 0)."""
    from mcuprof.sources import load

    cases = [(4, t) for t in (1 << 61, (1 << 63) + 5, (1 << 64) - 100, (1 << 32) - 2)]
    for info, t1 in [*cases, (0, (1 << 32) - 2)]:  # INFOS[0]: 4-byte timestamps
        ops = [("info", info), ("step", 0x100, 4, 0x1000, t1, 6, 3, False)]
        ops += [("step", 0x100, 4, 0x1000, 7, 6, 3, False)] * 3
        profile = load("qs", build_from(ops, (*INFOS[info][1:], 2), 1, 0)).profile
        assert profile.duration_us == 33.0, t1
        assert profile.t0_ticks == t1 % (1 << 32), t1


def test_short_timestamps_wrap_at_their_width():
    """A target with 2-byte timestamps: its clock wraps every 65,536 ticks, and the
    capture's time runs on across each wrap (it was unwrapped at 32 bits, and 200 steps
    of 1,200 ticks were drawn on top of one another within 65,536 ticks)."""
    from mcuprof.sources import load

    ops = [("info", 3)] + [("step", 0x100, 4, 0x1000, 900, 5, 300, False)] * 200
    data = build_from(ops, (4, 4, 2, 2), 1, 0)
    for events in (True, False):
        _, got = _source(data, split(data, [len(data) // 3]), events)
        assert [r[0] for r in got[::3]] == [900 + 1200 * i for i in range(200)], events
    profile = load("qs", data).profile
    assert profile.duration_us == 200 * 1200 - 900


def test_info_helper_parses():
    assert parse_target_info(_info(True, 8, 8, 4))[2].obj_ptr_size == 8


def test_resets_between_whole_captures(capture):
    """Simulator runs and the reference capture back to back: a target reset (and new
    sizes) at every join, steps open across them dropped; any chunking, either path."""
    from tests.sources.conftest import sim_stream

    data = sim_stream(3.0, seed=2) + capture + sim_stream(2.0, seed=3) + capture[:5000]
    _, expected = _source(data, [data[i : i + 997] for i in range(0, len(data), 997)], True)
    whole, got = _source(data, [data], False)
    assert got == expected
    assert whole.stats()["target_resets"] == 4
    assert whole.stats()["rtc_steps"] > 300
    fast, got = _source(data, split(data, [len(capture), 12_345, 40_000]), False)
    assert got == expected
    assert fast.stats() == whole.stats()


def test_a_reset_starts_a_segment_without_a_gap() -> None:
    """A target that restarts with its clock far on (the POSIX port's clock runs on
    between runs): the second run's steps follow the first's end, one segment break
    between them, and the capture's span is the two runs' own time."""
    from mcuprof.sources import load

    run = [("info", 1)] + [("step", 0x100, 4, 0x1000, 10, 5, 20, False)] * 3
    first = build_from(run, (8, 8, 4, 2), 1, 1000)
    second = build_from(run, (8, 8, 4, 2), 1, 3_000_000_000)
    data = first + second
    for events in (True, False):
        source, _ = _source(data, split(data, [len(first) // 2]), events)
        assert source.breaks == [1000 + 90], events
    profile = load("qs", data).profile
    assert profile.duration_us == 2 * 80  # each run: three 20-µs steps 10 µs apart


def test_the_step_name_memo_starting_over_changes_nothing(monkeypatch):
    """Past TRIPLE_MEMO step names the memo of their frames starts over: the calls and
    frames are those of a memo that never does."""
    from mcuprof.sources import qs

    ops = [("info", 1)] + [
        ("step", o, o % 7, 0x5000 + o % 11, 7, 5, 3, False) for o in range(1, 300)
    ]
    data = build(ops)
    whole, expected = _source(data, [data], False)
    monkeypatch.setattr(qs, "TRIPLE_MEMO", 5)
    for events in (False, True):
        small, got = _source(data, split(data, [len(data) // 2]), events)
        assert got == expected
        assert small.frames.seen == whole.frames.seen
        assert len(small.frames._triples) <= 5
