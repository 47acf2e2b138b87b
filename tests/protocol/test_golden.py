"""Golden vectors from the protocol document's dumps (clock bytes corrected per
CLARIFICATIONS.md); the CRC bytes the document elides come from the bitwise reference."""

import struct

import numpy as np
import pytest

from mcuprof.protocol import (
    RECORD_DTYPE,
    Ack,
    Command,
    Metadata,
    Nack,
    ProfileData,
    ResponseDecoder,
    Status,
    decode_stream,
    encode_command,
    encode_event,
)
from tests.protocol.reference import crc16_bitwise


def framed(body_hex: str) -> bytes:
    body = bytes.fromhex(body_hex)
    return body + struct.pack("<H", crc16_bitwise(body)) + b"\n"


METADATA_DUMP = framed(
    "AA 55 03 1C 00"
    "00 7A 03 0A"  # 168,000,000 (the document's 00 09 FB 0A is wrong)
    "40 42 0F 00"
    "EF BE AD DE"
    "76 31 2E 30 2E 30 00 00 00 00 00 00 00 00 00 00"
)
PROFILE_DUMP = framed(
    "AA 55 05 1F 00 01 02 00"
    "00 01 00 08 E8 03 00 00 D0 07 00 00 00 00"
    "20 02 00 08 F4 01 00 00 2C 01 00 00 01 00"
)


@pytest.mark.parametrize(
    ("command", "dump"),
    [
        (Command.START_PROFILING, "55 01 00 00 00 00 00 00 00 00 00 56"),
        (Command.STOP_PROFILING, "55 02 00 00 00 00 00 00 00 00 00 57"),
        (Command.GET_STATUS, "55 03 00 00 00 00 00 00 00 00 00 58"),
        (Command.RESET_BUFFERS, "55 04 00 00 00 00 00 00 00 00 00 59"),
        (Command.GET_METADATA, "55 05 00 00 00 00 00 00 00 00 00 5A"),
        (Command.SET_CONFIG, "55 06 00 00 00 00 00 00 00 00 00 5B"),
    ],
)
def test_command_packets(command: Command, dump: str) -> None:
    assert encode_command(command) == bytes.fromhex(dump)


def test_set_config_payload_is_padded_and_summed() -> None:
    packet = encode_command(Command.SET_CONFIG, b"\x01\x02\x03")
    assert packet == bytes.fromhex("55 06 03 01 02 03 00 00 00 00 00") + bytes(
        [(0x55 + 6 + 3 + 1 + 2 + 3) & 0xFF]
    )


def test_command_payload_over_eight_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="at most 8"):
        encode_command(Command.SET_CONFIG, bytes(9))


def test_metadata_dump() -> None:
    events, stats = decode_stream(METADATA_DUMP)
    assert events == [Metadata(168_000_000, 1_000_000, 0xDEADBEEF, "v1.0.0")]
    assert stats.packets["metadata"] == 1
    assert encode_event(events[0]) == METADATA_DUMP


def test_profile_data_dump() -> None:
    events, stats = decode_stream(PROFILE_DUMP)
    expected = np.array(
        [(0x08000100, 1000, 2000, 0), (0x08000220, 500, 300, 1)], dtype=RECORD_DTYPE
    )
    assert events == [ProfileData(expected)]
    assert stats.records == 2
    assert encode_event(events[0]) == PROFILE_DUMP


def test_ack_nack_status_frames() -> None:
    ack = framed("AA 55 01 00 00")
    nack = framed("AA 55 02 00 00")
    status = framed("AA 55 04 0A 00 01 05 00 00 00 E8 03 00 00 32")
    events, stats = decode_stream(ack + nack + status)
    assert events == [Ack(), Nack(), Status(True, 5, 1000, 50)]
    assert stats.packets == {"ack": 1, "nack": 1, "metadata": 0, "status": 1, "profile_data": 0}
    assert stats.skipped_bytes == 0


def test_byte_swapped_header_is_not_accepted() -> None:
    swapped = b"\x55\xaa" + framed("AA 55 01 00 00")[2:]
    events, stats = decode_stream(swapped)
    assert events == []
    assert stats.skipped_bytes == len(swapped)


def test_unknown_profile_version_is_skipped_and_counted() -> None:
    v2 = framed("AA 55 05 11 00 02 01 00" + "11" * 14)
    events, stats = decode_stream(v2 + framed("AA 55 01 00 00"))
    assert events == [Ack()]
    assert stats.unsupported_version == 1
    assert stats.records == 0


def test_length_disagreeing_with_type_is_malformed() -> None:
    bad = framed("AA 55 01 01 00 00")  # an ACK with a one-byte payload
    events, stats = decode_stream(bad + framed("AA 55 02 00 00"))
    assert events == [Nack()]
    assert stats.malformed == 1


def test_wrong_end_marker_is_malformed() -> None:
    bad = framed("AA 55 01 00 00")[:-1] + b"\r"
    events, stats = decode_stream(bad)
    assert events == []
    assert stats.malformed == 1
    assert stats.skipped_bytes == len(bad)


def test_corrupted_length_does_not_swallow_following_packets() -> None:
    # The first packet's length now claims 59 records: the decoder must not jump
    # past the intact packets that follow it.
    first = bytearray(PROFILE_DUMP)
    struct.pack_into("<HBH", first, 3, 3 + 14 * 59, 1, 59)
    tail = [framed("AA 55 01 00 00"), METADATA_DUMP, PROFILE_DUMP] * 20
    events, stats = decode_stream(bytes(first) + b"".join(tail))
    assert [type(e) for e in events] == [Ack, Metadata, ProfileData] * 20
    assert stats.crc_errors + stats.malformed == 1


def test_packet_truncated_by_end_of_stream_releases_what_it_held() -> None:
    # A false header near the end claims more bytes than the stream has; close()
    # must give back the intact packet it was holding.
    false_header = bytes.fromhex("AA 55 03 1C 00")
    decoder = ResponseDecoder()
    assert decoder.feed(false_header + framed("AA 55 01 00 00")) == []
    assert decoder.close() == [Ack()]
    assert decoder.stats.malformed == 1
    assert decoder.buffered == 0


def test_crc_error_counted() -> None:
    bad = bytearray(PROFILE_DUMP)
    bad[10] ^= 0x04
    events, stats = decode_stream(bytes(bad))
    assert events == []
    assert stats.crc_errors == 1
