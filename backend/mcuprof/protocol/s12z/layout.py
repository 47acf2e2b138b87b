"""The S12Z DBG profiling line layout, in one place (CLARIFICATIONS.md, S12Z section).

A line is its INFO byte followed by the bytes its format uses, lowest byte number
first. Everything that knows where a field sits in a line reads it from here, so a
probe that records another byte order needs changes in this module only.
"""

from __future__ import annotations

import enum

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
