"""Device-to-host responses: the streaming decoder the host runs, and the encoder
the simulator, the tests and the benchmarks use."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastcrc.crc16 import ibm_3740 as _crc16  # CRC-16/CCITT-FALSE, same as crc.py

from .constants import (
    FW_VERSION_SIZE,
    MAX_PACKET_SIZE,
    PROFILE_DATA_VERSION,
    RECORD_DTYPE,
    RECORD_SIZE,
    RESPONSE_END,
    RESPONSE_HEADER,
    RESPONSE_OVERHEAD,
    ResponseType,
    payload_length_ok,
)
from .crc import crc16_ccitt_false, crc16_run_ok
from .events import Ack, Metadata, Nack, ProfileData, ResponseEvent, Status

_METADATA = struct.Struct(f"<III{FW_VERSION_SIZE}s")
_STATUS = struct.Struct("<BIIB")
_PREFIX = struct.Struct("<2sBH")
# A header with the first three PROFILE_DATA payload bytes (version, count), and a trailer.
_HEAD = struct.Struct("<2sBHBH")
_TAIL = struct.Struct("<HB")

_EMPTY = np.empty(0, dtype=RECORD_DTYPE)
# Below this many packets in a row, per-packet checks cost less than numpy set-up.
_RUN_MIN = 4
# Fed bytes taken straight from the caller's data: at least this many, and at most about
# _DIRECT_BYTES per run (the run's temporaries are a few times its size).
_DIRECT_MIN = 1 << 12
_DIRECT_BYTES = 1 << 22
_CRC_SLICE = 256  # packets checked at a time when a run's CRCs fail (_first_bad_crc)
# Frozen dataclasses refuse attribute assignment; building events through the slot
# descriptors skips the generated __init__, which costs more than the rest of a packet.
_set_records = ProfileData.records.__set__  # type: ignore[attr-defined]

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
        return encode_profile_data(event.records)
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

    With ``batch=True``, PROFILE_DATA packets that follow each other come out as one
    ProfileData event holding all their records, in the same order: whole-capture
    readers (``info``, ``export``) want arrays, not an event per ~20 records. Counters
    are the same either way. With ``merge=False`` as well, such a run may come as a few
    events (as it was cut: thousands of packets each), for readers that take the
    records piece by piece anyway and would only pay for the copy that joins them.
    """

    def __init__(self, batch: bool = False, merge: bool = True) -> None:
        self._buf = bytearray()
        self.stats = LinkStats()
        self.max_buffered = 0
        self.batch = batch
        self.merge = merge

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[ResponseEvent]:
        events: list[ResponseEvent] = []
        view = memoryview(data).cast("B")
        self.stats.bytes += len(view)
        start = 0
        end = len(view)
        buf = self._buf
        while start < end:
            if not buf and end - start >= _DIRECT_MIN:
                # Nothing held back: packets that lie whole in ``data`` are taken from it
                # in runs of thousands, without passing through the buffer.
                took = self._take_direct(view, start, events)
                if took:
                    start += took
                    continue
            room = MAX_PACKET_SIZE - len(buf)
            if buf:
                room = min(room, _to_complete(buf))  # the held packet, then direct again
            buf += view[start : start + room]
            start += room
            self.max_buffered = max(self.max_buffered, len(buf))
            self._parse(events, eof=False)
        return _merged(events) if self.batch and self.merge else events

    def close(self) -> list[ResponseEvent]:
        """End of stream: no more bytes will come, so a header still waiting for its
        body has failed. Hunting resumes after it, which recovers any intact packets
        that a false header near the end was holding back. The buffer is left empty
        and feeding may go on: a live link calls this when it goes idle, so nothing
        waits for bytes that may never come, and nothing is decoded twice."""
        events: list[ResponseEvent] = []
        self._parse(events, eof=True)
        return _merged(events) if self.batch and self.merge else events

    def _parse(self, out: list[ResponseEvent], eof: bool) -> None:
        # The hot loop: one pass over the buffer, counters kept in locals, and the
        # records of every PROFILE_DATA packet cut from one array at the end.
        buf = self._buf
        n = len(buf)
        find = buf.find
        head = _HEAD.unpack_from
        tail = _TAIL.unpack_from
        crc = crc16_ccitt_false
        header = RESPONSE_HEADER
        # In stream order: a record count for each PROFILE_DATA packet, else the event.
        pending: list[int | ResponseEvent] = []
        starts: list[int] = []
        skipped = malformed = crc_errors = unsupported = 0
        pos = 0
        while True:
            # Packets usually follow each other directly: look there before searching.
            p = pos if buf[pos : pos + 2] == header else find(header, pos)
            if p < 0:
                # A trailing 0xAA may be the first half of the next header.
                keep = 1 if n > pos and buf[n - 1] == 0xAA and not eof else 0
                skipped += n - pos - keep
                pos = n - keep
                break
            skipped += p - pos
            pos = p
            if n - p < 8:
                # Too short to judge yet; at the end of the stream, judge what is there.
                if not eof:
                    break
                size = self._frame(buf, p, n)
                if size > 0:
                    pos = p + size
                    self._emit_other(buf, p, pending)
                    continue
                malformed += 1
                skipped += 1
                pos = p + 1
                continue
            _, rtype, length, version, count = head(buf, p)
            if rtype == 5:
                # A version-1 header whose count disagrees with its length is rejected
                # now, rather than after waiting for up to 64 KiB of bytes behind it.
                if count * 14 + 3 != length if version == 1 else (length - 3) % 14 or length < 3:
                    malformed += 1
                    skipped += 1
                    pos = p + 1
                    continue
            elif not payload_length_ok(rtype, length):
                malformed += 1
                skipped += 1
                pos = p + 1
                continue
            end = p + 8 + length
            if end > n:
                if not eof:
                    break
                malformed += 1  # truncated by the end of the stream
                skipped += 1
                pos = p + 1
                continue
            sent_crc, marker = tail(buf, end - 3)
            if marker != 0x0A:
                malformed += 1
                skipped += 1
                pos = p + 1
                continue
            if crc(buf[p : end - 3]) != sent_crc:
                crc_errors += 1
                skipped += 1
                pos = p + 1
                continue
            pos = end
            if rtype == 5:
                if version != 1:
                    self.stats.packets["profile_data"] += 1
                    unsupported += 1
                else:
                    starts.append(p + 8)
                    pending.append(count)
                    size = end - p
                    if n - end >= _RUN_MIN * size:
                        pos += size * self._take_run(buf, p, size, pending)
            else:
                self._emit_other(buf, p, pending)
        stats = self.stats
        stats.skipped_bytes += skipped
        stats.malformed += malformed
        stats.crc_errors += crc_errors
        stats.unsupported_version += unsupported
        if pending:
            self._deliver(buf, pending, starts, out)
        del buf[:pos]

    def _take_run(
        self, buf: bytearray, first: int, size: int, pending: list[int | ResponseEvent]
    ) -> int:
        """Take the packets that follow the valid one at ``first`` back to back with the
        same header (see ``_run``). Returns how many were taken; the first packet that
        differs or fails is left to the byte-wise path."""
        start = first + size
        m = (len(buf) - start) // size
        data = buf[start : start + m * size]  # one copy (bytes() of it would be a second)
        header = np.frombuffer(bytes(buf[first : first + 8]), np.uint8)
        return self._run(data, 0, m, size, header, pending)

    def _take_direct(self, view: memoryview, start: int, out: list[ResponseEvent]) -> int:
        """Bytes taken from ``view`` at ``start`` (where the stream stands, nothing
        buffered): a run of valid version-1 PROFILE_DATA packets back to back with the
        same header, each one checked as the byte-wise path checks it (header, length
        from the count, end marker, CRC), so the events and counters are the same."""
        if view[start] != 0xAA or view[start + 1] != 0x55 or view[start + 2] != 5:
            return 0
        length = view[start + 3] | (view[start + 4] << 8)
        count = view[start + 6] | (view[start + 7] << 8)
        if view[start + 5] != PROFILE_DATA_VERSION or count * RECORD_SIZE + 3 != length:
            return 0
        size = RESPONSE_OVERHEAD + length
        m = min((len(view) - start) // size, max(_RUN_MIN, _DIRECT_BYTES // size))
        if m < _RUN_MIN:
            return 0
        header = np.frombuffer(view, np.uint8, 8, start)
        pending: list[int | ResponseEvent] = []
        taken = self._run(view[start : start + m * size], 0, m, size, header, pending)
        out += pending  # type: ignore[arg-type]
        return taken * size

    def _run(
        self,
        data: bytes | bytearray | memoryview,
        at: int,
        m: int,
        size: int,
        header: np.ndarray,
        pending: list[int | ResponseEvent],
    ) -> int:
        """Of the ``m`` packets of ``size`` bytes at ``at`` in ``data``, take those before
        the first that does not start with ``header`` or fails its end marker or CRC:
        framing checked for all of them at once in numpy, their CRCs in one pass over the
        bytes (``crc16_run_ok``; a call per packet only to find which one is wrong),
        records cut with one copy. Returns how many were taken."""
        block = np.frombuffer(data, np.uint8, m * size, at).reshape(m, size)
        framed = (block[:, :8] == header).all(axis=1) & (block[:, size - 1] == RESPONSE_END)
        taken = m if framed.all() else int(framed.argmin())
        body = size - 3
        lo, hi = block[:taken, body], block[:taken, body + 1]
        run = memoryview(data)[at : at + taken * size]
        if not crc16_run_ok(run, lo, hi, size, RESPONSE_END):
            taken = _first_bad_crc(data, at, lo, hi, size)
        if taken:
            records = np.ascontiguousarray(block[:taken, 8:body]).view(RECORD_DTYPE)
            records.flags.writeable = False
            new = ProfileData.__new__
            if self.batch:
                event = new(ProfileData)
                _set_records(event, records.reshape(-1))
                pending.append(event)
            else:
                for i in range(taken):
                    event = new(ProfileData)
                    _set_records(event, records[i])
                    pending.append(event)
            self.stats.packets["profile_data"] += taken
            self.stats.records += records.size
        return taken

    def _deliver(
        self,
        buf: bytearray,
        pending: list[int | ResponseEvent],
        starts: list[int],
        out: list[ResponseEvent],
    ) -> None:
        records = _EMPTY
        if starts:
            # Only the record bytes of each packet, joined: the packets may lie far apart
            # (a run taken in between them), and their span can be the whole buffer.
            counts = [c for c in pending if type(c) is int]
            size = RECORD_SIZE
            if len(starts) == 1:
                blob = bytes(buf[starts[0] : starts[0] + counts[0] * size])
            else:
                blob = b"".join(
                    [buf[o : o + c * size] for o, c in zip(starts, counts, strict=True)]
                )
            records = np.frombuffer(blob, RECORD_DTYPE)
            records.flags.writeable = False
            self.stats.records += len(records)
            self.stats.packets["profile_data"] += len(starts)
        at = 0
        new = ProfileData.__new__
        for item in pending:
            if type(item) is int:
                event = new(ProfileData)
                _set_records(event, records[at : at + item])
                at += item
                out.append(event)
            else:
                out.append(item)  # type: ignore[arg-type]

    def _frame(self, buf: bytearray, p: int, n: int) -> int:
        """Size of a complete non-PROFILE_DATA packet at ``p`` in a short tail, or 0."""
        if n - p < 5:
            return 0
        rtype = buf[p + 2]
        length = buf[p + 3] | (buf[p + 4] << 8)
        size = RESPONSE_OVERHEAD + length
        if rtype == 5 or not payload_length_ok(rtype, length) or n - p < size:
            return 0
        if buf[p + size - 1] != RESPONSE_END:
            return 0
        if crc16_ccitt_false(buf[p : p + size - 3]) != buf[p + size - 3] | (buf[p + size - 2] << 8):
            return 0
        return size

    def _emit_other(self, buf: bytearray, p: int, pending: list[int | ResponseEvent]) -> None:
        rtype = buf[p + 2]
        self.stats.packets[_PACKET_KEYS[rtype]] += 1  # type: ignore[index]
        if rtype == ResponseType.ACK:
            pending.append(Ack())
        elif rtype == ResponseType.NACK:
            pending.append(Nack())
        elif rtype == ResponseType.METADATA:
            clock, timer, build_id, raw = _METADATA.unpack_from(buf, p + 5)
            version = raw.split(b"\0", 1)[0].decode("utf-8", errors="replace")
            pending.append(Metadata(clock, timer, build_id, version))
        else:
            profiling, overflows, captured, usage = _STATUS.unpack_from(buf, p + 5)
            pending.append(Status(bool(profiling), overflows, captured, usage))


def _first_bad_crc(
    data: bytes | bytearray | memoryview, at: int, lo: np.ndarray, hi: np.ndarray, size: int
) -> int:
    """The index of the first packet of a run (see ``_run``) whose CRC is wrong: the run
    checked a slice at a time, then the slice that fails a call per packet, so a capture
    with an error every few packets costs a few slices per error, not the whole run."""
    view = memoryview(data)
    body = size - 3
    for first in range(0, len(lo), _CRC_SLICE):
        end = min(first + _CRC_SLICE, len(lo))
        part = view[at + first * size : at + end * size]
        if crc16_run_ok(part, lo[first:end], hi[first:end], size, RESPONSE_END):
            continue
        sent = (lo[first:end] | (hi[first:end].astype(np.uint16) << 8)).tolist()
        for i, s in enumerate(sent):
            if _crc16(part[i * size : i * size + body]) != s:
                return first + i
    return len(lo)  # only if several errors cancel out over the run but not per slice


def _to_complete(buf: bytearray) -> int:
    """Bytes to add to a held-back tail so that the packet it starts is whole (a header's
    worth when its length is not known yet): the next feed then starts on a packet
    boundary and can take its packets directly."""
    if len(buf) < 5 or buf[0] != 0xAA or buf[1] != 0x55:
        return max(1, 8 - len(buf))
    return max(1, RESPONSE_OVERHEAD + (buf[3] | (buf[4] << 8)) - len(buf))


def _merged(events: list[ResponseEvent]) -> list[ResponseEvent]:
    """Consecutive ProfileData events as one (``batch`` mode)."""
    out: list[ResponseEvent] = []
    run: list[np.ndarray] = []
    for event in events:
        if type(event) is ProfileData:
            run.append(event.records)
            continue
        if run:
            out.append(_profile_data(run))
            run = []
        out.append(event)
    if run:
        out.append(_profile_data(run))
    return out


def _profile_data(run: list[np.ndarray]) -> ProfileData:
    if len(run) == 1:
        records = run[0]
    else:
        # as bytes: concatenating structured arrays promotes fields once per array
        records = np.concatenate([r.view(np.uint8) for r in run]).view(RECORD_DTYPE)
        records.flags.writeable = False
    event = ProfileData.__new__(ProfileData)
    _set_records(event, records)
    return event


def decode_stream(data: bytes) -> tuple[list[ResponseEvent], LinkStats]:
    """Decode a whole capture at once."""
    decoder = ResponseDecoder()
    events = decoder.feed(data)
    events += decoder.close()
    return events, decoder.stats
