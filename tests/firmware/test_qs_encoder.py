"""The mcuqs encoder and QS-RX parser (firmware/src/mcuqs.c) built for the host against
the fake port, driven through ctypes and read back with our QS decoder."""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcuprof_fwhost import fresh_device

from mcuprof.protocol.qs import (
    BadFrame,
    Discontinuity,
    QSFrame,
    Framer,
    QSDecoder,
    Record,
    encode_frame,
)

TICK_CB = ctypes.CFUNCTYPE(None, ctypes.c_uint8)
RESET_CB = ctypes.CFUNCTYPE(None)
COMMAND_CB = ctypes.CFUNCTYPE(None, ctypes.c_uint8, ctypes.c_uint32, ctypes.c_uint32,
                              ctypes.c_uint32)  # fmt: skip
EVENT_CB = ctypes.CFUNCTYPE(
    ctypes.c_uint8, ctypes.c_uint8, ctypes.c_uint16, ctypes.POINTER(ctypes.c_uint8),
    ctypes.c_uint16, ctypes.c_void_p, ctypes.c_void_p,
)  # fmt: skip
QUERY_CB = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint8, ctypes.c_void_p,
                            ctypes.POINTER(ctypes.c_uint8))  # fmt: skip
BUF_SIZE = 2048  # MCUQS_BUF_SIZE
MAX_DATA = 64  # MCUQS_MAX_DATA
RX_INFO, RX_RESET, RX_TICK, RX_GLB_FILTER = 0, 2, 3, 10
RX_STATUS, TARGET_DONE, TARGET_INFO = 66, 65, 64
HYPO = settings(
    max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


class Config(ctypes.Structure):
    _fields_ = [
        ("build", ctypes.c_uint8 * 6),
        ("max_active", ctypes.c_uint8),
        ("max_epool", ctypes.c_uint8),
        ("max_tick_rate", ctypes.c_uint8),
        ("on_reset", RESET_CB),
        ("on_tick", TICK_CB),
        ("on_command", COMMAND_CB),
        ("on_event", EVENT_CB),
        ("on_query", QUERY_CB),
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
        lib.mcuqs_obj_id.argtypes = [ctypes.c_void_p, ctypes.c_uint8]
        lib.mcuqs_loc_enabled.argtypes = [ctypes.c_uint8]
        lib.mcuqs_rx_feed.argtypes = [ctypes.c_char_p, ctypes.c_uint32]
        lib.mcuqs_sm.argtypes = [ctypes.c_uint8, ctypes.c_uint16, ctypes.c_void_p]
        lib.mcuqs_sm.argtypes += [ctypes.c_void_p]
        self.ticks: list[int] = []
        self.resets = 0
        self.commands: list[tuple[int, int, int, int]] = []
        self.events: list[tuple[int, int, bytes, int | None, int | None]] = []
        self.event_answer = 0
        self.queries: dict[tuple[int, int], bytes] = {}
        self._on_tick = TICK_CB(self.ticks.append)
        self._on_reset = RESET_CB(self._reset)
        self._on_command = COMMAND_CB(lambda *args: self.commands.append(args))
        self._on_event = EVENT_CB(self._event)
        self._on_query = QUERY_CB(self._query)
        build = (ctypes.c_uint8 * 6)(1, 2, 3, 4, 5, 26)
        self.config = Config(build, 7, 2, 1, self._on_reset, self._on_tick, self._on_command,
                             self._on_event, self._on_query)  # fmt: skip
        lib.mcuqs_init(ctypes.byref(self.config))

    def _reset(self) -> None:
        self.resets += 1

    def _event(self, target, sig, params, n, sm, ao) -> int:  # type: ignore[no-untyped-def]
        self.events.append((target, sig, bytes(params[:n]), sm, ao))
        return self.event_answer

    def _query(self, kind, obj, out) -> int:  # type: ignore[no-untyped-def]
        answer = self.queries.get((kind, obj or 0))
        if answer is None:
            return -1
        for i, b in enumerate(answer):
            out[i] = b
        return len(answer)

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


def frames(data: bytes) -> list[QSFrame]:
    framer = Framer()
    events = framer.feed(data) + framer.close()
    assert not [e for e in events if isinstance(e, BadFrame)]
    return [e for e in events if isinstance(e, QSFrame)]


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
    got = [e for e in events if isinstance(e, QSFrame)]
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
    """Acks, errors and done records (their record id), and target info (its last byte:
    the build year, 26)."""
    answer = (RX_STATUS, TARGET_DONE, TARGET_INFO)
    return [(f.rec, f.payload[-1]) for f in frames(data) if f.rec in answer]


commands = st.lists(
    st.one_of(
        st.just((RX_INFO, b"")),
        st.integers(0, 255).map(lambda rate: (RX_TICK, bytes([rate]))),
        st.binary(min_size=16, max_size=16).map(lambda m: (RX_GLB_FILTER, bytes([16]) + m)),
        st.sampled_from([7, 8, 9, 14, *range(17, 100)]).map(lambda rec: (rec, b"")),  # unknown
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
        if rec == RX_INFO:  # no ack: the target info is the answer (as QP/C 7.4)
            expected.append((TARGET_INFO, 26))
            continue
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
    assert statuses(host.drain()) == [(TARGET_INFO, 26)]


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


# ------------------------------------------------------------------ QS-RX, the rest
RX_COMMAND, RX_PEEK, RX_POKE, RX_FILL = 1, 4, 5, 6
RX_LOC_FILTER, RX_AO_FILTER, RX_CURR_OBJ, RX_QUERY_CURR, RX_EVENT = 11, 12, 13, 15, 16
QUERY_DATA, PEEK_DATA, DISPATCH = 67, 68, 8
RX_MAX = 64  # MCUQS_RX_MAX
PTR = ctypes.sizeof(ctypes.c_void_p)


def ptr(addr: int) -> bytes:
    return addr.to_bytes(PTR, "little")


def answers(data: bytes) -> list[tuple[int, bytes]]:
    """The target's answers: (record id, payload without the timestamp)."""
    stamped = (TARGET_DONE, QUERY_DATA, PEEK_DATA)
    return [
        (f.rec, f.payload[4:] if f.rec in stamped else f.payload)
        for f in frames(data)
        if f.rec in (RX_STATUS, TARGET_INFO, *stamped)
    ]


def ask(host: QSHost, rec: int, payload: bytes = b"") -> list[tuple[int, bytes]]:
    host.send(encode_frame(1, rec, payload))
    return answers(host.drain())


def ack(rec: int) -> tuple[int, bytes]:
    return (RX_STATUS, bytes([rec]))


def err(rec: int) -> tuple[int, bytes]:
    return (RX_STATUS, bytes([0x80 | rec]))


def test_peek_poke_and_fill_work_on_the_current_ap_object(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    mem = (ctypes.c_uint8 * 64)(*range(64))
    assert ask(host, RX_PEEK, struct.pack("<HBB", 0, 1, 1)) == [err(RX_PEEK)]  # no AP yet
    assert ask(host, RX_CURR_OBJ, bytes([5]) + ptr(ctypes.addressof(mem))) == [ack(RX_CURR_OBJ)]
    head = struct.pack("<HBB", 2, 2, 3)
    assert ask(host, RX_PEEK, head) == [(PEEK_DATA, head + bytes(range(2, 8)))]
    poke = struct.pack("<HBB", 4, 2, 2) + b"\xaa\xbb\xcc\xdd"
    assert ask(host, RX_POKE, poke) == [ack(RX_POKE)]
    fill = struct.pack("<HBBI", 10, 4, 2, 0x11223344)
    assert ask(host, RX_FILL, fill) == [ack(RX_FILL)]
    assert bytes(mem[2:20]) == bytes(
        [2, 3, 0xAA, 0xBB, 0xCC, 0xDD, 8, 9]
    ) + b"\x44\x33\x22\x11" * 2 + bytes([18, 19])
    # What does not fit one answer record, bad element sizes and wrong lengths: refused,
    # and the memory is left alone.
    before = bytes(mem)
    for rec, payload in [
        (RX_PEEK, struct.pack("<HBB", 0, 4, 15)),  # 60 bytes: more than a record holds
        (RX_PEEK, struct.pack("<HBB", 0, 3, 1)),
        (RX_PEEK, struct.pack("<HBB", 0, 1, 0)),
        (RX_POKE, struct.pack("<HBB", 0, 2, 2) + b"\x01\x02"),  # 2 bytes of 4
        (RX_FILL, struct.pack("<HBB", 0, 4, 1) + b"\x01"),
    ]:
        assert ask(host, rec, payload) == [err(rec)], (rec, payload)
    assert bytes(mem) == before
    assert ask(host, RX_PEEK, struct.pack("<HBB", 0, 4, 14))[0][1][4:] == before[:56]


def test_local_and_ao_filters_silence_an_object(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    assert host.lib.mcuqs_obj_id(0x1000, 3) == 1 and host.lib.mcuqs_obj_id(0x2000, 5) == 1

    def dispatched() -> list[int]:
        for obj in (0x1000, 0x2000, 0x3000):  # 0x3000 has no QS-ID: 0, always on
            host.lib.mcuqs_sm(DISPATCH, 4, obj, 0x77)
        got = [f for f in frames(host.drain()) if f.rec == DISPATCH]
        return [int.from_bytes(f.payload[6 : 6 + PTR], "little") for f in got]

    assert dispatched() == [0x1000, 0x2000, 0x3000]
    mask = bytearray(b"\xff" * 16)
    mask[0] = 0xFF & ~(1 << 3) & ~1  # QS-ID 3 off; QS-ID 0 cannot be turned off
    assert ask(host, RX_LOC_FILTER, bytes([16]) + mask) == [ack(RX_LOC_FILTER)]
    assert [host.lib.mcuqs_loc_enabled(i) for i in range(5)] == [1, 1, 1, 0, 1]
    assert dispatched() == [0x2000, 0x3000]
    assert ask(host, RX_AO_FILTER, b"\x00" + ptr(0x1000)) == [ack(RX_AO_FILTER)]  # add
    assert ask(host, RX_AO_FILTER, b"\x01" + ptr(0x2000)) == [ack(RX_AO_FILTER)]  # remove
    assert dispatched() == [0x1000, 0x3000]
    # An object without a QS-ID, a null one, a bad flag: refused, filters unchanged.
    for payload in (b"\x00" + ptr(0x4000), b"\x00" + ptr(0), b"\x02" + ptr(0x1000)):
        assert ask(host, RX_AO_FILTER, payload) == [err(RX_AO_FILTER)]
    assert dispatched() == [0x1000, 0x3000]


def test_current_objects_and_queries(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    host.queries[0, 0x1000] = ptr(0xBEEF)  # the SM's state handler
    host.queries[1, 0x1000] = ptr(0xBEEF)
    host.queries[2, 0x2000] = struct.pack("<HH", 7, 3)  # pool free, min
    assert ask(host, RX_QUERY_CURR, b"\x00") == [err(RX_QUERY_CURR)]  # no current SM
    assert ask(host, RX_CURR_OBJ, b"\x06" + ptr(0x1000)) == [ack(RX_CURR_OBJ)]  # SM and AO
    for kind in (0, 1):
        got = ask(host, RX_QUERY_CURR, bytes([kind]))
        assert got == [(QUERY_DATA, bytes([kind]) + ptr(0x1000) + ptr(0xBEEF))]
    assert ask(host, RX_CURR_OBJ, b"\x02" + ptr(0x2000)) == [ack(RX_CURR_OBJ)]
    got = ask(host, RX_QUERY_CURR, b"\x02")
    assert got == [(QUERY_DATA, b"\x02" + ptr(0x2000) + struct.pack("<HH", 7, 3))]
    assert ask(host, RX_CURR_OBJ, b"\x03" + ptr(0x2000)) == [ack(RX_CURR_OBJ)]
    assert ask(host, RX_QUERY_CURR, b"\x03") == [err(RX_QUERY_CURR)]  # not a queue
    assert ask(host, RX_CURR_OBJ, b"\x07" + ptr(0x1000)) == [err(RX_CURR_OBJ)]  # no kind 7
    assert ask(host, RX_CURR_OBJ, b"\x00" + ptr(0x1000)[:-1]) == [err(RX_CURR_OBJ)]
    # The decoder reads the answer as QSPY does.
    decoder = QSDecoder()
    host2 = QSHost(library_path, tmp_path)
    decoder.feed(host2.drain())
    host2.queries[0, 0x1000] = ptr(0xBEEF)
    host2.send(encode_frame(1, RX_CURR_OBJ, b"\x00" + ptr(0x1000)))
    host2.send(encode_frame(2, RX_QUERY_CURR, b"\x00"))
    query = [e for e in decoder.feed(host2.drain()) if isinstance(e, Record) and e.rec == 67]
    assert (query[0].fields["obj"], query[0].fields["state"]) == (0x1000, 0xBEEF)


def test_events_and_commands_reach_the_application(library_path, tmp_path) -> None:
    host = QSHost(library_path, tmp_path)
    host.drain()
    assert ask(host, RX_CURR_OBJ, b"\x00" + ptr(0x1000)) == [ack(RX_CURR_OBJ)]
    event = b"\x02" + struct.pack("<HH", 9, 3) + b"\x7e\x7d\x01"
    assert ask(host, RX_EVENT, event) == [ack(RX_EVENT), (TARGET_DONE, bytes([RX_EVENT]))]
    assert host.events == [(2, 9, b"\x7e\x7d\x01", 0x1000, None)]
    host.event_answer = 1  # the application refuses it (a full queue, say)
    assert ask(host, RX_EVENT, event) == [ack(RX_EVENT), err(RX_EVENT)]
    assert ask(host, RX_EVENT, event[:-1]) == [err(RX_EVENT)]  # 2 parameter bytes of 3
    command = struct.pack("<BIII", 7, 1, 2, 0xFFFFFFFF)
    assert ask(host, RX_COMMAND, command) == [ack(RX_COMMAND), (TARGET_DONE, b"\x01")]
    assert ask(host, RX_COMMAND, command + b"\x00") == [err(RX_COMMAND)]
    assert host.commands == [(7, 1, 2, 0xFFFFFFFF)]
    assert len(host.events) == 2


fuzz_frames = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 3, 4, 5, 6, 7, 10, 11, 12, 15, 16, 50, 127, 200]),
        st.one_of(
            st.binary(max_size=12),
            st.binary(min_size=RX_MAX - 2, max_size=RX_MAX + 3),  # around the bound
            st.tuples(st.integers(0, 0xFFFF), st.sampled_from([1, 2, 4]), st.integers(0, 20)).map(
                lambda t: struct.pack("<HBB", *t)
            ),  # peeks that may fit
        ),
    ),
    min_size=1,
    max_size=12,
)


@HYPO
@given(cmds=fuzz_frames)
def test_any_frame_gets_one_answer_and_oversized_ones_are_counted(library_path, tmp_path, cmds):
    """Fuzz: any record id and payload (memory commands on a 64 KiB AP object, so any
    offset is inside it). Each frame that fits the receive buffer gets its answer, in
    order; each that does not is counted as a bad frame and answered with nothing."""
    host = QSHost(library_path, tmp_path)
    host.drain()
    mem = (ctypes.c_uint8 * (0x10000 + 64))()
    host.send(encode_frame(0, RX_CURR_OBJ, b"\x05" + ptr(ctypes.addressof(mem))))
    host.drain()
    host.send(b"".join(encode_frame(i, rec, data) for i, (rec, data) in enumerate(cmds)))
    got = answers(host.drain())
    pos = 0
    for rec, data in cmds:
        if len(data) > RX_MAX:
            continue
        first = got[pos]
        pos += 1
        answers_alone = (PEEK_DATA, QUERY_DATA, TARGET_INFO)
        assert first in (ack(rec), err(rec)) or first[0] in answers_alone, (rec, data)
        if first == ack(rec) and rec in (RX_TICK, RX_COMMAND, RX_EVENT):
            assert got[pos] in ((TARGET_DONE, bytes([rec])), err(rec))
            pos += 1
    assert pos == len(got)
    assert host.lib.mcuqs_rx_bad_frames() == sum(len(d) > RX_MAX for _, d in cmds)
