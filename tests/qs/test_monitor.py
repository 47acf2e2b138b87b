"""The QS monitor behind the dashboard's QS tab: against QSPY's output and `mcuprof qs
margins` on the reference capture, its filters and paging, and bounded memory under a
long simulated run."""

from __future__ import annotations

import itertools
import re
import struct
import threading
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.link.qs_sim import QSSimDevice, target_info
from mcuprof.link.simulator import SimOptions
from mcuprof.protocol.qs import QSDecoder, Record, decode_capture, encode_frame
from mcuprof.qs.margins import margins
from mcuprof.qs.monitor import COMMS, QsMonitor, Series, group_of
from mcuprof.qs.text import render_lines


def monitor_of(events, **bounds) -> QsMonitor:
    m = QsMonitor(**bounds)
    m.qs_events(events)
    return m


def all_lines(m: QsMonitor, **filters) -> list[dict]:
    return m.log(limit=2000, **filters)["lines"]


def sim_stream(seconds: float, seed: int = 3, baud: int = 115_200):
    """Chunks of bytes from the simulated DPP target, 10 ms of device time each."""
    now = [0.0]
    device = QSSimDevice(SimOptions(proto="qs", seed=seed), clock=lambda: now[0], baud=baud)
    for _ in range(int(seconds * 100)):
        now[0] += 0.01
        yield device.poll()


def test_lines_equal_qspy_and_are_tagged(capture, qspy_lines):
    events, _ = decode_capture(capture)
    m = monitor_of(events)
    lines = all_lines(m)
    assert [line["text"] for line in lines] == qspy_lines
    assert [line["id"] for line in lines] == list(range(len(qspy_lines)))
    by_text = {line["text"]: line for line in lines}
    post = by_text[
        "1522821753 AO-Post  Sdr=l_clock_tick,Obj=Philo_inst[4],"
        "Evt<Sig=TIMEOUT_SIG,Pool=0,Ref=0>,Que<Free=10,Min=10>"
    ]
    assert (post["group"], post["rec"], post["sig"]) == ("AO", "QS_QF_ACTIVE_POST", "TIMEOUT_SIG")
    assert post["objs"] == ["Philo_inst[4]", "l_clock_tick"] and post["obj"] == "Philo_inst[4]"
    # Every line carries QSPY's group of its record.
    records = [e for e in events if isinstance(e, Record) and e.rec != 0]
    assert [line["group"] for line in lines] == [group_of(r.rec) for r in records]
    assert {line["group"] for line in lines} >= {"SM", "AO", "MP", "TE", "QF", "U0", "DIC", "INF"}
    s = m.summary()
    assert s["records"] == len(events) and s["lines"] == len(qspy_lines)
    assert sum(s["groups"].values()) == s["records"]
    assert s["target"] == {"qp_version": 740, "build": "261122_182611"}


def test_margins_equal_qs_margins(capture):
    events, _ = decode_capture(capture)
    got = monitor_of(events).margin_list()["margins"]
    want = margins(events)
    assert [(g["name"], g["kind"]) for g in got] == [(w.name, w.kind) for w in want]
    for g, w in zip(got, want, strict=True):
        assert g["t"] == w.times and g["lo"] == w.free == g["hi"]
        assert g["low_water"] == w.low_water and g["lowest_free"] == w.lowest_free
        assert g["samples"] == len(w.free) and g["last_free"] == w.free[-1]


def test_app_records_become_numeric_series(capture):
    events, _ = decode_capture(capture)
    records = monitor_of(events).app_series()["records"]
    stats = [e for e in events if isinstance(e, Record) and e.rec == 100]
    assert [r["name"] for r in records] == ["PHILO_STAT"]
    # PHILO_STAT carries the philosopher's number (U8) and its state (a string): one series.
    (series,) = records[0]["series"]
    assert series["arg"] == 0 and series["kind"] == "U8"
    assert series["t"] == [r.timestamp for r in stats]
    assert series["lo"] == [r.values[0][0].value for r in stats]


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"(Obj|Sdr|AO|Que)={re.escape(name)}([,>]|$)", text) is not None


