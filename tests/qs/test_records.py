"""Every predefined QP 7.4 record (0-80) and the application-record formats, built
here frame by frame for a 32-bit target, decoded and rendered as QSPY does."""

from __future__ import annotations

import struct

import pytest

from mcuprof.protocol.qs import QSConfig, QSDecoder, Record, encode_frame
from mcuprof.protocol.qs.records import LAYOUTS, RECORDS
from mcuprof.qs.text import record_line, render_lines

CFG = QSConfig(obj_ptr_size=4, fun_ptr_size=4, tstamp_size=4, sig_size=2, queue_ctr_size=1)
SIZES = {"ts": 4, "obj": 4, "fun": 4, "sig": 2, "evt": 2, "qctr": 1, "pctr": 2, "tctr": 4}
SIZES |= {"u8": 1, "u16": 2, "u32": 4}
AO, TE, POOL = 0x2000_0100, 0x2000_0200, 0x2000_0300
STATE_A, STATE_B = 0x0800_1001, 0x0800_2001


def target_info(obj=4, fun=4, ts=4, reset=True) -> bytes:
    return bytes(
        [0xFF if reset else 0, 0xE4, 0x02, 0x22, 0x41, 0x22, obj | fun << 4, ts, 8, 0x13]
    ) + bytes([1, 2, 3, 4, 5, 26])


def stream(*frames: tuple[int, bytes], start_seq: int = 1) -> bytes:
    return b"".join(encode_frame(start_seq + i, rec, p) for i, (rec, p) in enumerate(frames))


def dictionaries() -> list[tuple[int, bytes]]:
    return [
        (64, target_info()),
        (61, struct.pack("<I", AO) + b"Blinky_inst\0"),
        (61, struct.pack("<I", TE) + b"Blinky_inst.te\0"),
        (61, struct.pack("<I", POOL) + b"EvtPool1\0"),
        (62, struct.pack("<I", STATE_A) + b"Blinky_off\0"),
        (62, struct.pack("<I", STATE_B) + b"Blinky_on\0"),
        (60, struct.pack("<HI", 4, 0) + b"TIMEOUT_SIG\0"),
        (63, bytes([100]) + b"TRACE\0"),
    ]


def payload_for(layout) -> bytes:
    out = b""
    for name, kind in layout:
        if kind == "str":
            out += b"hello\0"
        elif kind == "rest":
            out += b"\x01\x02"
        elif kind == "obj":
            out += struct.pack("<I", {"obj": AO, "ao": AO, "sender": AO}.get(name, TE))
        elif kind == "fun":
            out += struct.pack("<I", STATE_B if name == "target" else STATE_A)
        elif kind == "sig":
            out += struct.pack("<H", 4)
        else:
            size = SIZES[kind]
            out += (1234 if name == "ts" else 3).to_bytes(size, "little")
    return out


def decode(*frames):
    decoder = QSDecoder(CFG)
    events = decoder.feed(stream(*dictionaries(), *frames))
    return events[len(dictionaries()) :], decoder


@pytest.mark.parametrize("rec", [r for r in range(1, 81) if LAYOUTS[r] is not None])
def test_every_predefined_record_decodes_and_renders(rec):
    layout = LAYOUTS[rec]
    (event,), decoder = decode((rec, payload_for(layout)))
    assert isinstance(event, Record), event
    assert event.name == RECORDS[rec][0]
    assert event.names == tuple(name for name, _ in layout)
    assert decoder.stats.malformed == 0
    line = record_line(event)
    assert line is not None
    if rec in (43, 44):  # QP 7.4 never sends them; QSPY calls them unknown
        assert event.timestamp == 1234 and line == f"{' ' * 10} Unknown Rec={rec},Len=6"
    elif layout and layout[0][1] == "ts":
        assert event.timestamp == 1234 and line.startswith("0000001234 ")
    else:
        assert event.timestamp is None
        assert line.startswith((" " * 11, "===RTC===> "))
    if rec not in (43, 44) and not 60 <= rec <= 63 and rec != 54:
        assert "Unknown" not in line
        # Dictionary names are used where the record names an object or a state.
        if any(kind == "obj" for _, kind in layout):
            assert "Blinky_inst" in line or "EvtPool1" in line
        if any(kind == "fun" for _, kind in layout):
            assert "Blinky_off" in line


