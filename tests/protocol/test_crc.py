import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mcuprof.protocol import checksum8, crc16_ccitt_false
from mcuprof.protocol.crc import crc16_run_ok
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


@given(
    st.integers(4, 300),
    st.lists(st.binary(min_size=300, max_size=300), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 299), st.integers(1, 255)), max_size=3),
    st.integers(0, 255),
)
def test_run_check_equals_the_check_per_packet(
    size: int, bodies: list[bytes], flips: list[tuple[int, int, int]], end: int
) -> None:
    """Packets of ``size`` bytes back to back (body, CRC little-endian, end byte), some
    with bytes flipped anywhere but the end byte (the caller checks that one): the
    one-pass check says yes exactly when every packet's own CRC is right. Several wrong
    packets may cancel out with chance 2^-16, which these examples do not hit."""
    run = bytearray()
    for body in bodies:
        b = body[: size - 3]
        crc = crc16_bitwise(b)
        run += b + bytes((crc & 0xFF, crc >> 8, end))
    for packet, at, mask in flips:
        if packet < len(bodies):
            run[packet * size + at % (size - 1)] ^= mask  # not the end byte: framing
    block = np.frombuffer(bytes(run), np.uint8).reshape(len(bodies), size)
    body = size - 3
    each = all(
        crc16_bitwise(bytes(p[:body])) == int(p[body]) | int(p[body + 1]) << 8 for p in block
    )
    assert crc16_run_ok(run, block[:, body], block[:, body + 1], size, end) == each


def test_run_check_finds_one_wrong_bit_in_a_long_run() -> None:
    rng = np.random.default_rng(7)
    size, m = 290, 5000
    bodies = rng.integers(0, 256, (m, size - 3), dtype=np.uint8)
    crcs = np.array([crc16_ccitt_false(b.tobytes()) for b in bodies], np.uint16)
    block = np.concatenate(
        [bodies, (crcs & 0xFF)[:, None], (crcs >> 8)[:, None], np.full((m, 1), 0x0A)], axis=1
    ).astype(np.uint8)
    assert crc16_run_ok(block.tobytes(), block[:, -3], block[:, -2], size, 0x0A)
    for packet, byte, bit in [(0, 0, 0), (m - 1, size - 2, 7), (2500, 100, 3)]:
        bad = block.copy()
        bad[packet, byte] ^= 1 << bit
        assert not crc16_run_ok(bad.tobytes(), bad[:, -3], bad[:, -2], size, 0x0A)
