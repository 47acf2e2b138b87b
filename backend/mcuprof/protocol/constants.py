"""Wire constants of the MiniProfiler protocol (see CLARIFICATIONS.md for the corrections)."""

from __future__ import annotations

from enum import IntEnum

import numpy as np


class Command(IntEnum):
    START_PROFILING = 0x01
    STOP_PROFILING = 0x02
    GET_STATUS = 0x03
    RESET_BUFFERS = 0x04
    GET_METADATA = 0x05
    SET_CONFIG = 0x06


class ResponseType(IntEnum):
    ACK = 0x01
    NACK = 0x02
    METADATA = 0x03
    STATUS = 0x04
    PROFILE_DATA = 0x05


COMMAND_HEADER = 0x55
COMMAND_SIZE = 12
COMMAND_PAYLOAD_SIZE = 8

RESPONSE_HEADER = b"\xaa\x55"
RESPONSE_END = 0x0A
# header(2) + type(1) + length(2) before the payload, crc(2) + end(1) after it.
RESPONSE_PREFIX = 5
RESPONSE_OVERHEAD = 8

METADATA_SIZE = 28
STATUS_SIZE = 10
FW_VERSION_SIZE = 16

PROFILE_DATA_VERSION = 0x01
PROFILE_DATA_HEADER = 3
RECORD_SIZE = 14

# Packed, little-endian, exactly the 14 wire bytes of one record, so a packet's
# records decode with one np.frombuffer call and no Python object per record.
RECORD_DTYPE = np.dtype(
    [("func_addr", "<u4"), ("entry_time", "<u4"), ("duration", "<u4"), ("depth", "<u2")]
)
assert RECORD_DTYPE.itemsize == RECORD_SIZE

# The length field is 16 bits, and a PROFILE_DATA payload is 3 + 14 * n.
MAX_RECORDS_PER_PACKET = (0xFFFF - PROFILE_DATA_HEADER) // RECORD_SIZE
MAX_PAYLOAD = PROFILE_DATA_HEADER + RECORD_SIZE * MAX_RECORDS_PER_PACKET
MAX_PACKET_SIZE = RESPONSE_OVERHEAD + MAX_PAYLOAD

DEFAULT_TIMER_FREQ = 1_000_000

FIXED_PAYLOAD_SIZE: dict[int, int] = {
    ResponseType.ACK: 0,
    ResponseType.NACK: 0,
    ResponseType.METADATA: METADATA_SIZE,
    ResponseType.STATUS: STATUS_SIZE,
}


def payload_length_ok(rtype: int, length: int) -> bool:
    """The clarifications fix the payload length by type; anything else is malformed."""
    if rtype == ResponseType.PROFILE_DATA:
        return length >= PROFILE_DATA_HEADER and (length - PROFILE_DATA_HEADER) % RECORD_SIZE == 0
    expected = FIXED_PAYLOAD_SIZE.get(rtype)
    return expected is not None and expected == length
