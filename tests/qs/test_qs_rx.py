"""qs/rx.py and qs/frontend.py, sans-IO: commands built, checked and named as QSPY does."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcuprof.protocol.qs import Dictionaries, QSConfig
from mcuprof.qs.frontend import Attach, Note, ToTarget, parse_datagram
from mcuprof.qs.rx import MAX_NAME, MAX_PEEK_BYTES, RX, RxCommands, RxError

CONFIG = QSConfig(obj_ptr_size=8, fun_ptr_size=8, max_active=16, max_tick_rate=1)
DICTS = (
    Dictionaries.initial()
    .with_entry("obj", 0x1000, "Table_inst")
    .with_entry("obj", 0x2000, "Philo_inst[0]")
    .with_entry("sig", (7, 0), "SERVE_SIG")
    .with_entry("sig", (9, 0), "LOCAL_SIG")
    .with_entry("sig", (12, 0x1000), "LOCAL_SIG")  # Table's own LOCAL_SIG
    .with_entry("sig", (13, 0x2000), "PHILO_ONLY_SIG")
)


def commands() -> RxCommands:
    return RxCommands(lambda: (CONFIG, DICTS))


def test_signals_resolve_in_the_current_sm_then_globally():
    c = commands()
    assert c.signal_value("LOCAL_SIG") == 9  # no current SM: the global one
    c.sent(c.curr_obj(0, "Table_inst"))
    assert c.signal_value("LOCAL_SIG") == 12  # Table's own wins
    assert c.signal_value("SERVE_SIG") == 7  # else global
    with pytest.raises(RxError, match="'PHILO_ONLY_SIG' is not in the target's dictionary"):
        c.signal_value("PHILO_ONLY_SIG")  # another object's signal is out of scope
    c.sent(c.curr_obj(6, "Philo_inst[0]"))  # SM_AO sets both
    assert c.current == {0: 0x2000, 1: 0x2000}
    assert c.signal_value("PHILO_ONLY_SIG") == 13
    c.target_reset()
    assert c.current == {}


def test_payloads_are_qp_layouts():
    c = commands()
    assert c.event(0, "SERVE_SIG", b"\x01").payload == b"\x00\x07\x00\x01\x00\x01"
    assert c.curr_obj(1, "Table_inst").payload == b"\x01" + struct.pack("<Q", 0x1000)
    assert c.ao_filter("Table_inst", remove=True).payload == b"\x01" + struct.pack("<Q", 0x1000)
    assert c.peek(0x68, 2, 3).payload == b"\x68\x00\x02\x03"
    assert c.poke(4, 2, b"\x01\x00\x02\x00").payload == b"\x04\x00\x02\x02\x01\x00\x02\x00"
    assert c.fill(4, 4, 3, 0xAABBCCDD).payload == b"\x04\x00\x04\x03\xdd\xcc\xbb\xaa"
    assert c.command(7, 1, 2, 3).payload == struct.pack("<BIII", 7, 1, 2, 3)
    assert c.test_probe(0x401000, 5).payload == struct.pack("<IQ", 5, 0x401000)
    assert c.glb_filter(b"\xff" * 16).payload == b"\x10" + b"\xff" * 16


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda c: c.peek(0, 4, 65), f"1 to {MAX_PEEK_BYTES} bytes"),
        (lambda c: c.peek(0, 3, 1), "element size 3"),
        (lambda c: c.peek(0x10000, 1, 1), "offset 65536 is out of range"),
        (lambda c: c.tick(1), "tick rate 1: the target has 1 rate"),
        (lambda c: c.event(0, 0), "signal 0 is reserved by QP"),
        (lambda c: c.event(64, 7), "event target 64"),
        (lambda c: c.event(1, "NOPE_SIG"), "'NOPE_SIG' is not in the target's dictionary"),
        (lambda c: c.event(1, 7, bytes(65)), "65 event parameter bytes"),
        (lambda c: c.curr_obj(1, 0x1234), "is not an object in the target's dictionary"),
        (lambda c: c.curr_obj(7, 0x1000), "object kind 7"),
        (lambda c: c.ao_filter("x" * (MAX_NAME + 1)), f"1 to {MAX_NAME} allowed"),
        (lambda c: c.query_curr(6), "query kind 6"),
        (lambda c: c.glb_filter(b"\xff" * 15), "must be 16"),
    ],
)
def test_bad_commands_are_refused_with_one_line(build, message):
    with pytest.raises(RxError, match=message) as info:
        build(commands())
    assert "\n" not in str(info.value)


def test_datagrams_by_name_become_target_records():
    c = commands()
    packet = parse_datagram(b"\x05\x87\xfd\x00\x00\x01\x00\xaaSERVE_SIG\x00", c)
    assert packet == ToTarget(c.event(253, 7, b"\xaa"))
    assert parse_datagram(b"\x00\x80\x03", c) == Attach(3)
    assert parse_datagram(b"\x00\x8d\x01hi\x00", c) == Note(1, "hi")
    with pytest.raises(RxError, match="Unrecognized command Rec=170"):
        parse_datagram(b"\x00\xaa", c)
    with pytest.raises(RxError, match="one NUL byte"):
        parse_datagram(b"\x00\x89\x00" + bytes(8) + b"Table_inst", c)  # no terminator


@settings(max_examples=400)
@given(st.binary(max_size=80))
def test_any_datagram_is_refused_or_forwarded_unchanged(data):
    c = commands()
    try:
        packet = parse_datagram(data, c)
    except RxError as exc:
        assert "\n" not in str(exc)
        return
    if isinstance(packet, ToTarget) and data[1] < 0x80:
        assert (packet.command.rec, packet.command.payload) == (data[1], data[2:])


@settings(max_examples=200)
@given(st.sampled_from(sorted(RX.values())), st.binary(max_size=40))
def test_target_records_are_refused_or_forwarded_unchanged(rec, payload):
    try:
        cmd = commands().parse(rec, payload)
    except RxError:
        return
    assert (cmd.rec, cmd.payload) == (rec, payload)


@pytest.mark.parametrize("rec", sorted(RX.values()))
def test_short_payloads_say_they_do_not_fit(rec):
    for n in range(4):
        try:
            commands().parse(rec, bytes([1]) * n)
        except RxError as exc:
            assert "out of range" not in str(exc) and "-1" not in str(exc)


def test_the_filter_masks_sent_are_kept_until_a_target_reset():
    c = commands()
    assert c.masks == {}
    c.sent(c.glb_filter(b"\x01" * 16))
    c.sent(c.loc_filter(b"\xff" * 16))
    c.sent(c.glb_filter(b"\x02" * 16))  # the last one sent is the one in force
    assert c.masks == {RX["GLB_FILTER"]: b"\x02" * 16, RX["LOC_FILTER"]: b"\xff" * 16}
    c.target_reset()  # the target's own filters again: unknown to the host
    assert c.masks == {}
