"""Golden lines: each format, each flag, the excerpt's three stop-bit cases, PTW codes,
reserved / malformed / truncated lines, with the exact bytes a capture holds."""

from __future__ import annotations

import struct

import pytest

from mcuprof.protocol.s12z import (
    BadLine,
    Line,
    LineDecoder,
    LineFormat,
    Lines,
    decode_trace,
)


def decode(data: bytes) -> list[Line | BadLine]:
    events, _ = decode_trace(data)
    out: list[Line | BadLine] = []
    for e in events:
        out.extend(e if isinstance(e, Lines) else [e])
    return out


def cof_bytes(word: int) -> bytes:
    return struct.pack("<I", word)


def bits(text: str) -> tuple[bool, ...]:
    return tuple(c == "1" for c in text)


def test_pts_start_pc_low_byte_first() -> None:
    [line] = decode(bytes([0x00, 0x56, 0x34, 0xFE]))
    assert line == Line(0, LineFormat.PTS, 0x00, address=0xFE3456)
    assert (line.tsovf, line.tbovf, line.term, line.cycles) == (False, False, False, 0)


def test_stop_bit_line0_thirty_one_cofs_pthf() -> None:
    # Byte4[7] is the stop bit: all 31 bits to its right are COFs, bit 30 the oldest.
    word = 0x8000_0000 | 0b101 << 28 | 0b11
    [line] = decode(bytes([0x02]) + cof_bytes(word))
    assert line.format == LineFormat.PTHF
    assert len(line.cofs) == 31
    assert line.cofs == bits("101" + "0" * 26 + "11")
    assert line.address is None and line.vector is None


def test_stop_bit_line1_thirty_cofs_then_indirect() -> None:
    # Stop bit at bit 30: 30 COFs, then the indexed jump stored in bytes 7..5.
    word = 0x4000_0000 | 0b1 << 29 | 0b10
    data = bytes([0x01]) + cof_bytes(word) + bytes([0x10, 0x02, 0xFE])
    [line] = decode(data)
    assert line.format == LineFormat.PTIB
    assert line.cofs == bits("1" + "0" * 27 + "10")
    assert line.address == 0xFE0210


def test_stop_bit_line2_eight_cofs_left_bits_redundant() -> None:
    # Stop bit at bit 8: the bits to its left are redundant (zero), 8 COFs, then bytes 7..5.
    data = bytes([0x01]) + cof_bytes(0x0000_01A5) + bytes([0x00, 0x01, 0xFE])
    [line] = decode(data)
    assert line.cofs == bits("10100101")
    assert line.address == 0xFE0100


def test_ptib_with_no_direct_cofs() -> None:
    [line] = decode(bytes([0x01]) + cof_bytes(1) + bytes([0x34, 0x12, 0x00]))
    assert line.cofs == () and line.address == 0x001234


def test_ptvb_vector_and_stamp() -> None:
    data = bytes([0x03]) + cof_bytes(0b1_011) + bytes([0xE6, 0x10, 0x27])
    [line] = decode(data)
    assert line == Line(0, LineFormat.PTVB, 0x03, bits("011"), None, 0xE6, 10_000)
    assert line.cycles == 10_000


@pytest.mark.parametrize("code", range(16))
def test_ptw_error_codes(code: int) -> None:
    [line] = decode(bytes([code << 4 | 0x07]))
    assert line.format == LineFormat.PTW
    assert line.error == code
    # In a PTW line INFO[7:4] is the code, never flags.
    assert (line.tsovf, line.tbovf, line.term) == (False, False, False)


FLAGGED = [
    (bytes([0x00, 1, 2, 3]), LineFormat.PTS),
    (bytes([0x01]) + cof_bytes(1) + bytes(3), LineFormat.PTIB),
    (bytes([0x02]) + cof_bytes(0x8000_0000), LineFormat.PTHF),
    (bytes([0x03]) + cof_bytes(1) + bytes([0x7E, 0x05, 0x00]), LineFormat.PTVB),
]


@pytest.mark.parametrize(("line_bytes", "fmt"), FLAGGED, ids=lambda x: getattr(x, "name", ""))
@pytest.mark.parametrize(("bit", "flag"), [(0x40, "tsovf"), (0x20, "tbovf"), (0x10, "term")])
def test_flags_on_every_format(line_bytes: bytes, fmt: LineFormat, bit: int, flag: str) -> None:
    data = bytes([line_bytes[0] | bit]) + line_bytes[1:]
    _events, stats = decode_trace(data)
    [line] = decode(data)
    assert line.format == fmt
    assert {f: getattr(line, f) for f in ("tsovf", "tbovf", "term")} == {
        f: f == flag for f in ("tsovf", "tbovf", "term")
    }
    assert getattr(stats, flag) == 1
    stamp = 5 if fmt == LineFormat.PTVB else 0
    assert line.cycles == stamp + (65_536 if flag == "tsovf" else 0)