@pytest.mark.parametrize(
    ("rec", "expected"),
    [
        (6, "0000001234 ===>Tran Obj=Blinky_inst,Sig=TIMEOUT_SIG,State=Blinky_off->Blinky_on"),
        (9, "===RTC===> St-Unhnd Obj=Blinky_inst,Sig=TIMEOUT_SIG,State=Blinky_off"),
        (
            15,
            "0000001234 AO-LIFO  Obj=Blinky_inst,Evt<Sig=TIMEOUT_SIG,Pool=3,Ref=3>,"
            "Que<Free=3,Min=3>",
        ),
        (
            20,
            "0000001234 EQ-LIFO Obj=Blinky_inst,Evt<Sig=TIMEOUT_SIG,Pool=3,Ref=3>,"
            "Que<Free=3,Min=3>",
        ),
        (31, "           Tick<3>  Ctr=0000000003"),
        (36, "0000001234 TE3-Rarm Obj=Blinky_inst,AO=Blinky_inst,Tim=3,Int=3,Was=3"),
        (41, "0000001234 QF-IsrE  Nest=3,Pri=3"),
        (48, "0000001234 Sch-Pre  Pri=3->3"),
        (69, "0000001234 =ASSERT= Mod=hello,Loc=3"),
        (72, "0000001234 Sem-Blk  Blinky_inst,Thr=3,Cnt=3"),
        (76, "0000001234 Mtx-Blk  Blinky_inst,Hldr=3,Thr=3"),
        (37, "0000001234 TE3-Post Obj=Blinky_inst,Sig=TIMEOUT_SIG,AO=Blinky_inst"),
    ],
)
def test_qspy_formats(rec, expected):
    (event,), _ = decode((rec, payload_for(LAYOUTS[rec])))
    assert record_line(event) == expected


def test_query_and_peek_records():
    query_mp = struct.pack("<IBIHH", 1234, 2, POOL, 7, 3)
    peek = struct.pack("<IHBB", 1234, 16, 2, 3) + struct.pack("<3H", 1, 0xABCD, 2)
    events, decoder = decode((67, query_mp), (68, peek))
    assert [record_line(e) for e in events] == [
        "0000001234 Query-MP Obj=EvtPool1,Free=7,Min=3",
        "0000001234 Trg-Peek Offs=16,Size=2,Num=3,Data=<0001,ABCD,0002>",
    ]
    assert decoder.stats.malformed == 0


def test_application_record_formats():
    fmt = bytes
    data = struct.pack("<I", 99)
    data += fmt([0x30]) + struct.pack("<b", -5)  # I8 width 3
    data += fmt([0xF1]) + bytes([0xAB])  # U8 hex
    data += fmt([0x03]) + struct.pack("<H", 65535)  # U16
    data += fmt([0x26]) + struct.pack("<f", 3.5)  # F32 with 2 decimals
    data += fmt([0x08]) + b"txt\0"  # STR
    data += fmt([0x09]) + bytes([2, 0xDE, 0xAD])  # MEM
    data += fmt([0x0A]) + struct.pack("<HI", 4, 0)  # SIG, global
    data += fmt([0x0B]) + struct.pack("<I", AO)  # OBJ
    data += fmt([0x0C]) + struct.pack("<I", STATE_B)  # FUN
    data += fmt([0x0D]) + struct.pack("<q", -7)  # I64, width 0 -> %2
    data += fmt([0xF5]) + struct.pack("<I", 0xBEEF)  # U32 hex
    (event,), decoder = decode((100, data))
    assert record_line(event) == (
        "0000000099 TRACE  -5 0xAB 65535   3.50e+00 txt  DE AD TIMEOUT_SIG Blinky_inst "
        "Blinky_on -7 0x0000BEEF"
    )
    assert decoder.stats.malformed == 0
    (unnamed,), _ = decode((101, struct.pack("<I", 5) + bytes([0x08]) + b"\0"))
    assert record_line(unnamed) == "0000000005 USER+001 ''"


def test_record_values_follow_the_target_sizes():
    """Two streams, 32- and 64-bit pointers: the same record decodes to the same values."""
    for size in (4, 8):
        code = "I" if size == 4 else "Q"
        frames = [
            (64, target_info(obj=size, fun=size)),
            (8, struct.pack(f"<IH{code}{code}", 77, 4, AO, STATE_A)),
        ]
        events = QSDecoder().feed(stream(*frames))
        assert events[1].fields == {"ts": 77, "sig": 4, "obj": AO, "state": STATE_A}


def test_render_lines_skips_qs_empty():
    events = QSDecoder().feed(stream((0, b""), (64, target_info()), (70, b"")))
    assert list(render_lines(events)) == [
        "           Trg-RST  QP-Ver=740,Build=260504_030201",
        "           QF_RUN",
    ]
