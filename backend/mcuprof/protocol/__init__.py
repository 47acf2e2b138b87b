"""Sans-IO MiniProfiler codec: bytes in, typed events out. No I/O happens here."""

from .commands import CommandDecoder, decode_command, encode_command
from .constants import (
    DEFAULT_TIMER_FREQ,
    MAX_PACKET_SIZE,
    MAX_RECORDS_PER_PACKET,
    RECORD_DTYPE,
    Command,
    ResponseType,
)
from .crc import checksum8, crc16_ccitt_false
from .errors import ProtocolError
from .events import (
    Ack,
    BadCommand,
    CommandEvent,
    CommandPacket,
    Metadata,
    Nack,
    ProfileData,
    ResponseEvent,
    Status,
    empty_records,
)
from .responses import (
    LinkStats,
    ResponseDecoder,
    decode_stream,
    encode_event,
    encode_metadata,
    encode_profile_data,
    encode_response,
    encode_status,
)

__all__ = [
    "DEFAULT_TIMER_FREQ",
    "MAX_PACKET_SIZE",
    "MAX_RECORDS_PER_PACKET",
    "RECORD_DTYPE",
    "Ack",
    "BadCommand",
    "Command",
    "CommandDecoder",
    "CommandEvent",
    "CommandPacket",
    "LinkStats",
    "Metadata",
    "Nack",
    "ProfileData",
    "ProtocolError",
    "ResponseDecoder",
    "ResponseEvent",
    "ResponseType",
    "Status",
    "checksum8",
    "crc16_ccitt_false",
    "decode_command",
    "decode_stream",
    "empty_records",
    "encode_command",
    "encode_event",
    "encode_metadata",
    "encode_profile_data",
    "encode_response",
    "encode_status",
]
