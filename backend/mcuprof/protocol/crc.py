"""Checksums: CRC-16/CCITT-FALSE for responses, an 8-bit sum for commands."""

from __future__ import annotations

import binascii


def crc16_ccitt_false(data: bytes | bytearray | memoryview, crc: int = 0xFFFF) -> int:
    """Poly 0x1021, init 0xFFFF, no reflection, no final xor; check value 0x29B1."""
    return binascii.crc_hqx(data, crc)


def checksum8(data: bytes | bytearray | memoryview) -> int:
    return sum(data) & 0xFF
