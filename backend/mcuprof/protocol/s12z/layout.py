"""The S12Z DBG profiling line layout, in one place (CLARIFICATIONS.md, S12Z section).

A line is its INFO byte followed by the bytes its format uses, lowest byte number
first. Everything that knows where a field sits in a line reads it from here, so a
probe that records another byte order needs changes in this module only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import numpy as np


class LineFormat(enum.IntEnum):
    """INFO[3:0]."""

    PTS = 0  # initial CPU entry: start PC
    PTIB = 1  # indexed jump or return, up to 31 direct COFs before it
    PTHF = 2  # 31 direct COFs, no indirect COF
    PTVB = 3  # interrupt vector, up to 31 direct COFs before it
    PTW = 7  # error: code in INFO[7:4]


FORMAT_MASK = 0x0F
TSOVF = 0x40  # INFO[6] timestamp overflow: 65,536 more bus cycles
TBOVF = 0x20  # INFO[5] trace buffer overflow: profiling stopped, data lost
TERM = 0x10  # INFO[4] profiling terminated by disarming
RESERVED_BIT = 0x80  # INFO[7], always 0 except in PTW lines

TSOVF_CYCLES = 1 << 16
ADDRESS_MASK = 0xFFFFFF  # S12Z addresses are 24 bits
MAX_LINE = 8
COF_BITS = 31  # a full line of direct COFs (PTHF)

# Bytes per line, INFO included, by format.
LENGTH = {
    LineFormat.PTS: 4,
    LineFormat.PTIB: 8,
    LineFormat.PTHF: 5,
    LineFormat.PTVB: 8,
    LineFormat.PTW: 1,
}
# Offsets inside a line (INFO is byte 0).
COF_AT = 1  # bytes 1-4: direct COF word, little-endian
PTS_PC_AT = 1  # PTS: 24-bit start PC, low byte first
DEST_AT = 5  # PTIB: 24-bit destination, low byte first
VECTOR_AT = 5  # PTVB: vector (vector address bits 8:1)
STAMP_AT = 6  # PTVB: 16-bit cycle stamp, low byte first

HAS_COFS = (LineFormat.PTIB, LineFormat.PTHF, LineFormat.PTVB)


def by_info(value: Callable[[int, int], int], dtype: type) -> np.ndarray:
    """A 256-entry table: ``value(info, format)`` for every INFO byte."""
    return np.array([value(i, i & FORMAT_MASK) for i in range(256)], dtype=dtype)


def _length_table() -> np.ndarray:
    """Line length for every possible INFO byte. A reserved format has no known length:
    its INFO byte alone is counted as one bad line, and the next byte is read as INFO."""
    table = np.ones(256, dtype=np.int64)
    for info in range(256):
        fmt = info & FORMAT_MASK
        if fmt in LineFormat._value2member_map_:
            table[info] = LENGTH[LineFormat(fmt)]
    return table


LENGTH_BY_INFO = _length_table()
LENGTH_BY_INFO.flags.writeable = False

# Per-INFO masks: each field is cut only from the formats that have it, else it is 0.
_COF_MASK = by_info(lambda i, f: 0xFFFFFFFF if f in HAS_COFS else 0, np.uint64)
_ADDRESS_SHIFT = by_info(
    lambda i, f: 8 * (DEST_AT if f == LineFormat.PTIB else PTS_PC_AT), np.uint64
)
_ADDRESS_MASK = by_info(
    lambda i, f: ADDRESS_MASK if f in (LineFormat.PTS, LineFormat.PTIB) else 0, np.uint64
)
_VECTOR_MASK = by_info(lambda i, f: 0xFF if f == LineFormat.PTVB else 0, np.uint64)
_STAMP_MASK = by_info(lambda i, f: 0xFFFF if f == LineFormat.PTVB else 0, np.uint64)


def cut(
    w: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(INFO, direct COF word, address, vector, stamp) of lines whose first 8 bytes are
    ``w``: little-endian uint64 words, byte k of the line in bits 8k..8k+7. Multi-byte
    fields are low byte first, so each is a shift and a mask of the word."""
    info = w.astype(np.uint8)
    word = ((w >> np.uint64(8 * COF_AT)) & _COF_MASK[info]).astype(np.uint32)
    address = (w >> _ADDRESS_SHIFT[info]) & _ADDRESS_MASK[info]
    vector = (w >> np.uint64(8 * VECTOR_AT)) & _VECTOR_MASK[info]
    stamp = (w >> np.uint64(8 * STAMP_AT)) & _STAMP_MASK[info]
    return info, word, address, vector, stamp