def test_filters_agree_with_the_text(capture):
    events, _ = decode_capture(capture)
    m = monitor_of(events)
    every = all_lines(m)
    for name in ("Philo_inst[2]", "Table_inst", "EvtPool1", "Philo_inst[0].timeEvt"):
        got = [line["text"] for line in all_lines(m, objs=[name])]
        want = [line["text"] for line in every if _mentions(line["text"], name)]
        assert got == want and got, name
    for sig in ("TIMEOUT_SIG", "EAT_SIG", "HUNGRY_SIG"):
        got = [line["text"] for line in all_lines(m, sigs=[sig])]
        want = [line["text"] for line in every if re.search(rf"Sig={sig}([,>]|$)", line["text"])]
        assert got == want and got, sig
    # Filters combine: AND across kinds, OR within one.
    both = all_lines(m, groups=["SM"], objs=["Philo_inst[2]"], sigs=["EAT_SIG", "TIMEOUT_SIG"])
    assert both and all(
        line["group"] == "SM"
        and "Philo_inst[2]" in line["objs"]
        and line["sig"] in ("EAT_SIG", "TIMEOUT_SIG")
        for line in both
    )
    found = all_lines(m, text="philo_HUNGRY->philo_eating")
    assert found and all("Philo_hungry->Philo_eating" in line["text"] for line in found)
    assert m.log(groups=["SEM"])["lines"] == []


def test_paging_back_and_following_cover_every_line(capture):
    events, _ = decode_capture(capture)
    m = monitor_of(events)
    every = [line["id"] for line in all_lines(m, groups=["SM", "AO"])]
    pages, before = [], None
    while True:
        page = m.log(groups=["SM", "AO"], before=before, limit=97)
        pages = [line["id"] for line in page["lines"]] + pages
        if not page["older"]:
            break
        before = page["lines"][0]["id"]
    assert pages == every
    followed, since = [], -1
    while True:
        page = m.log(groups=["SM", "AO"], since=since, limit=101)
        followed += [line["id"] for line in page["lines"]]
        if not page["newer"]:
            break
        since = page["lines"][-1]["id"]
    assert followed == every


@settings(max_examples=25)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_split_of_the_stream_gives_the_same_views(capture, cuts):
    whole = monitor_of(decode_capture(capture)[0])
    m = QsMonitor()
    decoder = QSDecoder()
    points = sorted({c % (len(capture) + 1) for c in cuts})
    for a, b in zip([0, *points], [*points, len(capture)], strict=True):
        m.qs_events(decoder.feed(capture[a:b]))
    m.qs_events(decoder.close())
    assert all_lines(m) == all_lines(whole)
    assert m.margin_list()["margins"] == whole.margin_list()["margins"]
    assert m.app_series()["records"] == whole.app_series()["records"]


@settings(max_examples=60)
@given(st.lists(st.integers(min_value=-1000, max_value=1000), max_size=400), st.integers(4, 32))
def test_series_stay_bounded_and_keep_extremes(values, cap):
    s = Series(cap)
    for t, v in enumerate(values):
        s.add(t, v)
    p = s.points()
    assert p["samples"] == len(values) and len(p["t"]) <= cap
    if values:
        assert min(p["lo"]) == min(values) and max(p["hi"]) == max(values)
        assert p["t"][0] == 0 and p["t"] == sorted(p["t"])
        assert all(lo <= hi for lo, hi in zip(p["lo"], p["hi"], strict=True))


def test_bad_input_is_counted_and_shown(capture):
    data = bytearray(capture)
    for pos in range(500, len(data), 3000):
        data[pos] ^= 0x20  # flip one bit every 3000 bytes
    del data[9000:9400]  # and lose a stretch of frames
    events, decoder = decode_capture(bytes(data))
    m = monitor_of(events)
    s = m.summary()
    fs = decoder.frame_stats
    assert s["bad_frames"] == fs.bad_checksum + fs.too_short + fs.too_long > 0
    assert s["discontinuities"] == fs.discontinuities > 0
    comms = all_lines(m, groups=[COMMS])
    assert comms and all(line["text"].startswith("   <COMMS> ERROR    ") for line in comms)
    # Every good record is still in the log.
    assert s["records"] == decoder.stats.records


