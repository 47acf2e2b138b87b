"""Sans-IO MiniProfiler codec: bytes in, typed events out. No I/O happens here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_getattr

if TYPE_CHECKING:
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

# Imported on first use (PEP 562): decoding a capture (``mcuprof info``, exports) does
# not pay at start for the command codec, and the other way round.
_HOME = {
    "CommandDecoder": "commands",
    "decode_command": "commands",
    "encode_command": "commands",
    "DEFAULT_TIMER_FREQ": "constants",
    "MAX_PACKET_SIZE": "constants",
    "MAX_RECORDS_PER_PACKET": "constants",
    "RECORD_DTYPE": "constants",
    "Command": "constants",
    "ResponseType": "constants",
    "checksum8": "crc",
    "crc16_ccitt_false": "crc",
    "ProtocolError": "errors",
    "Ack": "events",
    "BadCommand": "events",
    "CommandEvent": "events",
    "CommandPacket": "events",
    "Metadata": "events",
    "Nack": "events",
    "ProfileData": "events",
    "ResponseEvent": "events",
    "Status": "events",
    "empty_records": "events",
    "LinkStats": "responses",
    "ResponseDecoder": "responses",
    "decode_stream": "responses",
    "encode_event": "responses",
    "encode_metadata": "responses",
    "encode_profile_data": "responses",
    "encode_response": "responses",
    "encode_status": "responses",
}

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

__getattr__ = lazy_getattr(__name__, _HOME)
