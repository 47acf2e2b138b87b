"""Bad input is counted and shown, never a crash, and every good frame after it stays."""

from __future__ import annotations

import struct

from mcuprof.protocol.qs import (
    BadFrame,
    Discontinuity,
    Framer,
    Malformed,
    QSConfig,
    QSDecoder,
    QSFrame,
    Record,
    encode_frame,
)
from mcuprof.qs.dicfile import DicError, parse_dic
from mcuprof.qs.text import event_lines, render_lines

from .test_records import AO, STATE_A, stream, target_info


def test_stream_starting_mid_frame_is_skipped_silently(capture):
    for cut in (1, 5, 17, 40):
        framer = Framer()
        events = framer.feed(capture[cut:])
        frames = [e for e in events if isinstance(e, QSFrame)]
        assert frames[0].seq > 1 and len(frames) == 938 - (frames[0].seq - 1)
        assert not [e for e in events if isinstance(e, BadFrame | Discontinuity)]
        assert framer.stats.skipped_bytes > 0


def test_cut_stream_keeps_every_complete_frame(capture):
    whole = [e for e in Framer().feed(capture) if isinstance(e, QSFrame)]
    cut = len(capture) // 2 + 3
    framer = Framer()
    got = framer.feed(capture[:cut]) + framer.close()
    # The frame the cut ends is judged "truncated" (issue 35), the others are kept.
    assert isinstance(got[-1], BadFrame) and got[-1].kind == "truncated"
    got = got[:-1]
    assert got == whole[: len(got)]
    assert framer.stats.tail_bytes > 0 and framer.stats.truncated == 1
    assert len(got) == capture[:cut].count(b"\x7e")


def test_bad_checksum_dropped_counted_and_reported():
    frames = [encode_frame(i + 1, 70, b"") for i in range(5)]
    frames[2] = frames[2][:-2] + bytes([frames[2][-2] ^ 0x01]) + b"\x7e"
    decoder = QSDecoder()
    events = decoder.feed(b"".join(frames))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["Record", "Record", "BadFrame", "Discontinuity", "Record", "Record"]
    assert decoder.frame_stats.bad_checksum == 1
    assert decoder.frame_stats.discontinuities == 1
    lines = list(render_lines(events))
    assert lines[2] == "   <COMMS> ERROR    Bad checksum in Rec=QS_QF_RUN(?),Seq=2"
    assert lines[3] == "   <COMMS> ERROR    Discontinuity Seq=2->4"


def test_two_flags_in_a_row_count_as_a_bad_frame_after_start():
    data = encode_frame(1, 70) + b"\x7e" + encode_frame(2, 70)
    framer = Framer()
    events = framer.feed(b"\x7e\x7e" + data)  # before the start: silent
    assert [type(e).__name__ for e in events] == ["QSFrame", "BadFrame", "QSFrame"]
    assert framer.stats.bad_checksum == 1


def test_escaped_flag_is_data():
    # The example of the QP/Spy protocol document: record 0x7D, data 7D 08 01, seq 0x7E.
    wire = bytes.fromhex("7D5E7D5D7D5D08017D5E7E")
    (frame,) = Framer().feed(wire)
    assert (frame.seq, frame.rec, frame.payload) == (0x7E, 0x7D, b"\x7d\x08\x01")
    assert encode_frame(0x7E, 0x7D, b"\x7d\x08\x01") == wire
    # "7D 7E" inside a frame: 0x5E data, not the end of the frame.
    raw = bytes([1, 70, 0x5E])
    wire = b"\x01\x46\x7d\x7e" + bytes([(~sum(raw)) & 0xFF]) + b"\x7e"
    (frame,) = Framer().feed(wire)
    assert frame.payload == b"\x5e"


def test_too_short_and_too_long():
    short = bytes([0xFF]) + b"\x7e"  # sums to 0xFF but has no record id
    long = encode_frame(3, 100, bytes(600))
    framer = Framer()
    events = framer.feed(encode_frame(1, 70) + short + encode_frame(2, 70) + long)
    bad = [e for e in events if isinstance(e, BadFrame)]
    assert [b.kind for b in bad] == ["too_short", "too_long"]
    assert framer.stats.too_short == 1 and framer.stats.too_long == 1
    # Fed a byte at a time, the long frame is dropped without being buffered whole.
    framer = Framer()
    data = encode_frame(1, 70) + long * 3 + encode_frame(5, 70)
    events = [e for i in range(len(data)) for e in framer.feed(data[i : i + 1])]
    assert [e.kind for e in events if isinstance(e, BadFrame)] == ["too_long"] * 3
    assert len(framer._tail) <= 1100


