"""Sans-IO decoder of S12Z DBG profiling traces (the PDO line stream): bytes in, frozen
line events out. No I/O happens here."""

from .decoder import LineDecoder, TraceStats, decode_trace, line_starts
from .events import LINE_DTYPE, BadLine, Line, LineEvent, Lines, to_line
from .layout import (
    ADDRESS_MASK,
    COF_BITS,
    LENGTH,
    TBOVF,
    TERM,
    TSOVF,
    TSOVF_CYCLES,
    LineFormat,
)

__all__ = [
    "ADDRESS_MASK",
    "COF_BITS",
    "LENGTH",
    "LINE_DTYPE",
    "TBOVF",
    "TERM",
    "TSOVF",
    "TSOVF_CYCLES",
    "BadLine",
    "Line",
    "LineDecoder",
    "LineEvent",
    "LineFormat",
    "Lines",
    "TraceStats",
    "decode_trace",
    "line_starts",
    "to_line",
]
