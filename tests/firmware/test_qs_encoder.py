"""The mcuqs encoder and QS-RX parser (firmware/src/mcuqs.c) built for the host against
the fake port, driven through ctypes and read back with our QS decoder."""

from __future__ import annotations

import ctypes
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcuprof_fwhost import fresh_device

from mcuprof.protocol.qs import (
    BadFrame,
    Discontinuity,
    Frame,
    Framer,
    QSDecoder,
    Record,
    encode_frame,
)

TICK_CB = ctypes.CFUNCTYPE(None, ctypes.c_uint8)
RESET_CB = ctypes.CFUNCTYPE(None)
BUF_SIZE = 2048  # MCUQS_BUF_SIZE
MAX_DATA = 64  # MCUQS_MAX_DATA
RX_INFO, RX_RESET, RX_TICK, RX_GLB_FILTER = 0, 2, 3, 10
RX_STATUS, TARGET_DONE, TARGET_INFO = 66, 65, 64
HYPO = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


class Config(ctypes.Structure):
    _fields_ = [
        ("build", ctypes.c_uint8 * 6),
        ("max_active", ctypes.c_uint8),
        ("max_epool", ctypes.c_uint8),
        ("max_tick_rate", ctypes.c_uint8),
        ("on_reset", RESET_CB),
        ("on_tick", TICK_CB),
    ]


class QSHost:
    """mcuqs behind the fake port: records in, wire bytes out, QS-RX bytes in."""

    def __init__(self, library_path: Path, tmp_path: Path) -> None:
        self.dev = fresh_device(library_path, tmp_path)
        lib = self.lib = self.dev.lib
        lib.mcuqs_record.argtypes = [ctypes.c_uint8, ctypes.c_int, ctypes.c_char_p]
        lib.mcuqs_record.argtypes += [ctypes.c_uint32]
        lib.mcuqs_poll.argtypes = [ctypes.c_uint32]
        for name in ("mcuqs_poll", "mcuqs_pending", "mcuqs_lost_frames", "mcuqs_rx_bad_frames"):
            getattr(lib, name).restype = ctypes.c_uint32
        lib.mcuqs_filter.argtypes = [ctypes.c_uint8, ctypes.c_int]
        lib.mcuqs_enabled.argtypes = [ctypes.c_uint8]
        lib.mcuqs_obj_dict.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self.ticks: list[int] = []
        self.resets = 0
        self._on_tick = TICK_CB(self.ticks.append)
        self._on_reset = RESET_CB(self._reset)
        build = (ctypes.c_uint8 * 6)(1, 2, 3, 4, 5, 26)
        self.config = Config(build, 7, 2, 1, self._on_reset, self._on_tick)
        lib.mcuqs_init(ctypes.byref(self.config))

    def _reset(self) -> None:
        self.resets += 1

    def record(self, rec: int, payload: bytes, stamped: bool = True) -> None:
        self.lib.mcuqs_record(rec, int(stamped), payload, len(payload))

    def send(self, data: bytes) -> None:
        self.lib.fake_feed(data, len(data))

    def read(self) -> bytes:
        buf = ctypes.create_string_buffer(1 << 16)
        out = bytearray()
        while n := self.lib.fake_take_output(buf, len(buf)):
            out += buf.raw[:n]
        return bytes(out)

    def drain(self) -> bytes:
        while self.lib.mcuqs_poll(0) or self.lib.mcuqs_pending():
            pass
        return self.read()


def frames(data: bytes) -> list[Frame]:
    framer = Framer()
    events = framer.feed(data) + framer.close()
    assert not [e for e in events if isinstance(e, BadFrame)]
    return [e for e in events if isinstance(e, Frame)]


