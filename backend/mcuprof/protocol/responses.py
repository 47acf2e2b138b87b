"""Device-to-host responses: the streaming decoder the host runs, and the encoder
the simulator, the tests and the benchmarks use."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .constants import (
    FW_VERSION_SIZE,
    MAX_PACKET_SIZE,
    PROFILE_DATA_HEADER,
    PROFILE_DATA_VERSION,
    RECORD_DTYPE,
    RECORD_SIZE,
    RESPONSE_END,
    RESPONSE_HEADER,
    RESPONSE_OVERHEAD,
    ResponseType,
    payload_length_ok,
)
from .crc import crc16_ccitt_false
from .events import Ack, Metadata, Nack, ProfileData, ResponseEvent, Status

_METADATA = struct.Struct(f"<III{FW_VERSION_SIZE}s")
_STATUS = struct.Struct("<BIIB")
_PREFIX = struct.Struct("<2sBH")

_PACKET_KEYS = {
    ResponseType.ACK: "ack",
    ResponseType.NACK: "nack",
    ResponseType.METADATA: "metadata",
    ResponseType.STATUS: "status",
    ResponseType.PROFILE_DATA: "profile_data",
}


# ---------------------------------------------------------------- encoding


def encode_response(rtype: ResponseType | int, payload: bytes = b"") -> bytes:
    if len(payload) > 0xFFFF:
        raise ValueError(f"payload of {len(payload)} bytes does not fit a 16-bit length")
    head = _PREFIX.pack(RESPONSE_HEADER, int(rtype), len(payload)) + payload
    return head + struct.pack("<HB", crc16_ccitt_false(head), RESPONSE_END)


def encode_metadata(meta: Metadata) -> bytes:
    version = meta.fw_version.encode("utf-8")[: FW_VERSION_SIZE - 1]
    payload = _METADATA.pack(meta.mcu_clock_hz, meta.timer_freq, meta.elf_build_id, version)
    return encode_response(ResponseType.METADATA, payload)


def encode_status(status: Status) -> bytes:
    payload = _STATUS.pack(
        int(status.is_profiling),
        status.buffer_overflows,
        status.records_captured,
        status.buffer_usage_percent,
    )
    return encode_response(ResponseType.STATUS, payload)


def encode_profile_data(records: np.ndarray, version: int = PROFILE_DATA_VERSION) -> bytes:
    """One PROFILE_DATA packet holding ``records`` (any array convertible to RECORD_DTYPE)."""
    recs = np.ascontiguousarray(records, dtype=RECORD_DTYPE)
    header = struct.pack("<BH", version, len(recs))
    return encode_response(ResponseType.PROFILE_DATA, header + recs.tobytes())


def encode_event(event: ResponseEvent) -> bytes:
    if isinstance(event, Ack):
        return encode_response(ResponseType.ACK)
    if isinstance(event, Nack):
        return encode_response(ResponseType.NACK)
    if isinstance(event, Metadata):
        return encode_metadata(event)
    if isinstance(event, Status):
        return encode_status(event)
    if isinstance(event, ProfileData):
        return encode_profile_data(event.records, event.version)
    raise TypeError(f"not a response event: {event!r}")


# ---------------------------------------------------------------- decoding


@dataclass
class LinkStats:
    """What the decoder has seen. ``skipped_bytes`` counts every byte that was not
    part of a packet that passed framing and CRC, i.e. bytes lost while hunting."""

    bytes: int = 0
    packets: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_PACKET_KEYS.values(), 0))
    records: int = 0
    crc_errors: int = 0
    malformed: int = 0
    unsupported_version: int = 0
    skipped_bytes: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "packets": dict(self.packets),
            "records": self.records,
            "crc_errors": self.crc_errors,
            "malformed": self.malformed,
            "unsupported_version": self.unsupported_version,
            "skipped_bytes": self.skipped_bytes,
        }


class ResponseDecoder:
    """Sans-IO streaming decoder: ``feed`` bytes in any chunking, get events back.

    Validation follows CLARIFICATIONS.md: header AA 55, a known type, the payload
    length fixed by type, the end marker, then the CRC. After any failure for a
    packet that began at ``p``, hunting resumes at ``p + 1``, so a corrupted
    length can never swallow intact packets behind it. The buffer never holds
    more than one maximum-size packet.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self.stats = LinkStats()
        self.max_buffered = 0

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[ResponseEvent]:
        events: list[ResponseEvent] = []
        view = memoryview(data).cast("B")
        self.stats.bytes += len(view)
        start = 0
        while start < len(view):
            room = MAX_PACKET_SIZE - len(self._buf)
            self._buf += view[start : start + room]
            start += room
            self.max_buffered = max(self.max_buffered, len(self._buf))
            self._parse(events)
        return events

    def _parse(self, events: list[ResponseEvent]) -> None:
        buf = self._buf
        stats = self.stats
        n = len(buf)
        pos = 0
        profile_type = ResponseType.PROFILE_DATA
        while True:
            p = buf.find(RESPONSE_HEADER, pos)
            if p < 0:
                # A trailing 0xAA may be the first half of the next header.
                keep = 1 if n > pos and buf[n - 1] == RESPONSE_HEADER[0] else 0
                stats.skipped_bytes += n - pos - keep
                pos = n - keep
                break
            stats.skipped_bytes += p - pos
            pos = p
            if n - p < 5:
                break
            rtype = buf[p + 2]
            length = buf[p + 3] | (buf[p + 4] << 8)
            if rtype == profile_type:
                if (length - PROFILE_DATA_HEADER) % RECORD_SIZE or length < PROFILE_DATA_HEADER:
                    stats.malformed += 1
                    stats.skipped_bytes += 1
                    pos = p + 1
                    continue
                if n - p < 8:
                    break
                # Reject a version-1 header whose count disagrees with its length
                # now, rather than wait for up to 64 KiB of bytes behind it.
                if (
                    buf[p + 5] == PROFILE_DATA_VERSION
                    and (buf[p + 6] | (buf[p + 7] << 8)) * RECORD_SIZE + PROFILE_DATA_HEADER
                    != length
                ):
                    stats.malformed += 1
                    stats.skipped_bytes += 1
                    pos = p + 1
                    continue
            elif not payload_length_ok(rtype, length):
                stats.malformed += 1
                stats.skipped_bytes += 1
                pos = p + 1
                continue
            end = p + RESPONSE_OVERHEAD + length
            if n < end:
                break
            if buf[end - 1] != RESPONSE_END:
                stats.malformed += 1
                stats.skipped_bytes += 1
                pos = p + 1
                continue
            body_end = end - 3
            if crc16_ccitt_false(buf[p:body_end]) != buf[body_end] | (buf[body_end + 1] << 8):
                stats.crc_errors += 1
                stats.skipped_bytes += 1
                pos = p + 1
                continue
            pos = end
            stats.packets[_PACKET_KEYS[rtype]] += 1  # type: ignore[index]
            if rtype == profile_type:
                if buf[p + 5] != PROFILE_DATA_VERSION:
                    stats.unsupported_version += 1
                    continue
                records = np.frombuffer(buf[p + 8 : body_end], dtype=RECORD_DTYPE)
                records.flags.writeable = False
                stats.records += len(records)
                events.append(ProfileData(records))
            elif rtype == ResponseType.ACK:
                events.append(Ack())
            elif rtype == ResponseType.NACK:
                events.append(Nack())
            elif rtype == ResponseType.METADATA:
                clock, timer, build_id, raw = _METADATA.unpack_from(buf, p + 5)
                version = raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")
                events.append(Metadata(clock, timer, build_id, version))
            else:
                profiling, overflows, captured, usage = _STATUS.unpack_from(buf, p + 5)
                events.append(Status(bool(profiling), overflows, captured, usage))
        del buf[:pos]


def decode_stream(data: bytes) -> tuple[list[ResponseEvent], LinkStats]:
    """Decode a whole capture at once."""
    decoder = ResponseDecoder()
    events = decoder.feed(data)
    return events, decoder.stats
