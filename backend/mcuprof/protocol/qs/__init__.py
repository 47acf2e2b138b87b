"""Sans-IO QP/Spy (QS) decoder: bytes in, typed records out. No I/O happens here.

Framing follows CLARIFICATIONS.md (QS section) and QSPY 7.4; record layouts are
QP/C 7.4's. See framing.py, records.py and decoder.py.
"""

from .config import SIZE_OPTIONS, QSConfig, parse_target_info
from .decoder import QUERY_KINDS, QSDecoder, QSStats, decode_capture
from .dictionaries import Dictionaries, clean_name
from .events import Malformed, QSEvent, Record
from .framing import (
    MAX_FRAME,
    BadFrame,
    ByteFramer,
    Discontinuity,
    Framer,
    FrameStats,
    QSFrame,
    encode_frame,
)
from .records import USER_FIRST, record_group, record_name
from .user import UserArg

__all__ = [
    "MAX_FRAME",
    "QUERY_KINDS",
    "SIZE_OPTIONS",
    "USER_FIRST",
    "BadFrame",
    "ByteFramer",
    "Dictionaries",
    "Discontinuity",
    "FrameStats",
    "Framer",
    "Malformed",
    "QSConfig",
    "QSDecoder",
    "QSEvent",
    "QSFrame",
    "QSStats",
    "Record",
    "UserArg",
    "clean_name",
    "decode_capture",
    "encode_frame",
    "parse_target_info",
    "record_group",
    "record_name",
]