def test_memory_stays_bounded_on_a_long_run():
    m = QsMonitor(max_lines=2000, max_points=128, max_flow=500, max_spans=200)
    decoder = QSDecoder()
    stream = sim_stream(120.0)
    total = 0

    def run(seconds: float) -> None:
        nonlocal total
        for _ in range(int(seconds * 100)):
            events = decoder.feed(next(stream))
            total += len(events)
            m.qs_events(events)

    run(30.0)
    tracemalloc.start()
    run(15.0)
    after_warmup, _ = tracemalloc.get_traced_memory()
    run(75.0)
    after_long, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    s = m.summary()
    assert s["records"] == total > 30_000
    assert s["lines_kept"] == 2000 and s["lines_dropped"] == s["lines"] - 2000
    page = m.log(limit=2000)
    assert page["dropped"] == s["lines_dropped"] and page["lines"][-1]["id"] == s["lines"] - 1
    for item in m.margin_list()["margins"]:
        assert len(item["t"]) <= 128 and item["samples"] > 128
    for rec in m.app_series()["records"]:
        assert all(len(series["t"]) <= 128 for series in rec["series"])
    # 75 s more of trace (five times the first 15 s) grows memory by almost nothing.
    assert after_long - after_warmup < 256 * 1024, after_long - after_warmup


def test_reset_starts_again_and_readers_run_beside_the_writer(capture):
    events, _ = decode_capture(capture)
    m = QsMonitor(max_lines=300)
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                m.log(objs=["Table_inst"], limit=50)
                m.margin_list()
                m.app_series()
                m.summary()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    for _ in range(20):
        for i in range(0, len(events), 50):
            m.qs_events(events[i : i + 50])
    stop.set()
    for t in readers:
        t.join()
    assert not errors
    assert m.summary()["records"] == 20 * len(events)
    m.qs_reset()
    s = m.summary()
    assert (s["records"], s["lines"], s["margins"], s["app_series"]) == (0, 0, 0, 0)
    assert m.log()["lines"] == []


def test_a_target_that_keeps_sending_dictionaries_does_not_pin_copies():
    # Each new dictionary entry makes a new snapshot of the dictionaries; lines rendered
    # lazily would keep one alive each. The monitor renders them when the dictionaries
    # change, so at most one snapshot stays referenced, and the text is unchanged.
    boot = b"".join(sim_stream(0.05))
    decoder = QSDecoder()
    events = decoder.feed(boot)
    seq = sum(isinstance(e, Record) for e in events) + 1
    frames = []
    for i in range(3000):
        obj = 0x3000_0000 + 4 * i
        frames.append(encode_frame(seq, 61, struct.pack("<I", obj) + f"obj{i}".encode() + b"\0"))
        post = struct.pack("<IIHIBBBB", 1000 + i, 0, 4, obj, 0, 0, 3, 2)
        frames.append(encode_frame(seq + 1, 14, post))
        seq += 2
    events += decoder.feed(b"".join(frames))
    m = monitor_of(events, max_lines=1000)
    held = {id(line.record.dicts) for line in m.lines if line.record is not None}
    assert len(held) <= 1
    assert decoder.stats.dictionary_overflow > 0  # the decoder's own bound kicked in too
    want = list(render_lines(events))[-1000:]
    assert [line["text"] for line in m.log(limit=1000)["lines"]] == want
    # Past QSPY's 2048 objects the dictionary is full: later objects keep their address.
    assert m.log(objs=[f"0x{0x3000_0000 + 4 * 2999:08X}"])["matched"] == 1


def test_query_records_are_tagged_like_qspy_names_them():
    # QS_QUERY_DATA answers (rec 67) have a layout of their own per object kind; a time
    # event's answer names its signal through its active object, as QSPY does.
    boot = b"".join(sim_stream(0.05))
    decoder = QSDecoder()
    events = decoder.feed(boot)
    seq = sum(isinstance(e, Record) for e in events) + 1
    te, philo = 0x2000_0128, 0x2000_0100  # Philo_inst[0].timeEvt, Philo_inst[0]
    query_te = struct.pack("<IBIIIIHB", 5000, 4, te, philo, 7, 0, 10, 0x01)
    query_eq = struct.pack("<IBIBB", 5001, 3, philo, 4, 2)  # 1-byte queue counters
    frames = encode_frame(seq, 67, query_te) + encode_frame(seq + 1, 67, query_eq)
    events += decoder.feed(frames)
    m = monitor_of(events)
    te_line, eq_line = m.log(limit=2)["lines"]
    assert [te_line["text"], eq_line["text"]] == list(render_lines(events))[-2:]
    assert eq_line["text"].endswith("Query-EQ Obj=Philo_inst[0],Que<Free=4,Min=2>")
    assert "Sig=TIMEOUT_SIG" in te_line["text"] and te_line["sig"] == "TIMEOUT_SIG"
    assert te_line["objs"] == ["Philo_inst[0].timeEvt", "Philo_inst[0]"]
    assert (eq_line["group"], eq_line["objs"], eq_line["sig"]) == ("TST", ["Philo_inst[0]"], None)


