"""A hostile or broken QS target (issue 26, round 2): sizes no target can have, floods of
escapes, endless new pointers and renamed dictionary keys. Each is counted and shown,
memory stays bounded, and every good record after it stays."""

from __future__ import annotations

import itertools
import socket
import struct
import threading
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import (
    MAX_FRAME,
    BadFrame,
    ByteFramer,
    Dictionaries,
    Framer,
    Malformed,
    QSConfig,
    QSDecoder,
    QSFrame,
    Record,
    encode_frame,
)
from mcuprof.qs import text
from mcuprof.qs.dicfile import DicError, parse_dic
from mcuprof.sources import qs as qs_source
from mcuprof.sources.qs import QSSource

from .cli import mcuprof
from .test_columns import build, build_from

# Records a QP application sends (test_columns.build_from's operations).
OPS = [
    ("step", 0x100, 4, 0x1000, 3, 5, 4, False),
    ("step", 0x200, 5, 0x1100, 2, 6, 9, True),
    ("post", 0x100, 7),
    ("dict", 61, 0x100, "Philo"),
    ("dict", 60, 4, "EAT"),
    ("user", 101, b"\x01\x07"),
]


def _info(ts_size: int) -> bytes:
    """QS_TARGET_INFO data of a 32-bit QP 7.4.0 target with this timestamp size."""
    return bytes([0xFF, 0xE4, 0x02, 0x22, 0x41, 0x22, 0x44, ts_size, 8, 0x13, 0, 0, 0, 1, 1, 26])


# F1's capture: 24 bytes, a target info claiming 9-byte timestamps, then QS_QF_RUN.
WIDE_TS = encode_frame(0, 64, _info(9)) + encode_frame(1, 70)


@pytest.mark.parametrize("ts_size", [0, 3, 5, 9, 15])
def test_target_info_with_an_impossible_size_is_malformed(ts_size):
    decoder = QSDecoder()
    events = decoder.feed(encode_frame(0, 64, _info(ts_size)) + encode_frame(1, 70))
    bad, run = events
    assert isinstance(bad, Malformed) and f"tstamp size {ts_size} " in bad.message
    assert isinstance(run, Record) and run.rec == 70
    assert decoder.stats.malformed == 1
    assert decoder.config == QSConfig()  # the sizes in force before it stay


@pytest.mark.parametrize("ts_size", [1, 2, 4, 8])
def test_target_info_with_a_legal_size_is_applied(ts_size):
    decoder = QSDecoder()
    decoder.feed(encode_frame(0, 64, _info(ts_size)))
    assert decoder.config.tstamp_size == ts_size and decoder.stats.malformed == 0


@pytest.mark.parametrize("events", [True, False])
def test_source_counts_a_bad_target_info_instead_of_raising(events):
    source = QSSource(events=events)
    source.feed(WIDE_TS)
    source.close()
    stats = source.stats()
    assert stats["malformed"] == 1 and stats["frames"] == 2 and stats["rtc_steps"] == 0


def test_dictionary_file_with_an_impossible_size_is_one_line_error():
    with pytest.raises(DicError, match="tstamp size 9"):
        parse_dic("-T9\n")


def test_whole_capture_commands_report_a_bad_target_info(tmp_path):
    """F1: export, qs rtc, sessions import and compare raised OverflowError."""
    capture = tmp_path / "wide.qs"
    capture.write_bytes(WIDE_TS)
    runs = [
        ("qs", "rtc", str(capture)),
        ("export", "--format", "folded", "-o", str(tmp_path / "out"), str(capture)),
        ("sessions", "--data-dir", str(tmp_path / "store"), "import", str(capture)),
        ("compare", str(capture), str(capture)),
    ]
    for args in runs:
        done = mcuprof(*args, check=False)
        assert "internal error" not in done.stderr, args
        assert done.returncode in (0, 2), (args, done.stderr)  # 1 is compare's "slower"
    decode = mcuprof("qs", "decode", str(capture))
    assert "tstamp size 9 (-T) is not 1, 2, 4 or 8" in decode.stdout
    assert "1 malformed" in decode.stderr


# ------------------------------------------------------------ F2: escape floods