@pytest.mark.parametrize("fmt", [4, 5, 6, 8, 9, 10, 11, 12, 13, 14, 15])
def test_reserved_format_is_counted_and_decoding_goes_on(fmt: int) -> None:
    data = bytes([fmt, 0x00, 0x11, 0x22, 0x33, 0x27])
    out = decode(data)
    assert out[0] == BadLine(
        0, "reserved", f"INFO 0x{fmt:02x}: reserved line format {fmt}", bytes([fmt])
    )
    assert out[1] == Line(1, LineFormat.PTS, 0x00, address=0x332211)
    assert out[2] == Line(5, LineFormat.PTW, 0x27, error=2)
    _, stats = decode_trace(data)
    assert (stats.reserved, stats.good, stats.malformed) == (1, 2, 0)


def test_malformed_lines_are_counted_and_skipped_by_their_length() -> None:
    pts = bytes([0x00, 1, 2, 3])
    data = (
        bytes([0x81])
        + cof_bytes(1)
        + bytes(3)  # INFO[7] set
        + pts
        + bytes([0x01])
        + cof_bytes(0)
        + bytes(3)  # no stop bit
        + bytes([0x02])
        + cof_bytes(0x0000_00FF)  # PTHF not full
        + bytes([0x03])
        + cof_bytes(0)
        + bytes(3)  # PTVB, no stop bit
        + pts
    )
    _events, stats = decode_trace(data)
    out = decode(data)
    kinds = [o.kind if isinstance(o, BadLine) else o.format.name for o in out]
    assert kinds == ["malformed", "PTS", "malformed", "malformed", "malformed", "PTS"]
    assert [o.offset for o in out] == [0, 8, 12, 20, 25, 33]
    assert stats.malformed == 4 and stats.good == 2
    assert "INFO[7]" in out[0].reason and "stop bit" in out[2].reason
    assert "bit 7, not 31" in out[3].reason
    # Every byte is in exactly one line or bad line.
    assert sum(len(o.raw) for o in out if isinstance(o, BadLine)) + 8 == len(data)


def test_truncated_last_line_is_held_then_reported_at_close() -> None:
    dec = LineDecoder()
    assert dec.feed(bytes([0x00, 1, 2, 3, 0x01, 1, 0])) != []
    assert dec.buffered == 3
    [bad] = dec.close()
    assert bad == BadLine(
        4, "truncated", "PTIB line needs 8 bytes, the stream ends after 3", bytes([0x01, 1, 0])
    )
    assert dec.stats.truncated == 1


def test_a_line_split_across_feeds_decodes_once() -> None:
    data = bytes([0x03]) + cof_bytes(0b10) + bytes([0x7E, 0x34, 0x12])
    dec = LineDecoder()
    events = []
    for i in range(len(data)):
        events += dec.feed(data[i : i + 1])
    [line] = [line for e in events for line in e]
    assert line.stamp == 0x1234 and line.vector == 0x7E and line.cofs == (False,)
    assert dec.close() == [] and dec.stats.bytes == len(data)


def test_tbovf_end() -> None:
    """The final entry after an overflow carries TBOVF: the trace says data was lost."""
    from mcuprof.s12z import load_trace
    from mcuprof.s12z.analysis import analyse

    data = (
        bytes([0x00, 0x00, 0x00, 0xFE])
        + bytes([0x01])
        + cof_bytes(0b11)
        + bytes([0x40, 0x00, 0xFE])
        + bytes([0x23])
        + cof_bytes(1)
        + bytes([0xE6, 0x00, 0x01])
    )
    result = analyse(load_trace(data))
    assert result["end"] == {
        "tbovf": True,
        "tbovf_offset": 12,
        "term": False,
        "term_offset": None,
        "tsovf": 0,
        "lines_after_end": 0,
        "data_lost": True,
    }
    assert result["lines"] == {"PTS": 1, "PTIB": 1, "PTHF": 0, "PTVB": 1, "PTW": 0}
    assert result["interrupts"]["total"] == 1
    assert result["cofs"] == {"taken": 1, "not_taken": 0, "total": 1}