def test_summary_lists_the_most_frequent_names_and_counts_all():
    decoder = QSDecoder()
    events = decoder.feed(b"".join(sim_stream(0.05)))
    seq = sum(isinstance(e, Record) for e in events) + 1
    frames = []
    for i in range(600):  # 600 unnamed objects, object i posted to i % 7 + 1 times
        for _ in range(i % 7 + 1):
            post = struct.pack("<IIHIBBBB", 1000 + i, 0, 4, 0x4000_0000 + 4 * i, 0, 0, 3, 2)
            frames.append(encode_frame(seq, 14, post))
            seq += 1
    events += decoder.feed(b"".join(frames))
    m = monitor_of(events)
    s = m.summary()
    assert s["objects_total"] == len(m.objects) > 600
    listed = s["objects"]
    assert len(listed) == 200
    rest = [n for name, n in m.objects.items() if name not in listed]
    assert min(listed.values()) >= max(rest)
    assert list(listed.values()) == sorted(listed.values(), reverse=True)


@settings(max_examples=40)
@given(
    st.lists(st.tuples(st.integers(0, 60_000), st.integers(0, 7)), max_size=20),
    st.lists(st.tuples(st.integers(0, 60_000), st.binary(max_size=40)), max_size=5),
)
def test_corrupted_streams_never_break_the_monitor(capture, flips, inserts):
    data = bytearray(capture)
    for pos, bit in flips:
        data[pos % len(data)] ^= 1 << bit
    for pos, junk in inserts:
        data[pos % len(data) : pos % len(data)] = junk
    events, decoder = decode_capture(bytes(data))
    m = QsMonitor(max_lines=400, max_points=16)
    for i in range(0, len(events), 64):
        m.qs_events(events[i : i + 64])
    s = m.summary()
    assert s["records"] == decoder.stats.records
    fs = decoder.frame_stats
    assert s["bad_frames"] == fs.bad_checksum + fs.too_short + fs.too_long
    assert s["discontinuities"] == fs.discontinuities
    lines = m.log(limit=2000)["lines"]  # renders every kept line
    assert [line["text"] for line in lines] == list(render_lines(events))[-400:]
    assert all(len(x["t"]) <= 16 for x in m.margin_list()["margins"])
    m.app_series()


def test_series_time_runs_on_across_counter_wraps_and_target_resets():
    decoder = QSDecoder()
    events = decoder.feed(b"".join(sim_stream(0.05)))
    seq = sum(isinstance(e, Record) for e in events) + 1
    philo = 0x2000_0100  # Philo_inst[0]
    stamps = [2**32 - 300, 2**32 - 100, 50, 400]  # the 32-bit counter wraps
    frames = b""
    for ts in stamps:
        frames += encode_frame(seq, 14, struct.pack("<IIHIBBBB", ts, 0, 4, philo, 0, 0, 3, 2))
        seq += 1
    frames += encode_frame(seq, 64, target_info(reset=True))  # the target restarts
    frames += encode_frame(seq + 1, 14, struct.pack("<IIHIBBBB", 10, 0, 4, philo, 0, 0, 3, 2))
    events += decoder.feed(frames)
    m = monitor_of(events)
    (track,) = [x for x in m.margin_list()["margins"] if x["name"] == "Philo_inst[0]"]
    t = track["t"][-5:]
    assert t[:2] == stamps[:2] and t[2:4] == [2**32 + 50, 2**32 + 400]
    assert t[4] == t[3] + 1  # after the reset: right after the last time
    assert all(a < b for a, b in itertools.pairwise(track["t"]))
    # The log keeps the target's own timestamps, as QSPY prints them.
    assert [line["t"] for line in m.log(limit=6)["lines"] if line["rec"] == "QS_QF_ACTIVE_POST"][
        -5:
    ] == [*stamps, 10]