def _flood(pattern: bytes, size: int, chunk: int = 4096):
    """A good frame, then ``size`` bytes of ``pattern`` and no flag, in TCP-sized chunks."""
    yield encode_frame(1, 70)
    piece = pattern * (chunk // len(pattern))
    for _ in range(size // len(piece)):
        yield piece


@pytest.mark.parametrize("pattern", [b"\x7d", b"\x7d\x7e", b"\x7d\x7d\x41"])
def test_flood_without_a_flag_is_one_too_long_report_and_is_not_kept(pattern):
    """F2: 0x7D floods grew the framer's tail without bound, in quadratic time, and were
    never reported. Now the frame is reported as soon as it passes MAX_FRAME, and the
    framer holds at most one maximal frame whatever the flood's length."""
    framer = Framer()
    reports = []
    for chunk in _flood(pattern, 2 << 20):
        reports += [e for e in framer.feed(chunk) if isinstance(e, BadFrame)]
        assert len(framer._tail) <= 2 * MAX_FRAME + 1
    assert reports == [BadFrame("too_long", 1, b"")] and framer.stats.too_long == 1
    # The flag that ends the flood ends the dropped frame; what follows decodes.
    end = b"\x5d\x7e" if framer._tail else b"\x7e"
    events = framer.feed(end + encode_frame(2, 70)) + framer.close()
    assert [type(e) for e in events] == [QSFrame] and events[0].seq == 2
    assert framer.stats.too_long == 1 and framer.stats.tail_bytes == 0


def test_unfinished_flood_at_the_end_of_a_stream_is_reported():
    framer = Framer()
    framer.feed(encode_frame(1, 70))
    (report,) = framer.feed(b"\x7d" * (2 * MAX_FRAME + 4))
    assert report.kind == "too_long"
    assert framer.close() == [] and framer.stats.tail_bytes == 2 * MAX_FRAME + 4


def test_qs_listen_over_tcp_reports_a_flood(tmp_path):
    """The issue's case, smaller: a flood of 0x7D over TCP to ``qs listen``."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def target():
            conn, _ = server.accept()
            with conn:  # sent at once: socket:// keeps what arrives while it opens
                for chunk in _flood(b"\x7d", 4 << 20, 65536):
                    conn.sendall(chunk)
                time.sleep(6)

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        url = f"socket://127.0.0.1:{port}"
        done = mcuprof("qs", "listen", "--port", url, "--duration", "5", check=False)
        thread.join(8)
    assert done.returncode == 0, done.stderr
    assert "1 frames" in done.stderr and ", 1 too long" in done.stderr
    assert done.stdout.splitlines()[-1] == "   <COMMS> ERROR    Record too long at Seq=1(?)"


_piece = st.one_of(
    st.tuples(st.integers(0, 255), st.integers(1, 127), st.binary(max_size=700)).map(
        lambda t: encode_frame(*t)
    ),
    st.tuples(
        st.sampled_from([b"\x7d", b"\x7e", b"\x7d\x7e", b"\x7d\x5d"]), st.integers(0, 1500)
    ).map(lambda t: t[0] * t[1]),
    st.binary(max_size=40),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_piece, max_size=12), cuts=st.lists(st.integers(0, 20_000), max_size=10))
def test_framer_on_floods_and_long_frames_matches_the_byte_parser(pieces, cuts):
    """Frames past MAX_FRAME and floods of escapes and flags, cut anywhere: the same
    events as QSPY's byte-at-a-time parser, and never more than one frame held."""
    data = b"".join(pieces)
    oracle = ByteFramer()
    expected = oracle.feed(data) + oracle.close()
    framer = Framer()
    got = []
    edges = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    for a, b in itertools.pairwise(edges):
        got += framer.feed(data[a:b])
        assert len(framer._tail) <= 2 * MAX_FRAME + 1
    assert got + framer.close() == expected


# ------------------------------------------------------------ F7: renamed keys


def _sig_entry(seq: int, sig: int, name: bytes) -> bytes:
    return encode_frame(seq, 60, struct.pack("<HI", sig, 0) + name + b"\0")


def test_renaming_one_key_again_and_again_shares_the_table():
    """F7: every rename copied the whole signal table into a snapshot that its records
    kept (1,100 records/s, then MemoryError). Now the snapshots share what did not change."""
    n, renames = 1024, 4000
    frames = [_sig_entry(i + 1, i + 1, f"SIG_{i}".encode()) for i in range(n)]
    frames += [_sig_entry(n + i + 1, 1, b"AB"[i % 2 : i % 2 + 1]) for i in range(renames)]
    data = b"".join(frames)
    tracemalloc.start()
    try:
        decoder = QSDecoder()
        events = decoder.feed(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(events) == n + renames
    # Each record names things as the dictionaries were when it arrived.
    assert events[n].dicts.sig_name(1, 0) == "SIG_0"
    assert events[n + 1].dicts.sig_name(1, 0) == "A"
    assert events[-1].dicts.sig_name(1, 0) == "A" and decoder.dicts.sig_name(1, 0) == "B"
    assert len(decoder.dicts.sig) == n
    assert peak < 40 << 20  # copies: 4,000 tables of 1,024 entries, over 150 MB


_puts = st.lists(
    st.tuples(st.sampled_from(["obj", "sig"]), st.integers(0, 40), st.sampled_from("abcdef")),
    max_size=400,
)


@settings(max_examples=100)
@given(puts=_puts)
def test_dictionary_snapshots_behave_as_copied_dicts(puts):
    """Every snapshot reads as a plain dict filled in the same order, and later
    entries never change an earlier snapshot."""
    snapshots = [Dictionaries()]
    plain: list[dict] = [{"obj": {}, "sig": {}}]
    for kind, key, name in puts:
        key = (key, 0) if kind == "sig" else key
        snapshots.append(snapshots[-1].with_entry(kind, key, name))
        tables = {k: dict(v) for k, v in plain[-1].items()}
        tables[kind][key] = name
        plain.append(tables)
    for snap, tables in zip(snapshots, plain, strict=True):
        for kind, table in tables.items():
            got = getattr(snap, kind)
            assert list(got.items()) == list(table.items()) and len(got) == len(table)
            assert got == table and all(got.get(k) == v and k in got for k, v in table.items())
            assert got.get((99, 9)) is None and (99, 9) not in got


# ------------------------------------------------------------ F4: new pointers


def test_name_memo_stays_bounded_and_right():
    """F4: each Names memo kept every new address (199,999 objects after 100k posts).
    Its bound is text.NAME_MEMO (4,096)."""
    record = QSDecoder().feed(encode_frame(1, 70))[0]
    names = text.Names(record)
    resets = getattr(text.Names, "memo_resets", 0)
    for ptr in range(1, 3 * 4096):
        assert names.obj(ptr) == f"0x{ptr:08X}"
        assert names.sig(5, ptr) == f"00000005,Obj=0x{ptr:08X}"
    assert len(names._obj) <= 4096 and len(names._sig) <= 4096
    assert text.Names.memo_resets - resets == 4  # two per kind, counted


@pytest.mark.parametrize("events", [True, False])
def test_steps_on_new_objects_share_an_other_function_past_the_bound(events):
    """F4: three synthetic functions per RTC step on new objects and states (+855 MiB
    after 600k steps). Past MAX_NAMES_PER_LEVEL names a level has one "other"
    frame; every step stays a record, and the lumped ones are counted."""
    extra, bound = 300, 8192  # bound: qs_source.MAX_NAMES_PER_LEVEL
    n = bound + extra
    ops = [("step", 0x10000 + i, 4, 0x20000 + i, 3, 5, 2, False) for i in range(n)]
    data = build(ops)
    source = QSSource(events=events)
    records = [source.feed(data[i : i + 65536]).records for i in range(0, len(data), 65536)]
    records.append(source.close().records)
    stats = source.stats()
    assert stats["rtc_steps"] == n and sum(len(r) for r in records) == 3 * n
    # One frame per name up to the bound, then one "other" frame per level (signal 4
    # on each new object is a new name too).
    assert len(source.frames.seen) == 3 * bound + 3
    assert stats["names_lumped"] == extra and bound == qs_source.MAX_NAMES_PER_LEVEL
    names = {f.name for f in source.frames.seen}
    assert set(qs_source.OTHER) <= names
    used = {f.name for r in records for f in r.frames}
    assert set(qs_source.OTHER) <= used


# ------------------------------------------------------------ target info, any bytes

_nibbles = st.integers(0, 15)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(st.sampled_from([1, 2, 4, 8, 0, 3, 9, 15]), min_size=9, max_size=9),
    rest=st.binary(min_size=8, max_size=8),
    ops=st.lists(st.sampled_from(OPS), max_size=12),
)
def test_any_target_info_then_records_never_raises(sizes, rest, ops):
    """Target info with any sizes, then steps, posts and dictionaries: every path
    (events, columns, text) decodes without raising and agrees on the counts."""
    sig, evt, qctr, tctr, blk, pctr, obj, fun, ts = sizes
    nib = [sig | evt << 4, qctr | tctr << 4, blk | pctr << 4, obj | fun << 4, ts]
    info = bytes([0xFF, 0xE4, 0x02, *nib]) + rest
    data = encode_frame(1, 64, info) + build_from(ops, (4, 4, 4, 2), 2, 0)
    decoder = QSDecoder()
    events = decoder.feed(data) + decoder.close()
    legal = all(size in (1, 2, 4, 8) for size in sizes)
    assert isinstance(events[0], Record if legal else Malformed)
    list(text.render_lines(events))
    slow, fast = QSSource(events=True), QSSource(events=False)
    for source in (slow, fast):
        source.feed(data)
        source.close()
    assert slow.stats() == fast.stats()


def test_full_dictionary_is_counted_in_the_source_stats():
    """The object dictionary holds QSPY's 2,048 entries; a new one past that is
    dropped and shown (health's QS stats), a renamed one is kept."""
    frames = [encode_frame(i + 1, 61, struct.pack("<I", 0x100 + i) + b"obj\0") for i in range(2049)]
    frames.append(encode_frame(2050, 61, struct.pack("<I", 0x100) + b"renamed\0"))
    source = QSSource(events=False)
    source.feed(b"".join(frames))
    assert source.stats()["dictionary_overflow"] == 1
    assert source.decoder.dicts.obj[0x100] == "renamed" and len(source.decoder.dicts.obj) == 2048