def test_missing_target_info_uses_qspy_defaults_then_options():
    # A 64-bit target's dispatch record without the target info before it.
    frame = (8, struct.pack("<IHQQ", 99, 4, AO, STATE_A))
    decoder = QSDecoder()  # QSPY's defaults: 4-byte pointers
    (event,) = decoder.feed(stream(frame))
    assert isinstance(event, Malformed) and event.message == "8 bytes unused"
    assert event_lines(event) == ["   <COMMS> ERROR    8 bytes unused in Rec=QS_QEP_DISPATCH"]
    assert decoder.stats.malformed == 1
    decoder = QSDecoder(QSConfig().with_options(O=8, F=8))
    (event,) = decoder.feed(stream(frame))
    assert isinstance(event, Record)
    assert event.fields == {"ts": 99, "sig": 4, "obj": AO, "state": STATE_A}
    assert event_lines(event) == [
        "0000000099 Disp===> Obj=0x0000000020000100,Sig=00000004,Obj=0x0000000020000100,"
        "State=0x0000000008001001"
    ]


def test_unknown_records_counted_and_shown():
    decoder = QSDecoder()
    events = decoder.feed(stream((64, target_info()), (85, b"\x01\x02"), (99, b"")))
    assert decoder.stats.unknown_records == 2
    assert [event_lines(e) for e in events[1:]] == [
        ["           Unknown Rec=85,Len=2"],
        ["           Unknown Rec=99,Len=0"],
    ]


def test_dictionary_entry_for_unknown_pointer():
    decoder = QSDecoder()
    events = decoder.feed(
        stream(
            (64, target_info()),
            (60, struct.pack("<HI", 5, 0xDEAD0000) + b"LOCAL_SIG\0"),  # object never named
            (8, struct.pack("<IHII", 7, 5, 0xDEAD0000, 0xBEEF0000)),
            (8, struct.pack("<IHII", 8, 6, 0xDEAD0000, 0)),
        )
    )
    assert decoder.stats.orphan_signal_entries == 1
    assert [line for e in events[1:] for line in event_lines(e)] == [
        "           Sig-Dict 00000005,Obj=0xDEAD0000->LOCAL_SIG",
        "0000000007 Disp===> Obj=0xDEAD0000,Sig=LOCAL_SIG,State=0xBEEF0000",
        "0000000008 Disp===> Obj=0xDEAD0000,Sig=00000006,Obj=0xDEAD0000,State=NULL",
    ]


def test_bad_application_record_keeps_what_it_could_read():
    bad = struct.pack("<I", 3) + bytes([0x01, 7, 0x08]) + b"no-nul"
    decoder = QSDecoder()
    events = decoder.feed(stream((64, target_info()), (100, bad), (70, b"")))
    record, problem, run = events[1:]
    assert [(a.kind, a.value) for a in record.args] == [("U8", 7)]
    assert isinstance(problem, Malformed) and "NUL" in problem.message
    assert isinstance(run, Record) and run.name == "QS_QF_RUN"


def test_target_info_reset_clears_dictionaries():
    decoder = QSDecoder()
    decoder.feed(stream((64, target_info()), (61, struct.pack("<I", AO) + b"A\0")))
    assert decoder.dicts.obj == {AO: "A"}
    decoder.feed(stream((64, target_info()), start_seq=3))
    assert dict(decoder.dicts.obj) == {}
    assert decoder.dicts.usr[124] == "QUTEST_ON_POST"


def test_control_characters_in_names_are_escaped():
    decoder = QSDecoder()
    events = decoder.feed(stream((64, target_info()), (61, struct.pack("<I", AO) + b"a\x1b[2Jb\0")))
    assert decoder.dicts.obj[AO] == "a\\x1b[2Jb"
    assert "\x1b" not in event_lines(events[1])[0]


def test_bad_dic_files_raise_one_line_errors():
    for text, where in [
        ("-Z4\n", "line 1"),
        ("Obj-Dic:\nfour\n", "line 2"),
        ("Obj-Dic:\n4\nnot-hex name\n***\n", "line 3"),
        ("-v740\n-tgarbage\n", "line 2"),
    ]:
        try:
            parse_dic(text)
        except DicError as exc:
            assert where in str(exc) and "\n" not in str(exc)
        else:
            raise AssertionError(f"accepted {text!r}")


def test_dictionary_flood_is_capped_and_repeats_cost_nothing():
    entries = [(61, struct.pack("<I", 0x1000 + 8 * i) + b"o%d\0" % i) for i in range(3000)]
    entries += [(62, struct.pack("<I", STATE_A) + b"s\0")] * 200
    decoder = QSDecoder()
    events = decoder.feed(stream((64, target_info()), *entries, start_seq=1))
    assert len(events) == 1 + 3000 + 200
    assert len(decoder.dicts.obj) == 2048
    assert decoder.stats.dictionary_overflow == 3000 - 2048
    assert decoder.dicts.fun == {STATE_A: "s"}
    # The repeated function entry made no new snapshot.
    repeats = [e for e in events if e.rec == 62]
    assert all(e.dicts is repeats[1].dicts for e in repeats[1:])
