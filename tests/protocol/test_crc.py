from hypothesis import given
from hypothesis import strategies as st

from mcuprof.protocol import checksum8, crc16_ccitt_false
from tests.protocol.reference import crc16_bitwise


def test_check_value() -> None:
    assert crc16_ccitt_false(b"123456789") == 0x29B1
    assert crc16_bitwise(b"123456789") == 0x29B1


@given(st.binary(max_size=600))
def test_fast_crc_equals_bitwise_reference(data: bytes) -> None:
    assert crc16_ccitt_false(data) == crc16_bitwise(data)


def test_command_checksum_matches_document_dumps() -> None:
    assert checksum8(bytes.fromhex("5501000000000000000000")) == 0x56
    assert checksum8(bytes.fromhex("5505000000000000000000")) == 0x5A