def test_boot_sends_empty_then_target_info_with_our_sizes(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    decoder = QSDecoder()
    events = decoder.feed(host.drain())
    assert [(e.rec, e.seq) for e in events] == [(0, 1), (TARGET_INFO, 2)]
    is_reset, word, config = events[1].values
    assert is_reset is True and word == 740
    ptr = ctypes.sizeof(ctypes.c_void_p)  # the host's pointers: 8 bytes on x86-64
    assert (config.obj_ptr_size, config.fun_ptr_size, config.tstamp_size) == (ptr, ptr, 4)
    assert (config.sig_size, config.evt_size, config.queue_ctr_size) == (2, 2, 1)
    assert (config.tevt_ctr_size, config.pool_blk_size, config.pool_ctr_size) == (4, 2, 2)
    assert (config.max_active, config.max_epool, config.max_tick_rate) == (7, 2, 1)
    assert config.build_stamp == "260504_030201"


payloads = st.lists(
    st.tuples(
        st.integers(100, 127),
        st.booleans(),
        st.lists(st.sampled_from([0x7D, 0x7E, 0x5D, 0x5E, 0x20, 0, 0xFF]), max_size=MAX_DATA),
    ),
    max_size=30,
)


@HYPO
@given(records=payloads, room=st.lists(st.integers(0, 40), min_size=1, max_size=8).filter(any))
def test_any_payload_arrives_intact_in_any_transmit_chunks(
    library_path, tmp_path, records, room
) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    host.dev.set_time(0x7E7D7E7D)  # a timestamp made of bytes that need escaping
    for rec, stamped, data in records:
        host.record(rec, bytes(data), stamped)
    out = bytearray()
    for i in range(10_000):  # a transmitter that takes a few bytes per poll, sometimes none
        host.lib.fake_set_tx_room(room[i % len(room)])
        host.lib.mcuqs_poll(0)
        out += host.read()
        if not host.lib.mcuqs_pending():
            break
    got = frames(bytes(out))
    stamp = (0x7E7D7E7D).to_bytes(4, "little")
    assert [(f.rec, f.payload) for f in got] == [
        (rec, (stamp if stamped else b"") + bytes(data)) for rec, stamped, data in records
    ]
    assert [f.seq for f in got] == [(3 + i) & 0xFF for i in range(len(records))]


def test_a_record_longer_than_the_limit_is_not_sent(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    host.record(100, bytes(MAX_DATA + 1))
    host.record(101, bytes(MAX_DATA))
    assert [(f.rec, len(f.payload)) for f in frames(host.drain())] == [(101, 4 + MAX_DATA)]


def test_overflow_drops_the_oldest_whole_records(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    total = 200
    for i in range(total):
        host.record(100, i.to_bytes(2, "little") + bytes(38))  # 1 + 2 + 4 + 40 bytes each
    lost = host.lib.mcuqs_lost_frames()
    kept = BUF_SIZE // 47
    assert lost == total - kept
    framer = Framer()
    events = framer.feed(host.drain())
    got = [e for e in events if isinstance(e, Frame)]
    # The newest records survive, whole: one sequence gap, never a bad frame.
    assert not [e for e in events if isinstance(e, BadFrame)]
    assert [int.from_bytes(f.payload[4:6], "little") for f in got] == list(range(lost, total))
    assert len(got) + lost == total


def test_an_interrupt_at_any_port_call_never_tears_a_record(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    host.lib.fake_set_isr_qs(1)
    for at in range(1, 10):  # every port call a record and its transmission make
        host.lib.fake_schedule_irq(at, 0x1001, 3)
        host.record(100, b"\x7e\x01\x7d")
        out = host.drain()
        assert host.lib.fake_irq_fired(), at
        got = frames(out)
        assert sorted(f.rec for f in got) == [100, 101], at
        assert {f.rec: f.payload[4:] for f in got} == {100: b"\x7e\x01\x7d", 101: b"\xaa\x7e\x7d"}
        assert got[1].seq == (got[0].seq + 1) & 0xFF
        assert host.lib.fake_crit_depth() == 0 and host.lib.fake_crit_max() > 0
    host.lib.fake_set_isr_qs(0)


def test_dictionary_names_lose_a_leading_ampersand_and_are_cut(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.lib.mcuqs_obj_dict(0x1234, b"&l_blinky")
    host.lib.mcuqs_obj_dict(0x5678, b"x" * 200)
    decoder = QSDecoder()
    events = [e for e in decoder.feed(host.drain()) if isinstance(e, Record) and e.rec == 61]
    ptr = ctypes.sizeof(ctypes.c_void_p)
    assert [(e.values[0], e.values[1]) for e in events] == [
        (0x1234, "l_blinky"),
        (0x5678, "x" * (MAX_DATA - 1 - ptr)),
    ]


def statuses(data: bytes) -> list[tuple[int, int]]:
    return [(f.rec, f.payload[-1]) for f in frames(data) if f.rec in (RX_STATUS, TARGET_DONE)]


commands = st.lists(
    st.one_of(
        st.just((RX_INFO, b"")),
        st.integers(0, 255).map(lambda rate: (RX_TICK, bytes([rate]))),
        st.binary(min_size=16, max_size=16).map(lambda m: (RX_GLB_FILTER, bytes([16]) + m)),
        st.integers(11, 99).map(lambda rec: (rec, b"")),  # unknown: refused
    ),
    min_size=1,
    max_size=8,
)


@HYPO
@given(cmds=commands, cuts=st.lists(st.integers(1, 30), max_size=10), junk=st.binary(max_size=20))
def test_rx_commands_in_any_split_are_all_answered(library_path, tmp_path, cmds, cuts, junk):
    host = QSHost(library_path, tmp_path)
    host.drain()
    # Junk up to a flag (never a good frame by chance), a bad checksum, then the commands.
    junk = junk.replace(b"\x7e", b"").replace(b"\x7d", b"")
    if sum(junk) & 0xFF == 0xFF:
        junk += b"\x01"
    stream = junk + b"\x7e" + b"\x01\x00\x05\x7e"
    stream += b"".join(encode_frame(i, rec, data) for i, (rec, data) in enumerate(cmds))
    pos = 0
    for cut in cuts:
        host.send(stream[pos : pos + cut])
        host.lib.mcuqs_poll(0)
        pos += cut
    host.send(stream[pos:])
    out = host.drain()
    expected = []
    for rec, data in cmds:
        known = rec in (RX_INFO, RX_TICK, RX_GLB_FILTER)
        expected.append((RX_STATUS, rec if known else 0x80 | rec))
        if rec == RX_TICK:
            expected.append((TARGET_DONE, RX_TICK))
    assert statuses(out) == expected
    assert host.ticks == [data[0] for rec, data in cmds if rec == RX_TICK]
    assert host.lib.mcuqs_rx_bad_frames() == 1 + (len(junk) > 0)
    last_mask = [data[1:] for rec, data in cmds if rec == RX_GLB_FILTER]
    if last_mask:
        mask = int.from_bytes(last_mask[-1], "little")
        assert [host.lib.mcuqs_enabled(r) for r in range(128)] == [
            (mask >> r) & 1 for r in range(128)
        ]


def test_global_filter_off_keeps_answers_and_dictionaries(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    host.send(encode_frame(1, RX_GLB_FILTER, bytes([16]) + bytes(16)))
    host.lib.mcuqs_poll(0)
    host.record(100, b"\x01")
    host.lib.mcuqs_obj_dict(0x10, b"obj")
    host.send(encode_frame(2, RX_GLB_FILTER, bytes([16]) + b"\xff" * 16))
    host.lib.mcuqs_poll(0)
    host.record(100, b"\x02")
    got = [(f.rec, f.payload[-1:]) for f in frames(host.drain())]
    assert got == [(RX_STATUS, b"\x0a"), (61, b"\x00"), (RX_STATUS, b"\x0a"), (100, b"\x02")]


def test_rx_reset_calls_the_application(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    host.send(encode_frame(1, RX_RESET))
    host.lib.mcuqs_poll(0)
    assert host.resets == 1
    assert statuses(host.drain()) == []  # the target restarts instead of answering
    # An escape applies to any byte, even a flag: "7D 7E" is data 0x5E (here the seq).
    host.send(b"\x7d\x7e\x00\xa1\x7e")
    host.lib.mcuqs_poll(0)
    assert statuses(host.drain()) == [(RX_STATUS, RX_INFO)]


def test_discontinuity_is_reported_when_records_are_lost(library_path, tmp_path) -> None:
    """What a host sees across an overflow: the decoder reports exactly one gap."""
    host = QSHost(library_path, tmp_path)
    decoder = QSDecoder()
    decoder.feed(host.drain())
    for i in range(100):
        host.record(100, bytes([i]) * 40)
    events = decoder.feed(host.drain())
    gaps = [e for e in events if isinstance(e, Discontinuity)]
    assert len(gaps) == 1 and gaps[0].prev_seq == 2
    assert (gaps[0].seq - 3) & 0xFF == host.lib.mcuqs_lost_frames()
